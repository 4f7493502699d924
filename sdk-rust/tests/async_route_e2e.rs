//! Async sink routing against the REAL engine binary (`$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams`; `make build`): an async stream partitioner
//! (`to_with_partitioner_async`, `repartition_with_partitioner_async`) and
//! an async topic name extractor (`to_dynamic_async`). Records go in and
//! come out through kcat, which sees the partitions; topics are created by
//! confluent-kafka's admin client. A bundle's futures run together, each
//! record written where its own future said, in record order; a panicking
//! future fails its record, naming the node.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use polystreams::{App, Config, Error, Options, RecordMetadata, Repartitioned};

use common::Yield;

fn app(name: &str) -> App {
    let engine = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(
        engine.is_file(),
        "the polystreams engine binary {} does not exist: build it with `make build`",
        engine.display()
    );
    std::env::set_var("POLYSTREAMS_ENGINE", engine);
    std::env::remove_var("POLYSTREAMS_URL");
    let dir = std::env::temp_dir().join(format!("polystreams-rust-async-{name}-{}", std::process::id()));
    let config = Config::new().commit_interval_ms(100).state_dir(dir.to_string_lossy());
    App::builder(format!("it-async-{name}")).config(config).workers(2).build().expect("the app opens a session")
}

fn create_topic(brokers: &str, topic: &str, partitions: u32) {
    let script = format!(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\
         admin = AdminClient({{'bootstrap.servers': '{brokers}'}})\n\
         [f.result(30) for f in admin.create_topics([NewTopic('{topic}', {partitions}, 1)]).values()]"
    );
    let ok = Command::new("/usr/bin/python3").args(["-c", &script]).status().expect("python3 runs");
    assert!(ok.success(), "created {topic}");
}

