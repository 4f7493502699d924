//! TopologyTestDriver against the REAL engine binary (test driver sessions):
//! `$POLYSTREAMS_ENGINE`, else `bin/polystreams` of the repository.

use std::time::Duration;

use polystreams::{Config, Error, Options, TestRecord, TopologyTestDriver};

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn engine_pid(driver: &TopologyTestDriver) -> i32 {
    // The engine the driver spawned listens on the port of its URL (in the
    // driver's Debug). Other tests run their own engines, children of this
    // process too, in parallel: pick the child holding that listening socket.
    let shown = format!("{driver:?}");
    let port: u16 = shown
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .unwrap_or_else(|| panic!("no engine port in {shown}"));
    let wanted = format!(":{port:04X}");
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    // Columns: sl local_address rem_address st ... inode (10th); 0A = LISTEN.
    let inode = tcp
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 9 && f[1].ends_with(&wanted) && f[3] == "0A")
        .map(|f| f[9].to_owned())
        .unwrap_or_else(|| panic!("nothing listens on port {port} ({shown})"));
    let socket = format!("socket:[{inode}]");
    let me = std::process::id();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) != Some(me) || !stat.contains("(polystreams)") {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == socket)) {
            return pid;
        }
    }
    panic!("no engine child of {me} listens on port {port} ({shown})");
}

#[test]
fn drop_leaves_no_engine_process_behind() {
    let pid;
    {
        let driver = TopologyTestDriver::new("td-process").unwrap();
        driver.stream::<(), String>("in").unwrap().to("out").unwrap();
        driver.pipe_input("in", (), "x".to_owned()).unwrap();
        pid = engine_pid(&driver);
        assert!(alive(pid));
    }
    // Reaped by close (wait), so kill(pid, 0) fails.
    assert!(!alive(pid), "engine {pid} outlives the driver");
}

#[test]
fn each_record_is_processed_completely_through_a_repartition() {
    // TopologyTestDriver processes a piped record through every sub-topology
    // (repartition topics included) before pipeInput returns.
    let driver =
        TopologyTestDriver::with_config("td-repartition", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<(), String>("lines")
        .unwrap()
        .flat_map_values(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .unwrap()
        .group_by(|_, w: &String| w.clone())
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("counts")
        .unwrap();
    driver.pipe_record("lines", (), "a b a".to_owned(), Some(10), &[]).unwrap();
    let got: Vec<(String, i64, i64)> = driver
        .read_output::<String, i64>("counts")
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    assert_eq!(got, vec![("a".into(), 1, 10), ("b".into(), 1, 10), ("a".into(), 2, 10)]);
    assert!(driver.read_output::<String, i64>("counts").unwrap().is_empty());
}

#[test]
fn headers_wall_clock_and_tombstones() {
    let driver = TopologyTestDriver::new("td-records").unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .map_values(|v: String| if v == "del" { None } else { Some(v.to_uppercase()) })
        .unwrap()
        .to("out")
        .unwrap();
    let now = driver.advance_wall_clock(Duration::ZERO).unwrap();
    let later = driver.advance_wall_clock(Duration::from_secs(5)).unwrap();
    assert_eq!(later, now + 5_000);
    driver.pipe_record("in", "k".to_owned(), "v".to_owned(), None, &[("h", Some(b"1"))]).unwrap();
    driver.pipe_record("in", "k".to_owned(), "del".to_owned(), Some(7), &[]).unwrap();
    let out = driver.read_output::<String, Option<String>>("out").unwrap();
    assert_eq!(
        out,
        vec![
            TestRecord {
                key: "k".into(),
                value: Some("V".into()),
                timestamp: later,
                headers: vec![("h".into(), Some(b"1".to_vec()))]
            },
            TestRecord { key: "k".into(), value: None, timestamp: 7, headers: vec![] },
        ]
    );
}

#[test]
fn bad_topics_and_stores_are_named() {
    let driver = TopologyTestDriver::new("td-bad").unwrap();
    driver.stream::<(), String>("in").unwrap().to("out").unwrap();
    let e = driver.pipe_input("nope", (), "x".to_owned()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. })
            && e.message().contains(r#"topic "nope" is not read by the topology (it reads "in")"#),
        "{e}"
    );
    let e = driver.read_output::<(), String>("in").unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. })
            && e.message().contains(r#"topic "in" is not written by the topology (it writes "out")"#),
        "{e}"
    );
    let e = driver.get_store::<String, i64>("missing").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }) && e.message().contains(r#"store "missing" does not exist"#), "{e}");
    driver.pipe_input("in", (), "still works".to_owned()).unwrap();
    assert_eq!(driver.read_output::<(), String>("out").unwrap()[0].value, "still works");
}

#[test]
fn a_panicking_closure_fails_pipe_input_naming_the_record() {
    let driver = TopologyTestDriver::new("td-fail").unwrap();
    driver
        .stream::<(), String>("in")
        .unwrap()
        .map_values(|v: String| {
            assert!(v != "bad", "bad value");
            v
        })
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_input("in", (), "ok".to_owned()).unwrap();
    match driver.pipe_input("in", (), "bad".to_owned()).unwrap_err() {
        Error::Processing { message, topic, offset, .. } => {
            assert!(message.contains("bad value"), "{message}");
            assert_eq!((topic.as_deref(), offset), (Some("in"), Some(1)));
        }
        e => panic!("want a processing error, got {e}"),
    }
}

