//! The host contract's test vectors (docs/design/host-vectors.md): every
//! vector of conformance/vectors, run through the [`Executor`] with the
//! catalogue functions it names, must give the vector's result byte for
//! byte (failure messages aside, which must contain what the vector says).
//!
//! The catalogue functions are bound here over [`Value`] with the
//! semantics of conformance/README.md, through the same step and fold
//! wrappers the DSL registers (a function that fails panics, as a user's
//! closure would).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;
use serde_json::Value as J;

use super::{Executor, Fold, Func, StepFn, ValueJoiner};
use crate::dsl::{
    action_step, flat_map_step, flat_map_values_step, flat_map_values_with_key_step, key_step, map_step,
    map_values_step, map_values_with_key_step, predicate_step,
};
use crate::fold::{Aggregate, StreamReduce, TableReduce};
use crate::pb;
use crate::processor::{
    self, FixedKeyProcessor, FixedKeyProcessorContext, FixedKeyRecord, KeyValueStore, Processor, ProcessorContext,
    ProcessorResult, PunctuationType, Record, VersionedKeyValueStore, VersionedRecord,
};
use crate::serdes::Value;

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn from_base64(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let d = B64.iter().position(|&x| x == c).unwrap_or_else(|| panic!("not base64: {c}")) as u32;
        acc = (acc << 6) | d;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// A catalogue reference: "upper" or {"name": "prefix", "arg": "x"}.
struct FnRef {
    name: String,
    arg: String,
}

impl FnRef {
    fn of(j: &J) -> FnRef {
        match j {
            J::String(s) => FnRef { name: s.clone(), arg: String::new() },
            J::Object(m) => FnRef {
                name: m["name"].as_str().expect("a name").to_owned(),
                arg: match &m.get("arg") {
                    Some(J::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                },
            },
            other => panic!("a function reference: {other}"),
        }
    }
}

fn text(f: &str, v: &Value) -> String {
    v.as_str().unwrap_or_else(|| panic!("{f}: want a string, got {v:?}")).to_owned()
}

fn long(f: &str, v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("{f}: want a long, got {v:?}"))
}

/// raise_on's check of the value its role hands on.
fn check(f: &FnRef, v: &Value) {
    if f.name == "raise_on" && v.as_str() == Some(f.arg.as_str()) {
        panic!("conformance: raise_on {}", f.arg);
    }
}

fn concat(sep: &str, agg: &Value, v: &Value, aggregator: bool) -> Value {
    let (a, b) = (text("concat", agg), text("concat", v));
    if aggregator && a.is_empty() {
        return Value::from(b);
    }
    Value::from(format!("{a}{sep}{b}"))
}

fn mapper(f: FnRef) -> impl Fn(Value) -> Value + Send + Sync + 'static {
    move |v| match f.name.as_str() {
        "upper" | "lower" | "prefix" if matches!(v, Value::Null) => Value::Null,
        "upper" => Value::from(text("upper", &v).to_uppercase()),
        "lower" => Value::from(text("lower", &v).to_lowercase()),
        "prefix" => Value::from(format!("{}{}", f.arg, text("prefix", &v))),
        "length" => Value::Long(text("length", &v).chars().count() as i64),
        "identity" => v,
        "raise_on" => {
            check(&f, &v);
            v
        }
        other => panic!("{other} is not a mapper of the vectors' catalogue"),
    }
}

fn flat(f: FnRef) -> impl Fn(Value) -> Vec<Value> + Send + Sync + 'static {
    move |v| match f.name.as_str() {
        "split_words" => text("split_words", &v).split_whitespace().map(Value::from).collect(),
        "raise_on" => {
            check(&f, &v);
            vec![v]
        }
        other => panic!("{other} is not a flat mapper of the vectors' catalogue"),
    }
}

