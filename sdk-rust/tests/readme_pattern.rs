//! The README's "Topic patterns" example, as it is printed there (tests/readme.rs checks they are the same).
use polystreams::{Pattern, TopologyTestDriver};

#[test]
fn orders_of_every_region() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("orders-by-region")?;
    let orders = driver.stream::<String, String>(Pattern::new("orders-[a-z]{2}"))?;
    orders.group_by_key()?.count()?.to_stream()?.to("counts")?;
    for (topic, key) in [("orders-eu", "a"), ("orders-us", "a"), ("orders-eu", "b")] {
        driver.pipe_input(topic, key.to_owned(), "order".to_owned())?;
    }
    let counts: Vec<(String, i64)> =
        driver.read_output::<String, i64>("counts")?.into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(counts, [("a".to_owned(), 1), ("a".to_owned(), 2), ("b".to_owned(), 1)]);
    assert!(driver.describe()?.contains("Source: KSTREAM-SOURCE-0000000000 (topics: orders-[a-z]{2})"));
    Ok(())
}