/// Produces values, each keyed by itself, to partition 0.
fn produce(brokers: &str, topic: &str, values: &[&str]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for v in values {
        writeln!(stdin, "{v}\t{v}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// Each value of `topic` with the partitions it was written to, read with
/// kcat until there are `n` records or a minute passes.
fn partitions_by_value(brokers: &str, topic: &str, n: usize) -> BTreeMap<String, Vec<i32>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\t%p\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut got: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        let mut count = 0;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut f = line.split('\t');
            if let (Some(_), Some(v), Some(p)) = (f.next(), f.next(), f.next()) {
                got.entry(v.to_owned()).or_default().push(p.parse().unwrap());
                count += 1;
            }
        }
        if count >= n || Instant::now() > deadline {
            for ps in got.values_mut() {
                ps.sort_unstable();
            }
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn serve(app: &App) -> JoinHandle<polystreams::Result<()>> {
    let app = app.clone();
    std::thread::spawn(move || app.run())
}

/// The values of partition `p` of `topic` in order, read with kcat until
/// there are `n` or a minute passes.
fn values_in(brokers: &str, topic: &str, p: i32, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-p", &p.to_string(), "-o", "beginning", "-e", "-q", "-f", "%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let got: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_async_stream_partitioner_and_topic_name_extractor_route_each_record() {
    let app = app("route");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    for t in ["out", "dyn-x", "dyn-y"] {
        create_topic(&brokers, t, 4);
    }
    let s = app.stream::<String, String>("in").unwrap();
    // Later records finish first: "q<i>" waits 10 - i polls.
    s.to_with_partitioner_async("out", Options::new(), |topic: &str, _key: &String, value: &String, n: u32| {
        assert_eq!((topic, n), ("out", 4));
        let value = value.clone();
        async move {
            match value.as_str() {
                "all" => Some(vec![0, 2, 3, 2]),
                "drop" => Some(vec![]),
                "default" => None,
                "x" | "y" => Some(vec![0]),
                q if q.starts_with('q') => {
                    Yield(10 - q[1..].parse::<usize>().unwrap()).await;
                    Some(vec![1])
                }
                p => Some(vec![p[1..].parse().unwrap()]),
            }
        }
    })
    .unwrap();
    s.filter(|_, v: &String| v == "x" || v == "y")
        .unwrap()
        .repartition_with_partitioner_async(Repartitioned::named("re").partitions(2), |_, _, _, _| async {
            Yield(2).await;
            Some([1])
        })
        .unwrap()
        .to_dynamic_async(|_, value: &String, meta: RecordMetadata| {
            let value = value.clone();
            async move {
                assert!(meta.topic.ends_with("-re-repartition") && meta.partition == 1, "{meta:?}");
                Yield(1).await;
                format!("dyn-{value}")
            }
        })
        .unwrap();
    let described = app.describe().unwrap();
    assert!(described.contains("(extractor class: async_route_e2e::an_async_stream_partitioner"), "{described}");
    produce(&brokers, "in", &["p2", "all", "q1", "drop", "q2", "default", "q3", "p3", "x", "y", "q4"]);
    let runner = serve(&app);
    let parts = partitions_by_value(&brokers, "out", 12);
    assert_eq!(parts.get("all").map(Vec::as_slice), Some(&[0, 2, 3][..]), "{parts:?}");
    assert_eq!((&parts["p2"][..], &parts["p3"][..]), (&[2][..], &[3][..]));
    assert!(!parts.contains_key("drop"), "{parts:?}");
    assert_eq!(parts["default"].len(), 1, "{parts:?}");
    assert_eq!((&parts["x"][..], &parts["y"][..]), (&[0][..], &[0][..]));
    // Partition 1 holds the q records in record order, though later ones finished first
    // (and "default", if Kafka's partitioner put it there).
    let q: Vec<String> = values_in(&brokers, "out", 1, 4).into_iter().filter(|v| v.starts_with('q')).collect();
    assert_eq!(q, ["q1", "q2", "q3", "q4"]);
    assert_eq!(partitions_by_value(&brokers, "dyn-x", 1).keys().collect::<Vec<_>>(), ["x"]);
    assert_eq!(partitions_by_value(&brokers, "dyn-y", 1).keys().collect::<Vec<_>>(), ["y"]);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn an_async_topic_name_extractor_with_an_async_partitioner_partitions_in_the_named_topic() {
    let app = app("route-both");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    create_topic(&brokers, "to-a", 3);
    create_topic(&brokers, "to-b", 5);
    app.stream::<String, String>("in")
        .unwrap()
        .to_dynamic_with_partitioner_async(
            Options::new(),
            |_, v: &String, _| {
                let topic = format!("to-{}", &v[..1]);
                async move {
                    Yield(2).await;
                    topic
                }
            },
            |topic: &str, _, _, n: u32| {
                let last = if topic == "to-b" { n - 1 } else { 0 };
                async move {
                    Yield(1).await;
                    Some([last])
                }
            },
        )
        .unwrap();
    produce(&brokers, "in", &["a1", "b1", "a2"]);
    let runner = serve(&app);
    let a = partitions_by_value(&brokers, "to-a", 2);
    let b = partitions_by_value(&brokers, "to-b", 1);
    app.stop();
    runner.join().unwrap().unwrap();
    assert_eq!((&a["a1"][..], &a["a2"][..]), (&[0][..], &[0][..]), "{a:?}");
    assert_eq!(&b["b1"][..], &[4][..], "{b:?}");
    app.close(Duration::from_secs(30));
}

#[test]
fn a_panicking_partitioner_future_fails_its_record_naming_the_node() {
    let app = app("route-panic");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    create_topic(&brokers, "out", 2);
    app.stream::<String, String>("in")
        .unwrap()
        .to_with_partitioner_async("out", Options::named("routed"), |_, _, v: &String, _| {
            let v = v.clone();
            async move {
                Yield(1).await;
                Some([v.parse::<u32>().unwrap_or_else(|_| panic!("no partition in {v}"))])
            }
        })
        .unwrap();
    produce(&brokers, "in", &["1", "boom", "0"]);
    let err = serve(&app).join().unwrap().unwrap_err();
    match &err {
        Error::Processing { message, offset, node, .. } => {
            assert_eq!((*offset, node.as_deref()), (Some(1), Some("routed")), "{message}");
            assert!(message.contains("no partition in boom"), "{message}");
        }
        other => panic!("want a processing error, got {other:?}"),
    }
    app.close(Duration::from_secs(30));
}
