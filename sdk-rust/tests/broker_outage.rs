//! A Kafka broker that stops answering, as the SDK sees it, against the REAL
//! engine binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`): the state
//! listener hears running -> degraded -> running. The broker is a
//! `polystreams dev` process of its own (the embedded broker); the
//! application runs on an engine spawned against it. Freezing that process
//! (SIGSTOP) makes the broker stop answering without closing a connection;
//! SIGCONT brings it back. Records go in and come out through kcat.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use polystreams::{BrokerOutage, Config, State};

/// A `polystreams dev` process serving as the broker; dropped, it is woken
/// (never left frozen) and stopped.
struct DevBroker {
    child: Child,
    addr: String,
}

impl DevBroker {
    fn start() -> DevBroker {
        let mut child = Command::new(common::engine())
            .args(["dev", "--broker", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--exit-on-stdin-close"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the engine binary runs");
        let mut addr = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.expect("the dev engine's output");
            if let Some(a) = line.strip_prefix("polystreams: broker ") {
                addr = Some(a.trim().to_owned());
            } else if line.starts_with("polystreams: engine ") {
                break;
            }
        }
        DevBroker { child, addr: addr.expect("polystreams dev reports its broker") }
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({}, {sig})", self.child.id());
    }
}

impl Drop for DevBroker {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        drop(self.child.stdin.take()); // --exit-on-stdin-close
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn produce(brokers: &str, topic: &str, lines: &[&str]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// The latest value per key of `topic`, read with kcat until it is `want`
/// (or 90 s passed).
fn read_until(brokers: &str, topic: &str, want: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    common::read_until(brokers, topic, Duration::from_secs(90), |last| last == want)
}

fn counts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The transitions a listener heard, and a way to wait for one.
#[derive(Default)]
struct Heard {
    transitions: Mutex<Vec<(State, State)>>,
    changed: Condvar,
}

impl Heard {
    fn wait_for(&self, what: &str, cond: impl Fn(&[(State, State)]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut t = self.transitions.lock().unwrap();
        while !cond(&t) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{what}: not within 60 s; transitions {t:?}");
            t = self.changed.wait_timeout(t, left).unwrap().0;
        }
    }
}

#[test]
fn state_listener_hears_degraded_while_the_broker_is_frozen() {
    let broker = DevBroker::start();
    let brokers = broker.addr.clone();
    produce(&brokers, "lines", &["a b a"]);
    produce(&brokers, "word-counts", &[]);
    let app = common::builder("broker-outage", Config::new())
        .brokers(brokers.clone())
        .build()
        .expect("the app opens a session on an engine spawned against the dev broker");
    app.stream::<(), String>("lines")
        .unwrap()
        .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .unwrap()
        .group_by(|_, word: &String| word.clone())
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .map_values(|n: i64| n.to_string())
        .unwrap()
        .to("word-counts")
        .unwrap();
    assert_eq!(app.broker_outage().unwrap(), None, "before start");
    let heard = Arc::new(Heard::default());
    let outages: Arc<Mutex<Vec<Option<BrokerOutage>>>> = Arc::default();
    {
        let (heard, outages, app2) = (heard.clone(), outages.clone(), app.clone());
        app.on_state_change(move |new, old| {
            if new == State::Degraded {
                outages.lock().unwrap().push(app2.broker_outage().unwrap());
            }
            heard.transitions.lock().unwrap().push((new, old));
            heard.changed.notify_all();
        });
    }
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let first = counts(&[("a", "2"), ("b", "1")]);
    assert_eq!(read_until(&brokers, "word-counts", &first), first);
    heard.wait_for("running", |t| t.last().map(|x| x.0) == Some(State::Running));
    assert_eq!(app.broker_outage().unwrap(), None);

    broker.signal(libc::SIGSTOP);
    heard.wait_for("degraded", |t| t.last().map(|x| x.0) == Some(State::Degraded));
    assert_eq!(app.state().unwrap(), State::Degraded);
    broker.signal(libc::SIGCONT);
    heard.wait_for("running again", |t| t.last().map(|x| x.0) == Some(State::Running));
    assert_eq!(app.broker_outage().unwrap(), None);

    produce(&brokers, "lines", &["b c"]);
    let want = counts(&[("a", "2"), ("b", "2"), ("c", "1")]);
    assert_eq!(read_until(&brokers, "word-counts", &want), want);
    app.stop();
    runner.join().unwrap().expect("run returns cleanly after stop");

    let transitions = heard.transitions.lock().unwrap().clone();
    let states: Vec<State> = transitions.iter().map(|t| t.0).collect();
    assert_eq!(states.iter().filter(|s| **s == State::Degraded).count(), 1, "{transitions:?}");
    let i = states.iter().position(|s| *s == State::Degraded).unwrap();
    assert!(states[..i].contains(&State::Running) && states[i + 1..].contains(&State::Running), "{transitions:?}");
    assert_eq!(transitions.last(), Some(&(State::Stopped, State::Running)));
    // What the listener read when it heard of the outage: the brokers and since when.
    let outages = outages.lock().unwrap().clone();
    assert_eq!(outages.len(), 1, "{outages:?}");
    let o = outages[0].clone().expect("the outage, read while degraded");
    assert_eq!(o.brokers, vec![brokers.clone()]);
    assert_eq!(o.outages, 1);
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(o.since_ms > 0 && o.since_ms <= now_ms, "since_ms {}", o.since_ms);
    let _ = std::fs::remove_dir_all(common::state_dir("broker-outage"));
}
