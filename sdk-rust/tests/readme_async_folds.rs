//! The README's "Async windowed and table folds" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{TimeWindows, TopologyTestDriver, Windowed};
use std::time::Duration;

// Stands in for an async lookup (an HTTP call): an item's price in cents.
async fn price_of(item: &str) -> i64 {
    if item == "book" {
        1200
    } else {
        300
    }
}

#[test]
fn revenue_per_customer_and_minute() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("revenue")?;
    driver
        .stream::<String, String>("orders")?
        .group_by_key()?
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(60)))?
        // Each window's orders in order: a lookup is awaited before the window's next order.
        .aggregate_async(
            || 0i64,
            |_customer: &String, item: String, cents: i64| async move { cents + price_of(&item).await },
        )?
        .to_stream()?
        .map(|w: &Windowed<String>, cents: i64| (format!("{}@{}", w.key, w.start_ms), cents))?
        .to("revenue")?;
    for (item, time) in [("book", 1_000), ("pen", 2_000), ("pen", 61_000)] {
        driver.pipe_record("orders", "ann".to_owned(), item.to_owned(), Some(time), &[])?;
    }
    let out = driver.read_output::<String, i64>("revenue")?;
    let got: Vec<(&str, i64)> = out.iter().map(|r| (r.key.as_str(), r.value)).collect();
    assert_eq!(got, [("ann@0", 1200), ("ann@0", 1500), ("ann@60000", 300)]);
    Ok(())
}