fn predicate(f: FnRef) -> impl Fn(&Value, &Value) -> bool + Send + Sync + 'static {
    move |k, v| match f.name.as_str() {
        "is_long_word" => !matches!(v, Value::Null) && text("is_long_word", v).chars().count() >= 5,
        "key_starts_with" => !matches!(k, Value::Null) && text("key_starts_with", k).starts_with(&f.arg),
        "value_contains" => !matches!(v, Value::Null) && text("value_contains", v).contains(&f.arg),
        "raise_on" => {
            check(&f, v);
            true
        }
        other => panic!("{other} is not a predicate of the vectors' catalogue"),
    }
}

fn key_selector(f: FnRef) -> impl Fn(&Value, &Value) -> Value + Send + Sync + 'static {
    move |k, v| match f.name.as_str() {
        "first_word_key" => text("first_word_key", v).split_whitespace().next().map_or(Value::Null, Value::from),
        "value_as_key" => v.clone(),
        "raise_on" => {
            check(&f, v);
            k.clone()
        }
        other => panic!("{other} is not a key selector of the vectors' catalogue"),
    }
}

fn kv_mapper(f: FnRef) -> impl Fn(&Value, Value) -> (Value, Value) + Send + Sync + 'static {
    move |k, v| match f.name.as_str() {
        "swap" => (v, k.clone()),
        "word_one" => (v, Value::Long(1)),
        other => panic!("{other} is not a key-value mapper of the vectors' catalogue"),
    }
}

fn mapper_with_key(f: FnRef) -> impl Fn(&Value, Value) -> Value + Send + Sync + 'static {
    move |k, _| match f.name.as_str() {
        "key_as_value" => k.clone(),
        other => panic!("{other} is not a mapper with key of the vectors' catalogue"),
    }
}

fn flat_with_key(f: FnRef) -> impl Fn(&Value, Value) -> Vec<Value> + Send + Sync + 'static {
    move |k, v| match f.name.as_str() {
        "key_and_value" => vec![k.clone(), v],
        "nothing" => vec![],
        other => panic!("{other} is not a flat mapper with key of the vectors' catalogue"),
    }
}

fn flat_kv(f: FnRef) -> impl Fn(&Value, Value) -> Vec<(Value, Value)> + Send + Sync + 'static {
    move |k, v| match f.name.as_str() {
        "swap_and_keep" => vec![(v.clone(), k.clone()), (k.clone(), v)],
        "nothing" => vec![],
        other => panic!("{other} is not a flat key-value mapper of the vectors' catalogue"),
    }
}

/// A reducer, or (aggregator) an aggregator's (aggregate, value) -> aggregate.
fn reducer(f: FnRef, aggregator: bool) -> impl Fn(Value, Value) -> Value + Send + Sync + 'static {
    move |agg, v| match f.name.as_str() {
        "add" => Value::Long(long("add", &agg) + long("add", &v)),
        "subtract" => Value::Long(long("subtract", &agg) - long("subtract", &v)),
        "concat" => concat(&f.arg, &agg, &v, aggregator),
        "raise_on" => {
            check(&f, &v);
            v
        }
        other => panic!("{other} is not a reducer or aggregator of the vectors' catalogue"),
    }
}

fn initializer(f: &FnRef) -> fn() -> Value {
    match f.name.as_str() {
        "zero" => || Value::Long(0),
        "empty_string" => || Value::from(""),
        other => panic!("{other} is not an initializer of the vectors' catalogue"),
    }
}

fn merger(f: FnRef) -> impl Fn(&Value, Value, Value) -> Value + Send + Sync + 'static {
    move |_, a, b| match f.name.as_str() {
        "add" => Value::Long(long("add", &a) + long("add", &b)),
        other => panic!("{other} is not a merger of the vectors' catalogue"),
    }
}

fn joiner(f: FnRef) -> impl Fn(Value, Option<Value>) -> Value + Send + Sync + 'static {
    let null_text = |x: Value| if matches!(x, Value::Null) { Value::from("null") } else { x };
    move |v, t| match f.name.as_str() {
        "concat" => concat(&f.arg, &null_text(v), &null_text(t.unwrap_or(Value::Null)), false),
        other => panic!("{other} is not a joiner of the vectors' catalogue"),
    }
}

