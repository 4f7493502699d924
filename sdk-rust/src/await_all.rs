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
//! with that message. With the crate's feature "tokio", [`run`] runs them on
//! a current-thread tokio runtime of the host thread instead (its I/O and
//! time drivers enabled), with the same outcomes.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crate::calls::guarded;

/// A future of a user function, run on the thread that made it.
pub(crate) type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// How long the futures of one bundle's async functions may take together:
/// then those still pending are dropped and fail their records, naming the
/// function, before the engine's 30 s host timeout hands the bundle to
/// another worker.
pub const ASYNC_TIMEOUT: Duration = Duration::from_secs(20);

/// The futures woken since the executor last looked, and the thread to unpark.
#[cfg_attr(feature = "tokio", allow(dead_code))]
struct Ready {
    woken: Mutex<Vec<usize>>,
    thread: Thread,
}

#[cfg_attr(feature = "tokio", allow(dead_code))]
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

/// Runs futures together until each is ready or `deadline` passes; answers
/// their outcomes in order: Some(Ok) / Some(Err) as the future answered,
/// Some(Err) with the message of a panic, None for a future still pending at
/// the deadline (dropped).
pub(crate) fn run<T: 'static>(
    futures: Vec<LocalFuture<Result<T, String>>>,
    deadline: Instant,
) -> Vec<Option<Result<T, String>>> {
    #[cfg(feature = "tokio")]
    return on_tokio(futures, deadline);
    #[cfg(not(feature = "tokio"))]
    return here(futures, deadline);
}

/// A future of an outcome that may borrow for `'a` (a bundle's are `'static`).
type Outcome<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + 'a>>;

/// Runs one future, which may borrow (an async processor's, holding its
/// processor and context), to its outcome or the deadline, on the same
/// executor as [`run`]: Some(Ok) / Some(Err) as it answered, Some(Err) with a
/// panic's message, None when still pending at the deadline (dropped).
pub(crate) fn block_on<'a, T>(future: Outcome<'a, T>, deadline: Instant) -> Option<Result<T, String>> {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_err() {
        return RUNTIME.with(|rt| {
            let until = tokio::time::Instant::from_std(deadline);
            // The timer is made inside the runtime (timeout_at needs its context).
            let bounded = async move { tokio::time::timeout_at(until, Guarded(future)).await };
            tokio::task::LocalSet::new().block_on(rt, bounded).ok()
        });
    }
    here(vec![future], deadline).pop().flatten()
}

/// [`run`] on this thread, parking it while no future is woken.
#[cfg_attr(feature = "tokio", allow(dead_code))]
fn here<'a, T>(futures: Vec<Outcome<'a, T>>, deadline: Instant) -> Vec<Option<Result<T, String>>> {
    let n = futures.len();
    let ready = Arc::new(Ready { woken: Mutex::new((0..n).collect()), thread: thread::current() });
    let wakers: Vec<Waker> =
        (0..n).map(|index| Waker::from(Arc::new(FutureWaker { index, ready: ready.clone() }))).collect();
    let mut pending: Vec<Option<Outcome<'a, T>>> = futures.into_iter().map(Some).collect();
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

#[cfg(feature = "tokio")]
thread_local! {
    /// The host thread's runtime for async functions (feature "tokio").
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("polystreams: a tokio runtime for async functions");
}

/// [`run`] on a tokio runtime: each future a task of a LocalSet (they need
/// not be Send), bounded by the deadline, awaited in order. On a thread
/// already in a runtime's context (`app.run()` from async code, through
/// `block_in_place`), where a runtime cannot be started, the futures run
/// [`here`] in that context instead: a multi-thread runtime's other workers
/// drive their timers and I/O.
#[cfg(feature = "tokio")]
fn on_tokio<T: 'static>(
    futures: Vec<LocalFuture<Result<T, String>>>,
    deadline: Instant,
) -> Vec<Option<Result<T, String>>> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return here(futures, deadline);
    }
    RUNTIME.with(|rt| {
        let local = tokio::task::LocalSet::new();
        local.block_on(rt, async move {
            let until = tokio::time::Instant::from_std(deadline);
            let tasks: Vec<_> = futures
                .into_iter()
                .map(|f| tokio::task::spawn_local(tokio::time::timeout_at(until, Guarded(f))))
                .collect();
            let mut out = Vec::with_capacity(tasks.len());
            for t in tasks {
                out.push(match t.await {
                    Ok(Ok(r)) => Some(r),
                    Ok(Err(_elapsed)) => None,
                    Err(e) => Some(Err(format!("the future's task failed: {e}"))),
                });
            }
            out
        })
    })
}

