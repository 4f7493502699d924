//! The Processor API against the REAL engine binary (test driver sessions,
//! `$POLYSTREAMS_ENGINE`, else `bin/polystreams` of the repository): stores
//! through the bundle's overlay and the Read RPC, forwards to children,
//! stream-time and wall-clock punctuators, window stores, fixed-key
//! processors, Topology, and the errors that name node, store and call.

use std::time::Duration;

use polystreams::processor::{
    AsyncProcessor, FixedKeyProcessor, FixedKeyProcessorContext, FixedKeyRecord, KeyValueStore, Processor,
    ProcessorContext, ProcessorResult, PunctuationType, Record, Stores, VersionedKeyValueStore, VersionedRecord,
    WindowStore, PUT_RETURN_CODE_NOT_PUT,
};
use polystreams::{Error, Options, TopologyTestDriver};

type Ctx = ProcessorContext<String, i64>;

/// Counts per key; forwards each new count.
struct CountPerKey;
impl Processor<String, String, String, i64> for CountPerKey {
    fn process(&mut self, ctx: &mut Ctx, r: Record<String, String>) -> ProcessorResult {
        let store: KeyValueStore<String, i64> = ctx.get_state_store("counts")?;
        let n = store.get(&r.key)?.unwrap_or(0) + 1;
        store.put(&r.key, &n)?;
        ctx.forward(r.with_value(n))?;
        Ok(())
    }
}

fn pairs(driver: &TopologyTestDriver, topic: &str) -> Vec<(String, i64, i64)> {
    driver.read_output::<String, i64>(topic).unwrap().into_iter().map(|r| (r.key, r.value, r.timestamp)).collect()
}

#[test]
fn a_processor_counts_per_key_in_its_store_across_records_and_bundles() {
    let driver = TopologyTestDriver::new("proc-count").unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("counts")).unwrap();
    driver.stream::<String, String>("in").unwrap().process(|| CountPerKey, &["counts"]).unwrap().to("out").unwrap();
    let described = driver.describe().unwrap();
    assert!(described.contains("KSTREAM-PROCESSOR-0000000001 (stores: [counts])"), "{described}");
    for (i, k) in ["a", "b", "a", "a"].iter().enumerate() {
        driver.pipe_record("in", (*k).to_owned(), "x".to_owned(), Some(i as i64 + 1), &[]).unwrap();
    }
    assert_eq!(pairs(&driver, "out"), [("a".into(), 1, 1), ("b".into(), 1, 2), ("a".into(), 2, 3), ("a".into(), 3, 4)]);
    let store = driver.get_store::<String, i64>("counts").unwrap();
    assert_eq!(store.get(&"a".to_owned()).unwrap(), Some(3));
}

/// Counts into the store; every 1000 ms of stream time forwards each count
/// (at the punctuation's time) and deletes it.
struct Sweep {
    store: Option<KeyValueStore<String, i64>>,
}
impl Processor<String, String, String, i64> for Sweep {
    fn init(&mut self, ctx: &mut Ctx) -> ProcessorResult {
        self.store = Some(ctx.get_state_store("counts")?);
        ctx.schedule(Duration::from_millis(1000), PunctuationType::StreamTime, |p: &mut Sweep, ctx, t| {
            let store = p.store.as_ref().ok_or("no store")?;
            for (k, n) in store.all()? {
                ctx.forward(Record::new(k.clone(), n, t))?;
                store.delete(&k)?;
            }
            Ok(())
        })?;
        Ok(())
    }
    fn process(&mut self, _: &mut Ctx, r: Record<String, String>) -> ProcessorResult {
        let store = self.store.as_ref().ok_or("no store")?;
        let n = store.get(&r.key)?.unwrap_or(0) + 1;
        Ok(store.put(&r.key, &n)?)
    }
}

#[test]
fn a_stream_time_punctuator_sweeps_the_store_with_one_read() {
    let driver = TopologyTestDriver::new("proc-sweep").unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("counts")).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .process(|| Sweep { store: None }, &["counts"])
        .unwrap()
        .to("out")
        .unwrap();
    for (k, ts) in [("a", 0), ("a", 10), ("b", 999), ("a", 2500), ("c", 2600)] {
        driver.pipe_record("in", k.to_owned(), "x".to_owned(), Some(ts), &[]).unwrap();
    }
    // As Kafka Streams' TopologyTestDriver: at 0 (a), then at 2500 (a=2, b=1).
    assert_eq!(pairs(&driver, "out"), [("a".into(), 1, 0), ("a".into(), 2, 2500), ("b".into(), 1, 2500)]);
    assert_eq!(driver.get_store::<String, i64>("counts").unwrap().get(&"c".to_owned()).unwrap(), Some(1));
}

