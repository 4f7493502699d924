//! Built-in joiners (`Joiner::Pair`, `This`, `Other`) against the REAL engine
//! binary: they run in the engine, so no joiner closure exists to cross to.

use polystreams::{Error, JoinWindows, Joiner, Options, TopologyTestDriver};
use serde_json::{json, Value};

#[test]
fn pair_in_a_stream_table_left_join_runs_in_the_engine() {
    // KStreamKTableJoinProcessor: a left join calls the joiner with a null
    // table value for a key the table does not hold.
    let driver = TopologyTestDriver::new("rs-builtin-join").unwrap();
    let customers = driver.table::<String, String>("customers").unwrap();
    let orders = driver.stream::<String, i64>("orders").unwrap();
    let joined = orders.left_join_builtin::<String, Value>(&customers, Joiner::Pair, Options::new()).unwrap();
    joined.to("out").unwrap();
    driver.pipe_input("customers", "c1".to_owned(), "ann".to_owned()).unwrap();
    driver.pipe_input("orders", "c1".to_owned(), 5i64).unwrap();
    driver.pipe_input("orders", "c2".to_owned(), 7i64).unwrap();
    let out: Vec<(String, Value)> =
        driver.read_output::<String, Value>("out").unwrap().into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(out, vec![("c1".to_owned(), json!([5, "ann"])), ("c2".to_owned(), json!([7, null]))]);
}

#[test]
fn this_and_other_in_table_table_and_stream_stream_joins() {
    let driver = TopologyTestDriver::new("rs-builtin-join-kinds").unwrap();
    let l = driver.table::<String, String>("l").unwrap();
    let r = driver.table::<String, i64>("r").unwrap();
    l.outer_join_builtin::<i64, Option<i64>>(&r, Joiner::Other, Options::new())
        .unwrap()
        .to_stream()
        .unwrap()
        .to("tt")
        .unwrap();
    let views = driver.stream::<String, String>("views").unwrap();
    let clicks = driver.stream::<String, String>("clicks").unwrap();
    views
        .join_stream_builtin::<String, String>(
            &clicks,
            Joiner::This,
            JoinWindows::of_time_difference_with_no_grace(std::time::Duration::from_millis(100)),
            Options::new(),
        )
        .unwrap()
        .to("ss")
        .unwrap();
    driver.pipe_record("l", "k".to_owned(), "a".to_owned(), Some(1), &[]).unwrap();
    driver.pipe_record("r", "k".to_owned(), 9i64, Some(2), &[]).unwrap();
    // KTableKTableOuterJoin: the left row alone joins a null right value.
    let tt: Vec<Option<i64>> =
        driver.read_output::<String, Option<i64>>("tt").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(tt, vec![None, Some(9)]);
    driver.pipe_record("views", "a".to_owned(), "v1".to_owned(), Some(1000), &[]).unwrap();
    driver.pipe_record("clicks", "a".to_owned(), "c1".to_owned(), Some(1050), &[]).unwrap();
    let ss: Vec<String> = driver.read_output::<String, String>("ss").unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(ss, vec!["v1".to_owned()]);
}

#[test]
fn builtin_joiner_refusals_name_the_offender() {
    let driver = TopologyTestDriver::new("rs-builtin-join-refusals").unwrap();
    let raw = driver.table::<String, Vec<u8>>("raw").unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    let e = orders.join_builtin::<Vec<u8>, Value>(&raw, Joiner::Pair, Options::new()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. })
            && e.message().contains("built-in joiner pair cannot read the other side, handle")
            && e.message().contains("bytes values have no JSON form"),
        "{e}"
    );
    // This keeps the stream's string values; asking for json is refused.
    let e = orders.join_builtin::<Vec<u8>, Value>(&raw, Joiner::This, Options::new()).unwrap_err();
    assert!(e.message().contains("built-in joiner this makes string values, but the value serde is json"), "{e}");
}
