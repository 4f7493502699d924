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
use std::collections::BTreeMap;

use super::{column, fail_all, fail_unreadable, kind, settle, Calls, Elem, KeySlot, StepFn};
use crate::pb;
use crate::processor::RecordMetadata;

thread_local! {
    static META: RefCell<Option<RecordMetadata>> = const { RefCell::new(None) };
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
    META.with(|c| c.borrow_mut().take());
    r
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

pub(crate) fn run(b: &pb::Bundle, steps: &[(i32, &StepFn)]) -> pb::BundleResult {
    let n = b.value_lengths.len();
    if let Some(i) = steps.iter().position(|(_, s)| matches!(s.call, Calls::Async(..))) {
        return fail_all(
            b,
            i,
            format!("step {i} ({}) is async, which a chain with metadata functions does not run", b.steps[i].node),
        );
    }
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

    let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
    let mut failures = Vec::new();
    for i in 0..n {
        let input = RecordMetadata {
            topic: b.topic.clone(),
            partition: b.partition,
            offset: b.offsets.get(i).copied().unwrap_or(0),
            timestamp: b.timestamps.get(i).copied().unwrap_or(0),
            headers: headers[i].clone(),
        };
        let value = match (first.decode_value)(&b.value_serde, values[i]) {
            Ok(v) => v,
            Err(e) => {
                failures.push(pb::RecordFailure {
                    index: i as i32,
                    step: 0,
                    message: format!("the value does not decode: {e}"),
                    kind: kind(true),
                });
                continue;
            }
        };
        let mut elems = vec![Meta { elem: Elem { key: None, value, origin: i }, meta: input.clone() }];
        let mut failed: BTreeMap<usize, (usize, String)> = BTreeMap::new();
        let mut undecodable = false;
        for (s, &(_, step)) in steps.iter().enumerate() {
            let Calls::Sync(call) = &step.call else { unreachable!("refused above") };
            let mut next = Vec::new();
            for mut m in elems {
                META.with(|c| *c.borrow_mut() = Some(m.meta.clone()));
                let mut slot =
                    KeySlot { decoded: &mut m.elem.key, raw: keys[i], serde: &b.key_serde, undecodable: false };
                let out = call(&mut slot, m.elem.value);
                undecodable |= slot.undecodable;
                let after = META.with(|c| c.borrow_mut().take()).unwrap_or_else(|| m.meta.clone());
                let meta = if step.metadata { after } else { m.meta };
                let mut outs = Vec::new();
                if settle(&mut outs, &mut failed, s, i, m.elem.key, out) {
                    break;
                }
                next.extend(outs.into_iter().map(|elem| Meta { elem, meta: meta.clone() }));
            }
            elems = next;
            if !failed.is_empty() {
                break;
            }
        }
        // Encode with the last step's output types; a record's outputs are all or nothing.
        let mut encoded: Vec<Encoded> = Vec::new();
        if failed.is_empty() {
            for m in &elems {
                let k = if changes_keys {
                    let mut buf = Vec::new();
                    let r = match &m.elem.key {
                        Some(k) => {
                            (last.encode_key)(k.as_ref() as &(dyn std::any::Any + Send + Sync), key_serde, &mut buf)
                        }
                        None => Ok(keys[i].map(|raw| buf.extend_from_slice(raw)).is_some()),
                    };
                    match r {
                        Ok(true) => Some(buf),
                        Ok(false) => None,
                        Err(e) => {
                            failed.insert(i, (steps.len() - 1, format!("the key does not encode: {e}")));
                            break;
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
                        break;
                    }
                };
                encoded.push((k, v, m.meta.clone()));
            }
        }
        if let Some((step, message)) = failed.remove(&i) {
            failures.push(pb::RecordFailure { index: i as i32, step: step as i32, message, kind: kind(undecodable) });
            continue;
        }
        result.output_counts[i] = encoded.len() as i32;
        for (k, v, meta) in encoded {
            if changes_keys {
                push(&mut result.key_lengths, &mut result.keys, k.as_deref());
            }
            push(&mut result.value_lengths, &mut result.values, v.as_deref());
            if !writes {
                continue;
            }
            result.output_timestamps.push(meta.timestamp);
            if meta.headers == input.headers {
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
    result.failures = failures;
    result
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
