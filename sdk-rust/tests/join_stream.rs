//! Stream-stream joins against the REAL engine binary (`$POLYSTREAMS_ENGINE`,
//! else `bin/polystreams`), records in and out through kcat (librdkafka).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::produce; // to partition 0 (kcat creates the topic): the records get the producer's clock as timestamps
use polystreams::{App, Error, JoinWindows, Options};

fn app(name: &str) -> App {
    common::app_with_workers(name, 1)
}

fn read_all(brokers: &str, topic: &str, timeout: Duration, n: usize) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut all: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        if all.len() >= n || Instant::now() > deadline {
            all.sort();
            return all;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_left_join_of_two_streams_emits_unjoined_views_once_their_window_closed() {
    let app = app("ssjoin");
    let brokers = app.brokers().unwrap().to_owned();
    // kcat creates a topic by writing to it: a view that joins nothing
    // (emitted with none when v3 closes its window) and a click alone.
    produce(&brokers, "views", &[("z", "init")]);
    produce(&brokers, "clicks", &[("y", "init")]);
    produce(&brokers, "joined", &[]);
    let views = app.stream::<String, String>("views").unwrap();
    let clicks = app.stream::<String, String>("clicks").unwrap();
    let joined = views
        .left_join_stream(
            &clicks,
            |v: String, c: Option<String>| format!("{v}+{}", c.unwrap_or_else(|| "none".to_owned())),
            JoinWindows::of_time_difference_with_no_grace(Duration::from_secs(3)),
        )
        .unwrap();
    assert_eq!(joined.handle().node, "KSTREAM-MERGE-0000000006");
    joined.to("joined").unwrap();
    let d = app.describe().unwrap();
    assert!(
        d.contains("Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])"),
        "{d}"
    );
    let app2 = app.clone();
    let runner = std::thread::spawn(move || app2.run());
    produce(&brokers, "views", &[("k", "v1")]);
    produce(&brokers, "clicks", &[("k", "c1")]);
    let got = read_all(&brokers, "joined", Duration::from_secs(60), 1);
    assert!(!runner.is_finished(), "run ended: {:?}", runner.join());
    assert_eq!(got, ["k:v1+c1"]);
    // v2 comes later than c1's window: it joins nothing.
    std::thread::sleep(Duration::from_millis(3500));
    produce(&brokers, "views", &[("k", "v2")]);
    // A view later than v2's window (3 s, no grace) closes it.
    std::thread::sleep(Duration::from_millis(3500));
    produce(&brokers, "views", &[("x", "v3")]);
    let got = read_all(&brokers, "joined", Duration::from_secs(60), 3);
    assert!(!runner.is_finished(), "run ended: {:?}", runner.join());
    assert_eq!(got, ["k:v1+c1", "k:v2+none", "z:init+none"]);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn stream_join_refusals_carry_the_engines_message() {
    let app = app("ssjoin-refusals");
    let l = app.stream::<String, String>("l").unwrap();
    let r = app.stream::<String, String>("r").unwrap();
    let w = JoinWindows::of_time_difference_and_grace(Duration::from_millis(10), Duration::ZERO)
        .before(Duration::ZERO)
        .after(Duration::ZERO);
    let e = l.join_stream_with(&r, |a, _b: String| a, w, Options::new().key_serde("long")).unwrap_err();
    assert_eq!(e.message(), "join: takes no key_serde option");
    let longs = app.stream::<i64, String>("n").unwrap();
    let e = l.dynamic().join_stream(&longs.dynamic(), |a, _| a, w).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.message().contains("string keys and stream handle"), "{}", e.message());
    let o = l
        .outer_join_stream_with(
            &r,
            |a: Option<String>, b: Option<String>| format!("{a:?}|{b:?}"),
            w,
            Options::named("pair"),
        )
        .unwrap();
    assert_eq!(o.handle().node, "pair-merge");
    app.close(Duration::from_secs(30));
}