/// Every 500 ms of wall-clock time forwards ("tick", time).
struct Tick;
impl Processor<String, String, String, i64> for Tick {
    fn init(&mut self, ctx: &mut Ctx) -> ProcessorResult {
        ctx.schedule(Duration::from_millis(500), PunctuationType::WallClockTime, |_: &mut Tick, ctx, t| {
            Ok(ctx.forward(Record::new("tick".to_owned(), t, t))?)
        })?;
        Ok(())
    }
    fn process(&mut self, _: &mut Ctx, _: Record<String, String>) -> ProcessorResult {
        Ok(())
    }
}

#[test]
fn advance_wall_clock_drives_a_wall_clock_punctuator() {
    let driver = TopologyTestDriver::new("proc-tick").unwrap();
    driver.stream::<String, String>("in").unwrap().process(|| Tick, &[]).unwrap().to("out").unwrap();
    driver.pipe_record("in", "k".to_owned(), "v".to_owned(), Some(1), &[]).unwrap();
    assert!(pairs(&driver, "out").is_empty());
    driver.advance_wall_clock(Duration::from_millis(600)).unwrap();
    let ticks = pairs(&driver, "out");
    assert_eq!(ticks.len(), 1, "{ticks:?}");
    assert_eq!(ticks[0].0, "tick");
    assert_eq!(ticks[0].1, ticks[0].2, "a tick carries its own time");
}

/// process_values: restamps +1000 and appends a header (seen, 1), keeping the key.
struct Restamp;
impl FixedKeyProcessor<String, String, String> for Restamp {
    fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<String, String>,
        r: FixedKeyRecord<String, String>,
    ) -> ProcessorResult {
        let meta = ctx.record_metadata().ok_or("no metadata for a record")?;
        let mut headers = r.headers.clone();
        headers.push(("seen".to_owned(), Some(meta.offset.to_string().into_bytes())));
        let ts = r.timestamp + 1000;
        Ok(ctx.forward(r.with_timestamp(ts).with_headers(headers))?)
    }
}

#[test]
fn a_fixed_key_processor_restamps_and_sets_headers_from_the_record_metadata() {
    let driver = TopologyTestDriver::new("proc-restamp").unwrap();
    driver.stream::<String, String>("in").unwrap().process_values(|| Restamp, &[]).unwrap().to("out").unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(5), &[("trace", Some(b"t1"))]).unwrap();
    driver.pipe_record("in", "b".to_owned(), "y".to_owned(), Some(7), &[]).unwrap();
    let out = driver.read_output::<String, String>("out").unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].key.as_str(), out[0].value.as_str(), out[0].timestamp), ("a", "x", 1005));
    assert_eq!(out[0].headers, [("trace".to_owned(), Some(b"t1".to_vec())), ("seen".to_owned(), Some(b"0".to_vec()))]);
    assert_eq!((out[1].key.as_str(), out[1].timestamp), ("b", 1007));
    assert_eq!(out[1].headers, [("seen".to_owned(), Some(b"1".to_vec()))]);
}

/// Dedup over a window store: forwards a key's first record per 1000 ms window.
struct Dedup;
impl Processor<String, String, String, String> for Dedup {
    fn process(&mut self, ctx: &mut ProcessorContext<String, String>, r: Record<String, String>) -> ProcessorResult {
        let seen: WindowStore<String, String> = ctx.get_state_store("seen")?;
        let start = r.timestamp - r.timestamp.rem_euclid(1000);
        if seen.fetch(&r.key, start)?.is_none() {
            seen.put(&r.key, &r.value, start)?;
            ctx.forward(r)?;
        }
        Ok(())
    }
}

