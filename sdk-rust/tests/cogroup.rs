//! Cogroups (KIP-150) against the REAL engine binary, through the test
//! driver. `readme_cogroup` is the program of the README's "### Cogroup"
//! section, verbatim (checked below).

use std::time::Duration;

use polystreams::{Materialized, Options, SessionWindows, TopologyTestDriver, Windowed};

// README begin
use polystreams::Json;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Activity {
    clicks: i64,
    spent: i64,
}

#[test]
fn readme_cogroup() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("customer-activity")?;
    let clicks = driver.stream::<String, String>("clicks")?.group_by_key()?;
    let orders = driver.stream::<String, i64>("orders")?.group_by_key()?;
    clicks
        .cogroup(|_user: &String, _page: String, Json(a): Json<Activity>| Json(Activity { clicks: a.clicks + 1, ..a }))
        .cogroup(&orders, |_user, amount: i64, Json(a): Json<Activity>| Json(Activity { spent: a.spent + amount, ..a }))
        .aggregate(|| Json(Activity { clicks: 0, spent: 0 }))?
        .to_stream()?
        .to("customer-activity")?;
    driver.pipe_input("clicks", "ann".to_owned(), "/home".to_owned())?;
    driver.pipe_input("orders", "ann".to_owned(), 30_i64)?;
    driver.pipe_input("clicks", "bob".to_owned(), "/cart".to_owned())?;
    let out = driver.read_output::<String, Json<Activity>>("customer-activity")?;
    let got: Vec<(String, i64, i64)> = out.into_iter().map(|r| (r.key, r.value.0.clicks, r.value.0.spent)).collect();
    assert_eq!(got, [("ann".into(), 1, 0), ("ann".into(), 1, 30), ("bob".into(), 1, 0)]); // one update per record
    Ok(())
}
// README end

#[test]
fn the_readme_shows_this_program() {
    let readme = include_str!("../README.md");
    let at = readme.find("\n### Cogroup\n").expect("README.md has a ### Cogroup section");
    let start = readme[at..].find("```rust\n").expect("a rust block under ### Cogroup") + at + "```rust\n".len();
    let end = readme[start..].find("\n```").expect("the block ends") + start + 1;
    let source = include_str!("cogroup.rs");
    let program = &source
        [source.find("// README begin\n").unwrap() + "// README begin\n".len()..source.find("// README end").unwrap()];
    assert_eq!(&readme[start..end], program, "README.md's ### Cogroup block is not tests/cogroup.rs's program");
}

#[test]
fn session_cogroup_merges_across_streams() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("cogroup-sessions")?;
    let amounts = driver.stream::<String, i64>("amounts")?.group_by_key()?;
    let pings = driver.stream::<String, i64>("pings")?.group_by_key()?;
    amounts
        .cogroup(|_k: &String, v: i64, a: i64| a + v)
        .cogroup(&pings, |_k, _v: i64, a: i64| a + 1)
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(Duration::from_millis(5)))
        .aggregate_with(
            || 0_i64,
            |_k, a, b| a + b,
            Options::new().materialized(Materialized::named("").retention(Duration::from_secs(60))),
        )?
        .to_stream()?
        .to("sessions")?;
    for (topic, v, ts) in [("amounts", 10_i64, 0), ("amounts", 20, 10), ("pings", 0, 5)] {
        driver.pipe_record(topic, "k".to_owned(), v, Some(ts), &[])?;
    }
    let out = driver.read_output::<Windowed<String>, Option<i64>>("sessions")?;
    let got: Vec<(i64, i64, Option<i64>)> = out.into_iter().map(|r| (r.key.start_ms, r.key.end_ms, r.value)).collect();
    assert_eq!(got, [(0, 0, Some(10)), (10, 10, Some(20)), (0, 0, None), (10, 10, None), (0, 10, Some(31))]);
    Ok(())
}
