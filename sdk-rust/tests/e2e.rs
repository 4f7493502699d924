//! End-to-end tests against the REAL engine binary: `$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams` of the repository (`make build`). When it is
//! missing these tests fail, loudly: they never skip. Records go in and come
//! out through kcat (librdkafka), a Kafka client independent of the engine.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{produce, read_until};
use polystreams::{App, Config, Error, HostHealth, Json, Materialized, Options, State};

const WORDCOUNT_DESCRIBE: &str = "\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> KSTREAM-FILTER-0000000006
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FILTER-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- KSTREAM-FILTER-0000000006

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-SOURCE-0000000007
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KSTREAM-AGGREGATE-0000000004
    Sink: KSTREAM-SINK-0000000009 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000008

";

/// An App on a fresh `polystreams dev` engine, with its own state dir.
fn app(name: &str) -> App {
    common::app_with_workers(name, 2)
}

/// Produces values with null keys.
fn produce_unkeyed(brokers: &str, topic: &str, values: &[&str]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", "0", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for v in values {
        writeln!(stdin, "{v}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

fn serve(app: &App) -> JoinHandle<polystreams::Result<()>> {
    let app = app.clone();
    std::thread::spawn(move || app.run())
}

#[test]
fn word_count_end_to_end_with_queries_and_state() {
    let app = app("wordcount");
    let brokers = app.brokers().expect("a dev engine reports its embedded broker").to_owned();
    let lines: Vec<String> = (0..500)
        .map(|i| (0..(i % 5 + 1)).map(|j| format!("w{}", (i * 7 + j * 13) % 31)).collect::<Vec<_>>().join(" "))
        .collect();
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    for w in lines.iter().flat_map(|l| l.split_whitespace()) {
        *expected.entry(w.to_owned()).or_default() += 1;
    }
    let keyed: Vec<(&str, &str)> = lines.iter().map(|l| ("k", l.as_str())).collect();
    produce(&brokers, "lines", &keyed);
    produce(&brokers, "word-counts", &[]);
    assert_eq!(app.host_health().unwrap(), HostHealth::default(), "before start: nothing");

    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    app.on_state_change(move |new, _old| seen.lock().unwrap().push(new));
    let restores = Arc::new(Mutex::new(Vec::new()));
    let seen = restores.clone();
    app.on_restore_progress(move |p| seen.lock().unwrap().push(p));
    let counts = app
        .stream::<(), String>("lines")
        .unwrap()
        .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .unwrap()
        .group_by(|_, word: &String| word.clone())
        .unwrap()
        .count_with(Options::new().materialized("counts"))
        .unwrap();
    assert_eq!(counts.store(), Some("counts"));
    counts.to_stream().unwrap().map_values(|n: i64| n.to_string()).unwrap().to("word-counts").unwrap();
    let runner = serve(&app);

    let want: BTreeMap<String, String> = expected.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
    let got = read_until(&brokers, "word-counts", Duration::from_secs(90), |last| *last == want);
    assert_eq!(got, want);

    // Interactive queries, from this thread while run() serves.
    let store = counts.query().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.get(&"w0".to_owned()).unwrap() != Some(expected["w0"]) {
        assert!(Instant::now() < deadline, "the store never caught up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let all: BTreeMap<String, i64> = store.all().unwrap().into_iter().collect();
    assert_eq!(all, expected);
    assert_eq!(store.get(&"nope".to_owned()).unwrap(), None);
    let range = store.range(Some(&"w1".to_owned()), Some(&"w2".to_owned())).unwrap();
    assert_eq!(range.first().map(|e| e.0.as_str()), Some("w1"));
    assert!(range.iter().all(|(k, _)| k.as_str() >= "w1" && k.as_str() <= "w2"));
    assert_eq!(store.prefix(b"w3").unwrap().len(), expected.keys().filter(|k| k.starts_with("w3")).count());
    assert_eq!(app.state().unwrap(), State::Running);
    // A serving host, its input counted: nothing waits for it, not stalled
    // (core/internal/server's TestGetStateReportsAHostThatStopsExchanging
    // covers the stall).
    let health = app.host_health().unwrap();
    assert!(health.bundles_waiting == 0 && !health.stalled, "{health:?}");

    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    let states = states.lock().unwrap().clone();
    assert!(states.contains(&State::Running), "{states:?}");
    assert_eq!(states.last(), Some(&State::Stopped), "{states:?}");
    let restores = restores.lock().unwrap().clone();
    let last = restores.last().expect("run() reports the restore progress");
    assert!(last.done() && last.total_partitions > 0 && last.fraction() == 1.0, "{restores:?}");
    app.close(Duration::from_secs(30));
}

#[test]
fn describe_is_kafka_streams_text() {
    let app = app("describe");
    app.stream::<(), String>("lines")
        .unwrap()
        .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .unwrap()
        .group_by(|_, word: &String| word.clone())
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("word-counts")
        .unwrap();
    assert_eq!(app.describe().unwrap(), WORDCOUNT_DESCRIBE);
    app.close(Duration::from_secs(30));
}

#[test]
fn refusals_name_the_offender_and_keep_the_session() {
    let app = app("refusals");
    produce(app.brokers().unwrap(), "in", &[("k", "v")]);
    let s = app.stream::<String, String>("in").unwrap();
    let e = s.map_values_with(|v: String| v, Options::new().value_serde("nope")).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert_eq!(e.code(), "invalid_argument");
    assert!(e.message().contains("nope"), "{}", e.message());
    // The SDK's own check, before any call.
    let e = s.filter_with(|_, _| true, Options::new().materialized("m")).unwrap_err();
    assert_eq!(e.message(), "filter: takes no materialized option");
    // The built-in sum of strings: the engine's message.
    let e = s.group_by_key().unwrap().sum().unwrap_err();
    assert_eq!(e.code(), "invalid_argument");
    // The session is still usable.
    s.map_values(|v: String| v.len() as i64).unwrap().to("out").unwrap();
    app.start().unwrap();
    let e = s.to("late").unwrap_err();
    assert!(matches!(e, Error::FailedPrecondition { .. }), "{e:?}");
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_closure_fails_the_topology_naming_the_record() {
    let app = app("panic");
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &[("a", "fine"), ("b", "boom"), ("c", "after")]);
    app.stream::<String, String>("in")
        .unwrap()
        .map_values_with(
            |v: String| {
                assert!(v != "boom", "cannot take {v}");
                v.to_uppercase()
            },
            Options::named("explode"),
        )
        .unwrap()
        .to("out")
        .unwrap();
    let err = serve(&app).join().unwrap().unwrap_err();
    match &err {
        Error::Processing { message, topic, partition, offset, node } => {
            assert_eq!(topic.as_deref(), Some("in"));
            assert_eq!(*partition, Some(0));
            assert_eq!(*offset, Some(1));
            assert_eq!(node.as_deref(), Some("explode"));
            assert!(message.contains("cannot take boom") && message.contains("e2e.rs"), "{message}");
        }
        other => panic!("want a processing error, got {other:?}"),
    }
    assert_eq!(err.code(), "aborted");
    assert_eq!(app.state().unwrap_or(State::Error), State::Error);
    app.close(Duration::from_secs(30));
}

#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct Order {
    amount: i64,
}

#[test]
fn folds_reduce_and_aggregate_typed_values() {
    let app = app("folds");
    let brokers = app.brokers().unwrap().to_owned();
    let orders =
        [("eu", r#"{"amount":5}"#), ("us", r#"{"amount":2}"#), ("eu", r#"{"amount":7}"#), ("eu", r#"{"amount":1}"#)];
    produce(&brokers, "orders", &orders);
    produce_unkeyed(&brokers, "orders", &[r#"{"amount":100}"#]); // a null key: skipped and counted
    produce(&brokers, "words", &[("a", "x"), ("a", "xyz"), ("b", "yy"), ("a", "zz")]);
    produce(&brokers, "totals", &[]);
    let totals = app
        .stream::<String, Json<Order>>("orders")
        .unwrap()
        .group_by_key()
        .unwrap()
        .aggregate_with(
            || 0i64,
            |_region: &String, o: Json<Order>, total: i64| total + o.0.amount,
            Options::new().materialized("totals"),
        )
        .unwrap();
    totals.to_stream().unwrap().map_values(|n: i64| format!("total {n}")).unwrap().to("totals").unwrap();
    let longest = app
        .stream::<String, String>("words")
        .unwrap()
        .group_by_key()
        .unwrap()
        .reduce_with(
            |a: String, v: String| if v.len() > a.len() { v } else { a },
            Options::new().materialized(Materialized::named("longest")),
        )
        .unwrap();
    let runner = serve(&app);
    let want: BTreeMap<String, String> =
        [("eu", "total 13"), ("us", "total 2")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(read_until(&brokers, "totals", Duration::from_secs(60), |l| *l == want), want);
    let store = longest.query().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got: HashMap<String, String> = store.all().unwrap().into_iter().collect();
        if got.len() == 2 {
            assert_eq!(got["a"], "xyz");
            assert_eq!(got["b"], "yy");
            break;
        }
        assert!(Instant::now() < deadline, "the reduce never caught up: {got:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(app.store::<String, i64>("totals").get(&"eu".to_owned()).unwrap(), Some(13));
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.dropped_records().unwrap() != 1 {
        assert!(Instant::now() < deadline, "the null-key record was never counted as dropped");
        std::thread::sleep(Duration::from_millis(100));
    }
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_tumbling_window_count_keys_its_table_by_window() {
    use polystreams::{TimeWindows, Windowed};
    let app = app("windows");
    let brokers = app.brokers().unwrap().to_owned();
    let clicks = [("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d")];
    produce(&brokers, "clicks", &clicks);
    produce(&brokers, "click-counts", &[]);
    const HOUR: i64 = 3_600_000;
    let counts = app
        .stream::<String, String>("clicks")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(HOUR as u64)))
        .unwrap()
        .count()
        .unwrap();
    counts
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, n: i64| (format!("{}@{}@{}", w.key, w.start_ms, w.end_ms), n.to_string()))
        .unwrap()
        .to("click-counts")
        .unwrap();
    // suppress(untilWindowCloses) builds on the windowed table only.
    counts.suppress_until_window_closes().unwrap();
    assert!(app.describe().unwrap().contains("KTABLE-SUPPRESS-"), "{}", app.describe().unwrap());

    let runner = serve(&app);
    // Per key, the counts of its windows add up to its clicks (the records
    // carry the produce time, so a window boundary may fall among them).
    let totals = |last: &BTreeMap<String, String>| {
        let mut per: BTreeMap<String, i64> = BTreeMap::new();
        for (k, n) in last {
            let parts: Vec<&str> = k.split('@').collect();
            let (start, end): (i64, i64) = (parts[1].parse().unwrap(), parts[2].parse().unwrap());
            assert_eq!((start % HOUR, end - start), (0, HOUR), "window of {k}");
            *per.entry(parts[0].to_owned()).or_default() += n.parse::<i64>().unwrap();
        }
        per
    };
    let want: BTreeMap<String, i64> = [("ann".to_owned(), 3), ("bob".to_owned(), 1)].into();
    let last = read_until(&brokers, "click-counts", Duration::from_secs(60), |l| totals(l) == want);
    assert_eq!(totals(&last), want);
    // The window store, queried by key and for every key.
    let store = counts.window_store().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ann: i64 = store.fetch(&"ann".to_owned(), 0, now + HOUR).unwrap().iter().map(|(_, n)| n).sum();
        let all = store.fetch_all(0, now + HOUR).unwrap();
        if ann == 3 && all.iter().map(|(_, n)| n).sum::<i64>() == 4 {
            assert!(all.iter().all(|(w, _)| w.end_ms - w.start_ms == HOUR && (w.key == "ann" || w.key == "bob")));
            break;
        }
        assert!(Instant::now() < deadline, "the window store never caught up: ann {ann}, all {all:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_typed_table_regroups_and_counts_following_updates() {
    let app = app("tables");
    let brokers = app.brokers().unwrap().to_owned();
    // user -> region; ann moves from eu to us.
    produce(&brokers, "users", &[("ann", "eu"), ("bob", "eu"), ("cid", "us"), ("ann", "us")]);
    produce(&brokers, "region-counts", &[]);
    let users = app.table_with::<String, String>("users", Options::new().materialized("users-store")).unwrap();
    let regions = users
        .filter(|_, region| !region.is_empty())
        .unwrap()
        .group_by(|user: &String, region: String| (region, user.clone()))
        .unwrap()
        .count_with(Options::new().materialized("region-counts-store"))
        .unwrap();
    regions.to_stream().unwrap().map_values(|n: i64| n.to_string()).unwrap().to("region-counts").unwrap();
    let runner = serve(&app);
    let want: BTreeMap<String, String> =
        [("eu", "1"), ("us", "2")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(read_until(&brokers, "region-counts", Duration::from_secs(60), |l| *l == want), want);
    let store = app.store::<String, String>("users-store");
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.get(&"ann".to_owned()).unwrap().as_deref() != Some("us") {
        assert!(Instant::now() < deadline, "the table store never caught up");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(store.approximate_num_entries().unwrap(), 3);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_session_window_count_merges_close_records() {
    use polystreams::{SessionWindows, Windowed};
    let app = app("sessions");
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "visits", &[("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d")]);
    produce(&brokers, "visit-counts", &[]);
    app.stream::<String, String>("visits")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable() // merged sessions are deleted: tombstones
        .map(|w: &Windowed<String>, n: Option<i64>| {
            assert!(w.start_ms <= w.end_ms, "a session ends after it starts");
            (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string()))
        })
        .unwrap()
        .to("visit-counts")
        .unwrap();
    let runner = serve(&app);
    // All four records are seconds apart: one session per key.
    let want: BTreeMap<String, String> =
        [("ann", "3"), ("bob", "1")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(read_until(&brokers, "visit-counts", Duration::from_secs(60), |l| *l == want), want);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_session_window_host_aggregate_merges_with_its_merger() {
    use polystreams::{SessionWindows, Windowed};
    let app = app("session-aggregate");
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "lines", &[("ann", "aaa"), ("bob", "b"), ("ann", "cc"), ("ann", "d")]);
    produce(&brokers, "line-sizes", &[]);
    app.stream::<String, String>("lines")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
        .unwrap()
        // A record that extends a session merges it into a fresh aggregate:
        // the merger adds, and says it ran.
        .aggregate(
            || 0i64,
            |_: &String, v: String, n: i64| n + v.len() as i64,
            |_: &String, a: i64, b: i64| a + b + 1000,
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable() // merged sessions are deleted: tombstones
        .map(|w: &Windowed<String>, n: Option<i64>| (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string())))
        .unwrap()
        .to("line-sizes")
        .unwrap();
    let runner = serve(&app);
    // The records are seconds apart: one session per key; ann's second and
    // third records each merge her session (1000 per merge).
    let want: BTreeMap<String, String> =
        [("ann", "2006"), ("bob", "1")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(read_until(&brokers, "line-sizes", Duration::from_secs(60), |l| *l == want), want);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_sliding_window_count_holds_every_record_within_the_difference() {
    use polystreams::{SlidingWindows, Windowed};
    let app = app("sliding");
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "taps", &[("ann", "a"), ("bob", "b"), ("ann", "c"), ("ann", "d")]);
    produce(&brokers, "tap-counts", &[]);
    app.stream::<String, String>("taps")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SlidingWindows::of_time_difference_with_no_grace(Duration::from_secs(600)))
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, n: i64| (format!("{}@{}", w.key, w.start_ms), n.to_string()))
        .unwrap()
        .to("tap-counts")
        .unwrap();
    let runner = serve(&app);
    // The records are seconds apart: some window of each key holds all of its records.
    let most = |last: &BTreeMap<String, String>| {
        let mut m: BTreeMap<String, i64> = BTreeMap::new();
        for (k, n) in last {
            let e = m.entry(k.split('@').next().unwrap().to_owned()).or_default();
            *e = (*e).max(n.parse().unwrap());
        }
        m
    };
    let want: BTreeMap<String, i64> = [("ann".to_owned(), 3), ("bob".to_owned(), 1)].into();
    let last = read_until(&brokers, "tap-counts", Duration::from_secs(60), |l| most(l) == want);
    assert_eq!(most(&last), want);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_hopping_window_host_aggregate_folds_each_record_into_its_windows() {
    use polystreams::{TimeWindows, Windowed};
    let app = app("hopping");
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "sizes", &[("ann", "aaa"), ("bob", "b"), ("ann", "cc"), ("ann", "d")]);
    produce(&brokers, "size-sums", &[]);
    const MIN: u64 = 60_000;
    app.stream::<String, String>("sizes")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(
            TimeWindows::of_size_with_no_grace(Duration::from_millis(10 * MIN))
                .advance_by(Duration::from_millis(5 * MIN)),
        )
        .unwrap()
        .aggregate(|| 0i64, |_, v: String, total: i64| total + v.len() as i64)
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, n: i64| (format!("{}@{}", w.key, w.start_ms), n.to_string()))
        .unwrap()
        .to("size-sums")
        .unwrap();
    let runner = serve(&app);
    // Each record falls into two windows: per key, the windows' sums add up to twice its total.
    let twice = |last: &BTreeMap<String, String>| {
        let mut m: BTreeMap<String, i64> = BTreeMap::new();
        for (k, n) in last {
            *m.entry(k.split('@').next().unwrap().to_owned()).or_default() += n.parse::<i64>().unwrap();
        }
        m
    };
    let want: BTreeMap<String, i64> = [("ann".to_owned(), 12), ("bob".to_owned(), 2)].into();
    let last = read_until(&brokers, "size-sums", Duration::from_secs(60), |l| twice(l) == want);
    assert_eq!(twice(&last), want);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

/// The partition count of `topic`, as kcat's metadata lists it (0: none).
fn partition_count(brokers: &str, topic: &str) -> usize {
    let out = Command::new("kcat").args(["-b", brokers, "-L", "-t", topic]).output().expect("kcat runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(&format!("topic \"{topic}\" with "))).unwrap_or_default();
    line.split_whitespace().rev().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[test]
fn merge_split_and_repartition() {
    let app = app("branch");
    let brokers = app.brokers().unwrap().to_owned();
    let a: Vec<(String, i64)> = (0..200).map(|i| (format!("a-{i}"), i)).collect();
    let b: Vec<(String, i64)> = (0..50).map(|i| (format!("b-{i}"), 1000 + i)).collect();
    let text = |rs: &[(String, i64)]| rs.iter().map(|(k, v)| (k.clone(), v.to_string())).collect::<Vec<_>>();
    let (ta, tb) = (text(&a), text(&b));
    produce(&brokers, "a", &ta.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>());
    produce(&brokers, "b", &tb.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>());
    for t in ["big", "odd", "rest"] {
        produce(&brokers, t, &[]);
    }
    let odd_saw = Arc::new(Mutex::new(Vec::new()));
    let saw = odd_saw.clone();
    let merged =
        app.stream::<String, Json<i64>>("a").unwrap().merge(&app.stream::<String, Json<i64>>("b").unwrap()).unwrap();
    assert_eq!(merged.handle().node, "KSTREAM-MERGE-0000000002");
    let branches = merged
        .split_with(Options::named("size-"))
        .branch_with(|_, v: &Json<i64>| v.0 >= 100, Options::named("big"))
        .branch(move |_, v: &Json<i64>| {
            saw.lock().unwrap().push(v.0);
            v.0 % 2 == 1
        })
        .default_branch_with(Options::named("rest"))
        .unwrap();
    let mut names: Vec<&str> = branches.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["size-2", "size-big", "size-rest"]);
    for (name, s) in &branches {
        assert_eq!(&s.handle().node, name);
    }
    branches["size-big"].to("big").unwrap();
    branches["size-2"].to("odd").unwrap();
    branches["size-rest"]
        .repartition_with(polystreams::Repartitioned::named("by-key").partitions(3))
        .unwrap()
        .to("rest")
        .unwrap();
    let runner = serve(&app);
    let want = |keep: &dyn Fn(i64) -> bool, from: &[&[(String, i64)]]| -> BTreeMap<String, String> {
        from.iter()
            .flat_map(|rs| rs.iter())
            .filter(|(_, v)| keep(*v))
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect()
    };
    for (topic, expected) in [
        ("big", want(&|v| v >= 100, &[&a, &b])),
        ("odd", want(&|v| v < 100 && v % 2 == 1, &[&a])),
        ("rest", want(&|v| v < 100 && v % 2 == 0, &[&a])),
    ] {
        let got = read_until(&brokers, topic, Duration::from_secs(60), |l| l.len() >= expected.len());
        assert_eq!(got, expected, "{topic}");
    }
    assert_eq!(partition_count(&brokers, "it-branch-by-key-repartition"), 3);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
    let saw = odd_saw.lock().unwrap();
    assert!(!saw.is_empty() && saw.iter().all(|v| *v < 100), "the second predicate saw a record the first one took");
}

#[test]
fn split_and_merge_refusals_carry_the_engines_message() {
    let app = app("branch-refusals");
    let strings = app.stream::<String, String>("a").unwrap();
    let longs = app.stream::<String, i64>("b").unwrap();
    let e = strings.dynamic().merge(&longs.dynamic()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.message().contains("(string, string)") && e.message().contains("(string, long)"), "{}", e.message());
    let e = strings
        .split_with(Options::named("s-"))
        .branch_with(|_, _| true, Options::named("x"))
        .branch_with(|_, _| false, Options::named("x"))
        .no_default_branch()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.message().contains("node \"s-x\", which exists already"), "{}", e.message());
    // The SDK's own check, when the split ends.
    let e =
        strings.split().branch_with(|_, _| true, Options::new().value_serde("json")).no_default_branch().unwrap_err();
    assert_eq!(e.message(), "split: branch: takes no value_serde option");
    // The session goes on.
    let branches = strings.split().branch(|_, _| true).no_default_branch().unwrap();
    assert_eq!(branches.len(), 1);
    assert!(branches.keys().all(|k| k.starts_with("KSTREAM-BRANCH-") && k.ends_with('1')), "{branches:?}");
    app.close(Duration::from_secs(30));
}

/// Produces keyed records placed by murmur2, as Kafka's Java clients and the
/// engine place keys: a table written with librdkafka's default (CRC32)
/// partitioner is not co-partitioned with what the engine repartitions (as
/// with Kafka Streams).
fn produce_murmur2(brokers: &str, topic: &str, records: &[(&str, &str)]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-K", "\t", "-z", "none", "-X", "partitioner=murmur2_random"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for (k, v) in records {
        writeln!(stdin, "{k}\t{v}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// Every record of `topic` (not only each key's last; string keys and
/// values), read with kcat until there are `n` or `timeout` passes.
fn read_all(brokers: &str, topic: &str, timeout: Duration, n: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let all: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if all.len() >= n || Instant::now() > deadline {
            return all;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct CustomerOrder {
    customer: String,
    total: i64,
    #[serde(default)]
    name: Option<String>,
}

#[test]
fn orders_joined_with_a_customers_table_inner_and_left() {
    let app = app("join");
    let brokers = app.brokers().unwrap().to_owned();
    let customers: Vec<(String, String)> = (0..5).map(|i| (format!("c{i}"), format!("name{i}"))).collect();
    let orders: Vec<CustomerOrder> =
        (0..60).map(|i| CustomerOrder { customer: format!("c{}", i % 7), total: i, name: None }).collect();
    produce_murmur2(
        &brokers,
        "customers",
        &customers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(),
    );
    // kcat creates a topic by writing to it: one order of a customer no
    // table holds, which only the left join keeps.
    produce(&brokers, "orders", &[("w", r#"{"customer":"nobody","total":-1}"#)]);
    for t in ["enriched", "all-orders"] {
        produce(&brokers, t, &[]);
    }
    let table = app.table::<String, String>("customers").unwrap();
    let by_customer = app
        .stream::<String, Json<CustomerOrder>>("orders")
        .unwrap()
        .select_key(|_, o: &Json<CustomerOrder>| o.0.customer.clone())
        .unwrap();
    let joined = by_customer
        .join(&table, |o: Json<CustomerOrder>, name: String| Json(CustomerOrder { name: Some(name), ..o.0 }))
        .unwrap();
    assert!(joined.handle().node.starts_with("KSTREAM-JOIN-"), "{}", joined.handle().node);
    joined.to("enriched").unwrap();
    let left = by_customer
        .left_join_with(
            &table,
            |o: Json<CustomerOrder>, name: Option<String>| Json(CustomerOrder { name, ..o.0 }),
            Options::named("all"),
        )
        .unwrap();
    assert_eq!(left.handle().node, "all");
    left.to("all-orders").unwrap();
    let runner = serve(&app);
    // The table's rows are in before the orders are processed: the join
    // sees the table as it is when each order comes.
    let changelog = "it-join-customers-STATE-STORE-0000000000-changelog";
    let rows = read_until(&brokers, changelog, Duration::from_secs(60), |l| l.len() == 5 || runner.is_finished());
    assert!(!runner.is_finished(), "run ended: {:?}", runner.join());
    assert_eq!(rows.len(), 5, "{changelog}: {rows:?}");
    let texts: Vec<(String, String)> =
        orders.iter().enumerate().map(|(i, o)| (i.to_string(), serde_json::to_string(o).unwrap())).collect();
    produce(&brokers, "orders", &texts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>());
    let known: Vec<&CustomerOrder> = orders.iter().filter(|o| o.customer[1..].parse::<i64>().unwrap() < 5).collect();
    let enriched = read_all(&brokers, "enriched", Duration::from_secs(60), known.len());
    let all = read_all(&brokers, "all-orders", Duration::from_secs(60), orders.len() + 1);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));

    let decode = |rs: &[(String, String)]| -> Vec<CustomerOrder> {
        let mut v: Vec<CustomerOrder> = rs.iter().map(|(_, v)| serde_json::from_str(v).unwrap()).collect();
        v.sort_by_key(|o| o.total);
        v
    };
    assert_eq!(enriched.len(), known.len(), "each known order once");
    assert!(enriched.iter().all(|(k, v)| v.contains(&format!("\"customer\":\"{k}\""))), "keyed by customer");
    let want: Vec<CustomerOrder> = known
        .iter()
        .map(|o| CustomerOrder { name: Some(format!("name{}", &o.customer[1..])), ..(*o).clone() })
        .collect();
    assert_eq!(decode(&enriched), want);
    assert_eq!(all.len(), orders.len() + 1, "each order once");
    let missed: Vec<i64> = decode(&all).into_iter().filter(|o| o.name.is_none()).map(|o| o.total).collect();
    assert_eq!(missed, [-1].into_iter().chain((0..60).filter(|i| i % 7 >= 5)).collect::<Vec<_>>());
}

#[test]
fn join_refusals_carry_the_engines_message() {
    let app = app("join-refusals");
    let table = app.table::<i64, String>("t").unwrap();
    let stream = app.stream::<String, String>("s").unwrap();
    let e = stream.dynamic().join(&table.dynamic(), |v, _| v).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(
        e.message().contains("string keys and table handle") && e.message().contains("long keys"),
        "{}",
        e.message()
    );
    let ok = app.table::<String, String>("u").unwrap();
    let e = stream.join_with(&ok, |v, t| format!("{v}{t}"), Options::new().key_serde("long")).unwrap_err();
    assert_eq!(e.message(), "join: takes no key_serde option");
    // The session goes on.
    stream.left_join(&ok, |v, t: Option<String>| format!("{v}{}", t.unwrap_or_default())).unwrap().to("out").unwrap();
    app.close(Duration::from_secs(30));
}

/// Produces one record placed by murmur2; a None value is a Kafka null (a
/// tombstone: kcat -Z sends an empty value as null).
fn put_murmur2(brokers: &str, topic: &str, key: &str, value: Option<&str>) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-K", "\t", "-Z", "-z", "none", "-X", "partitioner=murmur2_random"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    writeln!(kcat.stdin.as_mut().unwrap(), "{key}\t{}", value.unwrap_or("")).unwrap();
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// Every record of `topic` as "key=value" ("key=null" for a tombstone),
/// grouped per key in order, read with kcat until there are `n`.
fn read_changes(brokers: &str, topic: &str, n: usize) -> BTreeMap<String, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%S\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut count = 0;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut f = line.splitn(3, '\t');
            let (k, len, v) = (f.next().unwrap(), f.next().unwrap_or("-1"), f.next().unwrap_or(""));
            by_key.entry(k.to_owned()).or_default().push(if len == "-1" { "null".to_owned() } else { v.to_owned() });
            count += 1;
        }
        if count >= n || Instant::now() > deadline {
            return by_key;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Table-table joins (KTableKTableInnerJoin, KTableKTableLeftJoin with
/// KTableKTableRightJoin on the other side, KTableKTableOuterJoin): each
/// change of either table forwards the joined row, deletes included, one
/// step at a time, read back with kcat.
#[test]
fn tables_joined_inner_left_and_outer_follow_updates_and_deletes() {
    let app = app("table-join");
    let brokers = app.brokers().unwrap().to_owned();
    // kcat creates a topic by writing to it: a tombstone of a key neither
    // table holds, which no join forwards anything for.
    for t in ["ta", "tb"] {
        put_murmur2(&brokers, t, "k0", None);
    }
    for t in ["inner", "left", "outer"] {
        produce(&brokers, t, &[]);
    }
    let ta = app.table::<String, String>("ta").unwrap();
    let tb = app.table::<String, String>("tb").unwrap();
    let s = |v: Option<String>| v.unwrap_or_else(|| "null".to_owned());
    let inner = ta.join(&tb, |a: String, b: String| format!("{a}+{b}")).unwrap();
    assert_eq!(inner.handle().node, "KTABLE-MERGE-0000000006");
    inner.to_stream().unwrap().to("inner").unwrap();
    let left = ta.left_join_with(&tb, move |a: String, b| format!("{a}+{}", s(b)), Options::named("lj")).unwrap();
    assert_eq!(left.handle().node, "lj");
    left.to_stream().unwrap().to("left").unwrap();
    let outer = ta
        .outer_join_with(&tb, move |a, b| format!("{}+{}", s(a), s(b)), Options::new().materialized("outer-joined"))
        .unwrap();
    assert_eq!(outer.store(), Some("outer-joined"));
    outer.to_stream().unwrap().to("outer").unwrap();
    let runner = serve(&app);
    type Step = (
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    let steps: [Step; 8] = [
        ("ta", "k1", Some("a1"), &[], &["k1=a1+null"], &["k1=a1+null"]),
        ("tb", "k1", Some("b1"), &["k1=a1+b1"], &["k1=a1+b1"], &["k1=a1+b1"]),
        ("ta", "k1", Some("a2"), &["k1=a2+b1"], &["k1=a2+b1"], &["k1=a2+b1"]),
        ("tb", "k2", Some("b2"), &[], &[], &["k2=null+b2"]),
        ("tb", "k1", None, &["k1=null"], &["k1=a2+null"], &["k1=a2+null"]),
        ("ta", "k1", None, &[], &["k1=null"], &["k1=null"]),
        ("ta", "k2", Some("a3"), &["k2=a3+b2"], &["k2=a3+b2"], &["k2=a3+b2"]),
        ("tb", "k2", None, &["k2=null"], &["k2=a3+null"], &["k2=a3+null"]),
    ];
    let mut want: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, (topic, key, value, inner, left, outer)) in steps.iter().enumerate() {
        put_murmur2(&brokers, topic, key, *value);
        for (t, lines) in [("inner", inner), ("left", left), ("outer", outer)] {
            want.entry(t).or_default().extend(lines.iter());
        }
        // Each step makes the outer join forward; once all three joins
        // have forwarded what they should, the next step may go.
        for t in ["inner", "left", "outer"] {
            let lines = &want[t];
            let got = read_changes(&brokers, t, lines.len());
            let mut per_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for l in lines {
                let (k, v) = l.split_once('=').unwrap();
                per_key.entry(k.to_owned()).or_default().push(v.to_owned());
            }
            assert_eq!(got, per_key, "after step {} ({topic} {key}={value:?}): {t} join", i + 1);
        }
        assert!(!runner.is_finished(), "run ended: {:?}", runner.join());
    }
    let rows: Vec<(String, String)> = outer.query().unwrap().all().unwrap();
    assert_eq!(rows, [("k2".to_owned(), "a3+null".to_owned())]);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn table_join_refusals_carry_the_engines_message() {
    let app = app("table-join-refusals");
    let ta = app.table::<String, String>("ta").unwrap();
    let longs = app.table::<i64, String>("tl").unwrap();
    let e = ta.dynamic().join(&longs.dynamic(), |a, _| a).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.message().contains("table handle 1 has string keys and table handle 2 long keys"), "{}", e.message());
    // A filter reads through its value getter; over an unmaterialized join
    // result it reaches no store.
    let te = app.table::<String, String>("te").unwrap();
    let filtered = ta.join(&te, |a: String, b: String| a + &b).unwrap().filter(|_, _| true).unwrap();
    let tc = app.table::<String, String>("tc").unwrap();
    let e = filtered.left_join(&tc, |a, _b: Option<String>| a).unwrap_err();
    assert!(e.message().contains("keeps no store to look keys up in"), "{}", e.message());
    let e = ta
        .outer_join_with(&tc, |a: Option<String>, _b: Option<String>| a, Options::new().key_serde("long"))
        .unwrap_err();
    assert_eq!(e.message(), "outer_join: takes no key_serde option");
    // The session goes on.
    ta.join(&tc, |a: String, b: String| a + &b).unwrap().to_stream().unwrap().to("out").unwrap();
}

/// An instance with `application.server` (the engine's own address): a
/// count answers through the engine's routed path with its timestamp and
/// partition, and the metadata names this instance as the one holding the
/// key and every partition.
#[test]
fn interactive_queries_with_application_server() {
    let first = app("iq-engine");
    let url = first.engine_url().to_owned();
    let server = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let brokers = first.brokers().unwrap().to_owned();
    let dir = std::env::temp_dir().join(format!("polystreams-rust-iq-{}", std::process::id()));
    let app = App::builder("it-iq")
        .engine(url.clone())
        .config(
            Config::new()
                .commit_interval_ms(100)
                .state_dir(dir.to_string_lossy())
                .set("application.server", server.clone()),
        )
        .build()
        .expect("a second session on the first app's engine");
    // Partitioned as Java's producer partitions (murmur2 of the key): the
    // metadata's partition of a key is where the key's records are.
    let mut kcat = Command::new("kcat")
        .args(["-b", &brokers, "-P", "-t", "iq-in", "-X", "topic.partitioner=murmur2_random", "-K", "\t", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    writeln!(kcat.stdin.as_mut().unwrap(), "a\tx\nb\tx\na\tx").unwrap();
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to iq-in");
    app.stream::<String, String>("iq-in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .count_with(Options::new().materialized("iq-counts"))
        .unwrap();
    let runner = serve(&app);
    let store = app.store::<String, i64>("iq-counts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let r = loop {
        let last = store.query(&"a".to_owned());
        if let Ok(r) = &last {
            if r.value == Some(2) {
                break r.clone();
            }
        }
        assert!(Instant::now() < deadline, "the count of a never reached 2: {last:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(r.timestamp.is_some() && !r.from_standby, "{r:?}");
    assert_eq!(r.served_by, vec![server.clone()]);
    let md = app.query_metadata_for_key("iq-counts", &"a".to_owned()).unwrap();
    assert_eq!(md.active_host.as_ref().map(ToString::to_string), Some(server.clone()));
    assert_eq!(Some(md.partition), r.partition);
    let all = app.metadata_for_all_streams_clients().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].host_info.to_string(), server);
    assert!(all[0].state_store_names.contains(&"iq-counts".to_owned()), "{all:?}");
    assert_eq!(app.streams_metadata_for_store("iq-counts").unwrap(), all);
    assert_eq!(
        app.store::<String, i64>("iq-counts").enable_stale_stores().query(&"b".to_owned()).unwrap().value,
        Some(1)
    );
    app.stop();
    runner.join().unwrap().unwrap();
    first.stop();
}
