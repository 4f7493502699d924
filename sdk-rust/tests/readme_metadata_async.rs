//! The README's "Async operators with record metadata" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{RecordMetadata, TopologyTestDriver};

// Stands in for an async lookup (an HTTP call): the order's region.
async fn region_of(order: &str) -> String {
    if order.starts_with("eu-") { "eu" } else { "us" }.to_owned()
}

#[test]
fn orders_stamped_with_their_region() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("stamp-orders")?;
    driver
        .stream::<String, String>("orders")?
        // Read-only: drop replayed orders.
        .with_metadata()
        .filter_async(|_id: &String, _order: &String, m: RecordMetadata| async move {
            !m.headers.iter().any(|(k, _)| k == "replay")
        })?
        // A mapper: its future answers the value and the metadata its output gets.
        .with_metadata()
        .map_values_async(|order: String, mut m: RecordMetadata| async move {
            let region = region_of(&order).await;
            m.headers.push(("region".to_owned(), Some(region.clone().into_bytes())));
            (format!("{order} from {}@{} ({region})", m.topic, m.offset), m)
        })?
        .to("stamped")?;
    driver.pipe_record("orders", "o1".to_owned(), "eu-book".to_owned(), Some(5), &[])?;
    driver.pipe_record("orders", "o2".to_owned(), "us-pen".to_owned(), Some(6), &[("replay", None)])?;
    let out = driver.read_output::<String, String>("stamped")?;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].value, "eu-book from orders@0 (eu)");
    assert_eq!(out[0].headers, [("region".to_owned(), Some(b"eu".to_vec()))]);
    Ok(())
}
