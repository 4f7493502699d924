//! The conformance executor for Rust: builds one case with the polystreams
//! crate's public API, runs it, and reports to the runner as JSON lines on
//! stdout.
//!
//! Usage: polystreams-conformance SPEC.json (the runner writes the spec: the
//! case, the engine's URL, the application.id, the topic prefix and the
//! configuration). Events: built (with describe), build_error (step, code,
//! message), started, failed (code, message, topic, partition, offset,
//! node), dropped_records (count, when told to stop a started app),
//! stopped. It stops its application when stdin says "stop" or closes. It
//! asserts nothing: the runner owns every assertion.
//!
//! Cases choose serdes at run time, so every stream here is typed
//! `KStream<Value, Value>`: polystreams' `Value` decodes whatever serde the
//! engine names, and each step passes the case's serdes as `Options`. The
//! catalogue's functions fail a record by panicking, as a Rust closure does.
//! A windowed aggregation's table is keyed by `Windowed<Value>`; `Value`
//! keeps a windowed key as its bytes, so `to_stream` and `to` write Kafka's
//! windowed key encoding, which the runner decodes into
//! `{"key", "start", "end"}`.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use polystreams::processor::{
    self as proc, FixedKeyProcessor, FixedKeyProcessorContext, FixedKeyRecord, KeyValueStore, Processor,
    ProcessorContext, ProcessorResult, PunctuationType, Record, StoreBuilder, Stores,
};
use polystreams::{
    App, BufferConfig, CogroupedKStream, Config, EmitStrategy, Error, GlobalKTable, JoinWindows, Joiner,
    KGroupedStream, KGroupedTable, KStream, KTable, Materialized, Options, Printed, Reducer, Repartitioned,
    SessionWindowedCogroupedKStream, SessionWindowedKStream, SessionWindows, SlidingWindows,
    TimeWindowedCogroupedKStream, TimeWindowedKStream, TimeWindows, TimestampExtractor, TransformResult,
    TransformerContext, Value, ValueTransformerWithKey, Windowed,
};
use serde_json::{json, Map, Value as J};

type R<T> = Result<T, String>;

fn emit(event: J) {
    println!("{event}");
}

// The catalogue (conformance/README.md defines each function; the runner's
// catalogue.go is the reference). Functions conformance/catalogue.json
// defines by an expr are built from it; the others are written here.

const CATALOGUE: &str = include_str!("../../../catalogue.json");

/// The expr conformance/catalogue.json defines `name` by, if any.
fn expr_of(name: &str) -> Option<J> {
    thread_local! {
        static FUNCTIONS: J = serde_json::from_str::<J>(CATALOGUE).expect("catalogue.json is JSON")["functions"].clone();
    }
    FUNCTIONS.with(|f| f.get(name).and_then(|e| e.get("expr")).cloned())
}

/// What an expr evaluates to: a value, a list of values, or a boolean.
enum Ev {
    One(Value),
    Many(Vec<Value>),
    Bool(bool),
}

/// A catalogue expr's value (var, const, list, not_null) for key k and value v.
fn eval(e: &J, k: &Value, v: &Value) -> R<Ev> {
    let (op, x) =
        e.as_object().and_then(|m| m.iter().next()).ok_or_else(|| format!("catalogue expr {e}: not an operation"))?;
    Ok(match op.as_str() {
        "var" => Ev::One(match x.as_str() {
            Some("key") => k.clone(),
            Some("value") => v.clone(),
            _ => return Err(format!("catalogue expr: no variable {x}")),
        }),
        "const" => match x {
            J::Bool(b) => Ev::Bool(*b),
            J::Number(n) if n.is_i64() => Ev::One(Value::Long(n.as_i64().unwrap_or_default())),
            J::String(s) => Ev::One(Value::from(s.as_str())),
            other => Ev::One(Value::from_json(other.clone())),
        },
        "list" => Ev::Many(
            x.as_array()
                .ok_or("catalogue expr: list of no list")?
                .iter()
                .map(|i| match eval(i, k, v)? {
                    Ev::One(v) => Ok(v),
                    _ => Err("catalogue expr: a list holds values".to_owned()),
                })
                .collect::<R<_>>()?,
        ),
        "not_null" => match eval(x, k, v)? {
            Ev::One(v) => Ev::Bool(!v.is_null()),
            _ => return Err("catalogue expr: not_null of no value".to_owned()),
        },
        other => return Err(format!("catalogue expr: unknown operation {other}")),
    })
}

fn one(e: R<Ev>) -> R<Value> {
    match e? {
        Ev::One(v) => Ok(v),
        _ => Err("catalogue expr: want a value".to_owned()),
    }
}

fn many(e: R<Ev>) -> R<Vec<Value>> {
    match e? {
        Ev::Many(v) => Ok(v),
        _ => Err("catalogue expr: want a list".to_owned()),
    }
}

fn boolean(e: R<Ev>) -> R<bool> {
    match e? {
        Ev::Bool(b) => Ok(b),
        _ => Err("catalogue expr: want a boolean".to_owned()),
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::String(_) | Value::Json(J::String(_)) => "a string",
        Value::Long(_) | Value::Integer(_) => "an integer",
        Value::Json(J::Number(n)) if n.is_i64() => "an integer",
        Value::Double(_) | Value::Json(J::Number(_)) => "a number",
        Value::Bytes(_) => "bytes",
        Value::Json(J::Array(_)) => "an array",
        Value::Json(J::Object(_)) => "an object",
        Value::Json(J::Bool(_)) => "a boolean",
        Value::Null | Value::Json(J::Null) => "null",
    }
}

fn s<'a>(f: &str, v: &'a Value) -> R<&'a str> {
    v.as_str().ok_or_else(|| format!("{f}: want a string, got {}", describe(v)))
}

fn map_str(f: &str, v: Value, g: impl Fn(&str) -> String) -> R<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(Value::String(g(s(f, &v)?)))
}

fn field(f: &str, v: &Value, name: &str) -> R<Value> {
    match v {
        Value::Json(J::Object(m)) => Ok(Value::from_json(m.get(name).cloned().unwrap_or(J::Null))),
        _ => Err(format!("{f}: want a JSON object, got {}", describe(v))),
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Long(_) | Value::Integer(_) => v.as_i64(),
        Value::Json(J::Number(n)) => n.as_i64(),
        _ => None,
    }
}

/// a + b or a - b: integers stay integers.
fn arith(f: &str, a: &Value, b: &Value, minus: bool) -> R<Value> {
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        return Ok(Value::Long(if minus { x - y } else { x + y }));
    }
    let num = |v: &Value| match v {
        Value::Double(_) | Value::Long(_) | Value::Integer(_) | Value::Json(J::Number(_)) => v.as_f64(),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => Ok(Value::Double(if minus { x - y } else { x + y })),
        _ => Err(format!("{f}: want numbers, got {} and {}", describe(a), describe(b))),
    }
}

fn concat(sep: &str, agg: &Value, v: &Value, aggregator: bool) -> R<Value> {
    let (a, b) = (s("concat", agg)?, s("concat", v)?);
    if aggregator && a.is_empty() {
        return Ok(Value::from(b));
    }
    Ok(Value::String(format!("{a}{sep}{b}")))
}

fn canon(v: &Value) -> String {
    match v {
        Value::Bytes(b) => format!("{b:?}"),
        other => other.to_json().map_or_else(|| "null".to_owned(), |j| j.to_string()),
    }
}

/// A catalogue reference: its name and argument.
struct FnRef {
    name: String,
    arg: String,
}

fn fn_ref(j: &J) -> FnRef {
    match j {
        J::String(n) => FnRef { name: n.clone(), arg: String::new() },
        J::Object(o) => FnRef {
            name: o.get("name").and_then(J::as_str).unwrap_or("").to_owned(),
            arg: match o.get("arg") {
                None | Some(J::Null) => String::new(),
                Some(J::String(a)) => a.clone(),
                Some(other) => other.to_string(),
            },
        },
        _ => FnRef { name: String::new(), arg: String::new() },
    }
}

/// raise_error / raise_on: the check both make of the value.
fn raises(f: &FnRef) -> Option<impl Fn(&Value) -> R<()> + Send + Sync + Clone + 'static> {
    let (name, arg) = (f.name.clone(), f.arg.clone());
    if name != "raise_error" && name != "raise_on" {
        return None;
    }
    Some(move |v: &Value| {
        if name == "raise_error" {
            return Err(format!("conformance: raise_error on value {}", canon(v)));
        }
        match v.as_str() {
            Some(x) if x == arg => Err(format!("conformance: raise_on {x}")),
            _ => Ok(()),
        }
    })
}

