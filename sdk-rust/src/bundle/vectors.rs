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
use std::sync::Arc;

use prost::Message;
use serde_json::Value as J;

use super::{Executor, Fold, Func, StepFn, ValueJoiner};
use crate::dsl::{
    action_step, flat_map_step, flat_map_values_step, flat_map_values_with_key_step, key_step, map_step,
    map_values_step, map_values_with_key_step, predicate_step,
};
use crate::fold::{Aggregate, StreamReduce, TableReduce};
use crate::pb;
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

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/vectors")
}

#[test]
fn every_vector_gives_its_result() {
    let mut files: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("conformance/vectors")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        // The processors family (Processor API, issue 24) is for hosts that
        // declare the "processors" feature; this SDK does not yet, so the
        // engine refuses a processor topology from it at Build.
        .filter(|p| !p.ends_with("processors.json"))
        .collect();
    files.sort();
    assert!(files.iter().any(|p| p.ends_with("chains.json")), "no vectors in {files:?}");
    let mut ran = 0;
    let mut wrong = Vec::new();
    for path in files {
        let file: J = serde_json::from_slice(&std::fs::read(&path).expect("readable")).expect("JSON");
        for v in file["vectors"].as_array().expect("vectors") {
            let name = format!("{}/{}", path.file_stem().unwrap().to_string_lossy(), v["name"].as_str().unwrap());
            let refs: HashMap<u32, FnRef> = v["functions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["token"].as_u64().unwrap() as u32, FnRef::of(&f["fn"])))
                .collect();
            let bundle = pb::Bundle::decode(from_base64(v["bundle"].as_str().unwrap()).as_slice()).expect("a bundle");
            let ex = Executor { functions: Arc::new(functions(&refs, &bundle)), async_timeout: super::ASYNC_TIMEOUT };
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
    assert!(wrong.is_empty(), "{} of {ran} vectors differ:\n{}", wrong.len(), wrong.join("\n"));
}
