//! Async operators against the REAL engine binary (`$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams`; `make build`) and its embedded broker, records in
//! and out through kcat: outputs in record order when later records finish
//! first, a bundle's futures running together, and a panicking future
//! failing its record under each error policy as a panicking closure does.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Barrier, Yield};
use polystreams::{App, Config, Error};

fn app(name: &str, config: Config) -> App {
    common::app("async", name, config)
}

/// Produces values to partition 0 of topic, in order, all with key "k"
/// (so that the outputs, keyed alike, land in one partition, in order).
fn produce(brokers: &str, topic: &str, values: &[String]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for v in values {
        writeln!(stdin, "k\t{v}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// The values of topic in offset order, read until there are n or timeout
/// passes; they are all in one partition (one key).
fn read_values(brokers: &str, topic: &str, n: usize, timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<(&str, &str)> = text.lines().map(|l| l.split_once('\t').expect("partition and value")).collect();
        assert!(
            rows.iter().all(|(p, _)| *p == rows[0].0),
            "{topic}: records of one key in several partitions: {rows:?}"
        );
        let got: Vec<String> = rows.into_iter().map(|(_, v)| v.to_owned()).collect();
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn outputs_keep_record_order_while_a_bundles_futures_run_together() {
    let n = 40;
    let app = app("order", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &(0..n).map(|i| i.to_string()).collect::<Vec<_>>()); // before start: one bundle
    produce(&brokers, "out", &[]);
    let barrier = Barrier::new(n);
    let finished = Arc::new(Mutex::new(Vec::new()));
    let fin = finished.clone();
    app.stream::<String, String>("in")
        .unwrap()
        .map_values_async(move |v: String| {
            let (wait, fin) = (barrier.wait(), fin.clone());
            async move {
                let i: usize = v.parse().unwrap();
                wait.await;
                Yield(n - i).await; // later records finish first
                fin.lock().unwrap().push(i);
                format!("{v}!")
            }
        })
        .unwrap()
        .to("out")
        .unwrap();
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let got = read_values(&brokers, "out", n, Duration::from_secs(60));
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got, (0..n).map(|i| format!("{i}!")).collect::<Vec<_>>());
    assert_eq!(*finished.lock().unwrap(), (0..n).rev().collect::<Vec<_>>());
    app.close(Duration::from_secs(30));
}

async fn score(v: String) -> String {
    Yield(1).await;
    assert!(v != "7" && v != "13", "cannot score {v}");
    format!("s{v}")
}

#[test]
fn a_panicking_future_fails_its_record_under_each_policy() {
    let values: Vec<String> = (0..20).map(|i| i.to_string()).collect();
    for policy in ["log_and_continue", "dead_letter", "fail"] {
        let mut config = Config::new().set("processing.exception.handler", policy);
        if policy == "dead_letter" {
            config = config.set("errors.deadletterqueue.topic.name", "scores-dlq");
        }
        let app = app(&format!("policy-{policy}"), config);
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "in", &values);
        produce(&brokers, "out", &[]);
        produce(&brokers, "scores-dlq", &[]);
        app.stream::<String, String>("in").unwrap().map_values_async(score).unwrap().to("out").unwrap();
        let runner = {
            let app = app.clone();
            std::thread::spawn(move || app.run())
        };
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("in"), Some(0), Some(7)), "{message}");
                    assert_eq!(node.as_deref(), Some("KSTREAM-MAPVALUES-0000000001"));
                    assert!(message.contains("cannot score 7") && message.contains("async_e2e.rs"), "{message}");
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        let want: Vec<String> = values.iter().filter(|v| *v != "7" && *v != "13").map(|v| format!("s{v}")).collect();
        let got = read_values(&brokers, "out", want.len(), Duration::from_secs(60));
        let dead = if policy == "dead_letter" {
            read_values(&brokers, "scores-dlq", 2, Duration::from_secs(60))
        } else {
            Vec::new()
        };
        app.stop();
        runner.join().unwrap().expect("run returns cleanly after stop");
        assert_eq!(got, want, "{policy}");
        if policy == "dead_letter" {
            assert_eq!(dead, ["7", "13"], "the original records");
        }
        app.close(Duration::from_secs(30));
    }
}

#[test]
fn an_async_aggregate_folds_each_keys_values_in_order() {
    let app = app("aggregate", Config::new().statestore_cache_max_bytes(0));
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "in", &(1..=5).map(|i| i.to_string()).collect::<Vec<_>>());
    produce(&brokers, "sums", &[]);
    app.stream::<String, String>("in")
        .unwrap()
        .group_by_key()
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
        .map_values(|n: i64| n.to_string())
        .unwrap()
        .to("sums")
        .unwrap();
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let got = read_values(&brokers, "sums", 5, Duration::from_secs(60));
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    assert_eq!(got, ["1", "3", "6", "10", "15"]);
    app.close(Duration::from_secs(30));
}
