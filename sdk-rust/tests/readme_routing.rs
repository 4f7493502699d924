//! The README's "Routing" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{Json, Options, RecordMetadata, TopologyTestDriver};

#[test]
fn orders_routed_by_region() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("routing")?;
    let orders = driver.stream::<String, Json<serde_json::Value>>("orders")?;
    // Each order goes to the topic of its region.
    orders.to_dynamic(|_id, order, _meta: &RecordMetadata| {
        format!("orders-{}", order.0["region"].as_str().unwrap_or("other"))
    })?;
    // Big orders also go to partition 0 of "big-orders"; the others to Kafka's default partition.
    orders.to_with_partitioner("big-orders", Options::new(), |_topic, _id, order, _partitions| {
        (order.0["total"].as_i64().unwrap_or(0) > 100).then_some([0])
    })?;
    driver.pipe_input("orders", "o1".to_owned(), Json(serde_json::json!({"region": "eu", "total": 250})))?;
    driver.pipe_input("orders", "o2".to_owned(), Json(serde_json::json!({"region": "us", "total": 20})))?;
    let ids = |topic| -> polystreams::Result<Vec<String>> {
        Ok(driver.read_output::<String, Json<serde_json::Value>>(topic)?.into_iter().map(|r| r.key).collect())
    };
    assert_eq!(ids("orders-eu")?, ["o1"]);
    assert_eq!(ids("orders-us")?, ["o2"]);
    assert_eq!(ids("big-orders")?, ["o1", "o2"]);
    Ok(())
}
