//! A source's TimestampExtractor (`Consumed.withTimestampExtractor`): the
//! built-in extractors by name ([`TimestampExtractor`], an [`Options`]
//! value) and a Rust function ([`App::stream_with_extractor`]), run on the
//! host over `OPERATION_EXTRACT_TIMESTAMP` bundles.
//!
//! [`Options`]: crate::Options
//! [`App::stream_with_extractor`]: crate::App::stream_with_extractor

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bundle::{column, fail_all, guarded, ExtractFn};
use crate::pb;
use crate::processor::host::read_headers;
use crate::processor::RecordMetadata;
use crate::serdes::Serde;

/// Kafka Streams' built-in timestamp extractors, by class name
/// ([`Options::timestamp_extractor`](crate::Options::timestamp_extractor)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampExtractor {
    /// The record's timestamp; a negative one stops the application (Kafka
    /// Streams' default).
    FailOnInvalidTimestamp,
    /// The record's timestamp; a record with a negative one is dropped with a
    /// warning.
    LogAndSkipOnInvalidTimestamp,
    /// The record's timestamp, or for a negative one the partition's time;
    /// with none known yet the application stops.
    UsePartitionTimeOnInvalidTimestamp,
    /// The engine's clock when the record is processed.
    WallclockTimestampExtractor,
}

impl TimestampExtractor {
    /// The extractor's Kafka Streams class name.
    pub fn as_str(self) -> &'static str {
        match self {
            TimestampExtractor::FailOnInvalidTimestamp => "FailOnInvalidTimestamp",
            TimestampExtractor::LogAndSkipOnInvalidTimestamp => "LogAndSkipOnInvalidTimestamp",
            TimestampExtractor::UsePartitionTimeOnInvalidTimestamp => "UsePartitionTimeOnInvalidTimestamp",
            TimestampExtractor::WallclockTimestampExtractor => "WallclockTimestampExtractor",
        }
    }
}

/// The bundle runner of `f`, a typed extractor: record i's partition time is
/// the bundle's for record 0, then the largest non-negative timestamp
/// extracted before it. A key or value that does not decode fails as
/// deserialization; a panic as processing (the engine stops the
/// application, as Kafka Streams does).
pub(crate) fn extract_fn<K: Serde, V: Serde, F>(f: F) -> Arc<ExtractFn>
where
    F: Fn(&K, &V, &RecordMetadata, i64) -> i64 + Send + Sync + 'static,
{
    extractor(std::any::type_name::<F>().to_owned(), move |k: &K, v: &V, meta: RecordMetadata, pt, _| {
        guarded(|| f(k, v, &meta, pt)).map(Some)
    })
}

