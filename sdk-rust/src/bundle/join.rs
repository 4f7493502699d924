//! Stream-table joins: the bundles of a `KStream.join(KTable)` /
//! `leftJoin` ValueJoiner (one `OPERATION_VALUE_JOIN` step), which carry
//! each record's table value beside its value (`Bundle.other_values`;
//! length -1: none, a left join's miss).

use std::time::{Duration, Instant};

use super::{await_all, column, fail_all, fail_unreadable, guarded, kind, LocalFuture};
use crate::pb;
use crate::serdes::Serde;

/// A registered joiner, which runs a whole join bundle (its futures, for
/// an async joiner, bounded by `async_timeout`).
pub(crate) trait JoinRun: Send + Sync {
    fn run(&self, b: &pb::Bundle, async_timeout: Duration) -> pb::BundleResult;
}

/// The joiner as the host calls it: the table value is None where a left
/// join found none; an Err fails the record.
type JoinFn<V, VT, VR> = dyn Fn(V, Option<VT>) -> Result<VR, String> + Send + Sync;
/// An async joiner as the host calls it: the future of the joined value.
type AsyncJoinFn<V, VT, VR> = dyn Fn(V, Option<VT>) -> Result<LocalFuture<Result<VR, String>>, String> + Send + Sync;

enum Joins<V, VT, VR> {
    Sync(Box<JoinFn<V, VT, VR>>),
    /// The function's name for messages, and the call.
    Async(String, Box<AsyncJoinFn<V, VT, VR>>),
}

/// A ValueJoiner of stream values V and table values VT, making VR.
pub(crate) struct ValueJoiner<V, VT, VR> {
    f: Joins<V, VT, VR>,
}

impl<V: Serde, VT: Serde, VR: Serde> ValueJoiner<V, VT, VR> {
    pub(crate) fn new(f: impl Fn(V, Option<VT>) -> Result<VR, String> + Send + Sync + 'static) -> Self {
        ValueJoiner { f: Joins::Sync(Box::new(f)) }
    }

    /// An async joiner: every record's call first, in record order, then
    /// the futures together (see the bundle module).
    pub(crate) fn new_async(
        name: String,
        f: impl Fn(V, Option<VT>) -> Result<LocalFuture<Result<VR, String>>, String> + Send + Sync + 'static,
    ) -> Self {
        ValueJoiner { f: Joins::Async(name, Box::new(f)) }
    }
}

impl<V: Serde, VT: Serde, VR: Serde> JoinRun for ValueJoiner<V, VT, VR> {
    /// `f(value, table value)` for each record. A record whose value or
    /// table value does not decode (a deserialization failure), whose call
    /// panics (or whose future does, or passes the bound) or whose result
    /// does not encode fails alone; a null result (VR encodes to none) is a
    /// null value, as Kafka Streams forwards it.
    fn run(&self, b: &pb::Bundle, async_timeout: Duration) -> pb::BundleResult {
        let n = b.value_lengths.len();
        if b.other_value_lengths.len() != n {
            return fail_all(
                b,
                0,
                format!("malformed join bundle: {} table values for {n} records", b.other_value_lengths.len()),
            );
        }
        let cols =
            column(&b.values, &b.value_lengths).and_then(|v| Ok((v, column(&b.other_values, &b.other_value_lengths)?)));
        let (values, others) = match cols {
            Ok(c) => c,
            Err(e) => return fail_unreadable(b, e),
        };
        // The records' metadata when the joiner asked for it (with_metadata).
        let metas = match super::metadata::record_metas(b) {
            Ok(m) => m,
            Err(e) => return fail_unreadable(b, e),
        };
        let out_serde = if b.output_value_serde.is_empty() { &b.value_serde } else { &b.output_value_serde };
        let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
        let mut fail = |i: usize, message: String, undecodable: bool| {
            result.failures.push(pb::RecordFailure { index: i as i32, step: 0, message, kind: kind(undecodable) })
        };
        let mut lengths = Vec::with_capacity(n);
        let mut out = Vec::new();
        let mut counts = vec![0; n];
        let mut futures: Vec<(usize, LocalFuture<Result<VR, String>>)> = Vec::new();
        for i in 0..n {
            let v = match V::decode(&b.value_serde, values[i]) {
                Ok(v) => v,
                Err(e) => {
                    fail(i, format!("the value does not decode: {e}"), true);
                    continue;
                }
            };
            let other = match others[i] {
                None => None,
                Some(_) => match VT::decode(&b.other_value_serde, others[i]) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        fail(i, format!("the table value does not decode: {e}"), true);
                        continue;
                    }
                },
            };
            let meta = metas.as_ref().and_then(|m| m.get(i));
            let joined = match &self.f {
                Joins::Sync(f) => super::metadata::with_record(meta, || guarded(|| f(v, other))).and_then(|r| r),
                Joins::Async(_, f) => {
                    match super::metadata::with_record(meta, || guarded(|| f(v, other))).and_then(|r| r) {
                        Ok(fut) => futures.push((i, fut)),
                        Err(msg) => fail(i, msg, false),
                    }
                    continue;
                }
            };
            let joined = match joined {
                Ok(j) => j,
                Err(msg) => {
                    fail(i, msg, false);
                    continue;
                }
            };
            let start = out.len();
            match joined.encode(out_serde, &mut out) {
                Ok(true) => lengths.push((out.len() - start) as i32),
                Ok(false) => {
                    out.truncate(start);
                    lengths.push(-1);
                }
                Err(e) => {
                    out.truncate(start);
                    fail(i, format!("the value does not encode: {e}"), false);
                    continue;
                }
            }
            counts[i] = 1;
        }
        if let Joins::Async(name, _) = &self.f {
            // The futures together, then their outcomes in record order.
            let (rows, futures): (Vec<usize>, Vec<_>) = futures.into_iter().unzip();
            let done = await_all::run(futures, Instant::now() + async_timeout);
            let st = b.steps.first();
            for (i, joined) in rows.into_iter().zip(done) {
                let joined = joined.unwrap_or_else(|| {
                    Err(format!(
                        "TimeoutError: {name} (token {}, step 0, node {}) did not finish within {} s (cancelled)",
                        st.map_or(0, |s| s.token),
                        st.map_or("", |s| s.node.as_str()),
                        async_timeout.as_secs_f64()
                    ))
                });
                let joined = match joined {
                    Ok(j) => j,
                    Err(msg) => {
                        fail(i, msg, false);
                        continue;
                    }
                };
                let start = out.len();
                match joined.encode(out_serde, &mut out) {
                    Ok(true) => lengths.push((out.len() - start) as i32),
                    Ok(false) => {
                        out.truncate(start);
                        lengths.push(-1);
                    }
                    Err(e) => {
                        out.truncate(start);
                        fail(i, format!("the value does not encode: {e}"), false);
                        continue;
                    }
                }
                counts[i] = 1;
            }
        }
        result.output_counts = counts;
        result.failures.sort_by_key(|f| f.index); // an async joiner's fail after the others
        result.value_lengths = lengths;
        result.values = out;
        result
    }
}
