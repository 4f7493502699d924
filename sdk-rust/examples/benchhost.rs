//! Rust-hosted benchmark arms, started by the Go benchmark
//! (core/cmd/bench) against its in-process engine; serves bundles until
//! SIGTERM. The twin of tools/bench/pyhost.py and nodehost.mts, built with
//! `cargo build --release --example benchhost` (make bench does).
//!
//! --topology map_values: stream -> map_values(to_uppercase) -> to (crossing table, arm (a''));
//! --topology aggregate:  JSON {"amount": n} per string key -> group_by_key ->
//!     aggregate(0, a + amount) (a long) -> to_stream -> to, under
//!     exactly_once_v2 (aggregation table, arm (a''));
//! --topology window-aggregate: the same aggregate per key and 60 s window
//!     advancing by 5 s (windows table, arm (w4)).
//! --topology stream-table-join: JSON orders -> join(table(--table) of JSON
//!     customers, joiner) -> to (joins table, arm (j3)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use polystreams::{App, Config, Json, ProcessingGuarantee, TimeWindows};

#[derive(serde::Serialize, serde::Deserialize)]
struct Amount {
    amount: i64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Order {
    order: i64,
    amount: i64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Customer {
    name: String,
    tier: i64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Enriched {
    order: i64,
    amount: i64,
    name: String,
    tier: i64,
}

static TERM: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    TERM.store(true, Ordering::SeqCst);
}

fn main() -> polystreams::Result<()> {
    // --key value or --key=value.
    let mut args = std::collections::HashMap::new();
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        let a = a.trim_start_matches("--").to_owned();
        match a.split_once('=') {
            Some((k, v)) => args.insert(k.to_owned(), v.to_owned()),
            None => args.insert(a, argv.next().unwrap_or_default()),
        };
    }
    let arg = |k: &str| args.get(k).cloned().unwrap_or_else(|| panic!("benchhost: --{k} is required"));
    let bundle = args.get("bundle").cloned().unwrap_or_else(|| "2000".into());
    let mut config = Config::new().set("polystreams.bundle.max.records", bundle);
    let topology = args.get("topology").cloned().unwrap_or_else(|| "map_values".into());
    if topology == "aggregate" || topology == "window-aggregate" {
        config = config.processing_guarantee(ProcessingGuarantee::ExactlyOnceV2);
        if let Some(ms) = args.get("commit-ms").and_then(|m| m.parse::<i64>().ok()).filter(|m| *m >= 0) {
            config = config.commit_interval_ms(ms as u64);
        }
    }
    let app = App::builder(arg("app")).engine(arg("engine")).config(config).build()?;
    match topology.as_str() {
        "map_values" => {
            app.stream::<(), String>(arg("input").as_str())?.map_values(|v| v.to_uppercase())?.to(&arg("output"))?
        }
        "aggregate" => app
            .stream::<String, Json<Amount>>(arg("input").as_str())?
            .group_by_key()?
            .aggregate(|| 0i64, |_, v: Json<Amount>, total: i64| total + v.0.amount)?
            .to_stream()?
            .to(&arg("output"))?,
        "window-aggregate" => app
            .stream::<String, Json<Amount>>(arg("input").as_str())?
            .group_by_key()?
            // 60 s windows advancing by 5 s: each record in 12 windows.
            .windowed_by(
                TimeWindows::of_size_with_no_grace(Duration::from_secs(60)).advance_by(Duration::from_secs(5)),
            )?
            .aggregate(|| 0i64, |_, v: Json<Amount>, total: i64| total + v.0.amount)?
            .to_stream()?
            .to(&arg("output"))?,
        "stream-table-join" => {
            let customers = app.table::<String, Json<Customer>>(&arg("table"))?;
            app.stream::<String, Json<Order>>(arg("input").as_str())?
                .join(&customers, |o: Json<Order>, c: Json<Customer>| {
                    Json(Enriched { order: o.0.order, amount: o.0.amount, name: c.0.name, tier: c.0.tier })
                })?
                .to(&arg("output"))?
        }
        other => {
            panic!("benchhost: --topology {other:?}: want map_values, aggregate, window-aggregate or stream-table-join")
        }
    }
    // SAFETY: on_term only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_term as extern "C" fn(libc::c_int) as libc::sighandler_t);
    }
    let stopper = app.clone();
    std::thread::spawn(move || {
        while !TERM.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        stopper.stop();
    });
    app.run()?; // until SIGTERM
    app.close(Duration::from_secs(30));
    Ok(())
}
