use super::*;
use crate::fold::StreamReduce;

fn cols(items: &[Option<&[u8]>]) -> (Vec<i32>, Vec<u8>) {
    let mut lengths = Vec::new();
    let mut data = Vec::new();
    for i in items {
        match i {
            Some(b) => {
                lengths.push(b.len() as i32);
                data.extend_from_slice(b);
            }
            None => lengths.push(-1),
        }
    }
    (lengths, data)
}

fn step(token: u32, op: pb::Operation) -> pb::Step {
    pb::Step { token, operation: op as i32, node: format!("NODE-{token}"), ..Default::default() }
}

fn bundle(steps: Vec<pb::Step>, keys: &[Option<&[u8]>], values: &[Option<&[u8]>]) -> pb::Bundle {
    let (key_lengths, keys) = cols(keys);
    let (value_lengths, values) = cols(values);
    pb::Bundle {
        id: 7,
        steps,
        key_serde: "string".into(),
        value_serde: "string".into(),
        key_lengths,
        keys,
        value_lengths,
        values,
        topic: "t".into(),
        ..Default::default()
    }
}

fn outputs(lengths: &[i32], data: &[u8]) -> Vec<Option<String>> {
    column(data, lengths).unwrap().into_iter().map(|c| c.map(|b| String::from_utf8(b.to_vec()).unwrap())).collect()
}

fn executor(fns: Vec<(u32, Func)>) -> Executor {
    Executor::new(fns.into_iter().collect())
}

fn upper() -> Func {
    Func::Step(Arc::new(StepFn::new::<String, String, String>(|_, v| {
        let v: String = take(v)?;
        Ok(Out::One(
            None,
            Box::new(guarded(|| {
                assert!(v != "boom", "no booms");
                v.to_uppercase()
            })?),
        ))
    })))
}

fn words() -> Func {
    Func::Step(Arc::new(StepFn::new::<String, String, String>(|_, v| {
        let v: String = take(v)?;
        Ok(Out::Many(v.split_whitespace().map(|w| Box::new(w.to_owned()) as AnyBox).collect()))
    })))
}

fn key_is_a() -> Func {
    Func::Step(Arc::new(StepFn::new::<String, Option<String>, String>(|key, v| {
        let keep = key.get::<Option<String>>()?.as_deref() == Some("a");
        Ok(if keep { Out::One(None, v) } else { Out::Nothing })
    })))
}

fn value_as_key() -> Func {
    Func::Step(Arc::new(StepFn::new::<String, String, String>(|_, v| {
        let k = v.downcast_ref::<String>().unwrap().clone();
        Ok(Out::One(Some(Arc::new(k)), v))
    })))
}

#[test]
fn a_chain_runs_step_after_step_and_a_panic_fails_its_record_alone() {
    let ex = executor(vec![(1, upper()), (2, words())]);
    let b = bundle(
        vec![step(1, pb::Operation::MapValues), step(2, pb::Operation::FlatMapValues)],
        &[None, None, None],
        &[Some(b"a b"), Some(b"boom"), Some(b"c")],
    );
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![2, 0, 1]);
    assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("A".into()), Some("B".into()), Some("C".into())]);
    assert!(r.keys.is_empty() && r.key_lengths.is_empty(), "keys unchanged: none sent back");
    assert_eq!(r.failures.len(), 1);
    let f = &r.failures[0];
    assert_eq!((f.index, f.step), (1, 0));
    assert!(
        f.message.contains("no booms") && f.message.contains("panicked at") && f.message.contains("tests.rs"),
        "{}",
        f.message
    );
}

#[test]
fn keys_are_decoded_when_read_and_sent_back_when_changed() {
    let ex = executor(vec![(1, key_is_a()), (2, value_as_key())]);
    let b = bundle(
        vec![step(1, pb::Operation::Filter), step(2, pb::Operation::SelectKey)],
        &[Some(b"a"), Some(b"b"), None],
        &[Some(b"x"), Some(b"y"), Some(b"z")],
    );
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![1, 0, 0]);
    assert_eq!(outputs(&r.key_lengths, &r.keys), vec![Some("x".into())]);
    assert!(r.failures.is_empty());
}

#[test]
fn undecodable_values_and_unknown_tokens_fail_records() {
    let ex = executor(vec![(1, upper())]);
    let r = ex.process(&bundle(vec![step(1, pb::Operation::MapValues)], &[None, None], &[Some(&[0xff]), None]));
    assert_eq!(r.output_counts, vec![0, 0]);
    assert!(r.failures[0].message.contains("the value does not decode"), "{}", r.failures[0].message);
    assert!(r.failures[1].message.contains("use an Option"), "{}", r.failures[1].message);
    // The engine applies default.deserialization.exception.handler to these.
    let deserialization = pb::record_failure::Kind::Deserialization as i32;
    assert_eq!(r.failures.iter().map(|f| f.kind).collect::<Vec<_>>(), vec![deserialization, deserialization]);

    let r = ex.process(&bundle(vec![step(9, pb::Operation::MapValues)], &[None], &[Some(b"x")]));
    assert_eq!(r.failures[0].message, "step 0 (NODE-9) names token 9, which is not registered in this host");

    let mut bad = bundle(vec![step(1, pb::Operation::MapValues)], &[None], &[Some(b"x")]);
    bad.value_lengths = vec![5];
    let r = ex.process(&bad);
    assert!(r.failures[0].message.contains("malformed bundle column"), "{}", r.failures[0].message);
}

struct Sum;