/// The bundle runner of `f`, a typed async extractor: as [`extract_fn`]'s,
/// each record's future awaited before the next record's call (its
/// partition time depends on the timestamps before it). A future that
/// panics fails its record; one still pending when the bundle has waited
/// its bound fails its record, and so do those after it.
pub(crate) fn extract_fn_async<K: Serde, V: Serde, F, Fut>(f: F) -> Arc<ExtractFn>
where
    F: Fn(&K, &V, RecordMetadata, i64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = i64> + 'static,
{
    extractor(std::any::type_name::<F>().to_owned(), move |k: &K, v: &V, meta: RecordMetadata, pt, deadline| {
        let fut = guarded(|| f(k, v, meta, pt))?;
        crate::await_all::block_on(Box::pin(async move { Ok(fut.await) }), deadline).transpose()
    })
}

/// The bundle runner of an extractor named `name`: `call(key, value,
/// metadata, partition_time, deadline)` answers a record's timestamp (None:
/// still pending at the deadline) or why it failed.
fn extractor<K: Serde, V: Serde>(
    name: String,
    call: impl Fn(&K, &V, RecordMetadata, i64, Instant) -> std::result::Result<Option<i64>, String> + Send + Sync + 'static,
) -> Arc<ExtractFn> {
    Arc::new(move |b: &pb::Bundle, timeout: Duration| {
        let deadline = Instant::now() + timeout;
        let timed_out = || {
            let st = b.steps.first();
            format!(
                "TimeoutError: {name} (token {}, step 0, node {}) did not finish within {} s (cancelled)",
                st.map_or(0, |s| s.token),
                st.map_or("", |s| s.node.as_str()),
                timeout.as_secs_f64()
            )
        };
        let n = b.value_lengths.len();
        let mut r = pb::BundleResult { bundle_id: b.id, ..Default::default() };
        let cols = column(&b.keys, &b.key_lengths)
            .and_then(|k| column(&b.values, &b.value_lengths).map(|v| (k, v)))
            .and_then(|(k, v)| read_headers(b, n).map(|h| (k, v, h)));
        let (keys, values, headers) = match cols {
            Ok(c) => c,
            Err(e) => return fail_all(b, 0, e),
        };
        let mut pt = b.partition_time;
        for i in 0..n {
            let decoded = K::decode(&b.key_serde, keys[i])
                .map_err(|e| format!("key: {e}"))
                .and_then(|k| V::decode(&b.value_serde, values[i]).map(|v| (k, v)).map_err(|e| format!("value: {e}")));
            let (k, v) = match decoded {
                Ok(kv) => kv,
                Err(e) => {
                    r.output_counts.push(0);
                    r.failures.push(pb::RecordFailure {
                        index: i as i32,
                        step: 0,
                        message: e,
                        kind: pb::record_failure::Kind::Deserialization as i32,
                    });
                    continue;
                }
            };
            let meta = RecordMetadata {
                topic: b.topic.clone(),
                partition: b.partition,
                offset: b.offsets.get(i).copied().unwrap_or(-1),
                timestamp: b.timestamps.get(i).copied().unwrap_or(0),
                headers: headers[i].clone(),
            };
            match call(&k, &v, meta, pt, deadline).and_then(|ts| ts.ok_or_else(timed_out)) {
                Ok(ts) => {
                    r.output_counts.push(1);
                    r.output_timestamps.push(ts);
                    if ts >= 0 {
                        pt = pt.max(ts);
                    }
                }
                Err(e) => {
                    r.output_counts.push(0);
                    r.failures.push(pb::RecordFailure {
                        index: i as i32,
                        step: 0,
                        message: e,
                        kind: pb::record_failure::Kind::Processing as i32,
                    });
                }
            }
        }
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Executor, Func};

    #[test]
    fn an_async_extractor_awaits_each_record_in_order_and_a_pending_one_fails_alone() {
        let f = extract_fn_async::<String, String, _, _>(|_, v, meta, pt| {
            let v = v.clone();
            async move {
                if v == "never" {
                    std::future::pending::<()>().await;
                }
                assert_ne!(v, "boom", "no timestamp in boom");
                v.parse::<i64>().unwrap() + pt.max(0) + meta.offset
            }
        });
        let mut b = pb::Bundle {
            id: 1,
            steps: vec![pb::Step {
                token: 7,
                operation: pb::Operation::ExtractTimestamp as i32,
                node: "SOURCE".into(),
                ..Default::default()
            }],
            key_serde: "string".into(),
            value_serde: "string".into(),
            topic: "in".into(),
            offsets: vec![0, 1, 2, 3],
            partition_time: -1,
            ..Default::default()
        };
        for v in ["100", "never", "boom", "5"] {
            b.key_lengths.push(1);
            b.keys.push(b'k');
            b.value_lengths.push(v.len() as i32);
            b.values.extend_from_slice(v.as_bytes());
        }
        let mut ex = Executor::new([(7, Func::Extract(f))].into_iter().collect());
        ex.async_timeout = Duration::from_millis(100);
        let r = ex.process(&b);
        assert_eq!(r.output_counts, [1, 0, 0, 1]);
        // Record 3's partition time is record 0's timestamp: 5 + 100 + offset 3.
        assert_eq!(r.output_timestamps, [100, 108]);
        let why: Vec<(i32, &str)> = r.failures.iter().map(|f| (f.index, f.message.as_str())).collect();
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].0 == 1 && why[0].1.contains("(token 7, step 0, node SOURCE) did not finish"), "{why:?}");
        assert!(why[1].0 == 2 && why[1].1.contains("no timestamp in boom"), "{why:?}");
    }
}