/// Fails the record: a closure fails its record by panicking.
fn ok<T>(r: R<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

type Mapper = Arc<dyn Fn(Value) -> R<Value> + Send + Sync>;
type Flat = Arc<dyn Fn(Value) -> R<Vec<Value>> + Send + Sync>;
type Pred = Arc<dyn Fn(&Value, &Value) -> R<bool> + Send + Sync>;
type KeyFn = Arc<dyn Fn(&Value, &Value) -> R<Value> + Send + Sync>;
type KvFn = Arc<dyn Fn(&Value, Value) -> R<(Value, Value)> + Send + Sync>;
type KeyedMapper = Arc<dyn Fn(&Value, Value) -> R<Value> + Send + Sync>;
type KeyedFlat = Arc<dyn Fn(&Value, Value) -> R<Vec<Value>> + Send + Sync>;
type FlatKv = Arc<dyn Fn(&Value, Value) -> R<Vec<(Value, Value)>> + Send + Sync>;
type Reduce = Arc<dyn Fn(Value, Value) -> R<Value> + Send + Sync>;
type Agg = Arc<dyn Fn(&Value, Value, Value) -> R<Value> + Send + Sync>;

fn unknown(f: &FnRef, role: &str) -> String {
    format!("executor: {} is not a {role} of the catalogue", f.name)
}

fn mapper(f: &FnRef) -> R<Mapper> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |v| check(&v).map(|_| v)));
    }
    if let Some(e) = expr_of(&f.name) {
        return Ok(Arc::new(move |v| one(eval(&e, &Value::Null, &v))));
    }
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "upper" => Arc::new(|v| map_str("upper", v, str::to_uppercase)),
        "lower" => Arc::new(|v| map_str("lower", v, str::to_lowercase)),
        "length" => Arc::new(|v| Ok(Value::Long(s("length", &v)?.chars().count() as i64))),
        "prefix" => Arc::new(move |v| map_str("prefix", v, |x| format!("{a}{x}"))),
        "get_field" => Arc::new(move |v| field("get_field", &v, &a)),
        "wrap_field" => Arc::new(move |v| {
            let mut m = Map::new();
            m.insert(a.clone(), v.to_json().ok_or("wrap_field: bytes have no JSON form")?);
            Ok(Value::Json(J::Object(m)))
        }),
        "twice" => Arc::new(|v| arith("twice", &v, &v, false)),
        "to_text" => Arc::new(|v| match &v {
            Value::Null => Ok(Value::Null),
            _ if v.as_str().is_some() => Ok(v),
            _ => match int(&v) {
                Some(i) => Ok(Value::String(i.to_string())),
                None => Err(format!("to_text: want a string or an integer, got {}", describe(&v))),
            },
        }),
        "reverse_bytes" => Arc::new(|v| match v {
            Value::Bytes(mut b) => {
                b.reverse();
                Ok(Value::Bytes(b))
            }
            other => Err(format!("reverse_bytes: want bytes, got {}", describe(&other))),
        }),
        _ => return Err(unknown(f, "mapper")),
    })
}

fn flat(f: &FnRef) -> R<Flat> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |v| check(&v).map(|_| vec![v])));
    }
    if let Some(e) = expr_of(&f.name) {
        return Ok(Arc::new(move |v| many(eval(&e, &Value::Null, &v))));
    }
    Ok(match f.name.as_str() {
        "split_words" => Arc::new(|v| Ok(s("split_words", &v)?.split_whitespace().map(Value::from).collect())),
        _ => return Err(unknown(f, "flat mapper")),
    })
}

fn mapper_with_key(f: &FnRef) -> R<KeyedMapper> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v| check(&v).map(|_| v)));
    }
    match expr_of(&f.name) {
        Some(e) => Ok(Arc::new(move |k, v| one(eval(&e, k, &v)))),
        None => Err(unknown(f, "mapper with key")),
    }
}

fn flat_with_key(f: &FnRef) -> R<KeyedFlat> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v| check(&v).map(|_| vec![v])));
    }
    match expr_of(&f.name) {
        Some(e) => Ok(Arc::new(move |k, v| many(eval(&e, k, &v)))),
        None => Err(unknown(f, "flat mapper with key")),
    }
}

fn flat_kv(f: &FnRef) -> R<FlatKv> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |k, v| check(&v).map(|_| vec![(k.clone(), v)])));
    }
    match expr_of(&f.name) {
        // A list of pairs: each item is a list of two (eval's lists hold values).
        Some(e) => {
            let items =
                e.get("list").and_then(J::as_array).cloned().ok_or_else(|| {
                    format!("catalogue expr of {}: a flat key-value mapper is a list of pairs", f.name)
                })?;
            Ok(Arc::new(move |k, v| {
                items
                    .iter()
                    .map(|p| match many(eval(p, k, &v))?.as_slice() {
                        [k2, v2] => Ok((k2.clone(), v2.clone())),
                        _ => Err("catalogue expr: a flat key-value mapper gives pairs".to_owned()),
                    })
                    .collect()
            }))
        }
        None => Err(unknown(f, "flat key-value mapper")),
    }
}

fn predicate(f: &FnRef) -> R<Pred> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v| check(v).map(|_| true)));
    }
    if let Some(e) = expr_of(&f.name) {
        return Ok(Arc::new(move |k, v| boolean(eval(&e, k, v))));
    }
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "is_even" => Arc::new(|_, v| match v {
            Value::Null => Ok(false),
            _ => int(v).map(|i| i % 2 == 0).ok_or_else(|| format!("is_even: want an integer, got {}", describe(v))),
        }),
        "is_long_word" => Arc::new(|_, v| Ok(!v.is_null() && s("is_long_word", v)?.chars().count() >= 5)),
        "value_contains" => Arc::new(move |_, v| Ok(!v.is_null() && s("value_contains", v)?.contains(a.as_str()))),
        "key_starts_with" => Arc::new(move |k, _| Ok(!k.is_null() && s("key_starts_with", k)?.starts_with(a.as_str()))),
        _ => return Err(unknown(f, "predicate")),
    })
}

fn key_selector(f: &FnRef) -> R<KeyFn> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |k, v| check(v).map(|_| k.clone())));
    }
    if let Some(e) = expr_of(&f.name) {
        return Ok(Arc::new(move |k, v| one(eval(&e, k, v))));
    }
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "first_word_key" => {
            Arc::new(|_, v| Ok(s("first_word_key", v)?.split_whitespace().next().map_or(Value::Null, Value::from)))
        }
        "key_upper" => Arc::new(|k, _| map_str("key_upper", k.clone(), str::to_uppercase)),
        "field_key" => Arc::new(move |_, v| field("field_key", v, &a)),
        "first_letter" => Arc::new(|_, v| {
            Ok(s("first_letter", v)?.chars().next().map_or(Value::Null, |c| Value::String(c.to_string())))
        }),
        _ => return Err(unknown(f, "key selector")),
    })
}

fn kv_mapper(f: &FnRef) -> R<KvFn> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |k, v| check(&v).map(|_| (k.clone(), v))));
    }
    if let Some(e) = expr_of(&f.name) {
        return Ok(Arc::new(move |k, v| match many(eval(&e, k, &v))?.as_slice() {
            [k2, v2] => Ok((k2.clone(), v2.clone())),
            _ => Err("catalogue expr: a key-value mapper gives a pair".to_owned()),
        }));
    }
    Ok(match f.name.as_str() {
        "upper_both" => Arc::new(|k, v| {
            Ok((map_str("upper_both", k.clone(), str::to_uppercase)?, map_str("upper_both", v, str::to_uppercase)?))
        }),
        "region_of" => Arc::new(|_, v| Ok((field("region_of", &v, "region")?, v))),
        // A Rust group_by mapper always returns a pair: a null key is how it
        // says there is none (Kafka Streams skips both alike).
        "region_or_none" => Arc::new(|_, v| match field("region_or_none", &v, "region")? {
            Value::Null => Ok((Value::Null, Value::Null)),
            r => Ok((r, v)),
        }),
        "region_amount" => {
            Arc::new(|_, v| Ok((field("region_amount", &v, "region")?, field("region_amount", &v, "amount")?)))
        }
        _ => return Err(unknown(f, "key-value mapper")),
    })
}

fn action(f: &FnRef) -> R<Pred> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v| check(v).map(|_| true)));
    }
    match expr_of(&f.name) {
        // An action gives nothing: its expr is what it computes, and no one reads it.
        Some(e) => Ok(Arc::new(move |k, v| eval(&e, k, v).map(|_| true))),
        None => Err(unknown(f, "action")),
    }
}

fn reducer(f: &FnRef) -> R<Reduce> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v| check(&v).map(|_| v)));
    }
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "add" => Arc::new(|agg, v| arith("add", &agg, &v, false)),
        "subtract" => Arc::new(|agg, v| arith("subtract", &agg, &v, true)),
        "concat" => Arc::new(move |agg, v| concat(&a, &agg, &v, false)),
        "longer" => Arc::new(|agg, v| {
            let (x, y) = (s("longer", &agg)?, s("longer", &v)?);
            Ok(if y.chars().count() > x.chars().count() { v.clone() } else { agg.clone() })
        }),
        _ => return Err(unknown(f, "reducer")),
    })
}

fn aggregator(f: &FnRef) -> R<Agg> {
    if let Some(check) = raises(f) {
        return Ok(Arc::new(move |_, v, _| check(&v).map(|_| v)));
    }
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "add" => Arc::new(|_, v, agg| arith("add", &agg, &v, false)),
        "subtract" => Arc::new(|_, v, agg| arith("subtract", &agg, &v, true)),
        "concat" => Arc::new(move |_, v, agg| concat(&a, &agg, &v, true)),
        "count_agg" => Arc::new(|_, _, agg| arith("count_agg", &agg, &Value::Long(1), false)),
        "sum_field" => Arc::new(move |_, v, agg| arith("sum_field", &agg, &field("sum_field", &v, &a)?, false)),
        "subtract_field" => {
            Arc::new(move |_, v, agg| arith("subtract_field", &agg, &field("subtract_field", &v, &a)?, true))
        }
        "append" => Arc::new(|_, v, agg| match agg {
            Value::Json(J::Array(mut list)) => {
                list.push(v.to_json().ok_or("append: bytes have no JSON form")?);
                Ok(Value::Json(J::Array(list)))
            }
            other => Err(format!("append: want a list aggregate, got {}", describe(&other))),
        }),
        _ => return Err(unknown(f, "aggregator")),
    })
}