#[test]
fn start_time_and_latency() {
    // Measured, not asserted (tests never assert on wall-clock time); the
    // figures go to docs/design/test-driver.md (`cargo test --test
    // test_driver start_time -- --nocapture`).
    let t0 = std::time::Instant::now();
    let driver = TopologyTestDriver::new("td-timing").unwrap();
    driver.stream::<(), String>("in").unwrap().map_values(|v: String| v.to_uppercase()).unwrap().to("out").unwrap();
    driver.advance_wall_clock(Duration::ZERO).unwrap();
    let ready = t0.elapsed();
    let t1 = std::time::Instant::now();
    for i in 0..200 {
        driver.pipe_input("in", (), i.to_string()).unwrap();
    }
    let per = t1.elapsed() / 200;
    assert_eq!(driver.read_output::<(), String>("out").unwrap().len(), 200);
    let t2 = std::time::Instant::now();
    drop(driver);
    eprintln!("rust test driver: ready in {ready:?}, {per:?} per piped record, closed in {:?}", t2.elapsed());
}

#[test]
fn a_global_table_is_updated_before_pipe_input_returns() {
    // Kafka's TopologyTestDriver#pipeRecord hands a record of a global
    // table's topic to processGlobalRecord (globalStateTask.update, then
    // flushState) before it returns: the next stream record joins with it.
    let driver = TopologyTestDriver::with_config("td-global", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let prices = driver.global_table_with::<String, i64>("prices", Options::new().materialized("prices")).unwrap();
    driver
        .stream::<String, String>("orders")
        .unwrap()
        .join_global(
            &prices,
            |_: &String, order: &String| order.split(' ').next().unwrap_or_default().to_owned(),
            |order: String, price: i64| format!("{order}@{price}"),
        )
        .unwrap()
        .to("priced")
        .unwrap();
    let e = driver.pipe_input("nope", (), "x".to_owned()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.message().contains(r#"(it reads "orders", "prices")"#),
        "{e}"
    );
    let e = driver.read_output::<String, String>("prices").unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. })
            && e.message().contains(r#"topic "prices" is not written by the topology (it writes "priced")"#),
        "{e}"
    );
    let store = driver.get_store::<String, i64>("prices").unwrap();
    let steps: [(Option<i64>, &[&str]); 4] =
        [(Some(1), &["apple x0@1"]), (Some(5), &["apple x1@5"]), (None, &[]), (Some(7), &["apple x3@7"])];
    for (i, (price, want)) in steps.into_iter().enumerate() {
        let ts = Some(i as i64);
        driver.pipe_record("prices", "apple".to_owned(), price, ts, &[]).unwrap();
        assert_eq!(store.get(&"apple".to_owned()).unwrap(), price, "step {i}: the global store right after pipe_input");
        driver.pipe_record("orders", format!("o{i}"), format!("apple x{i}"), ts, &[]).unwrap();
        let got: Vec<String> =
            driver.read_output::<String, String>("priced").unwrap().into_iter().map(|r| r.value).collect();
        assert_eq!(got, *want, "step {i}");
    }
}

#[test]
fn emit_on_window_close_forwards_only_final_results() {
    // As KStreamWindowAggregateTest's emitFinal cases: a tumbling 10 ms
    // count emits each window once, when stream time reaches its end.
    use polystreams::{EmitStrategy, TimeWindows, Windowed};
    let driver = TopologyTestDriver::with_config("td-emit", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(10)))
        .unwrap()
        .emit_strategy(EmitStrategy::OnWindowClose)
        .unwrap()
        .count()
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    let mut got = Vec::new();
    for (k, ts) in [("a", 5), ("a", 7), ("b", 12), ("a", 21)] {
        driver.pipe_record("in", k.to_owned(), "x".to_owned(), Some(ts), &[]).unwrap();
        let out = driver.read_output::<Windowed<String>, i64>("out").unwrap();
        got.push(out.into_iter().map(|r| (r.key.key, r.key.start_ms, r.value, r.timestamp)).collect::<Vec<_>>());
    }
    assert_eq!(
        got,
        vec![vec![], vec![], vec![("a".to_owned(), 0, 2, 7)], vec![("b".to_owned(), 10, 1, 12)]],
        "outputs after each record"
    );
}

#[test]
fn to_table_upserts_and_drops_null_keys() {
    let driver = TopologyTestDriver::with_config("td-totable", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let table = driver
        .stream::<Option<String>, Option<String>>("in")
        .unwrap()
        .to_table_with(Options::new().name("as-table").materialized("latest"))
        .unwrap();
    assert_eq!(table.store(), Some("latest"));
    table.to_stream().unwrap().to("out").unwrap();
    assert!(driver.describe().unwrap().contains("Processor: as-table (stores: [latest])"));
    driver.pipe_record("in", Some("a".to_owned()), Some("1".to_owned()), Some(1), &[]).unwrap();
    driver.pipe_record("in", None::<String>, Some("2".to_owned()), Some(2), &[]).unwrap();
    driver.pipe_record("in", Some("a".to_owned()), None::<String>, Some(3), &[]).unwrap();
    let got: Vec<(Option<String>, Option<String>, i64)> = driver
        .read_output::<Option<String>, Option<String>>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    assert_eq!(got, vec![(Some("a".into()), Some("1".into()), 1), (Some("a".into()), None, 3)]);
}
