//! Async windowed and table folds against the REAL engine binary (`$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams`; `make build`) and its embedded broker, records in
//! and out through kcat: reduce_async and aggregate_async over tumbling,
//! hopping, sliding and session windows fold each window's values in record
//! order while a bundle's keys fold together, a session aggregate merges
//! with its async merger, a grouped table's async adder and subtractor follow
//! its updates, and a panicking future fails its record under the
//! configured policy, naming the function, node and record.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use polystreams::{App, Config, Error, SessionWindows, SlidingWindows, TimeWindows, Windowed};

use common::{produce, read_until, Barrier, Yield};

/// A window larger than the epoch's age: every record's tumbling window starts at 0.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);

fn app(name: &str, config: Config) -> App {
    common::app("async-folds", name, config)
}

const RECORDS: [(&str, &str); 5] = [("ann", "1"), ("bob", "10"), ("ann", "2"), ("bob", "20"), ("ann", "3")];

fn join(a: String, v: &str) -> String {
    if a.is_empty() {
        v.to_owned()
    } else {
        format!("{a},{v}")
    }
}

#[test]
fn async_windowed_folds_run_each_windows_calls_in_record_order() {
    let app = app("folds", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &RECORDS); // before start: one bundle
    for t in ["tumbling", "hopping", "sliding", "sessions", "session-sizes"] {
        produce(&brokers, t, &[]);
    }
    let grouped = app.stream::<String, String>("in").unwrap().group_by_key().unwrap();

    // Tumbling: the keys' first calls wait for each other (they must run
    // together); each later call yields, so a call out of order would show.
    let barrier = Barrier::new(2);
    grouped
        .windowed_by(TimeWindows::of_size_with_no_grace(CENTURY))
        .unwrap()
        .aggregate_async(String::new, move |_k: &String, v: String, agg: String| {
            let wait = agg.is_empty().then(|| barrier.wait());
            async move {
                if let Some(wait) = wait {
                    wait.await;
                }
                Yield(3).await;
                join(agg, &v)
            }
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, a: String| (format!("{}@{}", w.key, w.start_ms), a))
        .unwrap()
        .to("tumbling")
        .unwrap();

    // Hopping: each record folds into two windows (starting at 0 and at 50 years).
    grouped
        .windowed_by(TimeWindows::of_size_with_no_grace(CENTURY).advance_by(CENTURY / 2))
        .unwrap()
        .reduce_async_with(
            |a: String, v: String| async move {
                Yield(2).await;
                format!("{a}|{v}")
            },
            polystreams::Options::new().name("hopping-reduce"),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, a: String| (format!("{}@{}", w.key, w.start_ms), a))
        .unwrap()
        .to("hopping")
        .unwrap();

    // Sliding (a fold program): some window of each key holds all its values.
    grouped
        .windowed_by(SlidingWindows::of_time_difference_with_no_grace(Duration::from_secs(600)))
        .unwrap()
        .aggregate_async(
            || 0i64,
            |_k: &String, v: String, sum: i64| async move {
                Yield(1).await;
                sum + v.parse::<i64>().unwrap()
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .map(|w: &Windowed<String>, n: i64| (format!("{}@{}", w.key, w.start_ms), n.to_string()))
        .unwrap()
        .to("sliding")
        .unwrap();

    // Sessions (fold programs that merge): the reducer also merges.
    let sessions =
        grouped.windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600))).unwrap();
    sessions
        .reduce_async(|a: String, v: String| async move {
            Yield(2).await;
            format!("{a}|{v}")
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable() // merged sessions are deleted: tombstones
        .map(|w: &Windowed<String>, a: Option<String>| (w.key.clone(), a.unwrap_or_else(|| "merged".to_owned())))
        .unwrap()
        .to("sessions")
        .unwrap();
    // A record that extends a session merges it into a fresh aggregate:
    // the async merger adds, and says it ran (1000 per merge).
    sessions
        .aggregate_async(
            || 0i64,
            |_k: &String, v: String, n: i64| async move {
                Yield(1).await;
                n + v.parse::<i64>().unwrap()
            },
            |_k: &String, a: i64, b: i64| async move {
                Yield(1).await;
                a + b + 1000
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .nullable()
        .map(|w: &Windowed<String>, n: Option<i64>| (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string())))
        .unwrap()
        .to("session-sizes")
        .unwrap();

    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let wait = Duration::from_secs(60);
    let strings = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let tumbling = strings(&[("ann@0", "1,2,3"), ("bob@0", "10,20")]);
    let got_tumbling = read_until(&brokers, "tumbling", wait, |l| *l == tumbling);
    let half = (CENTURY / 2).as_millis();
    let hopping = strings(&[
        ("ann@0", "1|2|3"),
        (&format!("ann@{half}"), "1|2|3"),
        ("bob@0", "10|20"),
        (&format!("bob@{half}"), "10|20"),
    ]);
    let got_hopping = read_until(&brokers, "hopping", wait, |l| *l == hopping);
    let most = |last: &BTreeMap<String, String>| {
        let mut m: BTreeMap<String, i64> = BTreeMap::new();
        for (k, n) in last {
            let e = m.entry(k.split('@').next().unwrap().to_owned()).or_default();
            *e = (*e).max(n.parse().unwrap());
        }
        m
    };
    let sliding: BTreeMap<String, i64> = [("ann".to_owned(), 6), ("bob".to_owned(), 30)].into();
    let got_sliding = read_until(&brokers, "sliding", wait, |l| most(l) == sliding);
    let sessions = strings(&[("ann", "1|2|3"), ("bob", "10|20")]);
    let got_sessions = read_until(&brokers, "sessions", wait, |l| *l == sessions);
    let sizes = strings(&[("ann", "2006"), ("bob", "1030")]);
    let got_sizes = read_until(&brokers, "session-sizes", wait, |l| *l == sizes);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got_tumbling, tumbling);
    assert_eq!(got_hopping, hopping);
    assert_eq!(most(&got_sliding), sliding, "{got_sliding:?}");
    assert_eq!(got_sessions, sessions);
    assert_eq!(got_sizes, sizes);
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_windowed_future_fails_its_record_under_each_policy() {
    let records = [("ann", "1"), ("ann", "2"), ("ann", "boom"), ("ann", "4")];
    for policy in ["log_and_continue", "fail"] {
        let app = app(&format!("policy-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "in", &records);
        produce(&brokers, "sums", &[]);
        app.stream::<String, String>("in")
            .unwrap()
            .group_by_key()
            .unwrap()
            .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_secs(600)))
            .unwrap()
            .aggregate_async(
                || 0i64,
                |_k: &String, v: String, n: i64| async move {
                    Yield(1).await;
                    n + v.parse::<i64>().unwrap_or_else(|_| panic!("cannot add {v}"))
                },
                |_k: &String, a: i64, b: i64| async move { a + b },
            )
            .unwrap()
            .to_stream()
            .unwrap()
            .nullable()
            .map(|w: &Windowed<String>, n: Option<i64>| {
                (w.key.clone(), n.map_or("merged".to_owned(), |n| n.to_string()))
            })
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
                    assert!(node.as_deref().is_some_and(|n| n.starts_with("KSTREAM-AGGREGATE-")), "{node:?}");
                    assert!(message.contains("cannot add boom") && message.contains("async_folds_e2e.rs"), "{message}");
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        // The failed record leaves the session as it was: 1 + 2, then 4.
        let want: BTreeMap<String, String> = [("ann".to_owned(), "7".to_owned())].into();
        let got = read_until(&brokers, "sums", Duration::from_secs(60), |l| *l == want);
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(got, want, "{policy}");
        app.close(Duration::from_secs(30));
    }
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

#[test]
fn a_grouped_tables_async_adder_and_subtractor_follow_its_updates() {
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
        .unwrap();
    by_region
        .aggregate_async(
            || 0i64,
            |_region: &String, _user: String, n: i64| async move {
                Yield(2).await;
                n + 1
            },
            |_region: &String, _user: String, n: i64| async move {
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
            |list: String, user: String| async move {
                Yield(2).await;
                with(&list, &user, true)
            },
            |list: String, user: String| async move {
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
    let strings = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
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