/// The functions a vector registers, as the DSL registers them: a step's
/// wrapper follows its operation in the bundle (filter or filter_not, peek
/// or foreach); a fold's parts are its step's tokens.
fn functions(refs: &HashMap<u32, FnRef>, b: &pb::Bundle) -> HashMap<u32, Func> {
    type V = Value;
    let take = |t: u32| refs.get(&t).map(|f| FnRef { name: f.name.clone(), arg: f.arg.clone() });
    let mut out = HashMap::new();
    for st in &b.steps {
        let Some(f) = take(st.token) else { continue };
        let op = pb::Operation::try_from(st.operation).expect("an operation");
        let step: StepFn = match op {
            pb::Operation::MapValues => map_values_step::<V, V, V>(mapper(f)),
            pb::Operation::FlatMapValues => flat_map_values_step::<V, V, V, _>(flat(f)),
            pb::Operation::Filter => predicate_step::<V, V>(false, predicate(f)),
            pb::Operation::FilterNot => predicate_step::<V, V>(true, predicate(f)),
            pb::Operation::SelectKey => key_step::<V, V, V>(key_selector(f)),
            pb::Operation::Map => map_step::<V, V, V, V>(kv_mapper(f)),
            pb::Operation::FlatMap => flat_map_step::<V, V, V, V, _>(flat_kv(f)),
            pb::Operation::MapValuesWithKey => map_values_with_key_step::<V, V, V>(mapper_with_key(f)),
            pb::Operation::FlatMapValuesWithKey => flat_map_values_with_key_step::<V, V, V, _>(flat_with_key(f)),
            pb::Operation::Peek | pb::Operation::Foreach => {
                assert_eq!(f.name, "noop", "the vectors' actions");
                action_step::<V, V>(op == pb::Operation::Peek, |_, _| {})
            }
            pb::Operation::Reduce if st.subtractor_token != 0 => {
                let sub = take(st.subtractor_token).expect("the subtractor");
                out.insert(st.subtractor_token, Func::Part);
                let fold = Fold(TableReduce::new(reducer(f, false), reducer(sub, false)));
                out.insert(st.token, Func::Fold(Arc::new(fold)));
                continue;
            }
            pb::Operation::Reduce => {
                out.insert(st.token, Func::Fold(Arc::new(Fold(StreamReduce::<V, _>::new(reducer(f, false))))));
                continue;
            }
            pb::Operation::Aggregate => {
                let init = initializer(&take(st.initializer_token).expect("the initializer"));
                let add = reducer(f, true);
                let sub = take(st.subtractor_token).map(|s| {
                    let s = reducer(s, true);
                    Arc::new(move |_: &V, v: V, agg: V| s(agg, v)) as crate::fold::Aggregator<V, V, V>
                });
                let mut a = Aggregate::<V, V, V>::new(init, move |_, v, agg| add(agg, v), sub);
                if let Some(m) = take(st.merger_token) {
                    a = a.with_merger(merger(m));
                }
                for part in [st.initializer_token, st.subtractor_token, st.merger_token] {
                    if part != 0 {
                        out.insert(part, Func::Part);
                    }
                }
                out.insert(st.token, Func::Fold(Arc::new(Fold(a))));
                continue;
            }
            pb::Operation::ValueJoin => {
                let j = joiner(f);
                out.insert(st.token, Func::Join(Arc::new(ValueJoiner::<V, V, V>::new(move |v, t| Ok(j(v, t))))));
                continue;
            }
            other => panic!("the vectors have no {other:?} step"),
        };
        out.insert(st.token, Func::Step(Arc::new(step)));
    }
    out
}

// The catalogue's processors (docs/design/host-vectors.md, "Processors"),
// over Value keys and values; a store is the step's first.

type V = Value;

