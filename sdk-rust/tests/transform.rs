//! `KTable::transform_values` against the REAL engine binary (test driver
//! sessions): a transformer with a store and a materialized result, old
//! values through the transformer for a group_by, failures and refusals
//! that name node and store.

use std::time::Duration;

use polystreams::processor::PunctuationType;
use polystreams::{Error, Options, TopologyTestDriver};

// README begin
use polystreams::processor::{KeyValueStore, ProcessorResult, Stores};
use polystreams::{TransformResult, TransformerContext, ValueTransformerWithKey};

/// Tags each value with how many values its key has had (store "versions").
#[derive(Default)]
struct Versioner {
    versions: Option<KeyValueStore<String, i64>>,
}

impl ValueTransformerWithKey<String, String, String> for Versioner {
    fn init(&mut self, ctx: &mut TransformerContext<String, String>) -> ProcessorResult {
        self.versions = Some(ctx.get_state_store("versions")?);
        Ok(())
    }
    fn transform(&mut self, key: &String, value: Option<String>) -> TransformResult<String> {
        let versions = self.versions.as_ref().ok_or("no store")?;
        let n = versions.get(key)?.unwrap_or(0) + 1;
        versions.put(key, &n)?;
        Ok(Some(match value {
            None => format!("{key} deleted (v{n})"),
            Some(v) => format!("{v} (v{n})"),
        }))
    }
}

#[test]
fn readme_transform_values() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("tagged-users")?;
    driver.add_state_store(Stores::key_value_store::<String, i64>("versions"))?;
    let tagged = driver.table::<String, String>("users")?.transform_values_with(
        Versioner::default,
        &["versions"],
        Options::new().materialized("tagged"),
    )?;
    tagged.to_stream()?.to("tagged-users")?;
    let described = driver.describe()?;
    assert!(described.contains("KTABLE-TRANSFORMVALUES-0000000003 (stores: [tagged, versions])"), "{described}");
    driver.pipe_record("users", "ann".to_owned(), Some("paris".to_owned()), Some(1), &[])?;
    driver.pipe_record("users", "ann".to_owned(), Some("rome".to_owned()), Some(2), &[])?;
    driver.pipe_record::<String, Option<String>>("users", "ann".to_owned(), None, Some(3), &[])?;
    let out = driver.read_output::<String, String>("tagged-users")?;
    let got: Vec<(String, String)> = out.into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(
        got,
        [
            ("ann".into(), "paris (v1)".into()),
            ("ann".into(), "rome (v2)".into()),
            ("ann".into(), "ann deleted (v3)".into())
        ]
    );
    let stored = driver.get_store::<String, String>("tagged")?.get(&"ann".to_owned())?;
    assert_eq!(stored.as_deref(), Some("ann deleted (v3)")); // the materialized result is queryable
    Ok(())
}
// README end

#[test]
fn the_readme_shows_this_program() {
    let readme = include_str!("../README.md");
    let heading = "\n#### Transforming a table's values with state\n";
    let at = readme.find(heading).expect("README.md has the transform_values section");
    let start = readme[at..].find("```rust\n").expect("a rust block under it") + at + "```rust\n".len();
    let end = readme[start..].find("\n```").expect("the block ends") + start + 1;
    let source = include_str!("transform.rs");
    let program = &source
        [source.find("// README begin\n").unwrap() + "// README begin\n".len()..source.find("// README end").unwrap()];
    assert_eq!(&readme[start..end], program, "README.md's transform_values block is not tests/transform.rs's program");
}

struct Length;
impl ValueTransformerWithKey<String, String, i64> for Length {
    fn transform(&mut self, _key: &String, value: Option<String>) -> TransformResult<i64> {
        Ok(value.map(|v| v.chars().count() as i64))
    }
}

#[test]
fn old_values_pass_through_the_transformer_for_a_group_by() {
    // KTableTransformValuesTest#shouldCalculateCorrectOldValuesIfNotStatefulEvenIfNotMaterialized.
    let driver = TopologyTestDriver::new("tv-old").unwrap();
    let lengths = driver.table::<String, String>("in").unwrap().transform_values(|| Length, &[]).unwrap();
    lengths
        .group_by(|k: &String, v: i64| (v, k.clone()))
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, t) in [("a", 5), ("aa", 15), ("aaa", 10)] {
        driver.pipe_record("in", "A".to_owned(), v.to_owned(), Some(t), &[]).unwrap();
    }
    let out: Vec<(i64, i64)> =
        driver.read_output::<i64, i64>("out").unwrap().into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(out, [(1, 1), (1, 0), (2, 1), (2, 0), (3, 1)]);
}