impl Folder for Sum {
    type K = String;
    type V = i64;
    type A = Option<i64>;
    fn start(&self, key: &String, v: i64) -> Option<i64> {
        self.add(key, Some(0), v)
    }
    fn add(&self, _: &String, agg: Option<i64>, v: i64) -> Option<i64> {
        assert!(v != 13, "unlucky");
        Some(agg.unwrap() + v)
    }
    fn sub(&self, _: &String, agg: Option<i64>, old: i64) -> Option<i64> {
        let left = agg.unwrap() - old;
        (left != 0).then_some(left)
    }
    fn has_sub(&self) -> bool {
        true
    }
    fn initial(&self) -> Option<Option<i64>> {
        Some(Some(0))
    }
    fn merge(&self, _: &String, a: Option<i64>, b: Option<i64>) -> Option<i64> {
        Some(a.unwrap() + b.unwrap())
    }
    fn has_merge(&self) -> bool {
        true
    }
}

fn longs(vs: &[Option<i64>]) -> (Vec<i32>, Vec<u8>) {
    let owned: Vec<Option<[u8; 8]>> = vs.iter().map(|v| v.map(i64::to_be_bytes)).collect();
    let refs: Vec<Option<&[u8]>> = owned.iter().map(|v| v.as_ref().map(|b| &b[..])).collect();
    cols(&refs)
}

fn fold_bundle(
    table: bool,
    groups: &[(&str, Option<i64>, usize)],
    values: &[Option<i64>],
    olds: &[Option<i64>],
) -> pb::Bundle {
    let keys: Vec<Option<&[u8]>> = groups.iter().map(|g| Some(g.0.as_bytes())).collect();
    let (key_lengths, keys) = cols(&keys);
    let (aggregate_lengths, aggregates) = longs(&groups.iter().map(|g| g.1).collect::<Vec<_>>());
    let (value_lengths, values) = longs(values);
    let (old_value_lengths, old_values) = longs(olds);
    let mut s = step(1, pb::Operation::Aggregate);
    s.initializer_token = 2;
    if table {
        s.subtractor_token = 3;
    }
    pb::Bundle {
        id: 7,
        steps: vec![s],
        key_serde: "string".into(),
        value_serde: "long".into(),
        aggregate_serde: "long".into(),
        key_lengths,
        keys,
        value_lengths,
        values,
        group_sizes: groups.iter().map(|g| g.2 as i32).collect(),
        aggregate_lengths,
        aggregates,
        old_value_lengths: if table { old_value_lengths } else { vec![] },
        old_values: if table { old_values } else { vec![] },
        ..Default::default()
    }
}

fn decoded(r: &pb::BundleResult) -> Vec<Option<i64>> {
    column(&r.values, &r.value_lengths)
        .unwrap()
        .into_iter()
        .map(|c| c.map(|b| i64::from_be_bytes(b.try_into().unwrap())))
        .collect()
}

#[test]
fn a_fold_carries_each_groups_aggregate_and_a_panic_leaves_it_as_it_was() {
    let ex = executor(vec![(1, Func::Fold(Arc::new(Fold(Sum)))), (2, Func::Part), (3, Func::Part)]);
    let b = fold_bundle(
        false,
        &[("a", None, 3), ("b", Some(100), 2)],
        &[Some(1), Some(13), Some(2), Some(5), Some(6)],
        &[],
    );
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![1, 0, 1, 1, 1]);
    assert_eq!(decoded(&r), vec![Some(1), Some(3), Some(105), Some(111)]);
    assert_eq!(r.failures.len(), 1);
    assert!(r.failures[0].message.contains("unlucky"));
    assert_eq!(r.failures[0].kind, pb::record_failure::Kind::Processing as i32);
}

#[test]
fn a_table_fold_subtracts_then_adds_and_a_null_aggregate_is_none() {
    let ex = executor(vec![(1, Func::Fold(Arc::new(Fold(Sum)))), (2, Func::Part), (3, Func::Part)]);
    // a: 10 replaced by 4 (10 - 10 = nothing, then + 4), then deleted (4 - 4 = nothing).
    let b = fold_bundle(true, &[("a", Some(10), 2)], &[Some(4), None], &[Some(10), Some(4)]);
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![1, 1]);
    assert_eq!(decoded(&r), vec![Some(4), None]);
    assert!(r.failures.is_empty());
}

#[test]
fn a_malformed_fold_bundle_fails_every_value() {
    let ex = executor(vec![(1, Func::Fold(Arc::new(Fold(Sum)))), (2, Func::Part)]);
    let b = fold_bundle(false, &[("a", None, 3)], &[Some(1)], &[]);
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![0]);
    assert!(r.failures[0].message.starts_with("malformed fold bundle"), "{}", r.failures[0].message);
}

#[test]
fn fold_values_may_refer_to_records_sent_once() {
    let ex = executor(vec![(1, Func::Fold(Arc::new(Fold(Sum)))), (2, Func::Part), (3, Func::Part)]);
    // Two windows of key "a": records 0 and 1 fall into both, record 2 into the second.
    let mut b = fold_bundle(false, &[("a", None, 2), ("a", Some(10), 3)], &[Some(1), Some(2), Some(4)], &[]);
    b.value_refs = vec![0, 1, 0, 1, 2];
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![1, 1, 1, 1, 1]);
    assert_eq!(decoded(&r), vec![Some(1), Some(3), Some(11), Some(13), Some(17)]);

    b.value_refs = vec![0, 1, 0, 1, 9];
    let r = ex.process(&b);
    assert_eq!(r.output_counts, vec![0; 5]);
    assert!(r.failures[0].message.contains("value ref 9"), "{}", r.failures[0].message);
}

