//! `KTable::transform_values` against the REAL engine binary (test driver
//! sessions): a transformer with a store and a materialized result, old
//! values through the transformer for a group_by, failures and refusals
//! that name node and store.

use polystreams::processor::{KeyValueStore, ProcessorResult, Stores};
use polystreams::{Error, Options, TopologyTestDriver, TransformResult, TransformerContext, ValueTransformerWithKey};

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
fn a_transformer_with_a_store_and_a_materialized_result() {
    let driver = TopologyTestDriver::new("tv-store").unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("versions")).unwrap();
    let tagged = driver
        .table::<String, String>("users")
        .unwrap()
        .transform_values_with(Versioner::default, &["versions"], Options::new().materialized("tagged"))
        .unwrap();
    tagged.to_stream().unwrap().to("tagged-users").unwrap();
    let described = driver.describe().unwrap();
    assert!(
        described.contains("Processor: KTABLE-TRANSFORMVALUES-0000000003 (stores: [tagged, versions])"),
        "{described}"
    );
    driver.pipe_record("users", "ann".to_owned(), Some("paris".to_owned()), Some(1), &[]).unwrap();
    driver.pipe_record("users", "ann".to_owned(), Some("rome".to_owned()), Some(2), &[]).unwrap();
    driver.pipe_record::<String, Option<String>>("users", "ann".to_owned(), None, Some(3), &[]).unwrap();
    let out: Vec<(String, String, i64)> = driver
        .read_output::<String, String>("tagged-users")
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    assert_eq!(
        out,
        [
            ("ann".into(), "paris (v1)".into(), 1),
            ("ann".into(), "rome (v2)".into(), 2),
            ("ann".into(), "ann deleted (v3)".into(), 3)
        ]
    );
    let store = driver.get_store::<String, String>("tagged").unwrap();
    assert_eq!(store.get(&"ann".to_owned()).unwrap(), Some("ann deleted (v3)".to_owned()));
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
