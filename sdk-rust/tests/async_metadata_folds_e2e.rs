//! Async windowed and grouped-table folds with metadata
//! (`with_metadata().reduce_async(..)` / `aggregate_async(..)`) against the
//! REAL engine binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; `make
//! build`) and its embedded broker, records in and out through kcat: each
//! function gets the folded record's metadata (the initializer the record's
//! that creates the aggregate, the merger the bridging record's), each
//! window's values folded in record order.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use polystreams::{App, Config, RecordMetadata, SessionWindows, TimeWindows, Windowed};

use common::{produce, read_until, Yield};

/// A window larger than the epoch's age: every record's tumbling window starts at 0.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);

fn app(name: &str, config: Config) -> App {
    common::app("async-meta-folds", name, config)
}

const RECORDS: [(&str, &str); 5] = [("ann", "1"), ("bob", "10"), ("ann", "2"), ("bob", "20"), ("ann", "3")];

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn async_windowed_folds_with_metadata_get_each_records_metadata() {
    let app = app("windows", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &RECORDS); // offsets 0..4
    for t in ["tumbling", "sessions", "session-sums"] {
        produce(&brokers, t, &[]);
    }
    let grouped = app.stream::<String, String>("in").unwrap().group_by_key().unwrap();

    // Tumbling: the initializer gets the metadata of the record creating
    // the window's aggregate, the aggregator each record's.
    grouped
        .windowed_by(TimeWindows::of_size_with_no_grace(CENTURY))
        .unwrap()
        .with_metadata()
        .aggregate_async(
            |m: &RecordMetadata| format!("#{}", m.offset),
            |_k: &String, v: String, agg: String, m: RecordMetadata| async move {
                Yield(2).await;
                format!("{agg},{v}@{}", m.offset)
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, a: String| (w.key.clone(), a))
        .unwrap()
        .to("tumbling")
        .unwrap();

    let sessions = grouped
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
        .unwrap()
        .with_metadata();
    // Sessions reduced: a session's first value without a call.
    sessions
        .reduce_async(|a: String, v: String, m: RecordMetadata| async move {
            Yield(1).await;
            format!("{a}|{v}@{}", m.offset)
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable()
        .map(|w: &Windowed<String>, a: Option<String>| (w.key.clone(), a.unwrap_or_else(|| "merged".to_owned())))
        .unwrap()
        .to("sessions")
        .unwrap();
    // Sessions aggregated: every record starts a fresh aggregate
    // (init: 100 x its offset), merges the session it extends (the merger
    // adds the bridging record's offset) and folds its value in.
    sessions
        .aggregate_async(
            |m: &RecordMetadata| m.offset * 100,
            |_k: &String, v: String, n: i64, _m: RecordMetadata| async move {
                Yield(1).await;
                n + v.parse::<i64>().unwrap()
            },
            |_k: &String, a: i64, b: i64, m: RecordMetadata| async move {
                Yield(1).await;
                a + b + m.offset
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable()
        .map(|w: &Windowed<String>, n: Option<i64>| (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string())))
        .unwrap()
        .to("session-sums")
        .unwrap();

    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let wait = Duration::from_secs(60);
    let tumbling = strings(&[("ann", "#0,1@0,2@2,3@4"), ("bob", "#1,10@1,20@3")]);
    let got_tumbling = read_until(&brokers, "tumbling", wait, |l| *l == tumbling);
    let reduced = strings(&[("ann", "1|2@2|3@4"), ("bob", "10|20@3")]);
    let got_reduced = read_until(&brokers, "sessions", wait, |l| *l == reduced);
    // ann: inits 0 + 200 + 400, values 6, merges at offsets 2 and 4;
    // bob: inits 100 + 300, values 30, a merge at offset 3.
    let sums = strings(&[("ann", "612"), ("bob", "433")]);
    let got_sums = read_until(&brokers, "session-sums", wait, |l| *l == sums);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got_tumbling, tumbling);
    assert_eq!(got_reduced, reduced);
    assert_eq!(got_sums, sums);
    app.close(Duration::from_secs(30));
}

#[test]
fn a_grouped_tables_async_adder_and_subtractor_with_metadata_follow_its_updates() {
    let app = app("table", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    // user -> region; ann moves from eu to us.
    produce(&brokers, "users", &[("ann", "eu"), ("bob", "eu"), ("cid", "us"), ("ann", "us")]);
    produce(&brokers, "members", &[]);
    produce(&brokers, "member-lists", &[]);
    let by_region = app
        .table::<String, String>("users")
        .unwrap()
        .group_by(|user: &String, region: String| (region, user.clone()))
        .unwrap()
        .with_metadata();
    // Each function asserts it got the update's metadata: a panic would
    // fail the update and the counts would not settle.
    by_region
        .aggregate_async(
            |m: &RecordMetadata| {
                assert!(!m.topic.is_empty(), "no metadata");
                0i64
            },
            |_region: &String, _user: String, n: i64, m: RecordMetadata| async move {
                assert!(!m.topic.is_empty(), "no metadata");
                Yield(2).await;
                n + 1
            },
            |_region: &String, _user: String, n: i64, m: RecordMetadata| async move {
                assert!(!m.topic.is_empty(), "no metadata");
                Yield(1).await;
                n - 1
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .map_values(|n: i64| n.to_string())
        .unwrap()
        .to("members")
        .unwrap();
    by_region
        .reduce_async_with(
            |list: String, user: String, m: RecordMetadata| async move {
                assert!(!m.topic.is_empty(), "no metadata");
                Yield(2).await;
                with(&list, &user, true)
            },
            |list: String, user: String, m: RecordMetadata| async move {
                assert!(!m.topic.is_empty(), "no metadata");
                Yield(1).await;
                with(&list, &user, false)
            },
            polystreams::Options::new().name("member-lists"),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("member-lists")
        .unwrap();
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let counts = strings(&[("eu", "1"), ("us", "2")]);
    let got_counts = read_until(&brokers, "members", Duration::from_secs(60), |l| *l == counts);
    let lists = strings(&[("eu", "bob"), ("us", "ann,cid")]);
    let got_lists = read_until(&brokers, "member-lists", Duration::from_secs(60), |l| *l == lists);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got_counts, counts);
    assert_eq!(got_lists, lists);
    app.close(Duration::from_secs(30));
}

/// A sorted comma list with `x` added (or removed).
fn with(list: &str, x: &str, add: bool) -> String {
    let mut xs: Vec<&str> = list.split(',').filter(|s| !s.is_empty() && *s != x).collect();
    if add {
        xs.push(x);
    }
    xs.sort_unstable();
    xs.join(",")
}
