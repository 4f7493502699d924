//! What the async e2e tests share: the engine binary, an app on it, kcat in
//! and out, and futures that yield or wait for each other.
#![allow(dead_code)] // each test file uses a part

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use polystreams::{App, AppBuilder, Config};

/// The builder of an app named `it-<name>` on a spawned engine, committing
/// every 100 ms, its state under the temp folder.
pub fn builder(name: &str, config: Config) -> AppBuilder {
    std::env::set_var("POLYSTREAMS_ENGINE", engine());
    std::env::remove_var("POLYSTREAMS_URL");
    App::builder(format!("it-{name}"))
        .config(config.commit_interval_ms(100).state_dir(state_dir(name).to_string_lossy()))
}

/// The state folder of the app builder(name) makes.
pub fn state_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("polystreams-rust-{name}-{}", std::process::id()))
}

/// An app named `it-<suite>-<name>` (see builder) with no record cache.
pub fn app(suite: &str, name: &str, config: Config) -> App {
    builder(&format!("{suite}-{name}"), config.statestore_cache_max_bytes(0))
        .build()
        .expect("the app opens a session on a spawned engine")
}

/// An app named `it-<name>` (see builder) with `workers` host workers.
pub fn app_with_workers(name: &str, workers: usize) -> App {
    builder(name, Config::new()).workers(workers).build().expect("the app opens a session on a spawned engine")
}

pub fn engine() -> PathBuf {
    let p = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(p.is_file(), "the polystreams engine binary {} does not exist: `make build`", p.display());
    p
}

/// Produces (key, value) records to partition 0 of topic, in order.
pub fn produce(brokers: &str, topic: &str, records: &[(&str, &str)]) {
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

/// The latest value per key of `topic`, read with kcat until `done` holds
/// or `timeout` passes.
pub fn read_until(
    brokers: &str,
    topic: &str,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut last = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((k, v)) = line.split_once('\t') {
                last.insert(k.to_owned(), v.to_owned());
            }
        }
        if done(&last) || Instant::now() > deadline {
            return last;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Pending `n` polls (waking itself each time), then ready.
pub struct Yield(pub usize);

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

/// Opens once n futures wait on it: keys folded one after the other would
/// leave the first pending until the bundle's bound fails its record.
#[derive(Clone)]
pub struct Barrier(Arc<Mutex<(usize, usize, Vec<Waker>)>>);

impl Barrier {
    pub fn new(n: usize) -> Barrier {
        Barrier(Arc::new(Mutex::new((n, 0, Vec::new()))))
    }

    pub fn wait(&self) -> impl Future<Output = ()> {
        let state = self.0.clone();
        let mut counted = false;
        std::future::poll_fn(move |cx| {
            let mut st = state.lock().unwrap();
            if !counted {
                counted = true;
                st.1 += 1;
            }
            if st.1 >= st.0 {
                st.2.drain(..).for_each(Waker::wake);
                return Poll::Ready(());
            }
            st.2.push(cx.waker().clone());
            Poll::Pending
        })
    }
}

/// Every record of `topic` as `key\tvalue`, in order, read with kcat until
/// `done` holds or a minute passes.
pub fn read_all(brokers: &str, topic: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
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
pub fn by_key(lines: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in lines {
        let (k, v) = l.split_once('\t').unwrap_or((l, ""));
        m.entry(k.to_owned()).or_default().push(v.to_owned());
    }
    m
}

pub fn keyed(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs.iter().map(|(k, vs)| ((*k).to_owned(), vs.iter().map(|v| (*v).to_owned()).collect())).collect()
}