/// An aggregate of strings whose result spells out its calls: the
/// initializer is "0", the aggregator appends "+value" (and panics on
/// "boom"), the merger makes "(a|b)".
struct Spell {
    merger: bool,
}

impl Folder for Spell {
    type K = String;
    type V = String;
    type A = String;
    fn start(&self, key: &String, v: String) -> String {
        self.add(key, "0".to_owned(), v)
    }
    fn add(&self, key: &String, agg: String, v: String) -> String {
        assert!(v != "boom", "no booms");
        if key == "upper" {
            return format!("{agg}+{}", v.to_uppercase());
        }
        format!("{agg}+{v}")
    }
    fn sub(&self, _: &String, agg: String, _: String) -> String {
        agg
    }
    fn has_sub(&self) -> bool {
        false
    }
    fn initial(&self) -> Option<String> {
        Some("0".to_owned())
    }
    fn merge(&self, _: &String, a: String, b: String) -> String {
        format!("({a}|{b})")
    }
    fn has_merge(&self) -> bool {
        self.merger
    }
}

struct Prog<'a> {
    groups: &'a [(&'a str, usize)],
    pool: &'a [&'a str],
    records: &'a [&'a str],
    refs: &'a [i32],
    bases: &'a [i32],
    counts: &'a [i32],
    merges: &'a [i32],
}

fn program(p: Prog<'_>) -> pb::Bundle {
    let strs = |xs: &[&str]| cols(&xs.iter().map(|x| Some(x.as_bytes())).collect::<Vec<_>>());
    let (key_lengths, keys) = strs(&p.groups.iter().map(|g| g.0).collect::<Vec<_>>());
    let (aggregate_lengths, aggregates) = strs(p.pool);
    let (value_lengths, values) = strs(p.records);
    let mut s = step(1, pb::Operation::Aggregate);
    s.initializer_token = 2;
    s.merger_token = 3;
    pb::Bundle {
        id: 9,
        steps: vec![s],
        key_serde: "string".into(),
        value_serde: "string".into(),
        aggregate_serde: "string".into(),
        key_lengths,
        keys,
        value_lengths,
        values,
        group_sizes: p.groups.iter().map(|g| g.1 as i32).collect(),
        aggregate_lengths,
        aggregates,
        value_refs: p.refs.to_vec(),
        fold_bases: p.bases.to_vec(),
        merge_counts: if p.counts.is_empty() { vec![0; p.bases.len()] } else { p.counts.to_vec() },
        merge_refs: p.merges.to_vec(),
        ..Default::default()
    }
}

fn spell(merger: bool) -> Executor {
    executor(vec![(1, Func::Fold(Arc::new(Fold(Spell { merger })))), (2, Func::Part), (3, Func::Part)])
}

fn failures(r: &pb::BundleResult) -> Vec<(i32, String)> {
    r.failures.iter().map(|f| (f.index, f.message.clone())).collect()
}

#[test]
fn a_program_merges_the_sessions_a_record_bridges_into_the_initializers_aggregate() {
    // Pool: a's sessions "s1" and "s2"; record "r" bridges them, then "x"
    // extends the merged session (its base is value 0's output: ref 2 + 0).
    let b = program(Prog {
        groups: &[("a", 2)],
        pool: &["s1", "s2"],
        records: &["r", "x"],
        refs: &[0, 1],
        bases: &[-1, 2],
        counts: &[2, 0],
        merges: &[0, 1],
    });
    let r = spell(true).process(&b);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.output_counts, vec![1, 1]);
    assert_eq!(
        outputs(&r.value_lengths, &r.values),
        vec![Some("((0|s1)|s2)+r".into()), Some("((0|s1)|s2)+r+x".into())]
    );
}

#[test]
fn a_reduce_program_starts_from_none_and_reduces_merge_operands() {
    let reduce = StreamReduce::new(|a: String, b: String| format!("{a}{b}"));
    let ex = executor(vec![(1, Func::Fold(Arc::new(Fold(reduce))))]);
    let mut b = program(Prog {
        groups: &[("a", 2)],
        pool: &["s1", "s2"],
        records: &["r", "x"],
        refs: &[0, 1],
        bases: &[-1, -1],
        counts: &[2, 0],
        merges: &[0, 1],
    });
    b.steps = vec![step(1, pb::Operation::Reduce)];
    let r = ex.process(&b);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("s1s2r".into()), Some("x".into())]);
}