/// A session aggregate's merger: (key, aggregate1, aggregate2) -> aggregate.
/// A joiner: (value, other value) -> value; a left or outer join's
/// missing value is Null.
fn joiner(f: &FnRef) -> R<Reduce> {
    let a = f.arg.clone();
    let text_null = |x: Value| if matches!(x, Value::Null | Value::Json(J::Null)) { Value::from("null") } else { x };
    match f.name.as_str() {
        "concat" => Ok(Arc::new(move |v, t| concat(&a, &text_null(v), &text_null(t), false))),
        _ => Err(unknown(f, "joiner")),
    }
}

fn merger(f: &FnRef) -> R<Agg> {
    match f.name.as_str() {
        "add" => Ok(Arc::new(|_, a1, a2| arith("add", &a1, &a2, false))),
        _ => Err(unknown(f, "merger")),
    }
}

type Init = Arc<dyn Fn() -> Value + Send + Sync>;

fn initializer(f: &FnRef) -> R<Init> {
    match expr_of(&f.name) {
        Some(e) => Ok(Arc::new(move || ok(one(eval(&e, &Value::Null, &Value::Null))))),
        None => Err(unknown(f, "initializer")),
    }
}

/// A timestamp extractor: (value, the record's own timestamp, its
/// partition's time) -> the record's timestamp.
type Extract = Arc<dyn Fn(&Value, i64, i64) -> R<i64> + Send + Sync>;

fn timestamp_extractor(f: &FnRef) -> R<Extract> {
    let a = f.arg.clone();
    Ok(match f.name.as_str() {
        "field_timestamp" => Arc::new(move |v, ts, _| field_timestamp("field_timestamp", v, &a, ts)),
        "field_or_partition_time" => Arc::new(move |v, _, pt| field_timestamp("field_or_partition_time", v, &a, pt)),
        _ => return Err(unknown(f, "timestamp extractor")),
    })
}

/// The JSON object value's integer field, or fallback for a null value or a
/// missing or null field.
fn field_timestamp(f: &str, v: &Value, name: &str, fallback: i64) -> R<i64> {
    if v.is_null() {
        return Ok(fallback);
    }
    let x = field(f, v, name)?;
    if x.is_null() {
        return Ok(fallback);
    }
    int(&x).ok_or_else(|| format!("{f}: want an integer field {name}, got {}", describe(&x)))
}

// Building a case.

enum Node {
    Stream(KStream<Value, Value>),
    Grouped(KGroupedStream<Value, Value>),
    Table(KTable<Value, Value>),
    GroupedTable(KGroupedTable<Value, Value>),
    TimeWindowed(TimeWindowedKStream<Value, Value>),
    SessionWindowed(SessionWindowedKStream<Value, Value>),
    WindowedTable(WindowedTable),
    Global(GlobalKTable<Value, Value>),
    Cogrouped(CogroupedKStream<Value, Value>),
    TimeWindowedCogrouped(TimeWindowedCogroupedKStream<Value, Value>),
    SessionWindowedCogrouped(SessionWindowedCogroupedKStream<Value, Value>),
}

/// A windowed aggregation's table, as the SDK types it: count's values are
/// `i64`, reduce's and aggregate's `Value`s.
enum WindowedTable {
    Count(KTable<Windowed<Value>, i64>),
    Values(KTable<Windowed<Value>, Value>),
}

impl WindowedTable {
    fn dynamic(&self) -> KTable<Value, Value> {
        match self {
            WindowedTable::Count(t) => t.dynamic(),
            WindowedTable::Values(t) => t.dynamic(),
        }
    }

    /// `suppress(Suppressed.untilWindowCloses(buffer)[.withName(name)])`, or
    /// with a time limit `Suppressed.untilTimeLimit(limit, buffer)`.
    fn suppress(&self, step: &Map<String, J>, o: Options) -> Result<WindowedTable, Error> {
        let buffer = buffer_config(step);
        Ok(match (self, time_limit(step)) {
            (WindowedTable::Count(t), None) => WindowedTable::Count(t.suppress_until_window_closes_bounded(buffer, o)?),
            (WindowedTable::Values(t), None) => {
                WindowedTable::Values(t.suppress_until_window_closes_bounded(buffer, o)?)
            }
            (WindowedTable::Count(t), Some(l)) => WindowedTable::Count(t.suppress_until_time_limit_with(l, buffer, o)?),
            (WindowedTable::Values(t), Some(l)) => {
                WindowedTable::Values(t.suppress_until_time_limit_with(l, buffer, o)?)
            }
        })
    }
}

// The catalogue's processors (conformance/README.md, "Processors"), over
// Value keys and values; a store is the step's first. A processor that
// fails answers an error, as a Rust processor does.

type V = Value;

/// A catalogue processor, with its argument and store.
#[derive(Clone)]
enum Catalogue {
    CountPerKey(String),
    ForwardTo(String),
    Restamp,
    /// sweep_every / sweep_wall_clock: the store, the interval, and how it is timed.
    SweepEvery(String, u64, PunctuationType),
    TickEvery(u64),
    ForwardThenFail(String),
    VersionedHistory(String),
}

impl Catalogue {
    fn of(f: &FnRef, stores: &[String]) -> R<Catalogue> {
        let store = stores.first().cloned().unwrap_or_default();
        let ms = || {
            f.arg.parse::<u64>().map_err(|_| format!("{}: the argument is an interval in ms, not {:?}", f.name, f.arg))
        };
        Ok(match f.name.as_str() {
            "count_per_key" => Catalogue::CountPerKey(store),
            "forward_to" => Catalogue::ForwardTo(f.arg.clone()),
            "restamp" => Catalogue::Restamp,
            "sweep_every" => Catalogue::SweepEvery(store, ms()?, PunctuationType::StreamTime),
            "sweep_wall_clock" => Catalogue::SweepEvery(store, ms()?, PunctuationType::WallClockTime),
            "tick_every" => Catalogue::TickEvery(ms()?),
            "forward_then_fail" => Catalogue::ForwardThenFail(f.arg.clone()),
            "versioned_history" => Catalogue::VersionedHistory(store),
            _ => return Err(unknown(f, "processor")),
        })
    }

    fn restamped(h: &proc::Headers) -> proc::Headers {
        let mut h = h.clone();
        h.push(("seen".to_owned(), Some(b"1".to_vec())));
        h
    }

    fn sweep(&mut self, ctx: &mut ProcessorContext<V, V>, t: i64) -> ProcessorResult {
        let Catalogue::SweepEvery(name, ..) = self else { return Ok(()) };
        let store: KeyValueStore<V, V> = ctx.get_state_store(name)?;
        for (k, v) in store.all()? {
            ctx.forward(Record::new(k.clone(), v, t))?;
            store.delete(&k)?;
        }
        Ok(())
    }
}

impl Processor<V, V, V, V> for Catalogue {
    fn init(&mut self, ctx: &mut ProcessorContext<V, V>) -> ProcessorResult {
        match self {
            Catalogue::SweepEvery(_, ms, typ) => {
                ctx.schedule(Duration::from_millis(*ms), *typ, Catalogue::sweep)?;
            }
            Catalogue::TickEvery(ms) => {
                ctx.schedule(
                    Duration::from_millis(*ms),
                    PunctuationType::WallClockTime,
                    |_: &mut Catalogue, ctx, t| Ok(ctx.forward(Record::new(Value::from("tick"), Value::Long(t), t))?),
                )?;
            }
            _ => {}
        }
        Ok(())
    }

