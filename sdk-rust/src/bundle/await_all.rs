//! Runs the futures of a bundle's async functions together, on the thread
//! processing the bundle: a small executor of its own, as the SDK depends on
//! no async runtime. Each future has its own waker, which queues the
//! future's index and unparks the thread, so a wake polls only the future
//! it names. A future that panics is answered with the panic's message
//! (then dropped); futures still pending at the deadline are dropped
//! (cancelled) and answered None.
//!
//! Futures that need a runtime's reactor or timer (tokio's) cannot run
//! here: polling one panics ("no reactor running"), which fails its record
//! with that message.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Instant;

use super::{guarded, LocalFuture};

/// The futures woken since the executor last looked, and the thread to unpark.
struct Ready {
    woken: Mutex<Vec<usize>>,
    thread: Thread,
}

struct FutureWaker {
    index: usize,
    ready: Arc<Ready>,
}

impl Wake for FutureWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.woken.lock().unwrap_or_else(|e| e.into_inner()).push(self.index);
        self.ready.thread.unpark();
    }
}

/// Polls futures until each is ready or `deadline` passes; answers their
/// outcomes in order: Some(Ok) / Some(Err) as the future answered, Some(Err)
/// with the message of a panic, None for a future still pending at the
/// deadline.
pub(crate) fn run<T>(
    futures: Vec<LocalFuture<Result<T, String>>>,
    deadline: Instant,
) -> Vec<Option<Result<T, String>>> {
    let n = futures.len();
    let ready = Arc::new(Ready { woken: Mutex::new((0..n).collect()), thread: thread::current() });
    let wakers: Vec<Waker> =
        (0..n).map(|index| Waker::from(Arc::new(FutureWaker { index, ready: ready.clone() }))).collect();
    let mut pending: Vec<Option<LocalFuture<Result<T, String>>>> = futures.into_iter().map(Some).collect();
    let mut out: Vec<Option<Result<T, String>>> = (0..n).map(|_| None).collect();
    let mut left = n;
    while left > 0 {
        let woken = std::mem::take(&mut *ready.woken.lock().unwrap_or_else(|e| e.into_inner()));
        if woken.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            thread::park_timeout(deadline - now);
            continue;
        }
        for i in woken {
            let Some(f) = pending[i].as_mut() else {
                continue; // done already: a late wake
            };
            let mut cx = Context::from_waker(&wakers[i]);
            let polled = match guarded(|| f.as_mut().poll(&mut cx)) {
                Ok(Poll::Pending) => continue,
                Ok(Poll::Ready(r)) => r,
                Err(panic) => Err(panic),
            };
            out[i] = Some(polled);
            pending[i] = None;
            left -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::time::Duration;

    /// Pending until `n` of its kind have been polled once: finishes only
    /// when they run together.
    struct Barrier {
        state: Arc<Mutex<(usize, Vec<Waker>)>>,
        n: usize,
        counted: bool,
    }

    impl Future for Barrier {
        type Output = Result<usize, String>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let n = self.n;
            let first = !self.counted;
            self.counted = true;
            let mut st = self.state.lock().unwrap();
            if first {
                st.0 += 1;
            }
            if st.0 >= n {
                st.1.drain(..).for_each(Waker::wake);
                return Poll::Ready(Ok(st.0));
            }
            st.1.push(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn futures_run_together_and_answer_in_order() {
        let state = Arc::new(Mutex::new((0, Vec::new())));
        let futures: Vec<LocalFuture<Result<usize, String>>> =
            (0..5).map(|_| Box::pin(Barrier { state: state.clone(), n: 5, counted: false }) as _).collect();
        let out = run(futures, Instant::now() + Duration::from_secs(10));
        assert_eq!(out, vec![Some(Ok(5)); 5]);
    }

    #[test]
    fn a_panic_answers_its_message_and_the_deadline_drops_the_pending() {
        let state = Arc::new(Mutex::new((0, Vec::new())));
        let futures: Vec<LocalFuture<Result<usize, String>>> = vec![
            Box::pin(async { Ok(1) }),
            Box::pin(async { panic!("boom in a future") }),
            Box::pin(Barrier { state, n: 2, counted: false }), // never 2: pending for ever
            Box::pin(async { Err("answered an error".to_owned()) }),
        ];
        let out = run(futures, Instant::now() + Duration::from_millis(50));
        assert_eq!(out[0], Some(Ok(1)));
        assert!(matches!(&out[1], Some(Err(m)) if m.contains("boom in a future")), "{:?}", out[1]);
        assert_eq!(out[2], None);
        assert_eq!(out[3], Some(Err("answered an error".to_owned())));
    }
}