#[test]
fn a_window_store_dedups_per_window() {
    let driver = TopologyTestDriver::new("proc-dedup").unwrap();
    driver
        .add_state_store(Stores::window_store::<String, String>(
            "seen",
            Duration::from_secs(60),
            Duration::from_secs(1),
            false,
        ))
        .unwrap();
    driver.stream::<String, String>("in").unwrap().process(|| Dedup, &["seen"]).unwrap().to("out").unwrap();
    for (k, v, ts) in [("a", "1", 100), ("a", "2", 900), ("b", "3", 950), ("a", "4", 1100)] {
        driver.pipe_record("in", k.to_owned(), v.to_owned(), Some(ts), &[]).unwrap();
    }
    let out: Vec<(String, String)> =
        driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(out, [("a".into(), "1".into()), ("b".into(), "3".into()), ("a".into(), "4".into())]);
}

/// Forwards to the child named by the record's value.
struct Route;
impl Processor<String, String, String, String> for Route {
    fn process(&mut self, ctx: &mut ProcessorContext<String, String>, r: Record<String, String>) -> ProcessorResult {
        let child = r.value.clone();
        Ok(ctx.forward_to(&child, r)?)
    }
}

#[test]
fn topology_add_source_processor_sink_routes_to_named_children() {
    let driver = TopologyTestDriver::new("proc-topology").unwrap();
    driver
        .topology()
        .add_source::<String, String>("src", "in")
        .unwrap()
        .add_processor::<String, String, String, String, _, _>("route", || Route, &["src"])
        .unwrap()
        .add_sink::<String, String>("left", "left-out", &["route"])
        .unwrap()
        .add_sink::<String, String>("right", "right-out", &["route"])
        .unwrap();
    let described = driver.describe().unwrap();
    assert!(described.contains("Processor: route (stores: [])"), "{described}");
    driver.pipe_input("in", "a".to_owned(), "left".to_owned()).unwrap();
    driver.pipe_input("in", "b".to_owned(), "right".to_owned()).unwrap();
    let keys = |t: &str| -> Vec<String> {
        driver.read_output::<String, String>(t).unwrap().into_iter().map(|r| r.key).collect()
    };
    assert_eq!(keys("left-out"), ["a"]);
    assert_eq!(keys("right-out"), ["b"]);
    // A child that does not exist fails the record (and, under the default
    // policy, the session), naming node and children.
    let err = driver.pipe_input("in", "c".to_owned(), "nowhere".to_owned()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("node route has no child \"nowhere\" (children: [left, right])"), "{msg}");
}

/// Reads a store it was not given.
struct Snoop;
impl Processor<String, String, String, i64> for Snoop {
    fn process(&mut self, ctx: &mut Ctx, _: Record<String, String>) -> ProcessorResult {
        let _: KeyValueStore<String, i64> = ctx.get_state_store("counts")?;
        Ok(())
    }
}

/// Schedules every 0 ms.
struct Zero;
impl Processor<String, String, String, i64> for Zero {
    fn init(&mut self, ctx: &mut Ctx) -> ProcessorResult {
        ctx.schedule(Duration::ZERO, PunctuationType::StreamTime, |_: &mut Zero, _, _| Ok(()))?;
        Ok(())
    }
    fn process(&mut self, _: &mut Ctx, _: Record<String, String>) -> ProcessorResult {
        Ok(())
    }
}

#[test]
fn errors_name_node_store_and_call() {
    let driver = TopologyTestDriver::new("proc-errors").unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("counts")).unwrap();
    let s = driver.stream::<String, String>("in").unwrap();
    // A store no add_state_store added: refused at Build, naming it.
    let refused = s.process(|| CountPerKey, &["nope"]).unwrap_err();
    assert!(matches!(refused, Error::InvalidArgument { .. }), "{refused:?}");
    assert!(refused.message().contains("\"nope\""), "{refused}");
    s.process_with(|| Snoop, &[], Options::named("snoop")).unwrap().to("out").unwrap();
    let err = driver.pipe_input("in", "a".to_owned(), "x".to_owned()).unwrap_err().to_string();
    assert!(err.contains("get_state_store: node snoop has no access to store \"counts\" (its stores: [])"), "{err}");

    let driver = TopologyTestDriver::new("proc-errors-2").unwrap();
    let s = driver.stream::<String, String>("in").unwrap();
    s.process_with(|| Zero, &[], Options::named("zero")).unwrap().to("out").unwrap();
    let err = driver.pipe_input("in", "a".to_owned(), "x".to_owned()).unwrap_err().to_string();
    assert!(err.contains("schedule: node zero: interval 0 ms; the minimum is 1 ms"), "{err}");
}

