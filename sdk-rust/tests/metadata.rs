//! Record metadata beyond stateless chains, against the REAL engine binary
//! (test driver sessions): reducers, aggregators, initializers and
//! joiners read the metadata of the record they are called for
//! (docs/design/processor.md, "Metadata, opt-in").

use polystreams::{Config, Materialized, Options, TopologyTestDriver};

#[test]
fn a_reducer_with_metadata_sums_values_and_offsets() {
    let driver = TopologyTestDriver::with_config("meta-reduce", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, i64>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .with_metadata()
        .reduce(|total, v, m| total + v + 1000 * m.offset)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for v in [1i64, 2, 3] {
        driver.pipe_input("in", "k".to_owned(), v).unwrap();
    }
    let got: Vec<i64> = driver.read_output::<String, i64>("out").unwrap().into_iter().map(|r| r.value).collect();
    // The first value becomes the aggregate without a call; then 2 + 1000*1, 3 + 1000*2.
    assert_eq!(got, [1, 1003, 3006]);
}

#[test]
fn an_aggregator_and_its_initializer_with_metadata_read_topic_offset_timestamp_and_headers() {
    let driver =
        TopologyTestDriver::with_config("meta-aggregate", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .with_metadata()
        .aggregate(
            |m| format!("from@{}", m.offset),
            |_k: &String, v: String, agg: String, m| {
                let trace = m.headers.iter().find(|(k, _)| k == "trace").and_then(|(_, v)| v.clone());
                let trace = trace.map_or("-".to_owned(), |t| String::from_utf8_lossy(&t).into_owned());
                format!("{agg}+{v}[{}:{}:{}:{trace}]", m.topic, m.offset, m.timestamp)
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "k".to_owned(), "a".to_owned(), Some(5), &[]).unwrap();
    driver.pipe_record("in", "k".to_owned(), "b".to_owned(), Some(6), &[("trace", Some(b"t1"))]).unwrap();
    let got: Vec<String> = driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(got, ["from@0+a[in:0:5:-]", "from@0+a[in:0:5:-]+b[in:1:6:t1]"]);
}

#[test]
fn a_stream_table_joiner_with_metadata_reads_the_stream_records_metadata() {
    let driver = TopologyTestDriver::new("meta-join").unwrap();
    let prices = driver.table::<String, String>("prices").unwrap();
    driver
        .stream::<String, String>("orders")
        .unwrap()
        .with_metadata()
        .join(&prices, |v: String, price: String, m| format!("{v}@{price}#{}", m.offset))
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_input("prices", "p".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_input("orders", "p".to_owned(), "o1".to_owned()).unwrap();
    driver.pipe_input("orders", "p".to_owned(), "o2".to_owned()).unwrap();
    let got: Vec<String> = driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(got, ["o1@10#0", "o2@10#1"]);
}

#[test]
fn a_table_reduce_with_metadata_reads_each_updates_offset() {
    let driver =
        TopologyTestDriver::with_config("meta-table-reduce", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .table::<String, i64>("t")
        .unwrap()
        .group_by(|_k: &String, v: i64| ("all".to_owned(), v))
        .unwrap()
        .with_metadata()
        .reduce(|total, v, m| total + v + 100 * m.offset, |total, old, _m| total - old)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_input("t", "a".to_owned(), 1i64).unwrap();
    driver.pipe_input("t", "b".to_owned(), 2i64).unwrap();
    let got: Vec<i64> = driver.read_output::<String, i64>("out").unwrap().into_iter().map(|r| r.value).collect();
    // a's 1 becomes the aggregate without a call; b's 2 at offset 1 adds 2 + 100.
    assert_eq!(got, [1, 103]);
}

#[test]
fn a_stream_stream_joiner_with_metadata_reads_the_processed_records_context() {
    let driver = TopologyTestDriver::new("meta-ss-join").unwrap();
    let right = driver.stream::<String, String>("right").unwrap();
    driver
        .stream::<String, String>("left")
        .unwrap()
        .with_metadata()
        .join_stream(
            &right,
            |l: String, r: String, m| format!("{l}+{r} by {}:{}@{}", m.topic, m.offset, m.timestamp),
            polystreams::JoinWindows::of_time_difference_with_no_grace(std::time::Duration::from_millis(100)),
        )
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("right", "k".to_owned(), "r".to_owned(), Some(10), &[]).unwrap();
    driver.pipe_record("left", "k".to_owned(), "l".to_owned(), Some(5), &[]).unwrap();
    let got: Vec<(String, i64)> =
        driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| (r.value, r.timestamp)).collect();
    // Kafka Streams calls the joiner while processing the left record (offset 0, ts 5); the output gets max(5, 10).
    assert_eq!(got, [("l+r by left:0@5".to_owned(), 10)]);
}

#[test]
fn a_tumbling_window_reducer_with_metadata_reads_each_records_offset() {
    use polystreams::{TimeWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-window-reduce", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, i64>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(TimeWindows::of_size_with_no_grace(std::time::Duration::from_millis(10)))
        .unwrap()
        .with_metadata()
        .reduce(|total, v, m| total + v + 1000 * m.offset)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, ts) in [(1i64, 1), (2, 2), (3, 12), (4, 13)] {
        driver.pipe_record("in", "k".to_owned(), v, Some(ts), &[]).unwrap();
    }
    let got: Vec<(i64, i64)> = driver
        .read_output::<Windowed<String>, i64>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.value))
        .collect();
    // Each window's first value becomes its aggregate without a call; offsets 1 and 3 fold in.
    assert_eq!(got, [(0, 1), (0, 1003), (10, 3), (10, 3007)]);
}

#[test]
fn a_hopping_window_aggregator_with_metadata_folds_a_record_into_each_window_with_its_metadata() {
    use polystreams::{TimeWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-window-aggregate", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(
            TimeWindows::of_size_with_no_grace(std::time::Duration::from_millis(10))
                .advance_by(std::time::Duration::from_millis(5)),
        )
        .unwrap()
        .with_metadata()
        .aggregate(
            |m| format!("init@{}", m.offset),
            |_k: &String, v: String, agg: String, m| format!("{agg}+{v}@{}:{}", m.offset, m.timestamp),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "k".to_owned(), "a".to_owned(), Some(7), &[]).unwrap();
    driver.pipe_record("in", "k".to_owned(), "b".to_owned(), Some(8), &[]).unwrap();
    let mut got: Vec<(i64, String)> = driver
        .read_output::<Windowed<String>, String>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.value))
        .collect();
    got.sort();
    // 7 and 8 fall in the windows [0, 10) and [5, 15).
    assert_eq!(
        got,
        [
            (0, "init@0+a@0:7".to_owned()),
            (0, "init@0+a@0:7+b@1:8".to_owned()),
            (5, "init@0+a@0:7".to_owned()),
            (5, "init@0+a@0:7+b@1:8".to_owned()),
        ]
    );
}