struct Picky;
impl ValueTransformerWithKey<String, String, String> for Picky {
    fn transform(&mut self, _key: &String, value: Option<String>) -> TransformResult<String> {
        match value.as_deref() {
            Some("bad") => Err("bad value".into()),
            _ => Ok(value.map(|v| v.to_uppercase())),
        }
    }
}

#[test]
fn a_transformer_that_fails_names_the_node() {
    let driver = TopologyTestDriver::new("tv-fail").unwrap();
    driver
        .table::<String, String>("in")
        .unwrap()
        .transform_values_with(|| Picky, &[], Options::new().name("picky"))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "k".to_owned(), "ok".to_owned(), Some(1), &[]).unwrap();
    let err = driver.pipe_record("in", "k".to_owned(), "bad".to_owned(), Some(2), &[]).unwrap_err();
    assert!(err.to_string().contains("picky") && err.to_string().contains("bad value"), "{err}");
}

#[test]
fn an_unknown_store_is_refused_naming_node_and_store() {
    let driver = TopologyTestDriver::new("tv-unknown").unwrap();
    let err = driver.table::<String, String>("in").unwrap().transform_values(|| Length, &["nope"]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains(r#"node KTABLE-TRANSFORMVALUES-0000000003 names store "nope", which no add_state_store added"#),
        "{err}"
    );
}

/// Tags each value with how many wall-clock punctuations have run, which
/// its punctuator counts in the transformer and in store "ticks".
#[derive(Default)]
struct Ticking {
    ticks: i64,
}

impl ValueTransformerWithKey<String, String, String> for Ticking {
    fn init(&mut self, ctx: &mut TransformerContext<String, String>) -> ProcessorResult {
        ctx.schedule(Duration::from_secs(10), PunctuationType::WallClockTime, |me: &mut Ticking, ctx, _time| {
            me.ticks += 1;
            let store: KeyValueStore<String, i64> = ctx.get_state_store("ticks")?;
            store.put(&"ticks".to_owned(), &me.ticks)?;
            Ok(())
        })?;
        Ok(())
    }
    fn transform(&mut self, _key: &String, value: Option<String>) -> TransformResult<String> {
        Ok(value.map(|v| format!("{v}@{}", self.ticks)))
    }
}

#[test]
fn a_transformer_punctuator_runs_with_the_transformer_and_its_stores() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("ticking")?;
    driver.add_state_store(Stores::key_value_store::<String, i64>("ticks"))?;
    driver
        .table::<String, String>("in")?
        .transform_values_with(Ticking::default, &["ticks"], Options::named("tick"))?
        .to_stream()?
        .to("out")?;
    driver.pipe_input("in", "a".to_owned(), "x".to_owned())?;
    driver.advance_wall_clock(Duration::from_secs(10))?;
    driver.pipe_input("in", "a".to_owned(), "y".to_owned())?;
    // Twice the interval at once: one punctuation, as Kafka Streams fires a
    // late wall-clock schedule once.
    driver.advance_wall_clock(Duration::from_secs(20))?;
    driver.pipe_input("in", "b".to_owned(), "z".to_owned())?;
    let got: Vec<String> = driver.read_output::<String, String>("out")?.into_iter().map(|r| r.value).collect();
    assert_eq!(got, ["x@0", "y@1", "z@2"]);
    assert_eq!(driver.get_store::<String, i64>("ticks")?.get(&"ticks".to_owned())?, Some(2));
    Ok(())
}

/// Reports the refusal of a punctuator over another transformer type.
#[derive(Default)]
struct Refused(String);

impl ValueTransformerWithKey<String, String, String> for Refused {
    fn init(&mut self, ctx: &mut TransformerContext<String, String>) -> ProcessorResult {
        let wrong = ctx.schedule(Duration::from_secs(1), PunctuationType::StreamTime, |_: &mut Length, _, _| Ok(()));
        self.0 = wrong.map(|_| "scheduled".to_owned()).unwrap_or_else(|e| e.message().to_owned());
        Ok(())
    }
    fn transform(&mut self, _key: &String, _value: Option<String>) -> TransformResult<String> {
        Ok(Some(self.0.clone()))
    }
}

#[test]
fn a_punctuator_over_another_transformer_type_is_refused_naming_the_node() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("refused-punctuator")?;
    driver
        .table::<String, String>("in")?
        .transform_values_with(Refused::default, &[], Options::named("t"))?
        .to_stream()?
        .to("out")?;
    driver.pipe_input("in", "a".to_owned(), "x".to_owned())?;
    let got: Vec<String> = driver.read_output::<String, String>("out")?.into_iter().map(|r| r.value).collect();
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("schedule: node t: the punctuator takes a ") && got[0].contains("Length"), "{got:?}");
    Ok(())
}
