//! Async fixed-key processors (`process_values_async`), async processors of
//! the Processor API (`Topology::add_processor_async`) and async table
//! value transformers (`KTable::transform_values_async`) against the REAL
//! engine binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; `make
//! build`) and its embedded broker, records in and out through kcat: records
//! are awaited one at a time, in order, each seeing the store writes of the
//! one before; a panicking future fails its record under the configured
//! policy, naming the node, the panic and the record.

mod common;

use std::time::Duration;

use polystreams::processor::{
    AsyncFixedKeyProcessor, AsyncProcessor, FixedKeyProcessorContext, FixedKeyRecord, KeyValueStore, ProcessorContext,
    ProcessorResult, Record, Stores,
};
use polystreams::{App, AsyncValueTransformerWithKey, Config, Error, Options, TransformResult, TransformerContext};

use common::{by_key, keyed, produce, read_all, Yield};

fn app(name: &str, config: Config) -> App {
    common::app("async-processors", name, config)
}

/// Numbers each key's values across an await between its store read and
/// write ("x" becomes "x#2" for the key's second); "boom" panics after the
/// await. Its forwards keep their keys.
struct Number;

impl AsyncFixedKeyProcessor<String, String, String> for Number {
    async fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<String, String>,
        r: FixedKeyRecord<String, String>,
    ) -> ProcessorResult {
        let seen: KeyValueStore<String, i64> = ctx.get_state_store("seen")?;
        let n = seen.get(r.key())?.unwrap_or(0) + 1;
        Yield(3).await; // stands in for an I/O call
        assert_ne!(r.value, "boom", "boom in an async fixed-key processor");
        seen.put(r.key(), &n)?;
        let numbered = format!("{}#{n}", r.value);
        ctx.forward(r.with_value(numbered))?;
        Ok(())
    }
}

fn numbered_app(name: &str, config: Config) -> App {
    let app = app(name, config);
    app.add_state_store(Stores::key_value_store::<String, i64>("seen")).unwrap();
    app.stream::<String, String>("in")
        .unwrap()
        .process_values_async(|| Number, &["seen"])
        .unwrap()
        .to("numbered")
        .unwrap();
    app
}

