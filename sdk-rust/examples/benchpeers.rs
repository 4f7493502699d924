//! The Rust host arm of `make bench-peers` (tools/bench/peers/peers.py
//! starts it against an engine it started with `polystreams serve`): each
//! topology written as README.md writes programs, serving bundles until
//! SIGTERM. It takes the flags every arm takes
//! (tools/bench/peers/arms/common.py): --brokers (unused: the engine has
//! them), --app, --input, --output, --topology, --commit-ms, --state-dir,
//! --table (the joins) and --engine. Built by `make bench-peers` with
//! `cargo build --release --example benchpeers`.
//!
//! Counts and sums are 8-byte big-endian longs (`i64`, Serdes.Long); windowed
//! results keep Kafka Streams' windowed keys (the key, then the window start
//! as 8 bytes big-endian); the join writes the decimal amount * rate.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use polystreams::{App, Config, Json, ProcessingGuarantee, TimeWindows};

#[derive(serde::Serialize, serde::Deserialize)]
struct Amount {
    amount: i64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Rate {
    rate: i64,
}

static TERM: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    TERM.store(true, Ordering::SeqCst);
}

/// `--key value` pairs.
fn flags() -> HashMap<String, String> {
    let mut args = HashMap::new();
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        let value = argv.next().unwrap_or_else(|| panic!("benchpeers: {a} has no value"));
        args.insert(a.trim_start_matches("--").to_owned(), value);
    }
    args
}

fn main() -> polystreams::Result<()> {
    let args = flags();
    let arg = |k: &str| args.get(k).cloned().unwrap_or_else(|| panic!("benchpeers: --{k} is required"));
    let topology = arg("topology");
    let guarantee =
        if topology == "sum_eos" { ProcessingGuarantee::ExactlyOnceV2 } else { ProcessingGuarantee::AtLeastOnce };
    let commit_ms: u64 = arg("commit-ms").parse().unwrap_or_else(|_| panic!("benchpeers: --commit-ms is not a number"));
    let config =
        Config::new().processing_guarantee(guarantee).commit_interval_ms(commit_ms).state_dir(arg("state-dir"));
    let app = App::builder(arg("app")).engine(arg("engine")).config(config).build()?;
    let (input, output) = (arg("input"), arg("output"));
    match topology.as_str() {
        "map_values" => app.stream::<(), String>(input.as_str())?.map_values(|v| v.to_uppercase())?.to(&output)?,
        "word_count" => app
            .stream::<(), String>(input.as_str())?
            .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())?
            .group_by(|_, word: &String| word.clone())?
            .count()?
            .to_stream()?
            .to(&output)?,
        "count" => app.stream::<String, String>(input.as_str())?.group_by_key()?.count()?.to_stream()?.to(&output)?,
        "sum_eos" | "sum_alos" => app
            .stream::<String, Json<Amount>>(input.as_str())?
            .group_by_key()?
            .aggregate(|| 0i64, |_, v: Json<Amount>, total: i64| total + v.0.amount)?
            .to_stream()?
            .to(&output)?,
        "tumbling_count" | "hopping_count" | "hopping_sum" => {
            // Records arrive in timestamp order on each partition: no grace.
            let mut windows = TimeWindows::of_size_with_no_grace(Duration::from_secs(60));
            if topology != "tumbling_count" {
                windows = windows.advance_by(Duration::from_secs(15));
            }
            let windowed = app.stream::<String, Json<Amount>>(input.as_str())?.group_by_key()?.windowed_by(windows)?;
            let results = if topology == "hopping_sum" {
                windowed.aggregate(|| 0i64, |_, v: Json<Amount>, total: i64| total + v.0.amount)?
            } else {
                windowed.count()?
            };
            results.to_stream()?.to(&output)?
        }
        "join" => {
            let rates = app.table::<String, Json<Rate>>(&arg("table"))?;
            app.stream::<String, Json<Amount>>(input.as_str())?
                .join(&rates, |event: Json<Amount>, rate: Json<Rate>| (event.0.amount * rate.0.rate).to_string())?
                .to(&output)?
        }
        "join_global" => {
            // A global table is restored whole before any event is processed.
            let rates = app.global_table::<String, Json<Rate>>(&arg("table"))?;
            app.stream::<String, Json<Amount>>(input.as_str())?
                .join_global(
                    &rates,
                    |key: &String, _: &Json<Amount>| key.clone(),
                    |event: Json<Amount>, rate: Json<Rate>| (event.0.amount * rate.0.rate).to_string(),
                )?
                .to(&output)?
        }
        other => panic!("benchpeers: unknown --topology {other:?}"),
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
