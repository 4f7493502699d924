//! Async branch predicates (`split().branch_async(..)`) against the REAL
//! engine binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; `make
//! build`) and its embedded broker, records in and out through kcat: each
//! record goes to the first branch whose predicate passes it, async and
//! synchronous predicates mixed, whatever order the futures finish in; a
//! panicking future fails its record under the configured policy, naming
//! the predicate, the node and the record.

mod common;

use std::time::Duration;

use polystreams::{App, Config, Error, Options};

use common::{by_key, keyed, produce, read_all, Yield};

fn app(name: &str, config: Config) -> App {
    common::app("async-branch", name, config)
}

/// A split of "in" into big (async), odd (synchronous), even-or-small
/// (async: values under 10) and the default branch, each to its topic.
fn split_app(name: &str, config: Config) -> App {
    let app = app(name, config);
    let branches = app
        .stream::<String, String>("in")
        .unwrap()
        .split_with(Options::named("n-"))
        .branch_async_with(
            |_k: &String, v: &String| {
                let v = v.clone();
                async move {
                    Yield(v.len() % 3).await; // later records may finish first
                    v.parse::<i64>().unwrap_or_else(|_| panic!("cannot read {v}")) > 100
                }
            },
            Options::named("big"),
        )
        .branch_with(|_k: &String, v: &String| v.parse::<i64>().unwrap() % 2 == 1, Options::named("odd"))
        .branch_async(|_k: &String, v: &String| {
            let n: i64 = v.parse().unwrap();
            async move {
                Yield(n as usize % 3).await;
                n < 10
            }
        })
        .default_branch_with(Options::named("rest"))
        .unwrap();
    let mut names: Vec<&String> = branches.keys().collect();
    names.sort();
    assert_eq!(names, ["n-3", "n-big", "n-odd", "n-rest"]);
    for (name, s) in &branches {
        s.to(&format!("{name}-out")).unwrap();
    }
    app
}

#[test]
fn async_branch_predicates_route_each_record_to_the_first_branch_passing_it() {
    let app = split_app("split", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    let values = ["500", "3", "4", "12", "200", "7", "8", "40", "101", "2"];
    let records: Vec<(&str, &str)> = values.iter().map(|v| ("k", *v)).collect();
    produce(&brokers, "in", &records);
    for t in ["n-big-out", "n-odd-out", "n-3-out", "n-rest-out"] {
        produce(&brokers, t, &[]);
    }
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let big = read_all(&brokers, "n-big-out", |l| l.len() >= 3);
    let odd = read_all(&brokers, "n-odd-out", |l| l.len() >= 2);
    let small = read_all(&brokers, "n-3-out", |l| l.len() >= 3);
    let rest = read_all(&brokers, "n-rest-out", |l| l.len() >= 2);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(by_key(&big), keyed(&[("k", &["500", "200", "101"])]));
    assert_eq!(by_key(&odd), keyed(&[("k", &["3", "7"])]));
    assert_eq!(by_key(&small), keyed(&[("k", &["4", "8", "2"])]));
    assert_eq!(by_key(&rest), keyed(&[("k", &["12", "40"])]));
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_branch_predicate_fails_its_record_under_each_policy() {
    let records = [("k", "500"), ("k", "boom"), ("k", "300")];
    for policy in ["log_and_continue", "fail"] {
        let app = split_app(&format!("policy-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "in", &records);
        produce(&brokers, "n-big-out", &[]);
        let runner = {
            let app = app.clone();
            std::thread::spawn(move || app.run())
        };
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("in"), Some(0), Some(1)), "{message}");
                    assert!(node.as_deref().is_some_and(|n| n.starts_with("n-")), "{node:?}");
                    assert!(
                        message.contains("cannot read boom") && message.contains("async_branch_e2e.rs"),
                        "{message}"
                    );
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        let got = read_all(&brokers, "n-big-out", |l| l.len() >= 2);
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(by_key(&got), keyed(&[("k", &["500", "300"])]), "{policy}");
        app.close(Duration::from_secs(30));
    }
}