struct CountPerKey(String);
impl Processor<V, V, V, V> for CountPerKey {
    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        let store: KeyValueStore<V, V> = ctx.get_state_store(&self.0)?;
        let n = store.get(&r.key)?.and_then(|v| v.as_i64()).unwrap_or(0) + 1;
        store.put(&r.key, &Value::Long(n))?;
        ctx.forward(r.with_value(Value::Long(n)))?;
        Ok(())
    }
}

struct ForwardTo(String);
impl Processor<V, V, V, V> for ForwardTo {
    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        Ok(ctx.forward_to(&self.0, r)?)
    }
}

struct Restamp;
impl FixedKeyProcessor<V, V, V> for Restamp {
    fn process(&mut self, ctx: &mut FixedKeyProcessorContext<V, V>, r: FixedKeyRecord<V, V>) -> ProcessorResult {
        let mut headers = r.headers.clone();
        headers.push(("seen".to_owned(), Some(b"1".to_vec())));
        let ts = r.timestamp + 1000;
        Ok(ctx.forward(r.with_timestamp(ts).with_headers(headers))?)
    }
}

struct SweepEvery(String, u64);
impl Processor<V, V, V, V> for SweepEvery {
    fn init(&mut self, ctx: &mut ProcessorContext<V, V>) -> ProcessorResult {
        ctx.schedule(Duration::from_millis(self.1), PunctuationType::StreamTime, |p: &mut SweepEvery, ctx, t| {
            let store: KeyValueStore<V, V> = ctx.get_state_store(&p.0)?;
            for (k, v) in store.all()? {
                ctx.forward(Record::new(k.clone(), v, t))?;
                store.delete(&k)?;
            }
            Ok(())
        })?;
        Ok(())
    }
    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        let store: KeyValueStore<V, V> = ctx.get_state_store(&self.0)?;
        let n = store.get(&r.key)?.and_then(|v| v.as_i64()).unwrap_or(0) + 1;
        Ok(store.put(&r.key, &Value::Long(n))?)
    }
}

struct TickEvery(u64);
impl Processor<V, V, V, V> for TickEvery {
    fn init(&mut self, ctx: &mut ProcessorContext<V, V>) -> ProcessorResult {
        ctx.schedule(Duration::from_millis(self.0), PunctuationType::WallClockTime, |_: &mut TickEvery, ctx, t| {
            Ok(ctx.forward(Record::new(Value::from("tick"), Value::Long(t), t))?)
        })?;
        Ok(())
    }
    fn process(&mut self, _: &mut ProcessorContext<V, V>, _: Record<V, V>) -> ProcessorResult {
        Ok(())
    }
}

struct ForwardThenFail(String);
impl Processor<V, V, V, V> for ForwardThenFail {
    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        let fail = r.value.as_str() == Some(self.0.as_str());
        ctx.forward(r)?;
        if fail {
            return Err(format!("forward_then_fail {}", self.0).into());
        }
        Ok(())
    }
}

/// versioned_history: a value "delete" deletes its key as of its timestamp
/// and forwards "delete <deleted> latest <get(key)>"; any other is put and
/// forwards "put <put's answer> latest <get(key)> asof <get(key, ts - 1)>".
struct VersionedHistory(String);
impl Processor<V, V, V, V> for VersionedHistory {
    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        let store: VersionedKeyValueStore<V, V> = ctx.get_state_store(&self.0)?;
        let show = |v: Option<VersionedRecord<V>>| match v {
            None => "null".to_owned(),
            Some(v) => format!("{}@{}", v.value.as_str().unwrap_or("?"), v.timestamp),
        };
        let ts = r.timestamp;
        let out = if r.value.as_str() == Some("delete") {
            let d = show(store.delete(&r.key, ts)?);
            format!("delete {d} latest {}", show(store.get(&r.key)?))
        } else {
            let code = store.put(&r.key, &r.value, ts)?;
            let latest = show(store.get(&r.key)?);
            format!("put {code} latest {latest} asof {}", show(store.get_as_of(&r.key, ts - 1)?))
        };
        Ok(ctx.forward(r.with_value(Value::from(out.as_str())))?)
    }
}