#[test]
fn a_program_value_starts_from_an_earlier_output_and_a_failure_fails_its_dependents() {
    // Group a (sliding windows): value 0 fails; value 1 starts from it and
    // value 2 merges it in, so both fail; value 3 starts from the
    // initializer, value 4 from value 3. Group b starts from value 4 of group a.
    let b = program(Prog {
        groups: &[("a", 5), ("b", 1)],
        pool: &["w"],
        records: &["boom", "y", "z"],
        refs: &[0, 1, 1, 1, 2, 2],
        bases: &[0, 1, -1, -1, 4, 5],
        counts: &[0, 0, 1, 0, 0, 0],
        merges: &[1],
    });
    let r = spell(true).process(&b);
    assert_eq!(r.output_counts, vec![0, 0, 0, 1, 1, 1]);
    assert_eq!(
        outputs(&r.value_lengths, &r.values),
        vec![Some("0+y".into()), Some("0+y+z".into()), Some("0+y+z+z".into())]
    );
    let f = failures(&r);
    assert!(f[0].0 == 0 && f[0].1.contains("no booms") && f[0].1.contains("panicked at"), "{f:?}");
    assert_eq!(
        f[1..],
        [
            (1, "depends on fold value 0, which failed".to_owned()),
            (2, "depends on fold value 0, which failed".to_owned())
        ]
    );
    assert!(r.failures.iter().all(|f| f.kind == pb::record_failure::Kind::Processing as i32));

    // A value that does not decode is a deserialization failure.
    let mut b = program(Prog {
        groups: &[("a", 1)],
        pool: &[],
        records: &["x"],
        refs: &[0],
        bases: &[-1],
        counts: &[],
        merges: &[],
    });
    b.values = vec![0xff];
    let r = spell(true).process(&b);
    assert_eq!(r.output_counts, vec![0]);
    assert!(r.failures[0].message.starts_with("the value does not decode"), "{}", r.failures[0].message);
    assert_eq!(r.failures[0].kind, pb::record_failure::Kind::Deserialization as i32);
}

#[test]
fn a_malformed_program_fails_every_value_naming_the_problem() {
    let base = Prog {
        groups: &[("a", 2)],
        pool: &["s"],
        records: &["r"],
        refs: &[0, 0],
        bases: &[-1, -1],
        counts: &[],
        merges: &[],
    };
    let fails = |ex: &Executor, p: Prog<'_>| {
        let r = ex.process(&program(p));
        assert_eq!(r.output_counts, vec![0, 0]);
        assert_eq!(r.failures.len(), 2);
        assert_eq!(r.failures[0].message, r.failures[1].message);
        r.failures[0].message.clone()
    };
    // Value 0 names its own output (ref 1 + 0): not an earlier value.
    let m = fails(&spell(true), Prog { bases: &[1, -1], ..base });
    assert!(
        m.starts_with("malformed fold program: fold value 0's base 1 names neither")
            && m.ends_with("nor one of the 0 earlier values"),
        "{m}"
    );
    let m = fails(&spell(true), Prog { counts: &[0, 1], merges: &[-1], ..base });
    assert!(m.contains("fold value 1's merge operand is -1"), "{m}");
    let m = fails(&spell(true), Prog { counts: &[0, 1], ..base });
    assert!(m.contains("merge counts adding up to 1 for 0 merge refs"), "{m}");
    let m = fails(&spell(true), Prog { refs: &[0, 3], ..base });
    assert!(m.contains("fold value 1 is record 3, one of none of the 1 records"), "{m}");
    let m = fails(&spell(false), Prog { counts: &[0, 1], merges: &[0], ..base });
    assert_eq!(
        m,
        "aggregate step (NODE-1) names merger token 3, but its aggregate was registered without a merger (fold value 1 merges aggregates)"
    );
    // Without merges, no merger is needed.
    let r = spell(false).process(&program(Prog { bases: &[0, 1], ..base }));
    assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("s+r".into()), Some("s+r+r".into())]);
}

// Joins.

fn join_bundle(token: u32, values: &[Option<&[u8]>], others: &[Option<&[u8]>]) -> pb::Bundle {
    let (other_value_lengths, other_values) = cols(others);
    let mut b = bundle(vec![step(token, pb::Operation::ValueJoin)], &vec![None; values.len()], values);
    b.other_value_lengths = other_value_lengths;
    b.other_values = other_values;
    b.other_value_serde = "long".into();
    b
}

/// A left joiner of string values and long table values, making nullable strings.
fn describe_order() -> Func {
    Func::Join(Arc::new(ValueJoiner::<String, i64, Option<String>>::new(|v, t| {
        Ok(match t {
            _ if v == "boom" => panic!("no booms"),
            _ if v == "none" => None,
            Some(t) => Some(format!("{v}:{t}")),
            None => Some(format!("{v}:-")),
        })
    })))
}

#[test]
fn a_joiner_sees_the_value_and_the_table_value_none_for_a_left_joins_miss() {
    let ex = executor(vec![(1, describe_order())]);
    let seven = 7i64.to_be_bytes();
    let r = ex.process(&join_bundle(1, &[Some(b"a"), Some(b"b")], &[Some(&seven), None]));
    assert_eq!(r.output_counts, vec![1, 1]);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("a:7".to_owned()), Some("b:-".to_owned())]);
}

#[test]
fn a_join_record_fails_alone_with_its_kind_and_a_null_result_is_a_null_value() {
    let ex = executor(vec![(1, describe_order())]);
    let seven = 7i64.to_be_bytes();
    let r = ex.process(&join_bundle(
        1,
        &[Some(b"a"), Some(b"boom"), Some(b"none"), Some(b"c"), Some(b"\xff")],
        &[Some(&seven), Some(&seven), Some(&seven), Some(b"xyz"), Some(&seven)],
    ));
    assert_eq!(r.output_counts, vec![1, 0, 1, 0, 0]);
    assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("a:7".to_owned()), None]);
    let got: Vec<(i32, i32)> = r.failures.iter().map(|f| (f.index, f.kind)).collect();
    let (processing, deser) =
        (pb::record_failure::Kind::Processing as i32, pb::record_failure::Kind::Deserialization as i32);
    assert_eq!(got, vec![(1, processing), (3, deser), (4, deser)]);
    assert!(r.failures[0].message.contains("no booms"), "{}", r.failures[0].message);
    assert!(r.failures[1].message.starts_with("the table value does not decode"), "{}", r.failures[1].message);
    assert!(r.failures[2].message.starts_with("the value does not decode"), "{}", r.failures[2].message);
}

