//! An async TimestampExtractor (`stream_with_extractor_async`,
//! `table_with_extractor_async`) against the REAL engine binary (test driver
//! sessions, `$POLYSTREAMS_ENGINE`, else `bin/polystreams`): each record's
//! future is awaited before the next record's call, so each sees the
//! partition time of the timestamps before it; a negative answer drops the
//! record and a panicking future stops the application naming the record.

mod common;

use std::sync::{Arc, Mutex};

use polystreams::{Config, Options, RecordMetadata, TopologyTestDriver};

use common::Yield;

#[test]
fn an_async_extractor_stamps_records_in_order_drops_negative_ones_and_stops_on_a_panic() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let driver =
        TopologyTestDriver::with_config("extractor-async", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream_with_extractor_async::<String, i64, _, _>(
            "in",
            Options::new(),
            move |_k, v, meta: RecordMetadata, pt| {
                let (v, log) = (*v, log.clone());
                async move {
                    Yield(3).await; // stands in for a lookup
                    assert!(v != 13, "unlucky");
                    log.lock().unwrap().push((meta.topic.clone(), meta.offset, meta.timestamp, pt));
                    v
                }
            },
        )
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
fn an_async_extractor_stamps_a_tables_updates() {
    let driver =
        TopologyTestDriver::with_config("extractor-async-table", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .table_with_extractor_async::<String, String, _, _>("t", Options::new(), |_k, v: &String, _m, _pt| {
            let ts: i64 = v.parse().unwrap();
            async move {
                Yield(1).await;
                ts * 10
            }
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("t", "a".to_owned(), "30".to_owned(), Some(1), &[]).unwrap();
    driver.pipe_record("t", "b".to_owned(), "10".to_owned(), Some(2), &[]).unwrap();
    let out: Vec<(String, i64)> =
        driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| (r.key, r.timestamp)).collect();
    assert_eq!(out, [("a".to_owned(), 300), ("b".to_owned(), 100)]);
}
