//! Async stream-stream, global-table, table-table and foreign-key joins,
//! `map_values_with_key_async` and `flat_map_async` with metadata
//! (`with_metadata().join_stream_async(..)`, `join_global_async(..)`, ...)
//! against the REAL engine binary (test driver sessions,
//! `$POLYSTREAMS_ENGINE`, else `bin/polystreams`): the futures get the
//! metadata the synchronous functions read (the processed record's, or the
//! stream record's), by value; a panicking future fails its record.

mod common;

use std::time::Duration;

use polystreams::{Config, JoinWindows, RecordMetadata, TopologyTestDriver};

use common::Yield;

#[test]
fn async_stream_joiners_with_metadata_get_the_processed_records_metadata() {
    let driver = TopologyTestDriver::new("meta-async-ss").unwrap();
    let right = driver.stream::<String, String>("right").unwrap();
    let left = driver.stream::<String, String>("left").unwrap();
    let w = JoinWindows::of_time_difference_with_no_grace(Duration::from_millis(10));
    left.with_metadata()
        .join_stream_async(
            &right,
            |l: String, r: String, m: RecordMetadata| async move {
                Yield(2).await;
                format!("{l}+{r} by {}:{}", m.topic, m.offset)
            },
            w,
        )
        .unwrap()
        .to("inner-out")
        .unwrap();
    left.with_metadata()
        .left_join_stream_async(
            &right,
            |l: String, r: Option<String>, m: RecordMetadata| async move {
                Yield(1).await;
                format!("{l}+{r:?} by {}:{}", m.topic, m.offset)
            },
            w,
        )
        .unwrap()
        .to("left-out")
        .unwrap();
    left.with_metadata()
        .outer_join_stream_async(
            &right,
            |l: Option<String>, r: Option<String>, m: RecordMetadata| async move {
                Yield(1).await;
                format!("{l:?}+{r:?} by {}:{}", m.topic, m.offset)
            },
            w,
        )
        .unwrap()
        .to("outer-out")
        .unwrap();
    driver.pipe_record("left", "a".to_owned(), "l1".to_owned(), Some(0), &[]).unwrap();
    driver.pipe_record("right", "b".to_owned(), "r1".to_owned(), Some(1), &[]).unwrap();
    driver.pipe_record("right", "a".to_owned(), "r2".to_owned(), Some(2), &[]).unwrap();
    // Advances stream time past both windows, so l1's match stays and r1 is emitted unjoined.
    driver.pipe_record("left", "c".to_owned(), "l2".to_owned(), Some(100), &[]).unwrap();
    let read = |topic: &str| -> Vec<(String, String)> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| (r.key, r.value)).collect()
    };
    let s = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(read("inner-out"), [s("a", "l1+r2 by right:1")]);
    assert_eq!(read("left-out"), [s("a", "l1+Some(\"r2\") by right:1")]);
    assert_eq!(
        read("outer-out"),
        [s("a", "Some(\"l1\")+Some(\"r2\") by right:1"), s("b", "None+Some(\"r1\") by left:1")]
    );
}

#[test]
fn async_global_table_key_mappers_and_joiners_with_metadata_get_the_stream_records_metadata() {
    let config = Config::new().set("processing.exception.handler", "log_and_continue");
    let driver = TopologyTestDriver::with_config("meta-async-global", config).unwrap();
    let prices = driver.global_table::<String, String>("prices").unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    // The mapper picks the product by the record's header ("boom" panics in
    // its future); the joiner reads its offset.
    let product = |_k: &String, _v: &String, m: RecordMetadata| async move {
        Yield(2).await;
        let h = m.headers.iter().find(|(k, _)| k == "product").and_then(|(_, v)| v.clone());
        let p = h.map_or("none".to_owned(), |p| String::from_utf8_lossy(&p).into_owned());
        assert_ne!(p, "boom", "no product boom");
        p
    };
    orders
        .with_metadata()
        .join_global_async(&prices, product, |v: String, price: String, m: RecordMetadata| async move {
            Yield(1).await;
            format!("{v}@{price}#{}", m.offset)
        })
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .with_metadata()
        .left_join_global_async(&prices, product, |v: String, price: Option<String>, m: RecordMetadata| async move {
            format!("{v}@{price:?}#{}:{}", m.topic, m.offset)
        })
        .unwrap()
        .to("left-out")
        .unwrap();
    driver.pipe_input("prices", "p".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_record("orders", "o".to_owned(), "o1".to_owned(), None, &[("product", Some(b"p"))]).unwrap();
    driver.pipe_record("orders", "o".to_owned(), "o2".to_owned(), None, &[("product", Some(b"boom"))]).unwrap();
    driver.pipe_record("orders", "o".to_owned(), "o3".to_owned(), None, &[]).unwrap();
    let read = |topic: &str| -> Vec<String> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| r.value).collect()
    };
    assert_eq!(read("inner-out"), ["o1@10#0"]);
    assert_eq!(read("left-out"), ["o1@Some(\"10\")#orders:0", "o3@None#orders:2"]);
    assert_eq!(driver.dropped_records().unwrap(), 2); // o2, in each join
}