#[test]
fn an_unregistered_joiner_or_a_malformed_join_bundle_fails_every_record() {
    let seven = 7i64.to_be_bytes();
    let r = executor(vec![]).process(&join_bundle(9, &[Some(b"a")], &[Some(&seven)]));
    assert_eq!(r.output_counts, vec![0]);
    assert!(r.failures[0].message.contains("token 9, which is not a joiner"), "{}", r.failures[0].message);
    let mut b = join_bundle(1, &[Some(b"a"), Some(b"b")], &[Some(&seven), Some(&seven)]);
    b.other_value_lengths.truncate(1);
    b.other_values.truncate(8);
    let r = executor(vec![(1, describe_order())]).process(&b);
    assert_eq!(r.output_counts, vec![0, 0]);
    let msgs: Vec<&str> = r.failures.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(msgs, vec!["malformed join bundle: 1 table values for 2 records"; 2]);
    assert!(r.failures.iter().all(|f| f.kind == pb::record_failure::Kind::Processing as i32));
    // A joiner inside a chain is refused, not run as a step.
    let mut b = join_bundle(1, &[Some(b"a")], &[Some(&seven)]);
    b.steps.push(step(2, pb::Operation::MapValues));
    let r = executor(vec![(1, describe_order()), (2, upper())]).process(&b);
    assert!(r.failures[0].message.contains("must be its bundle's only step"), "{}", r.failures[0].message);
}

// Async steps: futures run together within a bundle, outcomes in record order.

mod async_steps {
    use super::*;
    use crate::asynchronous::{
        action_step_async, flat_map_values_step_async, key_step_async, map_step_async, map_values_step_async,
        predicate_step_async,
    };
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::{Context, Poll, Waker};

    /// Pending `n` polls (waking itself each time), then ready.
    struct Yield(usize);

    impl Future for Yield {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 == 0 {
                return Poll::Ready(());
            }
            self.0 -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// Opens once `n` futures wait on it: a future that waits finishes only
    /// when all `n` run together (else it stays pending until the bundle's
    /// bound drops it and fails its record).
    #[derive(Clone)]
    struct Barrier(Arc<Mutex<(usize, usize, Vec<Waker>)>>);

    impl Barrier {
        fn new(n: usize) -> Barrier {
            Barrier(Arc::new(Mutex::new((n, 0, Vec::new()))))
        }

        fn wait(&self) -> impl Future<Output = ()> {
            let state = self.0.clone();
            let mut counted = false;
            std::future::poll_fn(move |cx| {
                let mut st = state.lock().unwrap();
                if !counted {
                    counted = true;
                    st.1 += 1;
                }
                if st.1 >= st.0 {
                    st.2.drain(..).for_each(Waker::wake);
                    return Poll::Ready(());
                }
                st.2.push(cx.waker().clone());
                Poll::Pending
            })
        }
    }

    fn values(items: &[&str]) -> Vec<Option<Vec<u8>>> {
        items.iter().map(|s| Some(s.as_bytes().to_vec())).collect()
    }

    fn run(
        fns: Vec<(u32, StepFn)>,
        steps: Vec<pb::Step>,
        keys: &[&str],
        vals: &[&str],
        timeout: Duration,
    ) -> pb::BundleResult {
        let k = values(keys);
        let v = values(vals);
        let kr: Vec<Option<&[u8]>> = k.iter().map(|x| x.as_deref()).collect();
        let vr: Vec<Option<&[u8]>> = v.iter().map(|x| x.as_deref()).collect();
        let mut exec = Executor::new(fns.into_iter().map(|(t, f)| (t, Func::Step(Arc::new(f)))).collect());
        exec.async_timeout = timeout;
        exec.process(&bundle(steps, &kr, &vr))
    }

    #[test]
    fn outputs_keep_record_order_when_later_records_finish_first() {
        let finished = Arc::new(Mutex::new(Vec::new()));
        let fin = finished.clone();
        let f = map_values_step_async::<String, String, String, _>("map_values f".into(), move |v: String| {
            let fin = fin.clone();
            async move {
                let i: usize = v.parse().unwrap();
                Yield(10 * (5 - i)).await; // record 0 waits longest
                fin.lock().unwrap().push(i);
                format!("v{v}")
            }
        });
        let r = run(
            vec![(1, f)],
            vec![step(1, pb::Operation::MapValues)],
            &["k"; 5],
            &["0", "1", "2", "3", "4"],
            ASYNC_TIMEOUT,
        );
        assert_eq!(*finished.lock().unwrap(), vec![4, 3, 2, 1, 0]);
        assert_eq!(outputs(&r.value_lengths, &r.values), ["v0", "v1", "v2", "v3", "v4"].map(|s| Some(s.to_owned())));
        assert_eq!(r.output_counts, vec![1; 5]);
        assert!(r.failures.is_empty());
    }

    #[test]
    fn a_bundles_futures_run_together() {
        let n = 40;
        let barrier = Barrier::new(n);
        let f = map_values_step_async::<String, String, String, _>("map_values f".into(), move |v: String| {
            let wait = barrier.wait();
            async move {
                wait.await;
                v.to_uppercase()
            }
        });
        let vals: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
        let refs: Vec<&str> = vals.iter().map(String::as_str).collect();
        // Run one at a time, the first would wait for ever: the bound fails it.
        let r =
            run(vec![(1, f)], vec![step(1, pb::Operation::MapValues)], &vec!["k"; n], &refs, Duration::from_secs(10));
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        let want: Vec<Option<String>> = (0..n).map(|i| Some(format!("R{i}"))).collect();
        assert_eq!(outputs(&r.value_lengths, &r.values), want);
    }

