//! Sink routing against the REAL engine binary (`$POLYSTREAMS_ENGINE`, else
//! `bin/polystreams`): a stream partitioner (`to_with_partitioner`,
//! `repartition_with_partitioner`) and a topic name extractor
//! (`to_dynamic`). Records go in and come out through kcat (librdkafka), a
//! Kafka client independent of the engine, which sees the partitions; topics
//! are created by confluent-kafka's admin client.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use polystreams::{App, Config, Error, Options, RecordMetadata, Repartitioned};

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
    let dir = std::env::temp_dir().join(format!("polystreams-rust-{name}-{}", std::process::id()));
    let config = Config::new().commit_interval_ms(100).state_dir(dir.to_string_lossy());
    App::builder(format!("it-{name}")).config(config).workers(2).build().expect("the app opens a session")
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

#[test]
fn a_stream_partitioner_and_a_topic_name_extractor_route_each_record() {
    let app = app("route");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    for t in ["out", "dyn-x", "dyn-y"] {
        create_topic(&brokers, t, 4);
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = seen.clone();
    let s = app.stream::<String, String>("in").unwrap();
    s.to_with_partitioner("out", Options::new(), move |topic, _key, value: &String, n| {
        saw.lock().unwrap().push((topic.to_owned(), n));
        match value.as_str() {
            "all" => Some(vec![0, 2, 3, 2]),
            "drop" => Some(vec![]),
            "default" => None,
            "x" | "y" => Some(vec![0]),
            p => Some(vec![p[1..].parse().unwrap()]),
        }
    })
    .unwrap();
    s.filter(|_, v: &String| v == "x" || v == "y")
        .unwrap()
        .repartition_with_partitioner(Repartitioned::named("re").partitions(2), |_, _, _, _| Some([1]))
        .unwrap()
        .to_dynamic(|_, value: &String, meta: &RecordMetadata| {
            assert!(meta.topic.ends_with("-re-repartition") && meta.partition == 1, "{meta:?}");
            format!("dyn-{value}")
        })
        .unwrap();
    let described = app.describe().unwrap();
    assert!(described.contains("(extractor class: route::a_stream_partitioner"), "{described}");
    produce(&brokers, "in", &["p1", "all", "drop", "default", "p3", "x", "y"]);
    let runner = serve(&app);
    let parts = partitions_by_value(&brokers, "out", 8);
    assert_eq!(parts.get("all").map(Vec::as_slice), Some(&[0, 2, 3][..]), "{parts:?}");
    assert_eq!((&parts["p1"][..], &parts["p3"][..]), (&[1][..], &[3][..]));
    assert!(!parts.contains_key("drop"), "{parts:?}");
    assert_eq!(parts["default"].len(), 1, "{parts:?}");
    assert_eq!((&parts["x"][..], &parts["y"][..]), (&[0][..], &[0][..]));
    assert!(seen.lock().unwrap().iter().all(|(t, n)| t == "out" && *n == 4), "{:?}", seen.lock().unwrap());
    assert_eq!(partitions_by_value(&brokers, "dyn-x", 1).keys().collect::<Vec<_>>(), ["x"]);
    assert_eq!(partitions_by_value(&brokers, "dyn-y", 1).keys().collect::<Vec<_>>(), ["y"]);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn a_partition_out_of_range_fails_the_record_naming_it() {
    let app = app("route-range");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    create_topic(&brokers, "out", 2);
    app.stream::<String, String>("in")
        .unwrap()
        .to_with_partitioner("out", Options::named("routed"), |_, _, v: &String, _| Some([v.parse::<u32>().unwrap()]))
        .unwrap();
    produce(&brokers, "in", &["1", "7"]);
    let err = serve(&app).join().unwrap().unwrap_err();
    match &err {
        Error::Processing { message, offset, node, .. } => {
            assert_eq!((*offset, node.as_deref()), (Some(1), Some("routed")), "{message}");
            assert!(message.contains("partition 7") && message.contains("\"out\""), "{message}");
        }
        other => panic!("want a processing error, got {other:?}"),
    }
    app.close(Duration::from_secs(30));
}

#[test]
fn a_topic_name_extractor_naming_no_topic_fails_the_record() {
    let app = app("route-empty");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    create_topic(&brokers, "t-a", 1);
    app.stream::<String, String>("in")
        .unwrap()
        .to_dynamic_with(
            Options::named("dyn"),
            |_, v: &String, _| if v == "a" { "t-a".to_owned() } else { String::new() },
        )
        .unwrap();
    produce(&brokers, "in", &["a", "b"]);
    let err = serve(&app).join().unwrap().unwrap_err();
    match &err {
        Error::Processing { message, offset, node, .. } => {
            assert_eq!((*offset, node.as_deref()), (Some(1), Some("dyn")), "{message}");
            assert!(message.contains("named no topic"), "{message}");
        }
        other => panic!("want a processing error, got {other:?}"),
    }
    app.close(Duration::from_secs(30));
}

#[test]
fn a_topic_name_extractor_with_a_stream_partitioner_partitions_in_the_named_topic() {
    let app = app("route-both");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "in", 1);
    create_topic(&brokers, "to-a", 3);
    create_topic(&brokers, "to-b", 5);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = seen.clone();
    app.stream::<String, String>("in")
        .unwrap()
        .to_dynamic_with_partitioner(
            Options::named("both"),
            |_, v: &String, _| format!("to-{}", &v[..1]),
            move |topic, _, v: &String, n| {
                saw.lock().unwrap().push((topic.to_owned(), n));
                Some([n - 1 - u32::from(v.ends_with('2'))])
            },
        )
        .unwrap();
    let described = app.describe().unwrap();
    assert!(described.contains("Sink: both (extractor class: route::a_topic_name_extractor_with"), "{described}");
    produce(&brokers, "in", &["a1", "a2", "b1"]);
    let runner = serve(&app);
    let a = partitions_by_value(&brokers, "to-a", 2);
    let b = partitions_by_value(&brokers, "to-b", 1);
    assert_eq!((&a["a1"][..], &a["a2"][..], &b["b1"][..]), (&[2][..], &[1][..], &[4][..]));
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, [("to-a".to_owned(), 3), ("to-a".to_owned(), 3), ("to-b".to_owned(), 5)]);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}