#[test]
fn a_session_aggregate_with_metadata_merges_with_the_bridging_records_metadata() {
    use polystreams::{SessionWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-session-aggregate", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(std::time::Duration::from_millis(5)))
        .unwrap()
        .with_metadata()
        .aggregate_with(
            |m| format!("i{}", m.offset),
            |_k: &String, v: String, agg: String, m| format!("{agg}+{v}{}", m.offset),
            |_k: &String, a: String, b: String, m| format!("({a}|{b})m{}", m.offset),
            // Kept past the default retention (gap + grace), so that a's session is still there for c.
            Options::new().materialized(Materialized::named("").retention(std::time::Duration::from_secs(60))),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, ts) in [("a", 0), ("b", 10), ("c", 5)] {
        driver.pipe_record("in", "k".to_owned(), v.to_owned(), Some(ts), &[]).unwrap();
    }
    let got: Vec<(i64, i64, Option<String>)> = driver
        .read_output::<Windowed<String>, Option<String>>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.key.end_ms, r.value))
        .collect();
    // c (offset 2) bridges the sessions of a and b: the merged session starts
    // from init, merges each in time order, then folds c in, all with c's metadata.
    assert_eq!(
        got,
        [
            (0, 0, Some("i0+a0".to_owned())),
            (10, 10, Some("i1+b1".to_owned())),
            (0, 0, None),
            (10, 10, None),
            (0, 10, Some("((i2|i0+a0)m2|i1+b1)m2+c2".to_owned())),
        ]
    );
}

