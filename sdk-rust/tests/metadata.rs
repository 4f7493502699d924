//! Record metadata beyond stateless chains, against the REAL engine binary
//! (test driver sessions): reducers, aggregators, initializers and
//! joiners read the metadata of the record they are called for
//! (docs/design/processor.md, "Metadata, opt-in").

use polystreams::{Config, TopologyTestDriver};

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