#[test]
fn with_metadata_functions_read_topic_offset_headers_and_set_timestamp_and_headers() {
    let driver = TopologyTestDriver::new("proc-metadata").unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .with_metadata()
        .filter(|_, _, m| !m.headers.iter().any(|(k, _)| k == "skip"))
        .unwrap()
        .with_metadata()
        .map_values(|v: String, m| {
            let line = format!("{}@{}:{} {v}", m.topic, m.partition, m.offset);
            m.timestamp += 5;
            m.headers.push(("via".to_owned(), Some(b"rust".to_vec())));
            line
        })
        .unwrap()
        .map_values(|v: String| v.to_uppercase())
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(10), &[("trace", Some(b"t1"))]).unwrap();
    driver.pipe_record("in", "b".to_owned(), "y".to_owned(), Some(20), &[("skip", None)]).unwrap();
    driver.pipe_record("in", "c".to_owned(), "z".to_owned(), Some(30), &[]).unwrap();
    let out = driver.read_output::<String, String>("out").unwrap();
    let got: Vec<(&str, &str, i64)> = out.iter().map(|r| (r.key.as_str(), r.value.as_str(), r.timestamp)).collect();
    assert_eq!(got, [("a", "IN@0:0 X", 15), ("c", "IN@0:2 Z", 35)]);
    assert_eq!(
        out[0].headers,
        [("trace".to_owned(), Some(b"t1".to_vec())), ("via".to_owned(), Some(b"rust".to_vec()))]
    );
    assert_eq!(out[1].headers, [("via".to_owned(), Some(b"rust".to_vec()))]);
}

#[test]
fn with_metadata_flat_map_outputs_share_the_metadata_their_call_set() {
    let driver = TopologyTestDriver::new("proc-metadata-flat").unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .with_metadata()
        .flat_map(|k: &String, v: String, m| {
            m.timestamp = 100 + m.offset;
            v.split(' ').map(|w| (format!("{k}-{w}"), w.to_owned())).collect::<Vec<_>>()
        })
        .unwrap()
        .with_metadata()
        .map_values_with_key(|k: &String, v: String, m| format!("{k}={v}@{}", m.timestamp))
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x y".to_owned(), Some(1), &[]).unwrap();
    let out: Vec<(String, String, i64)> = driver
        .read_output::<String, String>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    assert_eq!(out, [("a-x".into(), "a-x=x@100".into(), 100), ("a-y".into(), "a-y=y@100".into(), 100)]);
}

/// Pending `n` polls (waking itself each time), then ready: an await that
/// needs no runtime.
struct Yield(usize);
impl std::future::Future for Yield {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 == 0 {
            return std::task::Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Counts per key across an await between its read and its write, and
/// forwards each new count; a value "boom" panics after the await.
struct AsyncCount;
impl AsyncProcessor<String, String, String, i64> for AsyncCount {
    async fn process(&mut self, ctx: &mut Ctx, r: Record<String, String>) -> ProcessorResult {
        let store: KeyValueStore<String, i64> = ctx.get_state_store("counts")?;
        let n = store.get(&r.key)?.unwrap_or(0) + 1;
        Yield(3).await; // stands in for an I/O call
        assert_ne!(r.value, "boom", "boom in an async processor");
        store.put(&r.key, &n)?;
        ctx.forward(r.with_value(n))?;
        Ok(())
    }
}

#[test]
fn an_async_processor_awaits_each_record_in_order_and_a_panic_fails_its_record() {
    let config = polystreams::Config::new().set("processing.exception.handler", "log_and_continue");
    let driver = TopologyTestDriver::with_config("proc-async", config).unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("counts")).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .process_async(|| AsyncCount, &["counts"])
        .unwrap()
        .to("out")
        .unwrap();
    assert!(driver.describe().unwrap().contains("KSTREAM-PROCESSOR-0000000001 (stores: [counts])"));
    for (i, (k, v)) in [("a", "x"), ("b", "x"), ("a", "boom"), ("a", "x")].iter().enumerate() {
        driver.pipe_record("in", (*k).to_owned(), (*v).to_owned(), Some(i as i64 + 1), &[]).unwrap();
    }
    // Each record saw the write of the one before; the panicking one wrote nothing.
    assert_eq!(pairs(&driver, "out"), [("a".into(), 1, 1), ("b".into(), 1, 2), ("a".into(), 2, 4)]);
    assert_eq!(driver.dropped_records().unwrap(), 1);

