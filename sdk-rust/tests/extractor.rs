//! A source's TimestampExtractor against the REAL engine binary (test driver sessions).

use std::sync::{Arc, Mutex};

use polystreams::{Config, Error, Options, RecordMetadata, TimestampExtractor, TopologyTestDriver};

#[test]
fn an_extractor_stamps_records_drops_negative_ones_and_stops_on_a_panic() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let driver = TopologyTestDriver::with_config("extractor", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream_with_extractor::<String, i64, _>("in", Options::new(), move |_k, v, meta: &RecordMetadata, pt| {
            assert!(*v != 13, "unlucky");
            log.lock().unwrap().push((meta.topic.clone(), meta.offset, meta.timestamp, pt));
            *v
        })
        .unwrap()
        .to("out")
        .unwrap();
    for v in [500_i64, -1, 200, 900] {
        driver.pipe_record("in", "k".to_owned(), v, Some(7), &[]).unwrap();
    }
    let out: Vec<(i64, i64)> =
        driver.read_output::<String, i64>("out").unwrap().into_iter().map(|r| (r.value, r.timestamp)).collect();
    assert_eq!(out, [(500, 500), (200, 200), (900, 900)]);
    let in_ = || "in".to_owned();
    assert_eq!(*seen.lock().unwrap(), [(in_(), 0, 7, -1), (in_(), 1, 7, 500), (in_(), 2, 7, 500), (in_(), 3, 7, 500)]);
    let err = driver.pipe_input("in", "k".to_owned(), 13_i64).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("record at in/0@4 failed in node KSTREAM-SOURCE-0000000000: timestamp extractor failed")
            && text.contains("unlucky"),
        "{text}"
    );
}

#[test]
fn a_builtin_extractor_by_name() {
    let driver =
        TopologyTestDriver::with_config("extractor-builtin", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .table_with::<String, String>(
            "t",
            Options::new().timestamp_extractor(TimestampExtractor::UsePartitionTimeOnInvalidTimestamp),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("t", "a".to_owned(), "x".to_owned(), Some(300), &[]).unwrap();
    driver.pipe_record("t", "b".to_owned(), "y".to_owned(), Some(100), &[]).unwrap();
    let out: Vec<(String, i64)> =
        driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| (r.key, r.timestamp)).collect();
    assert_eq!(out, [("a".to_owned(), 300), ("b".to_owned(), 100)]);
    // Only sources take one.
    let other = TopologyTestDriver::new("extractor-options").unwrap();
    let s = other.stream::<String, String>("in").unwrap();
    let refused =
        s.filter_with(|_, _| true, Options::new().timestamp_extractor(TimestampExtractor::FailOnInvalidTimestamp));
    assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{refused:?}");
}