#[test]
fn a_session_reducer_with_metadata_reads_the_records_offset() {
    use polystreams::{SessionWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-session-reduce", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, i64>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(std::time::Duration::from_millis(5)))
        .unwrap()
        .with_metadata()
        .reduce(|a, v, m| a + v + 100 * m.offset)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, ts) in [(1i64, 0), (2, 3)] {
        driver.pipe_record("in", "k".to_owned(), v, Some(ts), &[]).unwrap();
    }
    let got: Vec<(i64, i64, Option<i64>)> = driver
        .read_output::<Windowed<String>, Option<i64>>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.key.end_ms, r.value))
        .collect();
    // 2 at offset 1 extends the session of 1: the old session is deleted, the
    // merged one is 1 (its aggregate) + 2 + 100.
    assert_eq!(got, [(0, 0, Some(1)), (0, 0, None), (0, 3, Some(103))]);
}

#[test]
fn left_and_outer_stream_joiners_with_metadata_read_the_processed_records_context() {
    let driver = TopologyTestDriver::new("meta-ss-outer").unwrap();
    let right = driver.stream::<String, String>("right").unwrap();
    let left = driver.stream::<String, String>("left").unwrap();
    let w = polystreams::JoinWindows::of_time_difference_with_no_grace(std::time::Duration::from_millis(10));
    left.with_metadata()
        .left_join_stream(&right, |l: String, r: Option<String>, m| format!("{l}+{r:?} by {}:{}", m.topic, m.offset), w)
        .unwrap()
        .to("left-out")
        .unwrap();
    left.with_metadata()
        .outer_join_stream(
            &right,
            |l: Option<String>, r: Option<String>, m| format!("{l:?}+{r:?} by {}:{}", m.topic, m.offset),
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
    assert_eq!(read("left-out"), [s("a", "l1+Some(\"r2\") by right:1")]);
    assert_eq!(
        read("outer-out"),
        [s("a", "Some(\"l1\")+Some(\"r2\") by right:1"), s("b", "None+Some(\"r1\") by left:1")]
    );
}

#[test]
fn global_table_key_mappers_and_joiners_with_metadata_read_the_stream_records_metadata() {
    let driver = TopologyTestDriver::new("meta-global").unwrap();
    let prices = driver.global_table::<String, String>("prices").unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    // The mapper picks the product by the record's header; the joiner reads its offset.
    let product = |_k: &String, _v: &String, m: &polystreams::RecordMetadata| {
        let h = m.headers.iter().find(|(k, _)| k == "product").and_then(|(_, v)| v.clone());
        h.map_or("none".to_owned(), |p| String::from_utf8_lossy(&p).into_owned())
    };
    orders
        .with_metadata()
        .join_global(&prices, product, |v: String, price: String, m| format!("{v}@{price}#{}", m.offset))
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .with_metadata()
        .left_join_global(&prices, product, |v: String, price: Option<String>, m| {
            format!("{v}@{price:?}#{}:{}", m.topic, m.offset)
        })
        .unwrap()
        .to("left-out")
        .unwrap();
    driver.pipe_input("prices", "p".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_record("orders", "o".to_owned(), "o1".to_owned(), None, &[("product", Some(b"p"))]).unwrap();
    driver.pipe_record("orders", "o".to_owned(), "o2".to_owned(), None, &[]).unwrap();
    let read = |topic: &str| -> Vec<String> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| r.value).collect()
    };
    assert_eq!(read("inner-out"), ["o1@10#0"]);
    assert_eq!(read("left-out"), ["o1@Some(\"10\")#orders:0", "o2@None#orders:1"]);
}

