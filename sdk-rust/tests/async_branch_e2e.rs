//! Async branch predicates (`split().branch_async(..)`) against the REAL
//! engine binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; `make
//! build`) and its embedded broker, records in and out through kcat: each
//! record goes to the first branch whose predicate passes it, async and
//! synchronous predicates mixed, whatever order the futures finish in; a
//! panicking future fails its record under the configured policy, naming
//! the predicate, the node and the record.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use polystreams::{App, Config, Error, Options};

fn engine() -> PathBuf {
    let p = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(p.is_file(), "the polystreams engine binary {} does not exist: `make build`", p.display());
    p
}

fn app(name: &str, config: Config) -> App {
    std::env::set_var("POLYSTREAMS_ENGINE", engine());
    std::env::remove_var("POLYSTREAMS_URL");
    let dir = std::env::temp_dir().join(format!("polystreams-rust-async-branch-{name}-{}", std::process::id()));
    App::builder(format!("it-async-branch-{name}"))
        .config(config.commit_interval_ms(100).statestore_cache_max_bytes(0).state_dir(dir.to_string_lossy()))
        .build()
        .expect("the app opens a session on a spawned engine")
}

/// Produces (key, value) records to partition 0 of topic, in order.
fn produce(brokers: &str, topic: &str, records: &[(&str, &str)]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", "none"])
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

/// Pending `n` polls (waking itself each time), then ready.
struct Yield(usize);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Every record of `topic` as `key\tvalue`, in order, read with kcat until
/// `done` holds or a minute passes.
fn read_all(brokers: &str, topic: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        if done(&lines) || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each key's values in the order read (a topic's partitions order each
/// key's records, not the keys').
fn by_key(lines: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in lines {
        let (k, v) = l.split_once('\t').unwrap_or((l, ""));
        m.entry(k.to_owned()).or_default().push(v.to_owned());
    }
    m
}

fn keyed(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs.iter().map(|(k, vs)| ((*k).to_owned(), vs.iter().map(|v| (*v).to_owned()).collect())).collect()
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