#[test]
fn an_async_fixed_key_processor_awaits_each_record_in_order_keeping_its_key() {
    let app = numbered_app("values", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &[("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d"), ("bob", "e")]);
    produce(&brokers, "numbered", &[]);
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let got = read_all(&brokers, "numbered", |l| l.len() >= 5);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(by_key(&got), keyed(&[("ann", &["a#1", "c#2", "d#3"]), ("bob", &["b#1", "e#2"])]), "{got:?}");
    assert!(app.describe().unwrap().contains("(stores: [seen])"), "{}", app.describe().unwrap());
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_fixed_key_future_fails_its_record_under_each_policy() {
    let records = [("ann", "a"), ("ann", "boom"), ("ann", "c")];
    for policy in ["log_and_continue", "fail"] {
        let app = numbered_app(&format!("policy-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "in", &records);
        produce(&brokers, "numbered", &[]);
        let runner = {
            let app = app.clone();
            std::thread::spawn(move || app.run())
        };
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("in"), Some(0), Some(1)), "{message}");
                    assert!(node.as_deref().is_some_and(|n| n.starts_with("KSTREAM-PROCESSVALUES-")), "{node:?}");
                    assert!(message.contains("boom in an async fixed-key processor"), "{message}");
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        // The failed record wrote nothing: the next is the key's second.
        let want = ["ann\ta#1", "ann\tc#2"];
        let got = read_all(&brokers, "numbered", |l| l.len() >= want.len());
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(got, want, "{policy}");
        app.close(Duration::from_secs(30));
    }
}

/// Counts each key's records across an await; forwards "key=count" keyed
/// by the value, to the sink named by the count's parity.
struct Tally;

impl AsyncProcessor<String, String, String, String> for Tally {
    async fn process(
        &mut self,
        ctx: &mut ProcessorContext<String, String>,
        r: Record<String, String>,
    ) -> ProcessorResult {
        let counts: KeyValueStore<String, i64> = ctx.get_state_store("tally")?;
        let n = counts.get(&r.key)?.unwrap_or(0) + 1;
        Yield(2).await;
        counts.put(&r.key, &n)?;
        let child = if n % 2 == 0 { "even" } else { "odd" };
        let out = Record::new(r.value.clone(), format!("{}={n}", r.key), r.timestamp);
        ctx.forward_to(child, out)?;
        Ok(())
    }
}

#[test]
fn an_async_topology_processor_awaits_each_record_in_order_and_forwards_to_its_children() {
    let app = app("topology", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "raw", &[("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d")]);
    produce(&brokers, "odd-out", &[]);
    produce(&brokers, "even-out", &[]);
    app.topology()
        .add_source::<String, String>("src", "raw")
        .unwrap()
        .add_processor_async::<String, String, String, String, _, _>("tally", || Tally, &["src"])
        .unwrap()
        .add_state_store(Stores::key_value_store::<String, i64>("tally"), &["tally"])
        .unwrap()
        .add_sink::<String, String>("odd", "odd-out", &["tally"])
        .unwrap()
        .add_sink::<String, String>("even", "even-out", &["tally"])
        .unwrap();
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let odd = read_all(&brokers, "odd-out", |l| l.len() >= 3);
    let even = read_all(&brokers, "even-out", |l| !l.is_empty());
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(by_key(&odd), keyed(&[("a", &["ann=1"]), ("b", &["bob=1"]), ("d", &["ann=3"])]), "{odd:?}");
    assert_eq!(even, ["c\tann=2"]);
    app.close(Duration::from_secs(30));
}

/// Tags each value with how many values its key has had (store
/// "versions"), across an await between the store's read and write; "boom"
/// panics after the await.
#[derive(Default)]
struct Versioner {
    versions: Option<KeyValueStore<String, i64>>,
}

impl AsyncValueTransformerWithKey<String, String, String> for Versioner {
    fn init(&mut self, ctx: &mut TransformerContext<String, String>) -> ProcessorResult {
        self.versions = Some(ctx.get_state_store("versions")?);
        Ok(())
    }
    async fn transform(&mut self, key: &String, value: Option<String>) -> TransformResult<String> {
        let versions = self.versions.as_ref().ok_or("no store")?;
        let n = versions.get(key)?.unwrap_or(0) + 1;
        Yield(3).await; // stands in for an I/O call
        assert!(value.as_deref() != Some("boom"), "boom in an async transformer");
        versions.put(key, &n)?;
        Ok(Some(match value {
            None => format!("{key} deleted (v{n})"),
            Some(v) => format!("{v} (v{n})"),
        }))
    }
}

fn versioned_app(name: &str, config: Config) -> App {
    let app = app(name, config);
    app.add_state_store(Stores::key_value_store::<String, i64>("versions")).unwrap();
    app.table::<String, String>("users")
        .unwrap()
        .transform_values_async_with(Versioner::default, &["versions"], Options::new().name("versioned"))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("tagged")
        .unwrap();
    app
}

#[test]
fn an_async_table_transformer_awaits_each_value_in_order() {
    let app = versioned_app("transform", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "users", &[("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d")]);
    produce(&brokers, "tagged", &[]);
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let got = read_all(&brokers, "tagged", |l| l.len() >= 4);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(by_key(&got), keyed(&[("ann", &["a (v1)", "c (v2)", "d (v3)"]), ("bob", &["b (v1)"])]), "{got:?}");
    assert!(app.describe().unwrap().contains("versioned (stores: [versions])"), "{}", app.describe().unwrap());
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_transformer_future_fails_its_record_under_each_policy() {
    let records = [("ann", "a"), ("ann", "boom"), ("ann", "c")];
    for policy in ["log_and_continue", "fail"] {
        let app =
            versioned_app(&format!("transform-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "users", &records);
        produce(&brokers, "tagged", &[]);
        let runner = {
            let app = app.clone();
            std::thread::spawn(move || app.run())
        };
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("users"), Some(0), Some(1)), "{message}");
                    assert_eq!(node.as_deref(), Some("versioned"), "{message}");
                    assert!(message.contains("boom in an async transformer"), "{message}");
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        let got = read_all(&brokers, "tagged", |l| l.len() >= 2);
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(got, ["ann\ta (v1)", "ann\tc (v2)"], "{policy}");
        app.close(Duration::from_secs(30));
    }
}