#[test]
fn table_table_joiners_with_metadata_read_the_update_being_processed() {
    let driver = TopologyTestDriver::with_config("meta-tt-join", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let left = driver.table::<String, String>("left").unwrap();
    let right = driver.table::<String, String>("right").unwrap();
    let show = |m: &polystreams::RecordMetadata| format!("{}:{}", m.topic, m.offset);
    left.with_metadata()
        .join(&right, move |l: String, r: String, m| format!("{l}+{r} by {}", show(m)))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner-out")
        .unwrap();
    left.with_metadata()
        .left_join(&right, move |l: String, r: Option<String>, m| format!("{l}+{r:?} by {}", show(m)))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("left-out")
        .unwrap();
    left.with_metadata()
        .outer_join(&right, move |l: Option<String>, r: Option<String>, m| format!("{l:?}+{r:?} by {}", show(m)))
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
fn foreign_key_extractors_and_joiners_with_metadata_read_the_records_metadata() {
    let driver = TopologyTestDriver::with_config("meta-fk-join", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let orders = driver.table::<String, String>("orders").unwrap();
    let products = driver.table::<String, String>("products").unwrap();
    // The extractor takes the product from the order's header.
    let product = |_v: &String, m: &polystreams::RecordMetadata| {
        m.headers
            .iter()
            .find(|(k, _)| k == "product")
            .and_then(|(_, v)| v.clone())
            .map(|p| String::from_utf8_lossy(&p).into_owned())
    };
    orders
        .with_metadata()
        .foreign_key_join(&products, product, |o: String, p: String, m| format!("{o}+{p} by {}:{}", m.topic, m.offset))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .with_metadata()
        .left_foreign_key_join(&products, product, |o: String, p: Option<String>, m| {
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
    // The joiner runs while the join processes the subscription response
    // (Kafka Streams' ResponseJoinProcessorSupplier), so its metadata is
    // that internal topic record's; o2 has no header, so no foreign key.
    let response = |n: &str| format!("meta-fk-join-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-00000000{n}-topic");
    assert_eq!(read("inner-out"), [s("o1", &format!("one+pen by {}:0", response("14")))]);
    assert_eq!(
        read("left-out"),
        [
            s("o1", &format!("one+Some(\"pen\") by {}", response("30"))),
            s("o2", &format!("two+None by {}", response("30")))
        ]
    );
}

#[test]
fn cogroup_aggregators_with_metadata_read_the_records_metadata_beside_one_without() {
    let driver = TopologyTestDriver::with_config("meta-cogroup", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    let views = driver.stream::<String, String>("views").unwrap().group_by_key().unwrap();
    let buys = driver.stream::<String, String>("buys").unwrap().group_by_key().unwrap();
    clicks
        .with_metadata()
        .cogroup(|_k: &String, v: String, agg: String, m| format!("{agg}+{v}@{}:{}", m.topic, m.offset))
        .cogroup(&views, |_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .cogroup_with_metadata(&buys, |_k: &String, v: String, agg: String, m| format!("{agg}+{v}@{}", m.topic))
        .aggregate(String::new)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_input("clicks", "k".to_owned(), "c1".to_owned()).unwrap();
    driver.pipe_input("views", "k".to_owned(), "v1".to_owned()).unwrap();
    driver.pipe_input("clicks", "k".to_owned(), "c2".to_owned()).unwrap();
    driver.pipe_input("buys", "k".to_owned(), "b1".to_owned()).unwrap();
    let got: Vec<String> = driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(got.last().map(String::as_str), Some("+c1@clicks:0+v1+c2@clicks:1+b1@buys"));
    assert_eq!(got.len(), 4);
}

#[test]
fn a_windowed_cogroup_aggregator_with_metadata_reads_the_records_metadata() {
    use polystreams::{TimeWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-cogroup-window", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    clicks
        .with_metadata()
        .cogroup(|_k: &String, v: String, agg: String, m| format!("{agg}+{v}@{}", m.timestamp))
        .windowed_by(TimeWindows::of_size_with_no_grace(std::time::Duration::from_millis(10)))
        .aggregate(String::new)
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, ts) in [("a", 1), ("b", 2), ("c", 11)] {
        driver.pipe_record("clicks", "k".to_owned(), v.to_owned(), Some(ts), &[]).unwrap();
    }
    let got: Vec<(i64, String)> = driver
        .read_output::<Windowed<String>, String>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.value))
        .collect();
    let s = |w: i64, v: &str| (w, v.to_owned());
    assert_eq!(got, [s(0, "+a@1"), s(0, "+a@1+b@2"), s(10, "+c@11")]);
}

#[test]
fn a_sliding_window_aggregator_with_metadata_reads_each_folded_records_metadata() {
    use polystreams::{SlidingWindows, Windowed};
    let driver = TopologyTestDriver::with_config("meta-sliding", Config::new().statestore_cache_max_bytes(0)).unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .group_by_key()
        .unwrap()
        .windowed_by(SlidingWindows::of_time_difference_with_no_grace(std::time::Duration::from_millis(10)))
        .unwrap()
        .with_metadata()
        .aggregate(
            |_m| String::new(),
            |_k: &String, v: String, agg: String, m| format!("{agg}+{v}@{}:{}", m.offset, m.timestamp),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    for (v, ts) in [("a", 5), ("b", 8), ("c", 30)] {
        driver.pipe_record("in", "k".to_owned(), v.to_owned(), Some(ts), &[]).unwrap();
    }
    let got: Vec<String> =
        driver.read_output::<Windowed<String>, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    // Sliding windows are folds the engine sends as programs: every value
    // folded in, in any window, carries its own record's offset and timestamp.
    assert!(got.iter().any(|v| v.contains("+a@0:5+b@1:8")), "{got:?}");
    assert!(got.iter().any(|v| v == "+c@2:30"), "{got:?}");
    for v in &got {
        for part in v.split('+').skip(1) {
            assert!(["a@0:5", "b@1:8", "c@2:30"].contains(&part), "{part} in {got:?}");
        }
    }
}

// Async functions with metadata: the closure gets the record's metadata by
// value; a mapper's future answers its output with the metadata its
// outputs get.

#[test]
fn async_mappers_with_metadata_set_their_outputs_timestamp_and_headers_from_what_they_awaited() {
    let driver = TopologyTestDriver::new("meta-async-map").unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .with_metadata()
        .map_values_async(|v: String, mut m| async move {
            let line = std::future::ready(format!("{}@{}:{} {v}", m.topic, m.partition, m.offset)).await;
            m.timestamp += 5;
            m.headers.push(("via".to_owned(), Some(b"rust".to_vec())));
            (line, m)
        })
        .unwrap()
        .with_metadata()
        .flat_map_values_async(|v: String, mut m| async move {
            m.timestamp += 1;
            (v.split(' ').map(str::to_owned).collect::<Vec<_>>(), m)
        })
        .unwrap()
        .with_metadata()
        .select_key_async(|k: &String, v: &String, m| {
            let key = format!("{k}-{v}@{}", m.timestamp);
            async move { (key, m) }
        })
        .unwrap()
        .with_metadata()
        .map_async(|k: &String, v: String, mut m| {
            let k = k.clone();
            async move {
                m.headers.retain(|(h, _)| h != "trace");
                ((k, v.to_uppercase()), m)
            }
        })
        .unwrap()
        // A step that did not ask, in the same chain: its outputs keep the metadata set before.
        .map_values_async(|v: String| async move { format!("{v}!") })
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(10), &[("trace", Some(b"t1"))]).unwrap();
    driver.pipe_record("in", "b".to_owned(), "y".to_owned(), Some(20), &[]).unwrap();
    let out = driver.read_output::<String, String>("out").unwrap();
    let got: Vec<(&str, &str, i64)> = out.iter().map(|r| (r.key.as_str(), r.value.as_str(), r.timestamp)).collect();
    assert_eq!(
        got,
        [("a-in@0:0@16", "IN@0:0!", 16), ("a-x@16", "X!", 16), ("b-in@0:1@26", "IN@0:1!", 26), ("b-y@26", "Y!", 26)]
    );
    let via = ("via".to_owned(), Some(b"rust".to_vec()));
    for r in &out {
        assert_eq!(r.headers, std::slice::from_ref(&via), "{r:?}");
    }
}

#[test]
fn async_filters_peek_and_foreach_with_metadata_read_it_and_pass_records_as_they_came() {
    use std::sync::{Arc, Mutex};
    let driver = TopologyTestDriver::new("meta-async-filter").unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (peeked, done) = (seen.clone(), seen.clone());
    let kept = driver
        .stream::<String, String>("in")
        .unwrap()
        .with_metadata()
        .filter_async(|_k: &String, _v: &String, m| async move { !m.headers.iter().any(|(k, _)| k == "skip") })
        .unwrap()
        .with_metadata()
        .filter_not_async(|_k: &String, _v: &String, m| async move { m.timestamp > 100 })
        .unwrap()
        .with_metadata()
        .peek_async(move |k: &String, _v: &String, m| {
            let (seen, line) = (peeked.clone(), format!("peek {k}@{}", m.offset));
            async move { seen.lock().unwrap().push(line) }
        })
        .unwrap();
    kept.to("out").unwrap();
    kept.with_metadata()
        .foreach_async(move |k: &String, _v: &String, m| {
            let (seen, line) = (done.clone(), format!("foreach {k}@{}:{}", m.topic, m.timestamp));
            async move { seen.lock().unwrap().push(line) }
        })
        .unwrap();
    driver.pipe_record("in", "a".to_owned(), "x".to_owned(), Some(10), &[("trace", Some(b"t1"))]).unwrap();
    driver.pipe_record("in", "b".to_owned(), "y".to_owned(), Some(20), &[("skip", None)]).unwrap();
    driver.pipe_record("in", "c".to_owned(), "z".to_owned(), Some(200), &[]).unwrap();
    driver.pipe_record("in", "d".to_owned(), "w".to_owned(), Some(40), &[]).unwrap();
    let out = driver.read_output::<String, String>("out").unwrap();
    let got: Vec<(&str, &str, i64)> = out.iter().map(|r| (r.key.as_str(), r.value.as_str(), r.timestamp)).collect();
    assert_eq!(got, [("a", "x", 10), ("d", "w", 40)]);
    assert_eq!(out[0].headers, [("trace".to_owned(), Some(b"t1".to_vec()))]);
    assert_eq!(*seen.lock().unwrap(), ["peek a@0", "foreach a@in:10", "peek d@3", "foreach d@in:40"]);
}

#[test]
fn async_stream_table_joiners_with_metadata_read_the_stream_records_metadata() {
    let driver = TopologyTestDriver::new("meta-async-join").unwrap();
    let prices = driver.table::<String, String>("prices").unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    orders
        .with_metadata()
        .join_async(&prices, |v: String, price: String, m| async move { format!("{v}@{price}#{}", m.offset) })
        .unwrap()
        .to("joined")
        .unwrap();
    orders
        .with_metadata()
        .left_join_async(&prices, |v: String, price: Option<String>, m| async move {
            format!("{v}@{price:?}#{}:{}", m.topic, m.timestamp)
        })
        .unwrap()
        .to("left")
        .unwrap();
    driver.pipe_input("prices", "p".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_record("orders", "p".to_owned(), "o1".to_owned(), Some(7), &[]).unwrap();
    driver.pipe_record("orders", "q".to_owned(), "o2".to_owned(), Some(8), &[]).unwrap();
    let read = |t: &str| -> Vec<String> {
        driver.read_output::<String, String>(t).unwrap().into_iter().map(|r| r.value).collect()
    };
    assert_eq!(read("joined"), ["o1@10#0"]);
    assert_eq!(read("left"), ["o1@Some(\"10\")#orders:7", "o2@None#orders:8"]);
}

#[test]
fn async_reducers_and_aggregators_with_metadata_read_the_folded_records_metadata() {
    let driver =
        TopologyTestDriver::with_config("meta-async-fold", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let grouped = driver.stream::<String, i64>("in").unwrap().group_by_key().unwrap();
    grouped
        .with_metadata()
        .reduce_async(|total, v, m| async move { total + v + 1000 * m.offset })
        .unwrap()
        .to_stream()
        .unwrap()
        .to("reduced")
        .unwrap();
    grouped
        .with_metadata()
        .aggregate_async(
            |m| format!("from@{}", m.offset),
            |_k: &String, v: i64, agg: String, m| async move {
                let trace = m.headers.iter().find(|(k, _)| k == "trace").and_then(|(_, v)| v.clone());
                let trace = trace.map_or("-".to_owned(), |t| String::from_utf8_lossy(&t).into_owned());
                format!("{agg}+{v}[{}:{}:{trace}]", m.offset, m.timestamp)
            },
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("aggregated")
        .unwrap();
    driver.pipe_record("in", "k".to_owned(), 1i64, Some(5), &[]).unwrap();
    driver.pipe_record("in", "k".to_owned(), 2i64, Some(6), &[("trace", Some(b"t1"))]).unwrap();
    driver.pipe_record("in", "k".to_owned(), 3i64, Some(7), &[]).unwrap();
    let reduced: Vec<i64> =
        driver.read_output::<String, i64>("reduced").unwrap().into_iter().map(|r| r.value).collect();
    // The first value becomes the aggregate without a call; then 2 + 1000*1, 3 + 1000*2.
    assert_eq!(reduced, [1, 1003, 3006]);
    let aggregated: Vec<String> =
        driver.read_output::<String, String>("aggregated").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(aggregated, ["from@0+1[0:5:-]", "from@0+1[0:5:-]+2[1:6:t1]", "from@0+1[0:5:-]+2[1:6:t1]+3[2:7:-]"]);
}

#[test]
fn a_panicking_async_mapper_with_metadata_fails_its_record_naming_node_and_record() {
    use polystreams::Error;
    let driver = TopologyTestDriver::new("meta-async-panic").unwrap();
    driver
        .stream::<String, String>("in")
        .unwrap()
        .with_metadata()
        .map_values_async(|v: String, m| async move {
            assert!(v != "bad", "bad value at offset {}", m.offset);
            (v, m)
        })
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_input("in", "a".to_owned(), "ok".to_owned()).unwrap();
    let got: Vec<String> = driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(got, ["ok"]);
    // Under the default policy (fail) the failure stops the session.
    match driver.pipe_input("in", "a".to_owned(), "bad".to_owned()).unwrap_err() {
        Error::Processing { message, topic, offset, node, .. } => {
            assert!(message.contains("bad value at offset 1"), "{message}");
            assert_eq!((topic.as_deref(), offset), (Some("in"), Some(1)));
            assert_eq!(node.as_deref(), Some("KSTREAM-MAPVALUES-0000000001"));
        }
        e => panic!("want a processing error, got {e}"),
    }
}

#[test]
fn a_cogroups_initializer_with_metadata_reads_the_record_that_creates_each_keys_aggregate() {
    let driver =
        TopologyTestDriver::with_config("meta-cogroup-init", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    let views = driver.stream::<String, String>("views").unwrap().group_by_key().unwrap();
    clicks
        .cogroup(|_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .cogroup(&views, |_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .with_metadata()
        .aggregate(|m| format!("{}@{}:{}", m.topic, m.offset, m.timestamp))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("views", "a".to_owned(), "v1".to_owned(), Some(5), &[]).unwrap();
    driver.pipe_record("clicks", "a".to_owned(), "c1".to_owned(), Some(6), &[]).unwrap();
    driver.pipe_record("clicks", "b".to_owned(), "c2".to_owned(), Some(7), &[]).unwrap();
    let got: Vec<(String, String)> =
        driver.read_output::<String, String>("out").unwrap().into_iter().map(|r| (r.key, r.value)).collect();
    let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(got, [kv("a", "views@0:5+v1"), kv("a", "views@0:5+v1+c1"), kv("b", "clicks@1:7+c2")]);
}

#[test]
fn a_windowed_cogroups_initializer_with_metadata_reads_the_record_that_creates_each_windows_aggregate() {
    use polystreams::{TimeWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-cogroup-window-init", Config::new().statestore_cache_max_bytes(0))
            .unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    let views = driver.stream::<String, String>("views").unwrap().group_by_key().unwrap();
    clicks
        .cogroup(|_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .cogroup(&views, |_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .windowed_by(TimeWindows::of_size_with_no_grace(std::time::Duration::from_millis(10)))
        .with_metadata()
        .aggregate(|m| format!("{}@{}", m.topic, m.timestamp))
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("views", "a".to_owned(), "v1".to_owned(), Some(1), &[]).unwrap();
    driver.pipe_record("clicks", "a".to_owned(), "c1".to_owned(), Some(2), &[]).unwrap();
    driver.pipe_record("clicks", "a".to_owned(), "c2".to_owned(), Some(12), &[]).unwrap();
    let got: Vec<(i64, String)> = driver
        .read_output::<Windowed<String>, String>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.value))
        .collect();
    let s = |w: i64, v: &str| (w, v.to_owned());
    assert_eq!(got, [s(0, "views@1+v1"), s(0, "views@1+v1+c1"), s(10, "clicks@12+c2")]);
}

#[test]
fn a_session_cogroups_initializer_and_merger_with_metadata_read_the_bridging_records_metadata() {
    use polystreams::{SessionWindows, Windowed};
    let driver =
        TopologyTestDriver::with_config("meta-cogroup-session-init", Config::new().statestore_cache_max_bytes(0))
            .unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap().group_by_key().unwrap();
    let views = driver.stream::<String, String>("views").unwrap().group_by_key().unwrap();
    let first = |m: &polystreams::RecordMetadata| m.topic.chars().next().unwrap_or('?');
    clicks
        .cogroup(|_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .cogroup(&views, |_k: &String, v: String, agg: String| format!("{agg}+{v}"))
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(std::time::Duration::from_millis(5)))
        .with_metadata()
        .aggregate_with(
            move |m| format!("i{}{}", first(m), m.offset),
            move |_k: &String, a: String, b: String, m| format!("({a}|{b})m{}{}", first(m), m.offset),
            // Kept past the default retention (gap + grace), so that a's session is still there for c.
            Options::new().materialized(Materialized::named("").retention(std::time::Duration::from_secs(60))),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("out")
        .unwrap();
    driver.pipe_record("clicks", "k".to_owned(), "a".to_owned(), Some(0), &[]).unwrap();
    driver.pipe_record("views", "k".to_owned(), "b".to_owned(), Some(10), &[]).unwrap();
    driver.pipe_record("clicks", "k".to_owned(), "c".to_owned(), Some(5), &[]).unwrap();
    let got: Vec<(i64, i64, Option<String>)> = driver
        .read_output::<Windowed<String>, Option<String>>("out")
        .unwrap()
        .into_iter()
        .map(|r| (r.key.start_ms, r.key.end_ms, r.value))
        .collect();
    // c (clicks, offset 1) bridges the sessions of a and b: the merged
    // session starts from init, merges each, then folds c in, with c's metadata.
    assert_eq!(
        got,
        [
            (0, 0, Some("ic0+a".to_owned())),
            (10, 10, Some("iv0+b".to_owned())),
            (0, 0, None),
            (10, 10, None),
            (0, 10, Some("((ic1|ic0+a)mc1|iv0+b)mc1+c".to_owned())),
        ]
    );
}
