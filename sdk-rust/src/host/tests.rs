use super::*;

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
    Executor { functions: Arc::new(fns.into_iter().collect()) }
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