    #[test]
    fn a_panicking_future_fails_its_record_alone() {
        let f = map_values_step_async::<String, String, String, _>("map_values f".into(), |v: String| async move {
            Yield(1).await;
            assert!(v != "bad", "cannot take {v}");
            v + "!"
        });
        let r =
            run(vec![(1, f)], vec![step(1, pb::Operation::MapValues)], &["k"; 3], &["a", "bad", "c"], ASYNC_TIMEOUT);
        assert_eq!(r.output_counts, vec![1, 0, 1]);
        assert_eq!(outputs(&r.value_lengths, &r.values), [Some("a!".to_owned()), Some("c!".to_owned())]);
        assert_eq!(r.failures.len(), 1);
        let f0 = &r.failures[0];
        assert_eq!((f0.index, f0.step), (1, 0));
        assert!(f0.message.starts_with("panicked at ") && f0.message.ends_with("cannot take bad"), "{}", f0.message);
        assert_eq!(f0.kind, pb::record_failure::Kind::Processing as i32);
    }

    #[test]
    fn a_future_past_the_bound_fails_its_record_naming_the_function() {
        let never = Barrier::new(usize::MAX);
        let f = map_values_step_async::<String, String, String, _>("map_values stuck".into(), move |v: String| {
            let wait = (v == "stuck").then(|| never.wait());
            async move {
                if let Some(w) = wait {
                    w.await;
                }
                v
            }
        });
        let r = run(
            vec![(7, f)],
            vec![step(7, pb::Operation::MapValues)],
            &["k"; 3],
            &["a", "stuck", "b"],
            Duration::from_millis(100),
        );
        assert_eq!(outputs(&r.value_lengths, &r.values), [Some("a".to_owned()), Some("b".to_owned())]);
        assert_eq!(r.failures.len(), 1);
        assert_eq!(
            r.failures[0].message,
            "TimeoutError: map_values stuck (token 7, step 0, node NODE-7) did not finish within 0.1 s (cancelled)"
        );
    }

    #[test]
    fn every_async_step_kind_in_one_chain() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let peeked = seen.clone();
        let fns = vec![
            (
                1,
                predicate_step_async::<String, String, _>("filter".into(), false, |_k: &String, v: &String| {
                    let keep = v != "drop";
                    async move {
                        Yield(1).await;
                        keep
                    }
                }),
            ),
            (
                2,
                flat_map_values_step_async::<String, String, String, Vec<String>, _>(
                    "flat".into(),
                    |v: String| async move { v.split('-').map(str::to_owned).collect() },
                ),
            ),
            (
                3,
                map_step_async::<String, String, String, String, _>("map".into(), |k: &String, v: String| {
                    let k = k.clone();
                    async move { (v, k) }
                }),
            ),
            (
                4,
                key_step_async::<String, String, String, _>("key".into(), |k: &String, _v: &String| {
                    let k = k.to_uppercase();
                    async move { k }
                }),
            ),
            (
                5,
                action_step_async::<String, String, _>("peek".into(), true, move |k: &String, v: &String| {
                    let (seen, k, v) = (peeked.clone(), k.clone(), v.clone());
                    async move { seen.lock().unwrap().push((k, v)) }
                }),
            ),
        ];
        let steps = vec![
            step(1, pb::Operation::Filter),
            step(2, pb::Operation::FlatMapValues),
            step(3, pb::Operation::Map),
            step(4, pb::Operation::SelectKey),
            step(5, pb::Operation::Peek),
        ];
        let r = run(fns, steps, &["k1", "k2", "k3"], &["a-b", "drop", "c"], ASYNC_TIMEOUT);
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        assert_eq!(r.output_counts, vec![2, 0, 1]);
        assert_eq!(outputs(&r.key_lengths, &r.keys), ["A", "B", "C"].map(|s| Some(s.to_owned())));
        assert_eq!(outputs(&r.value_lengths, &r.values), ["k1", "k1", "k3"].map(|s| Some(s.to_owned())));
        let own = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(*seen.lock().unwrap(), vec![own("A", "k1"), own("B", "k1"), own("C", "k3")]);
    }

