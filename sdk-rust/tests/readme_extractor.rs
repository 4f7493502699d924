//! The README's "Timestamp extractors" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{Options, RecordMetadata, TopologyTestDriver};

#[test]
fn event_time_from_the_value() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("event-time")?;
    // The order's "at" field is its time; an order without one is dropped (-1).
    let event_time = |_key: &String, order: &serde_json::Value, _meta: &RecordMetadata, _partition_time: i64| {
        order["at"].as_i64().unwrap_or(-1)
    };
    driver
        .stream_with_extractor::<String, serde_json::Value, _>("orders", Options::new(), event_time)?
        .to("stamped")?;
    driver.pipe_record("orders", "o1".to_owned(), serde_json::json!({"at": 1_700_000_000_000_i64}), Some(5), &[])?;
    driver.pipe_record("orders", "o2".to_owned(), serde_json::json!({"id": 2}), Some(6), &[])?;
    let out: Vec<(String, i64)> =
        driver.read_output::<String, serde_json::Value>("stamped")?.into_iter().map(|r| (r.key, r.timestamp)).collect();
    assert_eq!(out, [("o1".to_owned(), 1_700_000_000_000)]);
    Ok(())
}