#[test]
fn async_keyed_mappers_with_metadata_set_their_outputs_metadata() {
    let driver = TopologyTestDriver::new("meta-async-keyed").unwrap();
    let s = driver.stream::<String, String>("in").unwrap();
    s.with_metadata()
        .map_values_with_key_async(|k: &String, v: String, mut m: RecordMetadata| {
            let k = k.clone();
            async move {
                Yield(2).await;
                m.timestamp += 1000;
                (format!("{k}:{v}@{}", m.offset), m)
            }
        })
        .unwrap()
        .to("mv-out")
        .unwrap();
    s.with_metadata()
        .flat_map_async(|k: &String, v: String, mut m: RecordMetadata| {
            let k = k.clone();
            async move {
                Yield(1).await;
                m.timestamp = 42;
                (vec![(format!("{k}1"), v.clone()), (format!("{k}2"), v)], m)
            }
        })
        .unwrap()
        .to("fm-out")
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(1), &[]).unwrap();
    driver.pipe_record("in", "b".to_owned(), "y".to_owned(), Some(2), &[]).unwrap();
    let read = |topic: &str| -> Vec<(String, String, i64)> {
        driver
            .read_output::<String, String>(topic)
            .unwrap()
            .into_iter()
            .map(|r| (r.key, r.value, r.timestamp))
            .collect()
    };
    let r = |k: &str, v: &str, t: i64| (k.to_owned(), v.to_owned(), t);
    assert_eq!(read("mv-out"), [r("a", "a:x@0", 1001), r("b", "b:y@1", 1002)]);
    assert_eq!(read("fm-out"), [r("a1", "x", 42), r("a2", "x", 42), r("b1", "y", 42), r("b2", "y", 42)]);
}

#[test]
fn async_table_table_joiners_with_metadata_get_the_update_being_processed() {
    let driver = TopologyTestDriver::with_config("meta-async-tt", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let left = driver.table::<String, String>("left").unwrap();
    let right = driver.table::<String, String>("right").unwrap();
    let show = |m: &RecordMetadata| format!("{}:{}", m.topic, m.offset);
    left.with_metadata()
        .join_async(&right, move |l: String, r: String, m: RecordMetadata| async move {
            Yield(2).await;
            format!("{l}+{r} by {}", show(&m))
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner-out")
        .unwrap();
    left.with_metadata()
        .left_join_async(&right, move |l: String, r: Option<String>, m: RecordMetadata| async move {
            format!("{l}+{r:?} by {}", show(&m))
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("left-out")
        .unwrap();
    left.with_metadata()
        .outer_join_async(&right, move |l: Option<String>, r: Option<String>, m: RecordMetadata| async move {
            Yield(1).await;
            format!("{l:?}+{r:?} by {}", show(&m))
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("outer-out")
        .unwrap();
    driver.pipe_input("left", "k".to_owned(), "l1".to_owned()).unwrap();
    driver.pipe_input("right", "k".to_owned(), "r1".to_owned()).unwrap();
    driver.pipe_input("right", "j".to_owned(), "r2".to_owned()).unwrap();
    let read = |topic: &str| -> Vec<String> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| r.value).collect()
    };
    assert_eq!(read("inner-out"), ["l1+r1 by right:0"]);
    assert_eq!(read("left-out"), ["l1+None by left:0", "l1+Some(\"r1\") by right:0"]);
    assert_eq!(
        read("outer-out"),
        ["Some(\"l1\")+None by left:0", "Some(\"l1\")+Some(\"r1\") by right:0", "None+Some(\"r2\") by right:1"]
    );
}

#[test]
fn async_foreign_key_extractors_and_joiners_with_metadata_get_the_records_metadata() {
    let driver = TopologyTestDriver::with_config("meta-async-fk", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let orders = driver.table::<String, String>("orders").unwrap();
    let products = driver.table::<String, String>("products").unwrap();
    // The extractor takes the product from the order's header.
    let product = |_v: &String, m: RecordMetadata| async move {
        Yield(1).await;
        m.headers
            .iter()
            .find(|(k, _)| k == "product")
            .and_then(|(_, v)| v.clone())
            .map(|p| String::from_utf8_lossy(&p).into_owned())
    };
    orders
        .with_metadata()
        .foreign_key_join_async(&products, product, |o: String, p: String, m: RecordMetadata| async move {
            Yield(2).await;
            format!("{o}+{p} by {}:{}", m.topic, m.offset)
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .with_metadata()
        .left_foreign_key_join_async(&products, product, |o: String, p: Option<String>, m: RecordMetadata| async move {
            format!("{o}+{p:?} by {}", m.topic)
        })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("left-out")
        .unwrap();
    driver.pipe_input("products", "p".to_owned(), "pen".to_owned()).unwrap();
    driver.pipe_record("orders", "o1".to_owned(), "one".to_owned(), None, &[("product", Some(b"p"))]).unwrap();
    driver.pipe_record("orders", "o2".to_owned(), "two".to_owned(), None, &[]).unwrap();
    let read = |topic: &str| -> Vec<(String, String)> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| (r.key, r.value)).collect()
    };
    let s = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    // As the synchronous joiner's: the subscription response's metadata.
    let response = |n: &str| format!("meta-async-fk-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-00000000{n}-topic");
    assert_eq!(read("inner-out"), [s("o1", &format!("one+pen by {}:0", response("14")))]);
    assert_eq!(
        read("left-out"),
        [
            s("o1", &format!("one+Some(\"pen\") by {}", response("30"))),
            s("o2", &format!("two+None by {}", response("30")))
        ]
    );
}
