//! Chains with functions that asked for record metadata
//! ([`KStream::with_metadata`](crate::KStream::with_metadata);
//! docs/design/processor.md, "Metadata, opt-in").
//!
//! Such a step's function gets the record's [`RecordMetadata`] (timestamp,
//! headers, topic, partition, offset) and may set its timestamp and headers,
//! which become its outputs' (a flat map's outputs share them). The functions
//! are registered with METADATA_WRITE, so the answer carries each output's
//! timestamp and headers (`output_timestamps`, the output header columns, -1
//! where the input's headers are kept). The chain runs record by record; the
//! columnar chain of every other bundle pays nothing for it. A step's
//! function reaches the metadata of the element in hand through a
//! thread-local, which this runner sets around each call.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::{column, fail_all, fail_unreadable, guarded, kind, settle, Calls, Elem, KeySlot, Out, StepFn};
use crate::await_all;
use crate::pb;
use crate::processor::RecordMetadata;

thread_local! {
    static META: RefCell<Option<RecordMetadata>> = const { RefCell::new(None) };
    /// The metadata as the last call [`with_record`] ran left it (a
    /// mapper's, which may have set its timestamp and headers).
    static LAST: RefCell<Option<RecordMetadata>> = const { RefCell::new(None) };
}

/// Runs f with the metadata of the element in hand (a metadata chain's step).
pub(crate) fn with_meta<R>(f: impl FnOnce(&mut RecordMetadata) -> R) -> R {
    META.with(|m| {
        let mut m = m.borrow_mut();
        let meta = m.as_mut().expect("a metadata function runs in a metadata chain, which sets its record's metadata");
        f(meta)
    })
}

/// Each of a bundle's records' metadata, for a step outside a chain (a
/// fold's or join's) whose functions asked for it (`Step.metadata`); None
/// when none did, so that the bundle pays nothing for it.
pub(crate) fn record_metas(b: &pb::Bundle) -> Result<Option<Vec<RecordMetadata>>, String> {
    if b.steps.first().is_none_or(|s| s.metadata == 0) {
        return Ok(None);
    }
    let n = b.value_lengths.len();
    let headers = crate::processor::host::read_headers(b, n)?;
    Ok(Some(
        headers
            .into_iter()
            .enumerate()
            .map(|(i, headers)| RecordMetadata {
                topic: b.topic.clone(),
                partition: b.partition,
                offset: b.offsets.get(i).copied().unwrap_or(0),
                timestamp: b.timestamps.get(i).copied().unwrap_or(0),
                headers,
            })
            .collect(),
    ))
}

/// Runs f with m as the metadata [`with_meta`] answers (none: f runs as it is).
pub(crate) fn with_record<R>(m: Option<&RecordMetadata>, f: impl FnOnce() -> R) -> R {
    let Some(m) = m else { return f() };
    META.with(|c| *c.borrow_mut() = Some(m.clone()));
    let r = f();
    let left = META.with(|c| c.borrow_mut().take());
    LAST.with(|c| *c.borrow_mut() = left);
    r
}

/// The metadata of the element in hand as with_meta answers it, owned: an
/// async function's (it gets the record's metadata by value).
pub(crate) fn meta_owned() -> RecordMetadata {
    with_meta(|m| m.clone())
}

/// An output, encoded: key (when the chain changes keys), value, metadata.
type Encoded = (Option<Vec<u8>>, Option<Vec<u8>>, RecordMetadata);

/// An element in flight with its metadata.
struct Meta {
    elem: Elem,
    meta: RecordMetadata,
}

pub(crate) fn wants_metadata(b: &pb::Bundle, steps: &[(i32, &StepFn)]) -> bool {
    steps.iter().any(|(_, s)| s.metadata) || b.steps.iter().any(|s| s.metadata != 0)
}