/// A catalogue processor's supplier, for a step with these stores.
fn processor_of(f: FnRef, stores: &[String]) -> Func {
    let store = stores.first().cloned().unwrap_or_default();
    let ms = || f.arg.parse::<u64>().expect("an interval in ms");
    Func::Processor(match f.name.as_str() {
        "count_per_key" => processor::supplier(move || CountPerKey(store.clone())),
        "forward_to" => processor::supplier(move || ForwardTo(f.arg.clone())),
        "restamp" => processor::fixed_supplier(|| Restamp),
        "sweep_every" => {
            let ms = ms();
            processor::supplier(move || SweepEvery(store.clone(), ms))
        }
        "tick_every" => {
            let ms = ms();
            processor::supplier(move || TickEvery(ms))
        }
        "forward_then_fail" => processor::supplier(move || ForwardThenFail(f.arg.clone())),
        "versioned_history" => processor::supplier(move || VersionedHistory(store.clone())),
        other => panic!("{other} is not a processor of the vectors' catalogue"),
    })
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/vectors")
}

#[test]
fn every_vector_gives_its_result() {
    let mut files: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("conformance/vectors")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.iter().any(|p| p.ends_with("chains.json")), "no vectors in {files:?}");
    let mut ran = 0;
    let mut wrong = Vec::new();
    let mut skipped = Vec::new();
    let mut processors = 0;
    for path in files {
        let file: J = serde_json::from_slice(&std::fs::read(&path).expect("readable")).expect("JSON");
        // A file declares the host features its vectors need; this host
        // runs those whose features it declares to the engine.
        let missing: Vec<&str> = file["requires"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(J::as_str)
            .filter(|f| !crate::app::HOST_FEATURES.contains(f))
            .collect();
        if !missing.is_empty() {
            skipped.push(format!("{} (needs {})", path.display(), missing.join(", ")));
            continue;
        }
        for v in file["vectors"].as_array().expect("vectors") {
            let name = format!("{}/{}", path.file_stem().unwrap().to_string_lossy(), v["name"].as_str().unwrap());
            if v.get("exchanges").is_some() {
                ran += 1;
                processors += 1;
                wrong.extend(processor_vector(&name, v));
                continue;
            }
            let refs: HashMap<u32, FnRef> = v["functions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["token"].as_u64().unwrap() as u32, FnRef::of(&f["fn"])))
                .collect();
            let bundle = pb::Bundle::decode(from_base64(v["bundle"].as_str().unwrap()).as_slice()).expect("a bundle");
            let ex = Executor::new(functions(&refs, &bundle));
            let mut got = ex.process(&bundle);
            ran += 1;
            let want_failures = v.get("failures").and_then(J::as_array).cloned().unwrap_or_default();
            let kinds: Vec<(i32, i32, i32)> = got.failures.iter().map(|f| (f.index, f.step, f.kind)).collect();
            let want_kinds: Vec<(i32, i32, i32)> = want_failures
                .iter()
                .map(|f| {
                    let kind = match f["kind"].as_str().unwrap() {
                        "deserialization" => pb::record_failure::Kind::Deserialization,
                        _ => pb::record_failure::Kind::Processing,
                    };
                    (f["index"].as_i64().unwrap() as i32, f["step"].as_i64().unwrap() as i32, kind as i32)
                })
                .collect();
            if kinds != want_kinds {
                wrong.push(format!("{name}: failures {kinds:?}, want {want_kinds:?}"));
                continue;
            }
            for (f, w) in got.failures.iter_mut().zip(&want_failures) {
                let contains = w["message_contains"].as_str().unwrap();
                if !f.message.contains(contains) {
                    wrong.push(format!("{name}: failure {}: {:?} does not contain {contains:?}", f.index, f.message));
                }
                f.message.clear();
            }
            let want = from_base64(v["result"].as_str().unwrap());
            if got.encode_to_vec() != want {
                wrong.push(format!(
                    "{name}: result {:?}, want {:?}",
                    got,
                    pb::BundleResult::decode(want.as_slice()).expect("a result")
                ));
            }
        }
    }
    assert!(processors > 0, "no processor vectors ran");
    assert!(skipped.is_empty(), "vector files for host features this host lacks: {skipped:?}");
    assert!(wrong.is_empty(), "{} of {ran} vectors differ:\n{}", wrong.len(), wrong.join("\n"));
}

/// A processor vector: one fresh host (its instances live across the
/// exchanges) runs each bundle, its Reads answered from the exchange's
/// `reads` in order, each request checked byte for byte (session id
/// cleared). Answers what differs.
fn processor_vector(name: &str, v: &J) -> Vec<String> {
    let exchanges = v["exchanges"].as_array().expect("exchanges");
    let b64 = |j: &J| from_base64(j.as_str().expect("base64"));
    let first = pb::Bundle::decode(b64(&exchanges[0]["bundle"]).as_slice()).expect("a bundle");
    let functions: HashMap<u32, Func> = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let token = f["token"].as_u64().unwrap() as u32;
            let stores = first.steps.iter().find(|s| s.token == token).map(|s| s.stores.clone()).unwrap_or_default();
            (token, processor_of(FnRef::of(&f["fn"]), &stores))
        })
        .collect();
    type Script = Arc<Mutex<(Vec<(Vec<u8>, Vec<u8>)>, Vec<String>)>>;
    let script: Script = Arc::default();
    let mut ex = Executor::new(functions);
    let s = script.clone();
    let who = name.to_owned();
    ex.read = Some(Arc::new(move |mut req: pb::ReadRequest| {
        req.session_id.clear();
        let mut s = s.lock().unwrap();
        let got = req.encode_to_vec();
        if s.0.is_empty() {
            s.1.push(format!("{who}: a Read beyond the vector's: {req:?}"));
            return Err(crate::Error::internal("no such Read in the vector"));
        }
        let (want, resp) = s.0.remove(0);
        if got != want {
            s.1.push(format!("{who}: Read {req:?}, want {:?}", pb::ReadRequest::decode(want.as_slice())));
        }
        Ok(pb::ReadResponse::decode(resp.as_slice()).expect("a read response"))
    }));
    let mut wrong = Vec::new();
    for (i, x) in exchanges.iter().enumerate() {
        script.lock().unwrap().0 =
            x["reads"].as_array().into_iter().flatten().map(|r| (b64(&r["request"]), b64(&r["response"]))).collect();
        let bundle = pb::Bundle::decode(b64(&x["bundle"]).as_slice()).expect("a bundle");
        let mut got = ex.process(&bundle);
        let mut s = script.lock().unwrap();
        wrong.append(&mut s.1);
        if !s.0.is_empty() {
            wrong.push(format!("{name} exchange {i}: {} Reads the vector has and the host did not make", s.0.len()));
        }
        let want_failures = x.get("failures").and_then(J::as_array).cloned().unwrap_or_default();
        let kinds: Vec<(i32, i32)> = got.failures.iter().map(|f| (f.index, f.step)).collect();
        let want_kinds: Vec<(i32, i32)> = want_failures
            .iter()
            .map(|f| (f["index"].as_i64().unwrap() as i32, f["step"].as_i64().unwrap() as i32))
            .collect();
        if kinds != want_kinds {
            wrong.push(format!("{name} exchange {i}: failures {:?}, want {want_kinds:?}", got.failures));
            continue;
        }
        for (f, w) in got.failures.iter_mut().zip(&want_failures) {
            let contains = w["message_contains"].as_str().unwrap();
            if !f.message.contains(contains) {
                wrong.push(format!("{name} exchange {i}: {:?} does not contain {contains:?}", f.message));
            }
            f.message.clear();
        }
        let want = b64(&x["result"]);
        if got.encode_to_vec() != want {
            wrong.push(format!(
                "{name} exchange {i}: result {:?}, want {:?}",
                got,
                pb::BundleResult::decode(want.as_slice()).expect("a result")
            ));
        }
    }
    wrong
}
