//! The host's processor mode on hand-made bundles: what the vectors do not
//! pin (init failures, a panic keeping earlier ops, unknown schedules and
//! children, a read with no engine to ask).

use std::collections::HashMap;
use std::time::Duration;

use super::{supplier, KeyValueStore, Processor, ProcessorContext, ProcessorResult, PunctuationType, Record};
use crate::bundle::{Executor, Func};
use crate::pb;

type Ctx = ProcessorContext<String, String>;

fn bundle(values: &[&str], inits: bool, after: Vec<pb::BundleEntry>) -> pb::Bundle {
    let mut b = pb::Bundle {
        id: 7,
        task: "0_0".into(),
        topic: "in".into(),
        key_serde: "string".into(),
        value_serde: "string".into(),
        steps: vec![pb::Step {
            operation: pb::Operation::Process as i32,
            token: 1,
            node: "p".into(),
            stores: vec!["s".into()],
            children: vec!["a".into(), "b".into()],
            ..Default::default()
        }],
        stores: vec![pb::StoreView {
            store: "s".into(),
            key_serde: "string".into(),
            value_serde: "string".into(),
            r#type: pb::StoreType::KeyValue as i32,
            ..Default::default()
        }],
        after,
        ..Default::default()
    };
    if inits {
        b.inits = vec![pb::BundleEntry { kind: pb::bundle_entry::Kind::Init as i32, ..Default::default() }];
    }
    for (i, v) in values.iter().enumerate() {
        b.key_lengths.push(1);
        b.keys.push(b'k');
        b.value_lengths.push(v.len() as i32);
        b.values.extend_from_slice(v.as_bytes());
        b.offsets.push(i as i64);
        b.timestamps.push(i as i64);
    }
    b
}

fn executor<P: Processor<String, String, String, String>>(make: fn() -> P) -> Executor {
    let mut f = HashMap::new();
    f.insert(1, Func::Processor(supplier::<P, String, String, String, String>(make)));
    Executor::new(f)
}

fn messages(r: &pb::BundleResult) -> Vec<(i32, String)> {
    r.failures.iter().map(|f| (f.index, f.message.clone())).collect()
}

/// Writes the value, forwards it to the child it names, then panics on "boom".
struct Writer;
impl Processor<String, String, String, String> for Writer {
    fn process(&mut self, ctx: &mut Ctx, r: Record<String, String>) -> ProcessorResult {
        let s: KeyValueStore<String, String> = ctx.get_state_store("s")?;
        s.put(&r.key, &r.value)?;
        if r.value == "boom" {
            panic!("boom at {}", ctx.record_metadata().map_or(-1, |m| m.offset));
        }
        let child = r.value.clone();
        ctx.forward_to(&child, r)?;
        Ok(())
    }
}

#[test]
fn a_failed_record_keeps_its_earlier_ops_and_names_what_failed() {
    let ex = executor(|| Writer);
    let r = ex.process(&bundle(&["a", "boom", "nowhere"], false, vec![]));
    assert_eq!(r.op_counts, [2, 1, 1], "{r:?}");
    let kinds: Vec<i32> = r.op_kinds.clone();
    let (put, fwd) = (pb::OpKind::Put as i32, pb::OpKind::Forward as i32);
    assert_eq!(kinds, [put, fwd, put, put]);
    assert_eq!(r.op_targets, [0, 1, 0, 0]);
    let m = messages(&r);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0].0, 1);
    assert!(m[0].1.contains("boom at 1"), "{m:?}");
    assert_eq!(m[1].0, 2);
    assert!(m[1].1.contains("forward: node p has no child \"nowhere\" (children: [a, b])"), "{m:?}");
}

#[test]
fn a_read_the_bundle_did_not_bring_needs_an_engine() {
    struct Reader;
    impl Processor<String, String, String, String> for Reader {
        fn process(&mut self, ctx: &mut Ctx, r: Record<String, String>) -> ProcessorResult {
            let s: KeyValueStore<String, String> = ctx.get_state_store("s")?;
            s.get(&r.key)?;
            Ok(())
        }
    }
    let r = executor(|| Reader).process(&bundle(&["x"], false, vec![]));
    let m = messages(&r);
    assert!(m[0].1.contains("store \"s\": the bundle did not bring what was read"), "{m:?}");
}

struct FailsInit;
impl Processor<String, String, String, String> for FailsInit {
    fn init(&mut self, _: &mut Ctx) -> ProcessorResult {
        Err("no config".into())
    }
    fn process(&mut self, _: &mut Ctx, _: Record<String, String>) -> ProcessorResult {
        Ok(())
    }
}

#[test]
fn an_init_that_fails_fails_its_entry_and_then_every_record() {
    let ex = executor(|| FailsInit);
    let r = ex.process(&bundle(&["x", "y"], true, vec![]));
    assert_eq!(r.op_counts, [0, 0, 0]);
    let m = messages(&r);
    assert_eq!(m.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(m[0].1.contains("no config"), "{m:?}");
    assert!(m[1].1.contains("init of node p in task 0_0 failed: no config"), "{m:?}");
}

struct Ticker;
impl Processor<String, String, String, String> for Ticker {
    fn init(&mut self, ctx: &mut Ctx) -> ProcessorResult {
        let c = ctx.schedule(Duration::from_millis(10), PunctuationType::StreamTime, |_: &mut Ticker, ctx, t| {
            Ok(ctx.forward(Record::new("t".to_owned(), t.to_string(), t))?)
        })?;
        // A second schedule, cancelled at once: SCHEDULE then CANCEL.
        ctx.schedule(Duration::from_millis(5), PunctuationType::WallClockTime, |_: &mut Ticker, _, _| Ok(()))?.cancel();
        drop(c);
        Ok(())
    }
    fn process(&mut self, _: &mut Ctx, _: Record<String, String>) -> ProcessorResult {
        Ok(())
    }
}

#[test]
fn schedules_count_from_one_and_a_punctuation_of_none_fails_naming_it() {
    let ex = executor(|| Ticker);
    let r = ex.process(&bundle(&[], true, vec![]));
    let (s, c) = (pb::OpKind::Schedule as i32, pb::OpKind::Cancel as i32);
    assert_eq!(r.op_kinds, [s, s, c]);
    assert_eq!(r.op_schedules, [1, 2, 2]);
    assert_eq!(r.op_targets, [1, 2, 0]);
    assert_eq!(r.op_timestamps, [10, 5, 0]);
    let punctuate = |schedule| pb::BundleEntry {
        kind: pb::bundle_entry::Kind::PunctuateStreamTime as i32,
        schedule,
        time_ms: 30,
        ..Default::default()
    };
    let r = ex.process(&bundle(&[], false, vec![punctuate(1), punctuate(2)]));
    assert_eq!(r.op_counts, [1, 0]);
    assert_eq!(r.op_timestamps, [30]);
    let m = messages(&r);
    assert_eq!(m.len(), 1);
    assert!(m[0].1.contains("punctuate: node p in task 0_0 has no schedule 2 on this host"), "{m:?}");
    // A close drops the instance and its schedules.
    let close = pb::BundleEntry { kind: pb::bundle_entry::Kind::Close as i32, ..Default::default() };
    let r = ex.process(&bundle(&[], false, vec![close, punctuate(1)]));
    assert_eq!(messages(&r).len(), 1, "{r:?}");
}