    fn process(&mut self, ctx: &mut ProcessorContext<V, V>, r: Record<V, V>) -> ProcessorResult {
        match self {
            Catalogue::CountPerKey(name) => {
                let store: KeyValueStore<V, V> = ctx.get_state_store(name)?;
                let n = store.get(&r.key)?.and_then(|v| v.as_i64()).unwrap_or(0) + 1;
                store.put(&r.key, &Value::Long(n))?;
                ctx.forward(r.with_value(Value::Long(n)))?;
            }
            Catalogue::ForwardTo(child) => ctx.forward_to(child, r)?,
            Catalogue::Restamp => {
                let (ts, h) = (r.timestamp + 1000, Catalogue::restamped(&r.headers));
                ctx.forward(r.with_timestamp(ts).with_headers(h))?;
            }
            Catalogue::SweepEvery(name, ..) => {
                let store: KeyValueStore<V, V> = ctx.get_state_store(name)?;
                let n = store.get(&r.key)?.and_then(|v| v.as_i64()).unwrap_or(0) + 1;
                store.put(&r.key, &Value::Long(n))?;
            }
            Catalogue::TickEvery(_) => {}
            Catalogue::VersionedHistory(name) => {
                // A record whose value is "delete" deletes its key as of its
                // timestamp and forwards "delete <deleted> latest <get(key)>";
                // any other puts its value and forwards "put <put's answer>
                // latest <get(key)> asof <get(key, ts - 1)>" (a version:
                // value@timestamp, then <validTo when it has one; none: null).
                let store: proc::VersionedKeyValueStore<V, V> = ctx.get_state_store(name)?;
                let show = |v: Option<polystreams::VersionedRecord<V>>| match v {
                    None => "null".to_owned(),
                    Some(v) => {
                        let s = format!(
                            "{}@{}",
                            v.value.as_str().map(str::to_owned).unwrap_or_else(|| format!("{:?}", v.value)),
                            v.timestamp
                        );
                        match v.valid_to {
                            Some(t) => format!("{s}<{t}"),
                            None => s,
                        }
                    }
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
                ctx.forward(r.with_value(Value::from(out.as_str())))?;
            }
            Catalogue::ForwardThenFail(value) => {
                let fail = r.value.as_str() == Some(value.as_str());
                ctx.forward(r)?;
                if fail {
                    return Err(format!("forward_then_fail {value}").into());
                }
            }
        }
        Ok(())
    }
}

/// The fixed-key processors of the catalogue (process_values).
struct Restamp;
impl FixedKeyProcessor<V, V, V> for Restamp {
    fn process(&mut self, ctx: &mut FixedKeyProcessorContext<V, V>, r: FixedKeyRecord<V, V>) -> ProcessorResult {
        let (ts, h) = (r.timestamp + 1000, Catalogue::restamped(&r.headers));
        Ok(ctx.forward(r.with_timestamp(ts).with_headers(h))?)
    }
}

fn str_array(step: &Map<String, J>, key: &str) -> Vec<String> {
    step.get(key).and_then(J::as_array).into_iter().flatten().filter_map(J::as_str).map(str::to_owned).collect()
}

/// Options of the step's key and value serdes only.
fn serdes(step: &Map<String, J>, key: bool) -> Options {
    let mut o = Options::new();
    if let Some(k) = step.get("key").and_then(J::as_str).filter(|_| key) {
        o = o.key_serde(k);
    }
    if let Some(v) = step.get("value").and_then(J::as_str) {
        o = o.value_serde(v);
    }
    o
}

/// A process step on a stream (process, or process_values).
fn process_step(
    st: &KStream<Value, Value>,
    values_only: bool,
    step: &Map<String, J>,
) -> Result<KStream<Value, Value>, BuildError> {
    let f = fn_of(step, "processor");
    let stores = str_array(step, "stores");
    let names: Vec<&str> = stores.iter().map(String::as_str).collect();
    let mut o = serdes(step, !values_only);
    if let Some(n) = step.get("name").and_then(J::as_str) {
        o = o.name(n);
    }
    if values_only {
        return Ok(match f.name.as_str() {
            "restamp" => st.process_values_with(|| Restamp, &names, o)?,
            _ => return Err(format!("process_values: {} is not a fixed-key processor of the catalogue", f.name).into()),
        });
    }
    let p = Catalogue::of(&f, &stores)?;
    Ok(st.process_with(move || p.clone(), &names, o)?)
}

// The transformer catalogue (conformance/README.md, "Transformers"):
// KTable.transform_values' transformers, after KTableTransformValuesTest's.

/// A catalogue transformer, with its argument and store.
#[derive(Clone)]
enum TransformerCatalogue {
    KeyArrowValue,
    CountCalls(i64),
    ValueLength,
    CountPerKey(String, Option<KeyValueStore<V, V>>),
    FailOn(String),
}

impl TransformerCatalogue {
    fn of(f: &FnRef, stores: &[String]) -> R<TransformerCatalogue> {
        Ok(match f.name.as_str() {
            "key_arrow_value" => TransformerCatalogue::KeyArrowValue,
            "count_calls" => TransformerCatalogue::CountCalls(0),
            "value_length" => TransformerCatalogue::ValueLength,
            "count_per_key" => TransformerCatalogue::CountPerKey(stores.first().cloned().unwrap_or_default(), None),
            "fail_on" => TransformerCatalogue::FailOn(f.arg.clone()),
            _ => return Err(unknown(f, "transformer")),
        })
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Long(n) => n.to_string(),
        other => other.as_str().map(str::to_owned).unwrap_or_else(|| format!("{other:?}")),
    }
}

impl ValueTransformerWithKey<V, V, V> for TransformerCatalogue {
    fn init(&mut self, ctx: &mut TransformerContext<V, V>) -> ProcessorResult {
        if let TransformerCatalogue::CountPerKey(name, store) = self {
            *store = Some(ctx.get_state_store(name)?);
        }
        Ok(())
    }

