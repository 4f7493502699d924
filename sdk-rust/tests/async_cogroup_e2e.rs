//! Async cogroups against the REAL engine binary (`$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams`; `make build`) and its embedded broker, records in
//! and out through kcat: `cogroup_async` aggregators fold each key's values
//! in record order while a bundle's keys fold together, mixing with
//! synchronous aggregators; a session-windowed cogroup merges sessions with
//! an async merger; and a panicking future fails its record under the
//! configured policy, naming the function, node and record.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use polystreams::{App, Config, Error, SessionWindows, Windowed};

use common::{produce, read_until, Barrier, Yield};

fn app(name: &str, config: Config) -> App {
    common::app("async-cogroup", name, config)
}

/// `agg` with `v` added to its half: clicks left of the `|`, orders right.
fn add(agg: &str, v: &str, clicks: bool) -> String {
    let (c, o) = agg.split_once('|').unwrap_or(("", ""));
    let push = |s: &str| if s.is_empty() { v.to_owned() } else { format!("{s},{v}") };
    if clicks {
        format!("{}|{o}", push(c))
    } else {
        format!("{c}|{}", push(o))
    }
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn async_cogroup_aggregators_fold_each_keys_values_in_record_order() {
    let app = app("cogroup", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    // Before start: each topic's records in one bundle.
    produce(&brokers, "clicks", &[("ann", "c1"), ("bob", "c2"), ("ann", "c3"), ("bob", "c4"), ("ann", "c5")]);
    produce(&brokers, "orders", &[("ann", "o1"), ("ann", "o2"), ("bob", "o3")]);
    produce(&brokers, "amounts", &[("ann", "1"), ("bob", "10"), ("ann", "2")]);
    produce(&brokers, "pings", &[("ann", "x")]);
    for t in ["activity", "sessions", "offsets", "session-offsets"] {
        produce(&brokers, t, &[]);
    }
    let clicks = app.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    let orders = app.stream::<String, String>("orders").unwrap().group_by_key().unwrap();

    // The keys' first clicks wait for each other (they must fold together);
    // each later call yields, so a call out of order would show. Orders
    // fold asynchronously too, with a synchronous aggregator beside them.
    let barrier = Barrier::new(2);
    clicks
        .cogroup_async(move |_k: &String, v: String, agg: String| {
            let wait = (agg == "|").then(|| barrier.wait());
            async move {
                if let Some(wait) = wait {
                    wait.await;
                }
                Yield(3).await;
                add(&agg, &v, true)
            }
        })
        .cogroup(&orders, |_k: &String, v: String, agg: String| add(&agg, &v, false))
        .aggregate(|| "|".to_owned())
        .unwrap()
        .to_stream()
        .unwrap()
        .to("activity")
        .unwrap();

    // With metadata: each aggregator's future gets its record's (owned).
    orders
        .with_metadata()
        .cogroup_async(|_k: &String, _v: String, agg: String, m: polystreams::RecordMetadata| async move {
            Yield(2).await;
            add(&agg, &format!("{}@{}", m.topic, m.offset), false)
        })
        .cogroup_with_metadata_async(
            &clicks,
            |_k: &String, _v: String, agg: String, m: polystreams::RecordMetadata| async move {
                add(&agg, &format!("{}@{}", m.topic, m.offset), true)
            },
        )
        .aggregate(|| "|".to_owned())
        .unwrap()
        .to_stream()
        .unwrap()
        .to("offsets")
        .unwrap();

    // Sessions: every record of a key extends its session, merging it into
    // a fresh aggregate; the async merger adds and says it ran (1000 per merge).
    let amounts = app.stream::<String, String>("amounts").unwrap().group_by_key().unwrap();
    let pings = app.stream::<String, String>("pings").unwrap().group_by_key().unwrap();
    pings
        .cogroup(|_k: &String, _v: String, n: i64| n + 1)
        .cogroup_async(&amounts, |_k: &String, v: String, n: i64| async move {
            Yield(1).await;
            n + v.parse::<i64>().unwrap()
        })
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
        .aggregate_async(
            || 0i64,
            |_k: &String, a: i64, b: i64| async move {
                Yield(1).await;
                a + b + 1000
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable() // merged sessions are deleted: tombstones
        .map(|w: &Windowed<String>, n: Option<i64>| (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string())))
        .unwrap()
        .to("sessions")
        .unwrap();

    // With metadata: the initializer gets the record creating a session's
    // aggregate (100 x its offset), the async merger the bridging record's.
    amounts
        .cogroup(|_k: &String, v: String, n: i64| n + v.parse::<i64>().unwrap())
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
        .with_metadata()
        .aggregate_async(
            |m: &polystreams::RecordMetadata| m.offset * 100,
            |_k: &String, a: i64, b: i64, m: polystreams::RecordMetadata| async move {
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
        .to("session-offsets")
        .unwrap();

    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let wait = Duration::from_secs(60);
    let activity = strings(&[("ann", "c1,c3,c5|o1,o2"), ("bob", "c2,c4|o3")]);
    let got_activity = read_until(&brokers, "activity", wait, |l| *l == activity);
    // ann: 1 + 2 + 1 (a ping) and two merges; bob: 10.
    let sessions = strings(&[("ann", "2004"), ("bob", "10")]);
    let got_sessions = read_until(&brokers, "sessions", wait, |l| *l == sessions);
    let offsets =
        strings(&[("ann", "clicks@0,clicks@2,clicks@4|orders@0,orders@1"), ("bob", "clicks@1,clicks@3|orders@2")]);
    let got_offsets = read_until(&brokers, "offsets", wait, |l| *l == offsets);
    // ann: inits 0 + 200, values 3, a merge at offset 2; bob: init 100, 10.
    let session_offsets = strings(&[("ann", "205"), ("bob", "110")]);
    let got_session_offsets = read_until(&brokers, "session-offsets", wait, |l| *l == session_offsets);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got_activity, activity);
    assert_eq!(got_offsets, offsets);
    assert_eq!(got_session_offsets, session_offsets);
    assert_eq!(got_sessions, sessions);
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_cogroup_future_fails_its_record_under_each_policy() {
    let records = [("ann", "1"), ("ann", "2"), ("ann", "boom"), ("ann", "4")];
    for policy in ["log_and_continue", "fail"] {
        let app = app(&format!("policy-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "in", &records);
        produce(&brokers, "other", &[]);
        produce(&brokers, "sums", &[]);
        let other = app.stream::<String, String>("other").unwrap().group_by_key().unwrap();
        app.stream::<String, String>("in")
            .unwrap()
            .group_by_key()
            .unwrap()
            .cogroup_async(|_k: &String, v: String, n: i64| async move {
                Yield(1).await;
                n + v.parse::<i64>().unwrap_or_else(|_| panic!("cannot add {v}"))
            })
            .cogroup(&other, |_k: &String, _v: String, n: i64| n)
            .aggregate(|| 0i64)
            .unwrap()
            .to_stream()
            .unwrap()
            .map_values(|n: i64| n.to_string())
            .unwrap()
            .to("sums")
            .unwrap();
        let runner = {
            let app = app.clone();
            std::thread::spawn(move || app.run())
        };
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("in"), Some(0), Some(2)), "{message}");
                    assert!(node.as_deref().is_some_and(|n| n.contains("COGROUP")), "{node:?}");
                    assert!(
                        message.contains("cannot add boom") && message.contains("async_cogroup_e2e.rs"),
                        "{message}"
                    );
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        // The failed record leaves the aggregate as it was: 1 + 2, then 4.
        let want = strings(&[("ann", "7")]);
        let got = read_until(&brokers, "sums", Duration::from_secs(60), |l| *l == want);
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(got, want, "{policy}");
        app.close(Duration::from_secs(30));
    }
}
