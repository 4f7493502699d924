//! Versioned stores (KIP-889) and the stream-table join that reads them
//! (KIP-914) against the REAL engine binary, through the test driver.

use std::time::Duration;

use polystreams::{Error, Materialized, Options, TopologyTestDriver, VersionedRecord};

#[test]
fn a_stream_record_joins_the_table_version_valid_at_its_timestamp() {
    let driver = TopologyTestDriver::new("rs-versioned-join").unwrap();
    let prices = driver
        .table_with::<String, String>(
            "prices",
            Options::new().materialized(Materialized::named("prices").versioned(Duration::from_millis(100))),
        )
        .unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    orders
        .left_join(&prices, |order: String, price: Option<String>| {
            format!("{order}@{}", price.as_deref().unwrap_or("none"))
        })
        .unwrap()
        .to("priced")
        .unwrap();
    let pipe = |topic: &str, key: &str, value: &str, ts: i64| {
        driver.pipe_record(topic, key.to_owned(), value.to_owned(), Some(ts), &[]).unwrap();
    };
    pipe("prices", "apple", "3", 10);
    pipe("prices", "apple", "4", 20);
    pipe("orders", "apple", "o1", 15);
    pipe("prices", "apple", "2", 12); // out of order: a version of the past
    pipe("orders", "apple", "o2", 15);
    pipe("orders", "apple", "o3", 25);
    pipe("orders", "apple", "o4", 5);
    let out: Vec<(String, String, i64)> = driver
        .read_output::<String, String>("priced")
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    let want = [("o1@3", 15), ("o2@2", 15), ("o3@4", 25), ("o4@none", 5)];
    assert_eq!(out, want.iter().map(|(v, ts)| ("apple".to_owned(), (*v).to_owned(), *ts)).collect::<Vec<_>>());

    let store = driver.get_versioned_store::<String, String>("prices").unwrap();
    let apple = "apple".to_owned();
    assert_eq!(
        store.get(&apple).unwrap(),
        Some(VersionedRecord { value: "4".to_owned(), timestamp: 20, valid_to: None })
    );
    assert_eq!(
        store.get_as_of(&apple, 13).unwrap(),
        Some(VersionedRecord { value: "2".to_owned(), timestamp: 12, valid_to: Some(20) })
    );
    assert_eq!(store.get_as_of(&apple, 9).unwrap(), None);
    // Stream time 1000: a read older than the history retention finds only
    // a latest version older still; a write that old is dropped.
    pipe("prices", "pear", "9", 1000);
    pipe("prices", "apple", "7", 50);
    assert_eq!(store.get_as_of(&apple, 13).unwrap(), None);
    assert_eq!(store.get_as_of(&apple, 60).unwrap().map(|r| r.value), Some("4".to_owned()));
    match driver.get_store::<String, String>("prices") {
        Err(Error::InvalidArgument { message, .. }) => assert!(message.contains("is a versioned store"), "{message}"),
        other => panic!("get_store on a versioned store: {other:?}"),
    }
}