/// A future whose panics are its record's failure (the message as guarded gives it).
#[cfg(feature = "tokio")]
struct Guarded<'a, T>(Outcome<'a, T>);

#[cfg(feature = "tokio")]
impl<T> Future for Guarded<'_, T> {
    type Output = Result<T, String>;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match guarded(|| self.0.as_mut().poll(cx)) {
            Ok(p) => p,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let out = here(futures, Instant::now() + Duration::from_secs(10));
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
        let out = here(futures, Instant::now() + Duration::from_millis(50));
        assert_eq!(out[0], Some(Ok(1)));
        assert!(matches!(&out[1], Some(Err(m)) if m.contains("boom in a future")), "{:?}", out[1]);
        assert_eq!(out[2], None);
        assert_eq!(out[3], Some(Err("answered an error".to_owned())));
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn on_tokio_futures_use_its_timers_and_keep_their_order() {
        let finished = Arc::new(Mutex::new(Vec::new()));
        let mut futures: Vec<LocalFuture<Result<u64, String>>> = (0..5u64)
            .map(|i| {
                let fin = finished.clone();
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(10 * (5 - i))).await; // later ones finish first
                    fin.lock().unwrap().push(i);
                    Ok(i)
                }) as LocalFuture<Result<u64, String>>
            })
            .collect();
        futures.push(Box::pin(async { panic!("boom on tokio") }));
        futures.push(Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(99)
        }));
        let out = run(futures, Instant::now() + Duration::from_millis(500));
        assert_eq!(out[..5], (0..5).map(|i| Some(Ok(i))).collect::<Vec<_>>()[..]);
        assert!(matches!(&out[5], Some(Err(m)) if m.contains("boom on tokio")), "{:?}", out[5]);
        assert_eq!(out[6], None);
        assert_eq!(*finished.lock().unwrap(), vec![4, 3, 2, 1, 0]);
    }

    #[test]
    fn block_on_runs_a_borrowing_future_to_its_outcome_or_the_deadline() {
        let mut seen = Vec::new();
        let out = block_on(
            Box::pin(async {
                seen.push(1); // borrows from this frame
                Ok(seen.len())
            }),
            Instant::now() + Duration::from_secs(10),
        );
        assert_eq!(out, Some(Ok(1)));
        let panicked =
            block_on::<()>(Box::pin(async { panic!("boom in block_on") }), Instant::now() + Duration::from_secs(10));
        assert!(matches!(&panicked, Some(Err(m)) if m.contains("boom in block_on")), "{panicked:?}");
        let state = Arc::new(Mutex::new((0, Vec::new())));
        let pending =
            block_on(Box::pin(Barrier { state, n: 2, counted: false }), Instant::now() + Duration::from_millis(50));
        assert_eq!(pending, None);
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn block_on_runs_on_tokio_with_its_timers() {
        let out = block_on(
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok(7)
            }),
            Instant::now() + Duration::from_secs(10),
        );
        assert_eq!(out, Some(Ok(7)));
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn inside_a_runtime_futures_run_here_in_its_context_instead_of_panicking() {
        // app.run() blocking a current-thread runtime's only thread: nothing
        // drives its timers, so a sleep stays pending until the bound (a
        // multi-thread runtime's other workers would drive it).
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let out = rt.block_on(async {
            let futures: Vec<LocalFuture<Result<u64, String>>> = vec![
                Box::pin(async { Ok(1) }),
                Box::pin(async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Ok(2)
                }),
            ];
            run(futures, Instant::now() + Duration::from_millis(100))
        });
        assert_eq!(out, vec![Some(Ok(1)), None]);
    }
}