    #[test]
    fn an_async_joiner_runs_a_bundles_calls_together_and_fails_records_alone() {
        let barrier = Barrier::new(3);
        let joiner = ValueJoiner::<String, i64, String>::new_async("join j".into(), move |v, t| {
            let wait = barrier.wait();
            Ok(Box::pin(async move {
                wait.await;
                assert!(v != "boom", "no booms");
                Ok(format!("{v}:{}", t.unwrap_or(-1)))
            }) as LocalFuture<_>)
        });
        let ex = executor(vec![(1, Func::Join(Arc::new(joiner)))]);
        let seven = 7i64.to_be_bytes();
        let r = ex.process(&join_bundle(
            1,
            &[Some(b"a"), Some(b"\xff"), Some(b"boom"), Some(b"c")],
            &[Some(&seven), Some(&seven), Some(&seven), None],
        ));
        assert_eq!(r.output_counts, vec![1, 0, 0, 1]);
        assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("a:7".to_owned()), Some("c:-1".to_owned())]);
        let got: Vec<i32> = r.failures.iter().map(|f| f.index).collect();
        assert_eq!(got, vec![1, 2]);
        assert!(r.failures[1].message.contains("no booms"), "{}", r.failures[1].message);
    }

    fn adder(_: &String, v: i64, a: i64) -> i64 {
        assert!(v != 13, "unlucky");
        a + v
    }

    #[test]
    fn an_async_aggregate_answers_as_the_sync_one_does() {
        let b = fold_bundle(
            false,
            &[("a", None, 3), ("b", Some(100), 3), ("c", None, 2)],
            &[Some(1), Some(13), Some(2), Some(5), None, Some(6), Some(13), Some(4)],
            &[],
        );
        let sync = executor(vec![
            (1, Func::Fold(Arc::new(Fold(crate::fold::Aggregate::<String, i64, i64>::new(|| 10, adder, None))))),
            (2, Func::Part),
        ])
        .process(&b);
        assert_eq!(sync.failures.len(), 3, "{:?}", sync.failures);
        // The first values of groups a and c (b has a stored aggregate)
        // wait for each other: the groups fold together.
        let first = Barrier::new(2);
        let fold = AsyncFold::<String, i64, i64>::new(
            "aggregate f".into(),
            Arc::new(move |k: &String, v: i64| {
                let (k, wait) = (k.clone(), first.wait());
                Box::pin(async move {
                    wait.await;
                    adder(&k, v, 10)
                }) as LocalFuture<i64>
            }),
            Arc::new(move |k: &String, a: i64, v: i64| {
                let k = k.clone();
                Box::pin(async move {
                    Yield(1).await;
                    adder(&k, v, a)
                }) as LocalFuture<i64>
            }),
        );
        let r = executor(vec![(1, Func::Fold(Arc::new(fold))), (2, Func::Part)]).process(&b);
        assert_eq!(r, sync);
    }

    /// Spell's functions as async ones, each future yielding once.
    fn async_spell(merger: bool) -> Executor {
        let add = |k: &String, a: String, v: String| {
            let k = k.clone();
            Box::pin(async move {
                Yield(1).await;
                Spell { merger: true }.add(&k, a, v)
            }) as LocalFuture<String>
        };
        let mut fold = AsyncFold::<String, String, String>::new(
            "aggregate spell".into(),
            Arc::new(move |k: &String, v: String| add(k, "0".to_owned(), v)),
            Arc::new(add),
        )
        .with_initial(Arc::new(|| "0".to_owned()));
        if merger {
            fold = fold.with_merge(
                Arc::new(|_: &String, a: String, b: String| {
                    Box::pin(async move {
                        Yield(1).await;
                        format!("({a}|{b})")
                    }) as LocalFuture<String>
                }),
                Some("aggregate merger spell".into()),
            );
        }
        executor(vec![(1, Func::Fold(Arc::new(fold))), (2, Func::Part), (3, Func::Part)])
    }

    #[test]
    fn an_async_fold_program_answers_as_the_sync_one_does() {
        let bundles = [
            // Sessions a record bridges, merged into the initializer's aggregate.
            program(Prog {
                groups: &[("a", 2), ("b", 1)],
                pool: &["s1", "s2"],
                records: &["r", "x", "y"],
                refs: &[0, 1, 2],
                bases: &[-1, 2, -1],
                counts: &[2, 0, 1],
                merges: &[0, 1, 0],
            }),
            // A failing value fails its dependents; group b refers to group
            // a's output (the program then runs in order as one).
            program(Prog {
                groups: &[("a", 5), ("b", 1)],
                pool: &["w"],
                records: &["boom", "y", "z"],
                refs: &[0, 1, 1, 1, 2, 2],
                bases: &[0, 1, -1, -1, 4, 5],
                counts: &[0, 0, 1, 0, 0, 0],
                merges: &[1],
            }),
        ];
        for b in &bundles {
            let sync = spell(true).process(b);
            assert!(sync.output_counts.contains(&1), "{sync:?}");
            assert_eq!(async_spell(true).process(b), sync);
        }
        // Without a merger, a value that merges fails the bundle, naming the step.
        let (sync, r) = (spell(false).process(&bundles[0]), async_spell(false).process(&bundles[0]));
        assert_eq!(r, sync);
        assert!(r.failures[0].message.contains("names merger token 3"), "{:?}", r.failures);
    }

    /// Sum's functions as async ones (each future yielding once), with or
    /// without its subtractor.
    fn async_sum(sub: bool) -> Executor {
        let fold = AsyncFold::<String, i64, Option<i64>>::new(
            "aggregate sum".into(),
            Arc::new(|k: &String, v: i64| {
                let k = k.clone();
                Box::pin(async move {
                    Yield(1).await;
                    Sum.start(&k, v)
                }) as LocalFuture<Option<i64>>
            }),
            Arc::new(|k: &String, a: Option<i64>, v: i64| {
                let k = k.clone();
                Box::pin(async move {
                    Yield(2).await;
                    Sum.add(&k, a, v)
                }) as LocalFuture<Option<i64>>
            }),
        );
        let fold = if sub {
            fold.with_sub(
                Arc::new(|k: &String, a: Option<i64>, old: i64| {
                    let k = k.clone();
                    Box::pin(async move {
                        Yield(1).await;
                        Sum.sub(&k, a, old)
                    }) as LocalFuture<Option<i64>>
                }),
                "aggregate subtractor sum".into(),
            )
        } else {
            fold
        };
        executor(vec![(1, Func::Fold(Arc::new(fold))), (2, Func::Part), (3, Func::Part)])
    }

    #[test]
    fn an_async_table_fold_answers_as_the_sync_one_does() {
        let sync = executor(vec![(1, Func::Fold(Arc::new(Fold(Sum)))), (2, Func::Part), (3, Func::Part)]);
        // a: 10 replaced by 4, deleted, added again (13 panics: the group
        // goes on from the aggregate before); b: an update moving in and
        // one whose old value does not decode.
        let mut table = fold_bundle(
            true,
            &[("a", Some(10), 5), ("b", None, 2)],
            &[Some(4), None, Some(13), Some(6), Some(1), Some(5), Some(7)],
            &[Some(10), Some(4), None, None, Some(6), None, Some(5)],
        );
        let r = async_sum(true).process(&table);
        assert_eq!(r, sync.process(&table));
        assert_eq!(r.output_counts, vec![1, 1, 0, 1, 1, 1, 1]);
        assert_eq!(decoded(&r), vec![Some(4), None, Some(6), Some(1), Some(5), Some(7)]);
        assert!(r.failures[0].message.contains("unlucky"), "{:?}", r.failures);
        // a's first old value does not decode (one byte, not a long's eight).
        table.old_value_lengths[0] = 1;
        table.old_values.splice(0..8, [0xff]);
        let (r, want) = (async_sum(true).process(&table), sync.process(&table));
        assert_eq!(r.output_counts, want.output_counts, "{:?} / {:?}", r.failures, want.failures);
        assert_eq!(failures(&r), failures(&want));
        assert!(r.failures[0].message.contains("the old value does not decode"), "{:?}", r.failures);
        // Without a subtractor the bundle fails, as the sync fold's does.
        let r = async_sum(false).process(&table);
        assert!(r.failures.iter().all(|f| f.message.contains("registered without a subtractor")), "{r:?}");

        // Time windows: fold values referring to records sent once.
        let mut b = fold_bundle(false, &[("a", None, 2), ("a", Some(10), 3)], &[Some(1), Some(2), Some(4)], &[]);
        b.value_refs = vec![0, 1, 0, 1, 2];
        assert_eq!(async_sum(false).process(&b), sync.process(&b));
        b.value_refs[4] = 3;
        let r = async_sum(false).process(&b);
        assert_eq!(r, sync.process(&b));
        assert!(r.failures[0].message.contains("value ref 3 names none of its 3 values"), "{r:?}");
    }

    #[test]
    fn a_stuck_subtractor_or_merger_fails_its_group_naming_itself() {
        let never = Barrier::new(usize::MAX);
        let stuck = AsyncFold::<String, i64, Option<i64>>::new(
            "aggregate sum".into(),
            Arc::new(|_: &String, v: i64| Box::pin(std::future::ready(Some(v))) as LocalFuture<Option<i64>>),
            Arc::new(|_: &String, a: Option<i64>, v: i64| {
                Box::pin(std::future::ready(a.map(|a| a + v))) as LocalFuture<Option<i64>>
            }),
        )
        .with_sub(
            Arc::new(move |_: &String, a: Option<i64>, old: i64| {
                let wait = (old == 99).then(|| never.wait());
                Box::pin(async move {
                    if let Some(w) = wait {
                        w.await;
                    }
                    a.map(|a| a - old)
                }) as LocalFuture<Option<i64>>
            }),
            "aggregate subtractor stuck".into(),
        );
        let mut ex = executor(vec![(1, Func::Fold(Arc::new(stuck))), (2, Func::Part), (3, Func::Part)]);
        ex.async_timeout = Duration::from_millis(100);
        let b = fold_bundle(
            true,
            &[("a", Some(10), 2), ("b", Some(1), 1)],
            &[Some(4), Some(5), Some(7)],
            &[Some(99), None, Some(1)],
        );
        let r = ex.process(&b);
        assert_eq!(r.output_counts, vec![0, 0, 1]);
        assert_eq!(decoded(&r), vec![Some(7)]);
        let want =
            "TimeoutError: aggregate subtractor stuck (token 3, step 0, node NODE-1) did not finish within 0.1 s (cancelled)";
        assert_eq!(failures(&r), [(0, want.to_owned()), (1, want.to_owned())]);

        let never = Barrier::new(usize::MAX);
        let add =
            |_: &String, a: String, v: String| Box::pin(std::future::ready(format!("{a}+{v}"))) as LocalFuture<String>;
        let stuck = AsyncFold::<String, String, String>::new(
            "aggregate spell".into(),
            Arc::new(move |k: &String, v: String| add(k, "0".to_owned(), v)),
            Arc::new(add),
        )
        .with_initial(Arc::new(|| "0".to_owned()))
        .with_merge(
            Arc::new(move |_: &String, _: String, _: String| {
                let wait = never.wait();
                Box::pin(async move {
                    wait.await;
                    String::new()
                }) as LocalFuture<String>
            }),
            Some("aggregate merger stuck".into()),
        );
        let mut ex = executor(vec![(1, Func::Fold(Arc::new(stuck))), (2, Func::Part), (3, Func::Part)]);
        ex.async_timeout = Duration::from_millis(100);
        let b = program(Prog {
            groups: &[("a", 1), ("b", 1)],
            pool: &["s1"],
            records: &["r", "x"],
            refs: &[0, 1],
            bases: &[-1, -1],
            counts: &[1, 0],
            merges: &[0],
        });
        let r = ex.process(&b);
        assert_eq!(outputs(&r.value_lengths, &r.values), vec![Some("0+x".into())]);
        let want =
            "TimeoutError: aggregate merger stuck (token 3, step 0, node NODE-1) did not finish within 0.1 s (cancelled)";
        assert_eq!(failures(&r), [(0, want.to_owned())]);
    }
}