    fn transform(&mut self, key: &V, value: Option<V>) -> TransformResult<V> {
        Ok(match self {
            TransformerCatalogue::KeyArrowValue => Some(Value::from(
                format!("{}->{}!", text(key), value.as_ref().map(text).unwrap_or_else(|| "null".to_owned())).as_str(),
            )),
            TransformerCatalogue::CountCalls(n) => {
                *n += 1;
                Some(Value::Long(*n))
            }
            TransformerCatalogue::ValueLength => value.map(|v| Value::Long(text(&v).chars().count() as i64)),
            TransformerCatalogue::CountPerKey(_, store) => {
                let store = store.as_ref().ok_or("count_per_key needs a store")?;
                let n = store.get(key)?.and_then(|v| v.as_i64()).unwrap_or(0) + 1;
                store.put(key, &Value::Long(n))?;
                Some(Value::Long(n))
            }
            TransformerCatalogue::FailOn(arg) => {
                if value.as_ref().map(text).as_deref() == Some(arg.as_str()) {
                    return Err(format!("fail_on {arg}").into());
                }
                value
            }
        })
    }
}

/// An add_processor step (Topology.addProcessor).
fn add_processor(app: &App, step: &Map<String, J>) -> Result<(), BuildError> {
    let stores = str_array(step, "stores");
    let parents = str_array(step, "parents");
    let p = Catalogue::of(&fn_of(step, "processor"), &stores)?;
    let name = step.get("name").and_then(J::as_str).unwrap_or("");
    app.topology().add_processor_with::<V, V, V, V, _, _>(
        name,
        move || p.clone(),
        &parents.iter().map(String::as_str).collect::<Vec<_>>(),
        &stores.iter().map(String::as_str).collect::<Vec<_>>(),
        serdes(step, true),
    )?;
    Ok(())
}

/// An add_state_store step's store.
fn store_builder(step: &Map<String, J>) -> R<StoreBuilder> {
    let name = step.get("name").and_then(J::as_str).unwrap_or("");
    let ms = |k: &str| Duration::from_millis(step.get(k).and_then(J::as_u64).unwrap_or(0));
    let versioned = step.get("versioned").and_then(J::as_object);
    let mut b = match step.get("type").and_then(J::as_str).unwrap_or("key_value") {
        "key_value" if versioned.is_some() => {
            let v = versioned.expect("checked");
            let vms = |k: &str| Duration::from_millis(v.get(k).and_then(J::as_u64).unwrap_or(0));
            let b = Stores::versioned_key_value_store::<V, V>(name, vms("history_retention_ms"));
            if v.get("segment_interval_ms").and_then(J::as_u64).unwrap_or(0) > 0 {
                b.with_segment_interval(vms("segment_interval_ms"))
            } else {
                b
            }
        }
        "key_value" => Stores::key_value_store::<V, V>(name),
        "timestamped_key_value" => Stores::timestamped_key_value_store::<V, V>(name),
        "window" => Stores::window_store::<V, V>(
            name,
            ms("retention_ms"),
            ms("window_size_ms"),
            step.get("retain_duplicates").and_then(J::as_bool).unwrap_or(false),
        ),
        other => return Err(format!("add_state_store: no store type {other:?}")),
    };
    if let Some(k) = step.get("key").and_then(J::as_str) {
        b = b.key_serde(k);
    }
    if let Some(v) = step.get("value").and_then(J::as_str) {
        b = b.value_serde(v);
    }
    if step.get("logging").and_then(J::as_bool) == Some(false) {
        b = b.with_logging_disabled();
    }
    if step.get("caching").and_then(J::as_bool) == Some(true) {
        b = b.with_caching_enabled();
    }
    Ok(b)
}

/// A suppress step's time limit (`untilTimeLimit`); None: `untilWindowCloses`.
fn time_limit(step: &Map<String, J>) -> Option<Duration> {
    step.get("time_limit_ms").and_then(J::as_u64).map(Duration::from_millis)
}

/// A suppress step's `BufferConfig` (absent: unbounded).
fn buffer_config(step: &Map<String, J>) -> BufferConfig {
    let Some(b) = step.get("buffer").and_then(J::as_object) else {
        return BufferConfig::unbounded();
    };
    let (records, bytes) = (b.get("max_records").and_then(J::as_i64), b.get("max_bytes").and_then(J::as_i64));
    if records.is_none() && bytes.is_none() {
        return BufferConfig::unbounded();
    }
    let mut c = BufferConfig::default();
    if let Some(n) = records {
        c = c.with_max_records(n);
    }
    if let Some(n) = bytes {
        c = c.with_max_bytes(n);
    }
    if b.get("when_full").and_then(J::as_str) == Some("shut_down") {
        c.shut_down_when_full()
    } else {
        c.emit_early_when_full()
    }
}

fn millis(w: &Map<String, J>, key: &str) -> R<Duration> {
    let v = w.get(key).and_then(J::as_i64).ok_or_else(|| format!("windowed_by: {key} is not an integer"))?;
    // Duration has no negative values: the engine's refusal of one cannot be
    // reached through the Rust SDK, so the executor refuses it, naming it as
    // the engine does.
    u64::try_from(v).map(Duration::from_millis).map_err(|_| format!("windowed_by: {key} {v} is negative"))
}

/// windowed_by's windows, with the factory Kafka Streams users call:
/// `..._with_no_grace` when the case gives no grace.
fn windowed_by(g: &KGroupedStream<Value, Value>, w: &Map<String, J>) -> Result<Node, BuildError> {
    let grace = match w.get("grace_ms") {
        Some(_) => Some(millis(w, "grace_ms")?),
        None => None,
    };
    Ok(match w.get("type").and_then(J::as_str).unwrap_or("") {
        "time" => {
            let size = millis(w, "size_ms")?;
            let mut t = match grace {
                None => TimeWindows::of_size_with_no_grace(size),
                Some(g) => TimeWindows::of_size_and_grace(size, g),
            };
            if w.contains_key("advance_ms") {
                t = t.advance_by(millis(w, "advance_ms")?);
            }
            Node::TimeWindowed(g.windowed_by(t)?)
        }
        "sliding" => {
            let d = millis(w, "time_difference_ms")?;
            Node::TimeWindowed(g.windowed_by(match grace {
                None => SlidingWindows::of_time_difference_with_no_grace(d),
                Some(gr) => SlidingWindows::of_time_difference_and_grace(d, gr),
            })?)
        }
        "session" => {
            let gap = millis(w, "inactivity_gap_ms")?;
            Node::SessionWindowed(g.windowed_by(match grace {
                None => SessionWindows::of_inactivity_gap_with_no_grace(gap),
                Some(gr) => SessionWindows::of_inactivity_gap_and_grace(gap, gr),
            })?)
        }
        other => return Err(format!("windowed_by: {other:?} is not a window type").into()),
    })
}

/// windowed_by on a cogroup: the windows as windowed_by (above) makes them.
fn cogroup_windowed_by(c: &CogroupedKStream<Value, Value>, w: &Map<String, J>) -> Result<Node, BuildError> {
    let grace = match w.get("grace_ms") {
        Some(_) => Some(millis(w, "grace_ms")?),
        None => None,
    };
    Ok(match w.get("type").and_then(J::as_str).unwrap_or("") {
        "time" => {
            let size = millis(w, "size_ms")?;
            let mut t = match grace {
                None => TimeWindows::of_size_with_no_grace(size),
                Some(g) => TimeWindows::of_size_and_grace(size, g),
            };
            if w.contains_key("advance_ms") {
                t = t.advance_by(millis(w, "advance_ms")?);
            }
            Node::TimeWindowedCogrouped(c.clone().windowed_by(t))
        }
        "sliding" => {
            let d = millis(w, "time_difference_ms")?;
            Node::TimeWindowedCogrouped(c.clone().windowed_by(match grace {
                None => SlidingWindows::of_time_difference_with_no_grace(d),
                Some(gr) => SlidingWindows::of_time_difference_and_grace(d, gr),
            }))
        }
        "session" => {
            let gap = millis(w, "inactivity_gap_ms")?;
            Node::SessionWindowedCogrouped(c.clone().windowed_by(match grace {
                None => SessionWindows::of_inactivity_gap_with_no_grace(gap),
                Some(gr) => SessionWindows::of_inactivity_gap_and_grace(gap, gr),
            }))
        }
        other => return Err(format!("windowed_by: {other:?} is not a window type").into()),
    })
}

/// emit_strategy's strategy: on_window_close, else on_window_update.
fn emit_strategy(step: &Map<String, J>) -> EmitStrategy {
    match step.get("strategy").and_then(J::as_str) {
        Some("on_window_close") => EmitStrategy::OnWindowClose,
        _ => EmitStrategy::OnWindowUpdate,
    }
}

fn options(step: &Map<String, J>, with_serdes: bool, with_materialized: bool) -> Options {
    let mut o = Options::new();
    if let Some(n) = step.get("name").and_then(J::as_str) {
        o = o.name(n);
    }
    if with_serdes {
        if let Some(k) = step.get("key").and_then(J::as_str) {
            o = o.key_serde(k);
        }
        if let Some(v) = step.get("value").and_then(J::as_str) {
            o = o.value_serde(v);
        }
    }
    if with_materialized {
        if let Some(m) = step.get("materialized").and_then(J::as_object) {
            let mut mat = Materialized::named(m.get("store").and_then(J::as_str).unwrap_or(""));
            if let Some(k) = m.get("key").and_then(J::as_str) {
                mat = mat.key_serde(k);
            }
            if let Some(v) = m.get("value").and_then(J::as_str) {
                mat = mat.value_serde(v);
            }
            if let Some(r) = m.get("retention_ms").and_then(J::as_i64) {
                mat = mat.retention(Duration::from_millis(u64::try_from(r).unwrap_or(0)));
            }
            if let Some(v) = m.get("versioned").and_then(J::as_object) {
                let ms = |k: &str| Duration::from_millis(v.get(k).and_then(J::as_u64).unwrap_or(0));
                mat = mat.versioned_segments(ms("history_retention_ms"), ms("segment_interval_ms"));
            }
            o = o.materialized(mat);
        }
    }
    o
}

/// A step's failure to build: the SDK's or the engine's error, or the
/// executor's own (a case it cannot express), as invalid_argument.
enum BuildError {
    Sdk(Error),
    Executor(String),
}

impl From<Error> for BuildError {
    fn from(e: Error) -> Self {
        BuildError::Sdk(e)
    }
}

impl From<String> for BuildError {
    fn from(e: String) -> Self {
        BuildError::Executor(e)
    }
}

/// The step's built-in joiner (builtin_joiner), if it names one.
fn builtin_joiner(step: &Map<String, J>) -> R<Option<Joiner>> {
    Ok(match step.get("builtin_joiner").and_then(J::as_str) {
        None => None,
        Some("pair") => Some(Joiner::Pair),
        Some("this") => Some(Joiner::This),
        Some("other") => Some(Joiner::Other),
        Some(other) => return Err(format!("join: {other:?} is not a built-in joiner")),
    })
}

fn builtin(name: &str) -> R<Reducer> {
    Ok(match name {
        "sum" => Reducer::Sum,
        "min" => Reducer::Min,
        "max" => Reducer::Max,
        "latest" => Reducer::Latest,
        other => return Err(format!("reduce: {other:?} is not a built-in reducer")),
    })
}

fn fn_of(step: &Map<String, J>, key: &str) -> FnRef {
    fn_ref(step.get(key).unwrap_or(&J::Null))
}

/// A step on a table.
fn table_op(t: &KTable<Value, Value>, op: &str, step: &Map<String, J>, f: &FnRef) -> Result<Node, BuildError> {
    Ok(match op {
            "to_stream" if !f.name.is_empty() => {
                let m = key_selector(f)?;
                Node::Stream(t.to_stream_keyed_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "to_stream" => Node::Stream(t.to_stream_with(options(step, false, false))?),
            "transform_values" => {
                let stores = str_array(step, "stores");
                let names: Vec<&str> = stores.iter().map(String::as_str).collect();
                let tr = TransformerCatalogue::of(&fn_of(step, "transformer"), &stores)?;
                let mut o = options(step, false, true);
                if let Some(v) = step.get("value").and_then(J::as_str) {
                    o = o.value_serde(v);
                }
                Node::Table(t.transform_values_with(move || tr.clone(), &names, o)?)
            }
            "filter" | "filter_not" => {
                let p = predicate(f)?;
                let g = move |k: &Value, v: &Value| ok(p(k, v));
                let o = options(step, false, true);
                Node::Table(if op == "filter" { t.filter_with(g, o)? } else { t.filter_not_with(g, o)? })
            }
            "map_values" => {
                let m = mapper(f)?;
                Node::Table(t.map_values_with(move |v| ok(m(v)), options(step, true, true))?)
            }
            "group_by" => {
                let m = kv_mapper(f)?;
                Node::GroupedTable(t.group_by_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "suppress" if time_limit(step).is_some() => Node::Table(t.suppress_until_time_limit_with(
                time_limit(step).unwrap_or_default(),
                buffer_config(step),
                options(step, false, false),
            )?),
            "suppress" => {
                return Err(BuildError::Executor(
                    "suppress: suppress(untilWindowCloses) applies to a windowed aggregation's table only (KTable<Windowed<K>, V>); this table is not windowed, so no call is made (in Rust it does not compile)".to_owned(),
                ))
            }
            _ => return Err(format!("executor: {op} cannot apply to a table").into()),
    })
}

/// KTable::foreign_key_join / left_foreign_key_join: the extractor is a
/// mapper whose null result is no foreign key.
fn foreign_key_join(
    t: &KTable<Value, Value>,
    other: &KTable<Value, Value>,
    op: &str,
    step: &Map<String, J>,
    f: &FnRef,
) -> Result<Node, BuildError> {
    let m = mapper(&fn_of(step, "foreign_key"))?;
    let fk = move |v: &Value| match ok(m(v.clone())) {
        Value::Null | Value::Json(J::Null) => None,
        k => Some(k),
    };
    let o = options(step, true, true);
    if let Some(b) = builtin_joiner(step)? {
        return Ok(Node::Table(if op == "foreign_key_join" {
            t.foreign_key_join_builtin(other, fk, b, o)?
        } else {
            t.left_foreign_key_join_builtin(other, fk, b, o)?
        }));
    }
    let j = joiner(f)?;
    Ok(Node::Table(if op == "foreign_key_join" {
        t.foreign_key_join_with(other, fk, move |v, o| ok(j(v, o)), o)?
    } else {
        t.left_foreign_key_join_with(other, fk, move |v, o: Option<Value>| ok(j(v, o.unwrap_or(Value::Null))), o)?
    }))
}

/// KStream::split: the branches in order, then the default branch or none.
fn split(
    st: &KStream<Value, Value>,
    step: &Map<String, J>,
) -> Result<HashMap<String, KStream<Value, Value>>, BuildError> {
    let mut b = st.split_with(options(step, false, false));
    for br in step.get("branches").and_then(J::as_array).into_iter().flatten() {
        let br = br.as_object().cloned().unwrap_or_default();
        let p = predicate(&fn_of(&br, "fn"))?;
        b = b.branch_with(move |k: &Value, v: &Value| ok(p(k, v)), options(&br, false, false));
    }
    if step.get("default_branch").and_then(J::as_bool).unwrap_or(false) {
        let mut o = Options::new();
        if let Some(n) = step.get("default_name").and_then(J::as_str) {
            o = o.name(n);
        }
        return Ok(b.default_branch_with(o)?);
    }
    Ok(b.no_default_branch()?)
}

/// Performs one builder step on `node`; None for a terminal step. `labels`
/// index `nodes` by label (merge's other stream, a join's table).
fn apply(
    app: &App,
    step: &Map<String, J>,
    node: Option<&Node>,
    prefix: &str,
    labels: &HashMap<String, usize>,
    nodes: &[Node],
) -> Result<Option<Node>, BuildError> {
    let label = |l: &str| labels.get(l).map(|&n| &nodes[n]);
    let op = step.get("op").and_then(J::as_str).unwrap_or("");
    let str_list = |k: &str| -> Vec<String> {
        step.get(k)
            .and_then(J::as_array)
            .map(|a| a.iter().filter_map(J::as_str).map(|t| format!("{prefix}{t}")).collect())
            .unwrap_or_default()
    };
    let topic = || format!("{prefix}{}", step.get("topic").and_then(J::as_str).unwrap_or(""));
    match (op, node) {
        ("stream", _) => {
            let o = extractor(step, options(step, true, false))?;
            return Ok(Some(Node::Stream(match extractor_fn(step)? {
                Some(f) => app.stream_with_extractor(str_list("topics"), o, move |_: &V, v: &V, m, pt| {
                    ok(f(v, m.timestamp, pt))
                })?,
                None => app.stream_with(str_list("topics"), o)?,
            })));
        }
        ("table", _) => {
            let o = extractor(step, options(step, true, true))?;
            return Ok(Some(Node::Table(match extractor_fn(step)? {
                Some(f) => {
                    app.table_with_extractor(&topic(), o, move |_: &V, v: &V, m, pt| ok(f(v, m.timestamp, pt)))?
                }
                None => app.table_with(&topic(), o)?,
            })));
        }
        ("global_table", _) => {
            return Ok(Some(Node::Global(app.global_table_with(&topic(), options(step, true, true))?)))
        }
        // The Processor API (docs/design/processor.md): stores, and Topology calls.
        ("add_state_store", _) => {
            app.add_state_store(store_builder(step)?)?;
            return Ok(None);
        }
        ("add_source", _) => {
            let name = step.get("name").and_then(J::as_str).unwrap_or("");
            app.topology().add_source_with::<V, V>(name, str_list("topics"), serdes(step, true))?;
            return Ok(None);
        }
        ("add_sink", _) => {
            let name = step.get("name").and_then(J::as_str).unwrap_or("");
            let parents = str_array(step, "parents");
            let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
            app.topology().add_sink_with::<V, V>(name, &topic(), &parents, serdes(step, true))?;
            return Ok(None);
        }
        ("add_processor", _) => {
            add_processor(app, step)?;
            return Ok(None);
        }
        _ => {}
    }
    if let Some(r) = step.get("materialized").and_then(|m| m.get("retention_ms")).and_then(J::as_i64) {
        if r < 0 {
            // Materialized::retention takes a Duration, which is never negative.
            return Err(format!("{op}: materialized retention_ms {r} is negative").into());
        }
    }
    let f = fn_of(step, "fn");
    Ok(Some(match node {
        Some(Node::Stream(st)) => match op {
            "to" => {
                if step.get("extract").and_then(J::as_str) == Some("key") {
                    let base = topic();
                    if TOPIC_BY_KEY.get_or_init(|| base.clone()) != &base {
                        return Err("executor: two TopicNameExtractor sinks of different topics".to_owned().into());
                    }
                    st.to_dynamic_with(options(step, true, false), topic_by_key)?;
                } else {
                    st.to_with(&topic(), options(step, true, false))?;
                }
                return Ok(None);
            }
            "group_by_key" => Node::Grouped(st.group_by_key_with(options(step, true, false))?),
            "process" => Node::Stream(process_step(st, false, step)?),
            "process_values" => Node::Stream(process_step(st, true, step)?),
            "to_table" => Node::Table(st.to_table_with(options(step, false, true))?),
            "merge" => match label(step.get("other").and_then(J::as_str).unwrap_or("")) {
                Some(Node::Stream(other)) => Node::Stream(st.merge_with(other, options(step, false, false))?),
                _ => return Err("executor: merge's other is not a stream".to_owned().into()),
            },
            "repartition" => {
                let mut r = Repartitioned::new();
                if let Some(n) = step.get("name").and_then(J::as_str) {
                    r = r.name(n);
                }
                if let Some(n) = step.get("partitions").and_then(J::as_u64) {
                    r = r.partitions(u32::try_from(n).unwrap_or(u32::MAX));
                }
                Node::Stream(st.repartition_with(r)?)
            }
            "join" | "left_join" | "outer_join" if step.get("other").is_some() => {
                let Some(Node::Stream(other)) = label(step.get("other").and_then(J::as_str).unwrap_or("")) else {
                    return Err("executor: a stream-stream join's other is not a stream".to_owned().into());
                };
                let jw = step.get("join_windows").cloned().unwrap_or(J::Null);
                let ms = |k: &str| jw.get(k).and_then(J::as_i64).map(|n| Duration::from_millis(n.max(0) as u64));
                let d = ms("time_difference_ms").unwrap_or_default();
                let mut w = match jw.get("grace_ms").and_then(J::as_i64) {
                    Some(g) if g < 0 => {
                        return Err(format!("executor: grace_ms {g}: a Duration is never negative").into())
                    }
                    Some(_) => JoinWindows::of_time_difference_and_grace(d, ms("grace_ms").unwrap_or_default()),
                    None => JoinWindows::of_time_difference_with_no_grace(d),
                };
                if let Some(b) = ms("before_ms") {
                    w = w.before(b);
                }
                if let Some(a) = ms("after_ms") {
                    w = w.after(a);
                }
                let mut o = options(step, true, false);
                if let Some(s) = step.get("store_name").and_then(J::as_str) {
                    o = o.materialized(s);
                }
                if let Some(b) = builtin_joiner(step)? {
                    return Ok(Some(Node::Stream(match op {
                        "join" => st.join_stream_builtin(other, b, w, o)?,
                        "left_join" => st.left_join_stream_builtin(other, b, w, o)?,
                        _ => st.outer_join_stream_builtin(other, b, w, o)?,
                    })));
                }
                let j = joiner(&f)?;
                Node::Stream(match op {
                    "join" => st.join_stream_with(other, move |v, t| ok(j(v, t)), w, o)?,
                    "left_join" => st.left_join_stream_with(
                        other,
                        move |v, t: Option<Value>| ok(j(v, t.unwrap_or(Value::Null))),
                        w,
                        o,
                    )?,
                    _ => st.outer_join_stream_with(
                        other,
                        move |v: Option<Value>, t: Option<Value>| {
                            ok(j(v.unwrap_or(Value::Null), t.unwrap_or(Value::Null)))
                        },
                        w,
                        o,
                    )?,
                })
            }
            "join" | "left_join" if step.contains_key("key_mapper") => {
                let Some(Node::Global(global)) = label(step.get("table").and_then(J::as_str).unwrap_or("")) else {
                    return Err("executor: a join's global table is not a global table".to_owned().into());
                };
                let m = key_selector(&fn_of(step, "key_mapper"))?;
                let o = options(step, true, false);
                if let Some(b) = builtin_joiner(step)? {
                    let m = move |k: &Value, v: &Value| ok(m(k, v));
                    return Ok(Some(Node::Stream(if op == "join" {
                        st.join_global_builtin(global, m, b, o)?
                    } else {
                        st.left_join_global_builtin(global, m, b, o)?
                    })));
                }
                let j = joiner(&f)?;
                Node::Stream(if op == "join" {
                    st.join_global_with(global, move |k, v| ok(m(k, v)), move |v, g| ok(j(v, g)), o)?
                } else {
                    st.left_join_global_with(
                        global,
                        move |k, v| ok(m(k, v)),
                        move |v, g: Option<Value>| ok(j(v, g.unwrap_or(Value::Null))),
                        o,
                    )?
                })
            }
            "join" | "left_join" => {
                let Some(Node::Table(table)) = label(step.get("table").and_then(J::as_str).unwrap_or("")) else {
                    return Err("executor: a join's table is not a table".to_owned().into());
                };
                let o = options(step, true, false);
                if let Some(b) = builtin_joiner(step)? {
                    return Ok(Some(Node::Stream(if op == "join" {
                        st.join_builtin(table, b, o)?
                    } else {
                        st.left_join_builtin(table, b, o)?
                    })));
                }
                let j = joiner(&f)?;
                Node::Stream(if op == "join" {
                    st.join_with(table, move |v, t| ok(j(v, t)), o)?
                } else {
                    st.left_join_with(table, move |v, t: Option<Value>| ok(j(v, t.unwrap_or(Value::Null))), o)?
                })
            }
            "map_values" => {
                let m = mapper(&f)?;
                Node::Stream(st.map_values_with(move |v| ok(m(v)), options(step, true, false))?)
            }
            "flat_map_values" => {
                let m = flat(&f)?;
                Node::Stream(st.flat_map_values_with(move |v| ok(m(v)), options(step, true, false))?)
            }
            "map_values_with_key" => {
                let m = mapper_with_key(&f)?;
                Node::Stream(st.map_values_with_key_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "flat_map_values_with_key" => {
                let m = flat_with_key(&f)?;
                Node::Stream(st.flat_map_values_with_key_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "flat_map" => {
                let m = flat_kv(&f)?;
                Node::Stream(st.flat_map_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "filter" | "filter_not" => {
                let p = predicate(&f)?;
                let g = move |k: &Value, v: &Value| ok(p(k, v));
                Node::Stream(if op == "filter" {
                    st.filter_with(g, options(step, false, false))?
                } else {
                    st.filter_not_with(g, options(step, false, false))?
                })
            }
            "map" => {
                let m = kv_mapper(&f)?;
                Node::Stream(st.map_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "select_key" => {
                let m = key_selector(&f)?;
                Node::Stream(st.select_key_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "group_by" => {
                let m = key_selector(&f)?;
                Node::Grouped(st.group_by_with(move |k, v| ok(m(k, v)), options(step, true, false))?)
            }
            "peek" => {
                let a = action(&f)?;
                Node::Stream(st.peek_with(
                    move |k, v| {
                        ok(a(k, v));
                    },
                    options(step, false, false),
                )?)
            }
            "foreach" => {
                let a = action(&f)?;
                st.foreach_with(
                    move |k, v| {
                        ok(a(k, v));
                    },
                    options(step, false, false),
                )?;
                return Ok(None);
            }
            "print" => {
                let mut p = Printed::to_sys_out();
                if let Some(label) = step.get("label").and_then(J::as_str) {
                    p = p.label(label);
                }
                st.print_with(p, options(step, false, false))?;
                return Ok(None);
            }
            _ => return Err(format!("executor: {op} cannot apply to a stream").into()),
        },
        Some(Node::Grouped(g)) if op == "cogroup" => {
            let a = aggregator(&f)?;
            Node::Cogrouped(g.cogroup(move |k, v, agg| ok(a(k, v, agg))))
        }
        Some(Node::Cogrouped(c)) => match op {
            "cogroup" => {
                let Some(Node::Grouped(g)) = label(step.get("other").and_then(J::as_str).unwrap_or("")) else {
                    return Err("executor: cogroup's other is not a grouped stream".to_owned().into());
                };
                let a = aggregator(&f)?;
                Node::Cogrouped(c.clone().cogroup(g, move |k, v, agg| ok(a(k, v, agg))))
            }
            "windowed_by" => cogroup_windowed_by(c, step.get("windows").and_then(J::as_object).unwrap_or(&Map::new()))?,
            "aggregate" => {
                let init = initializer(&fn_of(step, "init"))?;
                Node::Table(c.clone().aggregate_with(move || init(), options(step, false, true))?)
            }
            _ => return Err(format!("executor: {op} cannot apply to a cogrouped stream").into()),
        },
        Some(Node::TimeWindowedCogrouped(c)) if op == "aggregate" => {
            let init = initializer(&fn_of(step, "init"))?;
            Node::WindowedTable(WindowedTable::Values(
                c.clone().aggregate_with(move || init(), options(step, false, true))?,
            ))
        }
        Some(Node::SessionWindowedCogrouped(c)) if op == "aggregate" => {
            // The merger is a required argument in Rust (as for a
            // session-windowed stream's aggregate).
            let Some(m) = step.get("merger").map(fn_ref) else {
                return Err(BuildError::Executor("aggregate: a session-windowed cogroup's aggregate needs a merger; none was given, so no call is made".to_owned()));
            };
            let init = initializer(&fn_of(step, "init"))?;
            let merge = merger(&m)?;
            Node::WindowedTable(WindowedTable::Values(c.clone().aggregate_with(
                move || init(),
                move |k, a1, a2| ok(merge(k, a1, a2)),
                options(step, false, true),
            )?))
        }
        Some(Node::Grouped(g)) => {
            if op == "windowed_by" {
                return Ok(Some(windowed_by(g, step.get("windows").and_then(J::as_object).unwrap_or(&Map::new()))?));
            }
            let o = options(step, false, true);
            match op {
                "count" => Node::Table(g.count_with(o)?.dynamic()),
                "reduce" => match step.get("builtin").and_then(J::as_str) {
                    Some(b) => Node::Table(g.reduce_builtin(builtin(b)?, o)?),
                    None => {
                        let r = reducer(&f)?;
                        Node::Table(g.reduce_with(move |a, v| ok(r(a, v)), o)?)
                    }
                },
                "aggregate" => {
                    let init = initializer(&fn_of(step, "init"))?;
                    let a = aggregator(&f)?;
                    Node::Table(g.aggregate_with(move || init(), move |k, v, agg| ok(a(k, v, agg)), o)?)
                }
                _ => return Err(format!("executor: {op} cannot apply to a grouped stream").into()),
            }
        }
        Some(Node::Table(t)) if matches!(op, "join" | "left_join" | "outer_join") => {
            let Some(Node::Table(other)) = label(step.get("table").and_then(J::as_str).unwrap_or("")) else {
                return Err("executor: a join's other table is not a table".to_owned().into());
            };
            let o = options(step, true, true);
            if let Some(b) = builtin_joiner(step)? {
                return Ok(Some(Node::Table(match op {
                    "join" => t.join_builtin(other, b, o)?,
                    "left_join" => t.left_join_builtin(other, b, o)?,
                    _ => t.outer_join_builtin(other, b, o)?,
                })));
            }
            let j = joiner(&f)?;
            let or_null = |x: Option<Value>| x.unwrap_or(Value::Null);
            Node::Table(match op {
                "join" => t.join_with(other, move |v, w| ok(j(v, w)), o)?,
                "left_join" => t.left_join_with(other, move |v, w: Option<Value>| ok(j(v, or_null(w))), o)?,
                _ => t.outer_join_with(
                    other,
                    move |v: Option<Value>, w: Option<Value>| ok(j(or_null(v), or_null(w))),
                    o,
                )?,
            })
        }
        Some(Node::Table(t)) if op == "foreign_key_join" || op == "left_foreign_key_join" => {
            let Some(Node::Table(other)) = label(step.get("table").and_then(J::as_str).unwrap_or("")) else {
                return Err("executor: a foreign-key join's other side is not a table".to_owned().into());
            };
            foreign_key_join(t, other, op, step, &f)?
        }
        Some(Node::Table(t)) => table_op(t, op, step, &f)?,
        Some(Node::WindowedTable(t)) => match op {
            "suppress" => Node::WindowedTable(t.suppress(step, options(step, false, false))?),
            _ => table_op(&t.dynamic(), op, step, &f)?,
        },
        Some(Node::TimeWindowed(w)) if op == "emit_strategy" => {
            Node::TimeWindowed(w.emit_strategy(emit_strategy(step))?)
        }
        Some(Node::SessionWindowed(w)) if op == "emit_strategy" => {
            Node::SessionWindowed(w.emit_strategy(emit_strategy(step))?)
        }
        Some(Node::TimeWindowed(w)) => {
            let o = options(step, false, true);
            Node::WindowedTable(match op {
                "count" => WindowedTable::Count(w.count_with(o)?),
                "reduce" => WindowedTable::Values(match step.get("builtin").and_then(J::as_str) {
                    Some(b) => w.reduce_builtin(builtin(b)?, o)?,
                    None => {
                        let r = reducer(&f)?;
                        w.reduce_with(move |a, v| ok(r(a, v)), o)?
                    }
                }),
                "aggregate" => {
                    let init = initializer(&fn_of(step, "init"))?;
                    let a = aggregator(&f)?;
                    WindowedTable::Values(w.aggregate_with(move || init(), move |k, v, agg| ok(a(k, v, agg)), o)?)
                }
                _ => return Err(format!("executor: {op} cannot apply to a time-windowed stream").into()),
            })
        }
        Some(Node::SessionWindowed(w)) => {
            let o = options(step, false, true);
            Node::WindowedTable(match op {
                "count" => WindowedTable::Count(w.count_with(o)?),
                "reduce" => WindowedTable::Values(match step.get("builtin").and_then(J::as_str) {
                    Some(b) => w.reduce_builtin(builtin(b)?, o)?,
                    None => {
                        let r = reducer(&f)?;
                        w.reduce_with(move |a, v| ok(r(a, v)), o)?
                    }
                }),
                "aggregate" => {
                    // SessionWindowedKStream::aggregate takes the merger as a
                    // required argument: leaving it out does not compile in
                    // Rust, so a case without one is refused here, before any call.
                    let Some(m) = step.get("merger").map(fn_ref) else {
                        return Err(BuildError::Executor(
                            "aggregate: a session-windowed aggregate needs a merger (a (key, aggregate1, aggregate2) function) to merge sessions; none was given, so no call is made".to_owned(),
                        ));
                    };
                    let init = initializer(&fn_of(step, "init"))?;
                    let a = aggregator(&f)?;
                    let m = merger(&m)?;
                    WindowedTable::Values(w.aggregate_with(
                        move || init(),
                        move |k, v, agg| ok(a(k, v, agg)),
                        move |k, a1, a2| ok(m(k, a1, a2)),
                        o,
                    )?)
                }
                _ => return Err(format!("executor: {op} cannot apply to a session-windowed stream").into()),
            })
        }
        Some(Node::GroupedTable(g)) => {
            let o = options(step, false, true);
            let sub = step.get("subtractor").map(fn_ref);
            // KGroupedTable's reduce and aggregate take the subtractor as a
            // required argument: leaving it out does not compile in Rust, so
            // a case without one is refused here, before any call.
            let need_sub = |what: &str| {
                BuildError::Executor(format!(
                    "{what}: a grouped table's {what} needs a subtractor; KGroupedTable::{what} takes it as a required argument in Rust, so no call is made without one"
                ))
            };
            match op {
                "count" => Node::Table(g.count_with(o)?.dynamic()),
                "reduce" => match step.get("builtin").and_then(J::as_str) {
                    Some(b) => Node::Table(g.reduce_builtin(builtin(b)?, o)?),
                    None => {
                        let r = reducer(&f)?;
                        let s = reducer(&sub.ok_or_else(|| need_sub("reduce"))?)?;
                        Node::Table(g.reduce_with(move |a, v| ok(r(a, v)), move |a, v| ok(s(a, v)), o)?)
                    }
                },
                "aggregate" => {
                    let init = initializer(&fn_of(step, "init"))?;
                    let a = aggregator(&f)?;
                    let s = aggregator(&sub.ok_or_else(|| need_sub("aggregate"))?)?;
                    Node::Table(g.aggregate_with(
                        move || init(),
                        move |k, v, agg| ok(a(k, v, agg)),
                        move |k, v, agg| ok(s(k, v, agg)),
                        o,
                    )?)
                }
                _ => return Err(format!("executor: {op} cannot apply to a grouped table").into()),
            }
        }
        Some(Node::Global(_)) => return Err(format!("executor: {op} does not apply to a global table").into()),
        Some(Node::TimeWindowedCogrouped(_) | Node::SessionWindowedCogrouped(_)) => {
            return Err(format!("executor: {op} does not apply to a windowed cogrouped stream").into())
        }
        None => return Err(format!("executor: {op} has no input").into()),
    }))
}

/// The topic before the key of the case's TopicNameExtractor sink.
static TOPIC_BY_KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// A TopicNameExtractor (named as the Kafka Streams executor names its
/// class, for describe()): the sink's topic followed by the key.
fn topic_by_key(key: &Value, _: &Value, _: &polystreams::RecordMetadata) -> String {
    format!("{}{}", TOPIC_BY_KEY.get().map(String::as_str).unwrap_or_default(), key.as_str().unwrap_or_default())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("conformance executor: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: polystreams-conformance SPEC.json")?;
    let spec: J = serde_json::from_slice(&std::fs::read(path)?)?;
    let case = &spec["case"];
    let prefix = spec["topic_prefix"].as_str().unwrap_or("");
    let mut config = Config::new();
    for (k, v) in spec["config"].as_object().into_iter().flatten() {
        config = config.set(k.clone(), v.as_str().unwrap_or_default());
    }
    let app = App::builder(spec["application_id"].as_str().unwrap_or(""))
        .engine(spec["engine"].as_str().unwrap_or(""))
        .config(config)
        .build()?;

    // Set when stdin says "stop" or closes.
    let told = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    {
        let told = told.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(l) if l.trim() == "stop" => break,
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
            *told.0.lock().unwrap() = true;
            told.1.notify_all();
        });
    }
    let wait = move |told: &(std::sync::Mutex<bool>, std::sync::Condvar)| {
        let g = told.0.lock().unwrap();
        drop(told.1.wait_while(g, |t| !*t).unwrap());
    };
    let wait_stop = || wait(&told);

    let mut labels: HashMap<String, usize> = Default::default();
    let mut nodes: Vec<Node> = Vec::new();
    // A split's streams, by its label (reached only through it).
    let mut splits: HashMap<String, HashMap<String, KStream<Value, Value>>> = Default::default();
    let empty = Map::new();
    for (i, step) in case["topology"].as_array().into_iter().flatten().enumerate() {
        let step = step.as_object().unwrap_or(&empty);
        let branch = step.get("branch").and_then(J::as_str).and_then(|b| {
            let from = step.get("from").and_then(J::as_str)?;
            splits.get(from)?.get(b).cloned().map(Node::Stream)
        });
        let input = match (&branch, step.get("from").and_then(J::as_str)) {
            (Some(b), _) => Some(b),
            (None, Some(label)) => labels.get(label).map(|&n| &nodes[n]),
            (None, None) => nodes.last(),
        };
        let result = if step.get("op").and_then(J::as_str) == Some("split") {
            match input {
                Some(Node::Stream(st)) => split(st, step).map(|m| {
                    splits.insert(step.get("as").and_then(J::as_str).unwrap_or("").to_owned(), m);
                    None
                }),
                _ => Err("executor: split applies to a stream".to_owned().into()),
            }
        } else {
            apply(&app, step, input, prefix, &labels, &nodes)
        };
        match result {
            Ok(Some(node)) => {
                nodes.push(node);
                if let Some(label) = step.get("as").and_then(J::as_str) {
                    labels.insert(label.to_owned(), nodes.len() - 1);
                }
            }
            Ok(None) => {}
            Err(e) => {
                let (code, message) = match e {
                    BuildError::Sdk(e) => (e.code().to_owned(), e.message().to_owned()),
                    BuildError::Executor(m) => ("invalid_argument".to_owned(), m),
                };
                emit(json!({"event": "build_error", "step": i, "code": code, "message": message}));
                wait_stop();
                app.close(std::time::Duration::from_secs(30));
                return Ok(());
            }
        }
    }
    emit(json!({"event": "built", "describe": app.describe()?}));
    if !spec["start"].as_bool().unwrap_or(false) {
        wait_stop();
        app.close(std::time::Duration::from_secs(30));
        return Ok(());
    }
    app.start()?;
    // Test driver mode (runner -driver) pipes into the session.
    emit(json!({"event": "started", "session": app.session_id()}));
    let stopper = app.clone();
    let told2 = told.clone();
    std::thread::spawn(move || {
        wait(&told2);
        // Before stopping, as the other executors do: the runner checks
        // expect.dropped_records against it.
        match stopper.dropped_records() {
            Ok(count) => emit(json!({"event": "dropped_records", "count": count})),
            Err(e) => eprintln!("executor: dropped_records: {e}"),
        }
        stopper.stop();
    });
    match app.run() {
        Ok(()) => emit(json!({"event": "stopped"})),
        Err(Error::Processing { message, topic, partition, offset, node }) => {
            emit(json!({"event": "failed", "code": "aborted", "message": message, "topic": topic.unwrap_or_default(),
                "partition": partition.unwrap_or(0), "offset": offset.unwrap_or(0), "node": node.unwrap_or_default()}));
            wait_stop(); // as the other executors do
        }
        Err(e) => return Err(Box::new(e)),
    }
    Ok(())
}

/// A source step's catalogue timestamp extractor (timestamp_extractor_fn),
/// for App::stream_with_extractor and table_with_extractor.
fn extractor_fn(step: &Map<String, J>) -> Result<Option<Extract>, BuildError> {
    match step.get("timestamp_extractor_fn") {
        Some(r) => Ok(Some(timestamp_extractor(&fn_ref(r))?)),
        None => Ok(None),
    }
}

/// A source step's Consumed.withTimestampExtractor: a built-in extractor by class name.
fn extractor(step: &Map<String, J>, o: Options) -> Result<Options, BuildError> {
    let Some(name) = step.get("timestamp_extractor").and_then(J::as_str) else {
        return Ok(o);
    };
    let e = match name {
        "FailOnInvalidTimestamp" => TimestampExtractor::FailOnInvalidTimestamp,
        "LogAndSkipOnInvalidTimestamp" => TimestampExtractor::LogAndSkipOnInvalidTimestamp,
        "UsePartitionTimeOnInvalidTimestamp" => TimestampExtractor::UsePartitionTimeOnInvalidTimestamp,
        "WallclockTimestampExtractor" => TimestampExtractor::WallclockTimestampExtractor,
        _ => return Err(BuildError::Executor(format!("unknown timestamp extractor {name:?}"))),
    };
    Ok(o.timestamp_extractor(e))
}