pub(crate) fn run(b: &pb::Bundle, steps: &[(i32, &StepFn)], async_timeout: Duration) -> pb::BundleResult {
    let n = b.value_lengths.len();
    let values = match column(&b.values, &b.value_lengths) {
        Ok(v) => v,
        Err(e) => return fail_unreadable(b, e),
    };
    let keys = if b.key_lengths.len() == n {
        match column(&b.keys, &b.key_lengths) {
            Ok(k) => k,
            Err(e) => return fail_unreadable(b, e),
        }
    } else {
        vec![None; n]
    };
    let headers = match crate::processor::host::read_headers(b, n) {
        Ok(h) => h,
        Err(e) => return fail_unreadable(b, e),
    };
    let Some(&(_, first)) = steps.first() else {
        return fail_all(b, 0, "a bundle with no steps".to_owned());
    };
    let changes_keys = steps.iter().any(|(op, _)| {
        *op == pb::Operation::Map as i32
            || *op == pb::Operation::SelectKey as i32
            || *op == pb::Operation::FlatMap as i32
    });
    let last = steps[steps.len() - 1].1;
    // A chain whose functions only read (a key mapper registered
    // METADATA_READ) answers no output timestamps or headers: its outputs
    // keep the input's, and the engine refuses them from such a chain.
    let writes = steps.iter().any(|(_, s)| s.metadata);
    let key_serde = if b.output_key_serde.is_empty() { &b.key_serde } else { &b.output_key_serde };
    let value_serde = if b.output_value_serde.is_empty() { &b.value_serde } else { &b.output_value_serde };

    let inputs: Vec<RecordMetadata> = (0..n)
        .map(|i| RecordMetadata {
            topic: b.topic.clone(),
            partition: b.partition,
            offset: b.offsets.get(i).copied().unwrap_or(0),
            timestamp: b.timestamps.get(i).copied().unwrap_or(0),
            headers: headers[i].clone(),
        })
        .collect();
    let mut failed: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    // Records whose key or value did not decode (deserialization failures).
    let mut undecoded: BTreeSet<usize> = BTreeSet::new();
    let mut elems: Vec<Meta> = Vec::with_capacity(n);
    for (i, v) in values.iter().enumerate() {
        match (first.decode_value)(&b.value_serde, *v) {
            Ok(value) => elems.push(Meta { elem: Elem { key: None, value, origin: i }, meta: inputs[i].clone() }),
            Err(e) => {
                failed.insert(i, (0, format!("the value does not decode: {e}")));
                undecoded.insert(i);
            }
        }
    }
    // Step by step over the bundle's elements, as the columnar chain runs:
    // an async step's futures run together. Each call sees its element's
    // metadata through META; a mapper's (step.metadata) becomes its outputs'.
    let mut deadline: Option<Instant> = None;
    for (s, &(_, step)) in steps.iter().enumerate() {
        let mut next: Vec<Meta> = Vec::with_capacity(elems.len());
        match &step.call {
            Calls::Sync(call) => {
                for mut m in elems {
                    if failed.contains_key(&m.elem.origin) {
                        continue;
                    }
                    let origin = m.elem.origin;
                    let mut slot = KeySlot {
                        decoded: &mut m.elem.key,
                        raw: keys[origin],
                        serde: &b.key_serde,
                        undecodable: false,
                    };
                    let out = with_record(Some(&m.meta), || call(&mut slot, m.elem.value));
                    if slot.undecodable {
                        undecoded.insert(origin);
                    }
                    let after = LAST.with(|c| c.borrow_mut().take());
                    let meta = match after {
                        Some(after) if step.metadata => after,
                        _ => m.meta,
                    };
                    settle_meta(&mut next, &mut failed, s, origin, m.elem.key, meta, out);
                }
            }
            Calls::Async(name, call) => {
                // Every call first, in record order (each seeing its
                // element's metadata); then the futures together; then
                // their outcomes, in record order.
                let mut made = Vec::with_capacity(elems.len());
                let mut futures = Vec::with_capacity(elems.len());
                for mut m in elems {
                    if failed.contains_key(&m.elem.origin) {
                        continue;
                    }
                    let origin = m.elem.origin;
                    let mut slot = KeySlot {
                        decoded: &mut m.elem.key,
                        raw: keys[origin],
                        serde: &b.key_serde,
                        undecodable: false,
                    };
                    let value = m.elem.value;
                    let called = with_record(Some(&m.meta), || guarded(|| call(&mut slot, value)).and_then(|r| r));
                    LAST.with(|c| c.borrow_mut().take());
                    if slot.undecodable {
                        undecoded.insert(origin);
                    }
                    made.push((origin, m.elem.key, m.meta, called.map(|f| futures.push(f))));
                }
                let until = *deadline.get_or_insert_with(|| Instant::now() + async_timeout);
                let mut done = await_all::run(futures, until).into_iter();
                let st = &b.steps[s];
                for (origin, key, meta, called) in made {
                    let out = match called {
                        Err(msg) => Err(msg),
                        Ok(()) => done.next().flatten().unwrap_or_else(|| {
                            Err(format!(
                                "TimeoutError: {name} (token {}, step {s}, node {}) did not finish within {} s (cancelled)",
                                st.token,
                                st.node,
                                async_timeout.as_secs_f64()
                            ))
                        }),
                    };
                    settle_meta(&mut next, &mut failed, s, origin, key, meta, out);
                }
            }
        }
        // A record's outputs are all or nothing.
        next.retain(|m| !failed.contains_key(&m.elem.origin));
        elems = next;
    }

    // Encode with the last step's output types, record by record.
    let mut encoded: Vec<Vec<Encoded>> = (0..n).map(|_| Vec::new()).collect();
    for m in &elems {
        let i = m.elem.origin;
        if failed.contains_key(&i) {
            continue;
        }
        let k = if changes_keys {
            let mut buf = Vec::new();
            let r = match &m.elem.key {
                Some(k) => (last.encode_key)(k.as_ref() as &(dyn std::any::Any + Send + Sync), key_serde, &mut buf),
                None => Ok(keys[i].map(|raw| buf.extend_from_slice(raw)).is_some()),
            };
            match r {
                Ok(true) => Some(buf),
                Ok(false) => None,
                Err(e) => {
                    failed.insert(i, (steps.len() - 1, format!("the key does not encode: {e}")));
                    continue;
                }
            }
        } else {
            None
        };
        let mut buf = Vec::new();
        let v = match (last.encode_value)(m.elem.value.as_ref(), value_serde, &mut buf) {
            Ok(true) => Some(buf),
            Ok(false) => None,
            Err(e) => {
                failed.insert(i, (steps.len() - 1, format!("the value does not encode: {e}")));
                continue;
            }
        };
        encoded[i].push((k, v, m.meta.clone()));
    }

    let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
    for (i, outs) in encoded.into_iter().enumerate() {
        if failed.contains_key(&i) {
            continue;
        }
        result.output_counts[i] = outs.len() as i32;
        for (k, v, meta) in outs {
            if changes_keys {
                push(&mut result.key_lengths, &mut result.keys, k.as_deref());
            }
            push(&mut result.value_lengths, &mut result.values, v.as_deref());
            if !writes {
                continue;
            }
            result.output_timestamps.push(meta.timestamp);
            if meta.headers == inputs[i].headers {
                result.output_header_counts.push(-1);
                continue;
            }
            result.output_header_counts.push(meta.headers.len() as i32);
            for (hk, hv) in &meta.headers {
                push(&mut result.output_header_key_lengths, &mut result.output_header_keys, Some(hk.as_bytes()));
                push(&mut result.output_header_value_lengths, &mut result.output_header_values, hv.as_deref());
            }
        }
    }
    result.failures = failed
        .into_iter()
        .map(|(i, (step, message))| pb::RecordFailure {
            index: i as i32,
            step: step as i32,
            message,
            kind: kind(undecoded.contains(&i)),
        })
        .collect();
    result
}

/// Puts an element's outcome at step s, with its metadata, into next (or
/// failed). An async mapper's outcome carries the metadata it set
/// ([`Out::Meta`]), which replaces the element's.
#[allow(clippy::too_many_arguments)]
fn settle_meta(
    next: &mut Vec<Meta>,
    failed: &mut BTreeMap<usize, (usize, String)>,
    s: usize,
    origin: usize,
    key: Option<crate::bundle::AnyKey>,
    meta: RecordMetadata,
    out: Result<Out, String>,
) {
    let (out, meta) = match out {
        Ok(Out::Meta(out, set)) => (Ok(*out), set),
        out => (out, meta),
    };
    let mut outs = Vec::new();
    settle(&mut outs, failed, s, origin, key, out);
    next.extend(outs.into_iter().map(|elem| Meta { elem, meta: meta.clone() }));
}

fn push(lengths: &mut Vec<i32>, data: &mut Vec<u8>, cell: Option<&[u8]>) {
    match cell {
        Some(c) => {
            lengths.push(c.len() as i32);
            data.extend_from_slice(c);
        }
        None => lengths.push(-1),
    }
}
