//! Async joins and table operators against the REAL engine binary
//! (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; `make build`) and its
//! embedded broker, records in and out through kcat: stream-stream,
//! stream-global-table, table-table and foreign-key joins whose joiners (and
//! key mappers / extractors) return futures, and KTable filter / filter_not
//! / map_values with async closures. Outputs keep record order when later
//! records finish first; a panicking future fails its record under the
//! configured policy, naming the function's file, the node and the record.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use polystreams::{App, Config, Error, JoinWindows};

use common::Yield;

fn app(name: &str, config: Config) -> App {
    let engine = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(engine.is_file(), "the polystreams engine binary {} does not exist: `make build`", engine.display());
    std::env::set_var("POLYSTREAMS_ENGINE", engine);
    std::env::remove_var("POLYSTREAMS_URL");
    let dir = std::env::temp_dir().join(format!("polystreams-rust-async-join-{name}-{}", std::process::id()));
    App::builder(format!("it-async-join-{name}"))
        .config(config.commit_interval_ms(100).state_dir(dir.to_string_lossy()))
        .workers(1)
        .build()
        .expect("the app opens a session on a spawned engine")
}

/// Produces (key, value) records to partition 0 of topic, in order (kcat
/// creates the topic, one partition).
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

/// Produces placing keys with murmur2, as the engine does (for the
/// foreign-key join, whose subscriptions travel by the foreign key's
/// partition).
fn produce_placed(brokers: &str, topic: &str, records: &[(&str, &str)]) {
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

/// topic's records as `key:value` in offset order (a null value: empty),
/// read until `done` holds of them or 60 s pass.
fn read_until(brokers: &str, topic: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let got: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        if done(&got) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The latest value of each key (a table's rows; a tombstone deletes).
fn rows(records: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for r in records {
        let (k, v) = r.split_once(':').expect("key:value");
        if v.is_empty() {
            m.remove(k);
        } else {
            m.insert(k.to_owned(), v.to_owned());
        }
    }
    m
}

fn want(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn start(app: &App) -> std::thread::JoinHandle<polystreams::Result<()>> {
    let app = app.clone();
    std::thread::spawn(move || app.run())
}

fn finish(app: &App, runner: std::thread::JoinHandle<polystreams::Result<()>>) {
    assert!(!runner.is_finished(), "run ended early: {:?}", runner.join());
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");
    app.close(Duration::from_secs(30));
}

/// The clicks whose joiner finished, in the order they finished.
static FINISHED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A click's joiner: later clicks finish first; click c7 cannot be joined.
async fn join_click(view: String, click: String) -> String {
    let i: usize = click[1..].parse().unwrap();
    Yield(20 - i).await;
    assert!(click != "c7", "cannot join {click}");
    FINISHED.lock().unwrap().push(i);
    format!("{view}+{click}")
}

#[test]
fn a_stream_stream_join_awaits_its_joiner_outputs_in_record_order_and_fails_a_panicking_record() {
    let clicks: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
    for policy in ["log_and_continue", "fail"] {
        FINISHED.lock().unwrap().clear();
        let app = app(&format!("ss-{policy}"), Config::new().set("processing.exception.handler", policy));
        let brokers = app.brokers().unwrap().to_owned();
        produce(&brokers, "views", &[("k", "v")]);
        produce(&brokers, "clicks", &clicks.iter().map(|c| ("k", c.as_str())).collect::<Vec<_>>());
        produce(&brokers, "joined", &[]);
        let views = app.stream::<String, String>("views").unwrap();
        let joined = views
            .join_stream_async(
                &app.stream::<String, String>("clicks").unwrap(),
                join_click,
                JoinWindows::of_time_difference_with_no_grace(Duration::from_secs(600)),
            )
            .unwrap();
        joined.to("joined").unwrap();
        let runner = start(&app);
        if policy == "fail" {
            match runner.join().unwrap().unwrap_err() {
                Error::Processing { message, topic, partition, offset, node } => {
                    assert_eq!((topic.as_deref(), partition, offset), (Some("clicks"), Some(0), Some(7)), "{message}");
                    assert_eq!(node.as_deref(), Some("KSTREAM-JOINOTHER-0000000005"), "{message}");
                    assert!(message.contains("cannot join c7") && message.contains("async_join.rs"), "{message}");
                }
                other => panic!("want a processing error, got {other:?}"),
            }
            app.close(Duration::from_secs(30));
            continue;
        }
        let want: Vec<String> = clicks.iter().filter(|c| *c != "c7").map(|c| format!("k:v+{c}")).collect();
        let got = read_until(&brokers, "joined", |g| g.len() >= want.len());
        assert_eq!(got, want);
        // One bundle's futures ran together: the later clicks finished first.
        let finished = FINISHED.lock().unwrap().clone();
        assert_eq!(finished, (0..20).rev().filter(|i| *i != 7).collect::<Vec<_>>());
        finish(&app, runner);
    }
}

#[test]
fn left_and_outer_stream_stream_joins_await_their_joiners() {
    let app = app("ss-left-outer", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "views", &[("k", "v")]);
    produce(&brokers, "clicks", &[("k", "c")]);
    produce(&brokers, "left", &[]);
    produce(&brokers, "outer", &[]);
    let views = app.stream::<String, String>("views").unwrap();
    let clicks = app.stream::<String, String>("clicks").unwrap();
    let w = JoinWindows::of_time_difference_with_no_grace(Duration::from_secs(600));
    views
        .left_join_stream_async(
            &clicks,
            |v: String, c: Option<String>| async move {
                Yield(3).await;
                format!("{v}+{}", c.unwrap_or_default())
            },
            w,
        )
        .unwrap()
        .to("left")
        .unwrap();
    views
        .outer_join_stream_async(
            &clicks,
            |v: Option<String>, c: Option<String>| async move {
                Yield(2).await;
                format!("{}|{}", v.unwrap_or_default(), c.unwrap_or_default())
            },
            w,
        )
        .unwrap()
        .to("outer")
        .unwrap();
    let runner = start(&app);
    assert_eq!(read_until(&brokers, "left", |g| !g.is_empty()), ["k:v+c"]);
    assert_eq!(read_until(&brokers, "outer", |g| !g.is_empty()), ["k:v|c"]);
    finish(&app, runner);
}

#[test]
fn table_table_joins_and_table_operators_await_their_closures() {
    let app = app("tt", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "a", &[("k1", "a1"), ("k2", "drop"), ("k3", "a3")]);
    produce(&brokers, "b", &[("k1", "b1"), ("k2", "b2"), ("k4", "b4")]);
    for t in ["inner", "left", "outer"] {
        produce(&brokers, t, &[]);
    }
    let a = app.table::<String, String>("a").unwrap();
    let b = app.table::<String, String>("b").unwrap();
    a.join_async(&b, |x: String, y: String| async move {
        Yield(2).await;
        format!("{x}{y}")
    })
    .unwrap()
    .filter_async(|_: &String, v: &String| {
        let keep = !v.starts_with("drop");
        async move { keep }
    })
    .unwrap()
    .map_values_async(|v: String| async move { v.to_uppercase() })
    .unwrap()
    .to_stream()
    .unwrap()
    .to("inner")
    .unwrap();
    a.left_join_async(&b, |x: String, y: Option<String>| async move {
        format!("{x}+{}", y.unwrap_or_else(|| "-".to_owned()))
    })
    .unwrap()
    .filter_not_async(|k: &String, _: &String| {
        let k3 = k == "k3";
        async move { k3 }
    })
    .unwrap()
    .to_stream()
    .unwrap()
    .to("left")
    .unwrap();
    a.outer_join_async(&b, |x: Option<String>, y: Option<String>| async move {
        Yield(1).await;
        format!("{}+{}", x.unwrap_or_else(|| "-".to_owned()), y.unwrap_or_else(|| "-".to_owned()))
    })
    .unwrap()
    .to_stream()
    .unwrap()
    .to("outer")
    .unwrap();
    let runner = start(&app);
    let inner = want(&[("k1", "A1B1")]);
    assert_eq!(rows(&read_until(&brokers, "inner", |g| rows(g) == inner)), inner);
    let left = want(&[("k1", "a1+b1"), ("k2", "drop+b2")]);
    assert_eq!(rows(&read_until(&brokers, "left", |g| rows(g) == left)), left);
    let outer = want(&[("k1", "a1+b1"), ("k2", "drop+b2"), ("k3", "a3+-"), ("k4", "-+b4")]);
    assert_eq!(rows(&read_until(&brokers, "outer", |g| rows(g) == outer)), outer);
    finish(&app, runner);
}

#[test]
fn global_table_joins_await_their_key_mappers_and_joiners() {
    let app = app("global", Config::new().set("processing.exception.handler", "log_and_continue"));
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "products", &[("p1", "apple"), ("p2", "pear")]);
    let orders = [("o1", "p1"), ("o2", "p9"), ("o3", "bad"), ("o4", "p2")];
    produce(&brokers, "orders", &orders);
    produce(&brokers, "inner", &[]);
    produce(&brokers, "left", &[]);
    let products = app.global_table::<String, String>("products").unwrap();
    let stream = app.stream::<String, String>("orders").unwrap();
    let product_of = |_: &String, v: &String| {
        let v = v.clone();
        async move {
            Yield(2).await;
            assert!(v != "bad", "no product in {v}");
            v
        }
    };
    stream
        .join_global_async(&products, product_of, |o: String, name: String| async move { format!("{o}={name}") })
        .unwrap()
        .to("inner")
        .unwrap();
    stream
        .left_join_global_async(&products, product_of, |o: String, name: Option<String>| async move {
            Yield(1).await;
            format!("{o}={}", name.unwrap_or_else(|| "-".to_owned()))
        })
        .unwrap()
        .to("left")
        .unwrap();
    let runner = start(&app);
    let sorted = |mut v: Vec<String>| {
        v.sort(); // the output keys land in several partitions
        v
    };
    assert_eq!(sorted(read_until(&brokers, "inner", |g| g.len() >= 2)), ["o1:p1=apple", "o4:p2=pear"]);
    assert_eq!(sorted(read_until(&brokers, "left", |g| g.len() >= 3)), ["o1:p1=apple", "o2:p9=-", "o4:p2=pear"]);
    finish(&app, runner);
}

#[test]
fn foreign_key_joins_await_their_extractors_and_joiners() {
    let app = app("fk", Config::new());
    let brokers = app.brokers().unwrap().to_owned();
    produce_placed(&brokers, "customers", &[("c1", "Ann"), ("c2", "Bob")]);
    let orders = [("o1", "c1:book"), ("o2", "c2:pen"), ("o3", "none:cup"), ("o4", "c9:ink")];
    produce_placed(&brokers, "orders", &orders);
    produce(&brokers, "inner", &[]);
    produce(&brokers, "left", &[]);
    let customers = app.table::<String, String>("customers").unwrap();
    let orders = app.table::<String, String>("orders").unwrap();
    let customer_of = |v: &String| {
        let c = v.split(':').next().unwrap().to_owned();
        async move {
            Yield(1).await;
            (c != "none").then_some(c)
        }
    };
    orders
        .foreign_key_join_async(&customers, customer_of, |o: String, c: String| async move { format!("{o}@{c}") })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner")
        .unwrap();
    orders
        .left_foreign_key_join_async(&customers, customer_of, |o: String, c: Option<String>| async move {
            Yield(2).await;
            format!("{o}@{}", c.unwrap_or_else(|| "-".to_owned()))
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("left")
        .unwrap();
    let runner = start(&app);
    let inner = want(&[("o1", "c1:book@Ann"), ("o2", "c2:pen@Bob")]);
    assert_eq!(rows(&read_until(&brokers, "inner", |g| rows(g) == inner)), inner);
    let left = want(&[("o1", "c1:book@Ann"), ("o2", "c2:pen@Bob"), ("o3", "none:cup@-"), ("o4", "c9:ink@-")]);
    assert_eq!(rows(&read_until(&brokers, "left", |g| rows(g) == left)), left);
    finish(&app, runner);
}

#[test]
fn a_joiner_future_still_pending_at_the_bound_fails_its_record_naming_function_and_node() {
    let app = app("tt-timeout", Config::new().set("processing.exception.handler", "fail"));
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "a", &[("k1", "a1"), ("k2", "stuck")]);
    produce(&brokers, "b", &[("k1", "b1"), ("k2", "b2")]);
    produce(&brokers, "out", &[]);
    let a = app.table::<String, String>("a").unwrap();
    let b = app.table::<String, String>("b").unwrap();
    a.join_async(&b, |x: String, y: String| async move {
        if x == "stuck" {
            std::future::pending::<()>().await; // never resolves: dropped at the bound
        }
        format!("{x}{y}")
    })
    .unwrap()
    .to_stream()
    .unwrap()
    .to("out")
    .unwrap();
    let runner = start(&app);
    match runner.join().unwrap().unwrap_err() {
        Error::Processing { message, topic, partition, offset, node } => {
            assert_eq!((topic.as_deref(), partition, offset), (Some("b"), Some(0), Some(1)), "{message}");
            assert_eq!(node.as_deref(), Some("KTABLE-JOINOTHER-0000000008"), "{message}");
            let function = "TimeoutError: join async_join::a_joiner_future_still_pending_at_the_bound";
            assert!(
                message.contains(function) && message.contains("(token 1, step 0, node KTABLE-JOINOTHER-"),
                "{message}"
            );
            assert!(message.contains("did not finish within 20 s (cancelled)"), "{message}");
        }
        other => panic!("want a processing error, got {other:?}"),
    }
    app.close(Duration::from_secs(30));
}

#[test]
fn keyed_mappers_and_key_selectors_await_their_closures() {
    // No record cache: every update of the source table passes on, so bob's
    // move from blue to red is seen whole.
    let app = app("keyed", Config::new().statestore_cache_max_bytes(0));
    let brokers = app.brokers().unwrap().to_owned();
    produce(&brokers, "lines", &[("l1", "to be"), ("l2", "or not to be")]);
    produce(&brokers, "prefs", &[("ann", "red"), ("bob", "blue"), ("cy", "red"), ("bob", "red")]);
    for t in ["counts", "tagged", "letters", "by-color", "rekeyed"] {
        produce(&brokers, t, &[]);
    }
    let lines = app.stream::<String, String>("lines").unwrap();
    lines
        .flat_map_async(|line: &String, text: String| {
            let line = line.clone();
            async move {
                Yield(2).await;
                text.split(' ').map(|w| (w.to_owned(), line.clone())).collect::<Vec<_>>()
            }
        })
        .unwrap()
        .group_by_async(|word: &String, _line: &String| {
            let word = word.to_uppercase();
            async move { word }
        })
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("counts")
        .unwrap();
    lines
        .map_values_with_key_async(|line: &String, text: String| {
            let line = line.clone();
            async move { format!("{line}={text}") }
        })
        .unwrap()
        .to("tagged")
        .unwrap();
    lines
        .flat_map_values_with_key_async(|line: &String, text: String| {
            let n = line.len();
            async move { vec![format!("{n}{}", &text[..1]), text.len().to_string()] }
        })
        .unwrap()
        .to("letters")
        .unwrap();
    let prefs = app.table::<String, String>("prefs").unwrap();
    prefs
        .group_by_async(|user: &String, color: String| {
            let user = user.clone();
            async move { (color, user) }
        })
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("by-color")
        .unwrap();
    prefs
        .to_stream_keyed_async(|user: &String, color: &String| {
            let key = format!("{user}/{color}");
            async move { key }
        })
        .unwrap()
        .to("rekeyed")
        .unwrap();
    let runner = start(&app);
    let counts = want(&[("BE", "2"), ("NOT", "1"), ("OR", "1"), ("TO", "2")]);
    let got = read_counts(&brokers, "counts", |m| m == &counts);
    assert_eq!(got, counts);
    assert_eq!(
        rows(&read_until(&brokers, "tagged", |g| g.len() >= 2)),
        want(&[("l1", "l1=to be"), ("l2", "l2=or not to be")])
    );
    let mut letters = read_until(&brokers, "letters", |g| g.len() >= 4);
    letters.sort();
    assert_eq!(letters, ["l1:2t", "l1:5", "l2:12", "l2:2o"]);
    // bob moved from blue to red: red counts 3, blue 1 then 0.
    let by_color = read_counts(&brokers, "by-color", |m| {
        m.get("red").map(String::as_str) == Some("3") && m.get("blue").map(String::as_str) == Some("0")
    });
    assert_eq!(by_color, want(&[("blue", "0"), ("red", "3")]));
    let mut rekeyed = read_until(&brokers, "rekeyed", |g| g.len() >= 4);
    rekeyed.sort();
    assert_eq!(rekeyed, ["ann/red:red", "bob/blue:blue", "bob/red:red", "cy/red:red"]);
    finish(&app, runner);
}

/// The latest count of each key of topic (long values, decoded), read
/// until `done` holds of them or 60 s pass.
fn read_counts(
    brokers: &str,
    topic: &str,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-s", "value=Q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut m = BTreeMap::new();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let (k, v) = l.split_once('\t').expect("key and count");
            m.insert(k.to_owned(), v.to_owned());
        }
        if done(&m) || Instant::now() > deadline {
            return m;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