    // Under "fail" the panic fails the record, naming the node and the panic.
    let driver = TopologyTestDriver::new("proc-async-fail").unwrap();
    driver.add_state_store(Stores::key_value_store::<String, i64>("counts")).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .process_async(|| AsyncCount, &["counts"])
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(1), &[]).unwrap();
    let err = driver.pipe_record("in", "a".to_owned(), "boom".to_owned(), Some(2), &[]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("KSTREAM-PROCESSOR-0000000001") && text.contains("boom in an async processor"), "{text}");
}

/// Keeps every price of a key in a versioned store: a value "del" deletes
/// the key as of the record's time, any other is a price put at it; forwards
/// what the store answered, and for a pear the apple price of its time (a
/// key the bundle did not bring: a Read).
struct PriceHistory;
impl Processor<String, String, String, String> for PriceHistory {
    fn process(&mut self, ctx: &mut ProcessorContext<String, String>, r: Record<String, String>) -> ProcessorResult {
        let prices: VersionedKeyValueStore<String, i64> = ctx.get_state_store("prices")?;
        let show = |v: Option<VersionedRecord<i64>>| match v {
            None => "none".to_owned(),
            Some(v) => {
                format!("{}@{}{}", v.value, v.timestamp, v.valid_to.map(|t| format!("<{t}")).unwrap_or_default())
            }
        };
        let ts = r.timestamp;
        let out = if r.value == "del" {
            let d = show(prices.delete(&r.key, ts)?);
            format!("deleted {d} latest {}", show(prices.get(&r.key)?))
        } else {
            let code = prices.put(&r.key, &r.value.parse::<i64>()?, ts)?;
            let mut out = format!(
                "put {code} latest {} before {}",
                show(prices.get(&r.key)?),
                show(prices.get_as_of(&r.key, ts - 1)?)
            );
            if r.key == "pear" {
                out += &format!(" apple {}", show(prices.get_as_of(&"apple".to_owned(), ts)?));
            }
            out
        };
        Ok(ctx.forward(r.with_value(out))?)
    }
}

#[test]
fn a_versioned_store_answers_puts_and_as_of_reads_and_the_engine_holds_the_same_versions() {
    let driver = TopologyTestDriver::new("proc-versioned").unwrap();
    driver.add_state_store(Stores::versioned_key_value_store::<String, i64>("prices", Duration::from_secs(1))).unwrap();
    driver.stream::<String, String>("in").unwrap().process(|| PriceHistory, &["prices"]).unwrap().to("out").unwrap();
    for (k, v, ts) in [
        ("apple", "10", 1000),
        ("apple", "12", 3000),
        ("apple", "11", 2000),
        ("pear", "5", 2500),
        ("apple", "9", 100),
        ("apple", "del", 3500),
    ] {
        driver.pipe_record("in", k.to_owned(), v.to_owned(), Some(ts), &[]).unwrap();
    }
    let out: Vec<String> = driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(
        out,
        [
            "put -1 latest 10@1000 before none".to_owned(),
            "put -1 latest 12@3000 before 10@1000".to_owned(),
            // In the past: valid until 3000; as of 1999 (< 3000 - 1000) only a latest version is found.
            "put 3000 latest 12@3000 before none".to_owned(),
            "put -1 latest 5@2500 before none apple 11@2000".to_owned(),
            // Older than the history retention: not put.
            format!("put {PUT_RETURN_CODE_NOT_PUT} latest 12@3000 before none"),
            "deleted 12@3000 latest none".to_owned(),
        ]
    );
    let prices = driver.get_versioned_store::<String, i64>("prices").unwrap();
    let apple = "apple".to_owned();
    assert_eq!(
        prices.get_as_of(&apple, 2500).unwrap(),
        Some(VersionedRecord { value: 11, timestamp: 2000, valid_to: Some(3000) })
    );
    assert_eq!(prices.get(&apple).unwrap(), None);
}
