//! The metadata chain's async steps: futures run together within a bundle,
//! each output carrying the metadata its future answered.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::metadata::meta_owned;
use super::{column, take, Executor, Func, LocalFuture, Out, StepFn};
use crate::pb;
use crate::processor::RecordMetadata;

/// A metadata bundle of string keys and values, record i at offset 10 + i
/// and timestamp 100 + i.
fn bundle(token: u32, values: &[&str]) -> pb::Bundle {
    let mut b = pb::Bundle {
        id: 1,
        steps: vec![pb::Step {
            token,
            operation: pb::Operation::MapValues as i32,
            node: format!("NODE-{token}"),
            metadata: pb::Metadata::Write as i32,
            ..Default::default()
        }],
        key_serde: "string".into(),
        value_serde: "string".into(),
        topic: "t".into(),
        ..Default::default()
    };
    for (i, v) in values.iter().enumerate() {
        b.value_lengths.push(v.len() as i32);
        b.values.extend_from_slice(v.as_bytes());
        b.offsets.push(10 + i as i64);
        b.timestamps.push(100 + i as i64);
    }
    b
}

/// An async map_values with metadata: `f(value, metadata)` resolves to
/// the output and its metadata (as `MetadataStream::map_values_async`).
fn step<Fut>(f: impl Fn(String, RecordMetadata) -> Fut + Send + Sync + 'static) -> StepFn
where
    Fut: Future<Output = (String, RecordMetadata)> + 'static,
{
    let mut s = StepFn::new_async::<String, String, String>("map_values f".into(), move |_, v| {
        let fut = f(take::<String>(v)?, meta_owned());
        Ok(Box::pin(async move {
            let (v, m) = fut.await;
            Ok(Out::Meta(Box::new(Out::One(None, Box::new(v))), m))
        }) as LocalFuture<_>)
    });
    s.metadata = true;
    s
}

fn run(f: StepFn, token: u32, values: &[&str], timeout: Duration) -> pb::BundleResult {
    let mut exec = Executor::new([(token, Func::Step(Arc::new(f)))].into_iter().collect());
    exec.async_timeout = timeout;
    exec.process(&bundle(token, values))
}

fn outputs(r: &pb::BundleResult) -> Vec<String> {
    column(&r.values, &r.value_lengths)
        .unwrap()
        .into_iter()
        .map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn a_bundles_futures_run_together_and_each_output_gets_the_metadata_its_future_answered() {
    // Each future waits until all have started: run one at a time, the
    // first would wait until the bound failed it.
    let n = 20;
    let started = Arc::new(AtomicUsize::new(0));
    let f = step(move |v, mut m| {
        let started = started.clone();
        let mut counted = false;
        async move {
            std::future::poll_fn(|cx| {
                if !counted {
                    counted = true;
                    started.fetch_add(1, Ordering::SeqCst);
                }
                if started.load(Ordering::SeqCst) >= n {
                    return Poll::Ready(());
                }
                cx.waker().wake_by_ref();
                Poll::Pending
            })
            .await;
            m.timestamp += 1000;
            m.headers.push(("at".to_owned(), Some(m.offset.to_string().into_bytes())));
            (format!("{v}@{}", m.offset), m)
        }
    });
    let vals: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    let refs: Vec<&str> = vals.iter().map(String::as_str).collect();
    let r = run(f, 3, &refs, Duration::from_secs(10));
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let want: Vec<String> = (0..n).map(|i| format!("r{i}@{}", 10 + i)).collect();
    assert_eq!(outputs(&r), want);
    assert_eq!(r.output_timestamps, (0..n).map(|i| 1100 + i as i64).collect::<Vec<_>>());
    assert_eq!(r.output_header_counts, vec![1; n]);
    let at: Vec<String> = column(&r.output_header_values, &r.output_header_value_lengths)
        .unwrap()
        .into_iter()
        .map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap())
        .collect();
    assert_eq!(at, (0..n).map(|i| (10 + i).to_string()).collect::<Vec<_>>());
}

#[test]
fn a_future_past_the_bound_or_panicking_fails_its_record_alone_naming_function_node_and_step() {
    let f = step(|v, m| async move {
        assert!(v != "bad", "cannot take {v}");
        if v == "stuck" {
            std::future::pending::<()>().await;
        }
        (v, m)
    });
    let r = run(f, 7, &["a", "stuck", "bad", "b"], Duration::from_millis(100));
    assert_eq!(outputs(&r), ["a", "b"]);
    assert_eq!(r.output_counts, [1, 0, 0, 1]);
    // The outputs keep their input's headers (-1) and timestamps.
    assert_eq!(r.output_timestamps, [100, 103]);
    assert_eq!(r.output_header_counts, [-1, -1]);
    let failures: Vec<(i32, i32, &str)> = r.failures.iter().map(|f| (f.index, f.step, f.message.as_str())).collect();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert_eq!(
        failures[0],
        (1, 0, "TimeoutError: map_values f (token 7, step 0, node NODE-7) did not finish within 0.1 s (cancelled)")
    );
    assert_eq!((failures[1].0, failures[1].1), (2, 0));
    assert!(failures[1].2.ends_with("cannot take bad"), "{}", failures[1].2);
}
