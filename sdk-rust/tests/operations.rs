//! Operations Kafka Streams users look for, against the REAL engine binary
//! (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; missing, the test fails):
//! `auto.offset.reset`, a source's `offset_reset`, pause/resume/is_paused and
//! clean_up. Records go in and come out through kcat.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use polystreams::{App, Config, Error, OffsetReset, Options, ProductionExceptionHandler, State};

fn engine() -> PathBuf {
    let p = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(p.is_file(), "the polystreams engine binary {} does not exist: build it with `make build`", p.display());
    p
}

fn produce(brokers: &str, topic: &str, lines: &[&str]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", "none"])
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

fn values(brokers: &str, topic: &str) -> Vec<String> {
    let out = Command::new("kcat")
        .args(["-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n"])
        .stderr(Stdio::null())
        .output()
        .expect("kcat runs");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn offset_reset_pause_resume_and_clean_up() {
    std::env::set_var("POLYSTREAMS_ENGINE", engine());
    std::env::remove_var("POLYSTREAMS_URL");
    let dir = std::env::temp_dir().join(format!("polystreams-rust-ops-{}", std::process::id()));
    let config = Config::new()
        .commit_interval_ms(100)
        .state_dir(dir.to_string_lossy())
        .auto_offset_reset(OffsetReset::Latest)
        .default_production_exception_handler(ProductionExceptionHandler::Continue)
        .num_stream_threads(2);
    let app = App::builder("it-ops").config(config).build().expect("a session on a spawned engine");
    assert_eq!(app.config().get("auto.offset.reset").map(String::as_str), Some("latest"));
    assert_eq!(app.config().get("num.stream.threads").map(String::as_str), Some("2"));
    let brokers = app.brokers().expect("the embedded broker").to_owned();
    produce(&brokers, "ops-in", &["k\tbefore"]);
    produce(&brokers, "ops-out", &[]);
    // A table reads from the earliest offset by its own policy; the stream
    // follows auto.offset.reset (latest).
    app.table_with::<String, String>("ops-table", Options::new().offset_reset(OffsetReset::Earliest)).unwrap();
    app.stream::<String, String>("ops-in")
        .unwrap()
        .map_values(|v: String| format!("{v}!"))
        .unwrap()
        .to("ops-out")
        .unwrap();
    let err = app.stream_with::<String, String>("x", Options::new().materialized("m")).err();
    assert!(matches!(err, Some(Error::InvalidArgument { .. })), "{err:?}");

    app.pause().unwrap(); // before run: it starts paused
    assert!(app.is_paused().unwrap());
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.state().unwrap() != State::Running {
        assert!(Instant::now() < deadline, "the application never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = app.clean_up();
    assert!(
        matches!(&refused, Err(Error::FailedPrecondition { message }) if message.contains("the application is running")),
        "{refused:?}"
    );
    produce(&brokers, "ops-in", &["k\tpaused"]);
    std::thread::sleep(Duration::from_secs(1)); // a paused application processes nothing: watch a while
    assert_eq!(values(&brokers, "ops-out"), Vec::<String>::new());
    app.resume().unwrap();
    assert!(!app.is_paused().unwrap());
    let out = loop {
        let out = values(&brokers, "ops-out");
        if out.iter().any(|v| v == "paused!") || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // latest: what ops-in held before the start is skipped.
    assert_eq!(out, vec!["paused!".to_owned()]);
    app.stop();
    runner.join().unwrap().unwrap();
    let state = dir.join("it-ops");
    assert_eq!(app.clean_up().unwrap(), Some(state.to_string_lossy().into_owned()));
    assert!(!state.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
