//! The README's "Suppress until a time limit" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{BufferConfig, TopologyTestDriver};
use std::time::Duration;

#[test]
fn throttled_profiles() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("profile-updates")?;
    driver
        .table::<String, String>("profiles")?
        .suppress_until_time_limit(Duration::from_secs(30), BufferConfig::max_records(10_000))?
        .to_stream()?
        .to("profiles-throttled")?;
    let ann = || "ann".to_owned();
    driver.pipe_record("profiles", ann(), "v1".to_owned(), Some(0), &[])?;
    driver.pipe_record("profiles", ann(), "v2".to_owned(), Some(10_000), &[])?; // held: ann's first update was at 0
    driver.pipe_record("profiles", "bob".to_owned(), "v1".to_owned(), Some(30_000), &[])?; // stream time 30 s: ann's latest goes
    let out: Vec<(String, String, i64)> = driver
        .read_output::<String, String>("profiles-throttled")?
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    assert_eq!(out, [(ann(), "v2".to_owned(), 10_000)]);
    Ok(())
}
