//! Global-table and foreign-key joins with a built-in joiner and an async
//! key mapper or extractor (`join_global_builtin_async`,
//! `left_join_global_builtin_async`, `foreign_key_join_builtin_async`,
//! `left_foreign_key_join_builtin_async`) against
//! the REAL engine binary (test driver sessions, `$POLYSTREAMS_ENGINE`, else
//! `bin/polystreams`).

mod common;

use polystreams::{Config, Joiner, Options, TopologyTestDriver};

use common::Yield;

#[test]
fn an_async_key_mapper_finds_the_global_row_a_builtin_joiner_joins() {
    let driver = TopologyTestDriver::new("async-global-builtin").unwrap();
    let prices = driver.global_table::<String, String>("prices").unwrap();
    let orders = driver.stream::<String, String>("orders").unwrap();
    // The order's value names its product; later orders' lookups finish first.
    let product = |_k: &String, v: &String| {
        let v = v.clone();
        async move {
            Yield(4 - v.len().min(4)).await;
            v
        }
    };
    orders
        .join_global_builtin_async::<String, String, String, _, _>(&prices, product, Joiner::Other, Options::new())
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .left_join_global_builtin_async::<String, String, String, _, _>(&prices, product, Joiner::This, Options::new())
        .unwrap()
        .to("left-out")
        .unwrap();
    driver.pipe_input("prices", "pen".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_input("prices", "ink".to_owned(), "3".to_owned()).unwrap();
    for (k, v) in [("o1", "pen"), ("o2", "none"), ("o3", "ink")] {
        driver.pipe_input("orders", k.to_owned(), v.to_owned()).unwrap();
    }
    let read = |topic: &str| -> Vec<(String, String)> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| (r.key, r.value)).collect()
    };
    let s = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(read("inner-out"), [s("o1", "10"), s("o3", "3")]);
    assert_eq!(read("left-out"), [s("o1", "pen"), s("o2", "none"), s("o3", "ink")]);
}

#[test]
fn an_async_foreign_key_extractor_finds_the_row_a_builtin_joiner_joins() {
    let driver =
        TopologyTestDriver::with_config("async-fk-builtin", Config::new().statestore_cache_max_bytes(0)).unwrap();
    let orders = driver.table::<String, String>("orders").unwrap();
    let products = driver.table::<String, String>("products").unwrap();
    // An order's value names its product; "-" names none.
    let product = |v: &String| {
        let v = v.clone();
        async move {
            Yield(2).await;
            (v != "-").then_some(v)
        }
    };
    orders
        .foreign_key_join_builtin_async::<String, String, String, _, _>(
            &products,
            product,
            Joiner::Other,
            Options::new(),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("inner-out")
        .unwrap();
    orders
        .left_foreign_key_join_builtin_async::<String, String, String, _, _>(
            &products,
            product,
            Joiner::This,
            Options::new(),
        )
        .unwrap()
        .to_stream()
        .unwrap()
        .to("left-out")
        .unwrap();
    driver.pipe_input("products", "pen".to_owned(), "10".to_owned()).unwrap();
    driver.pipe_input("orders", "o1".to_owned(), "pen".to_owned()).unwrap();
    driver.pipe_input("orders", "o2".to_owned(), "-".to_owned()).unwrap();
    let read = |topic: &str| -> Vec<(String, String)> {
        driver.read_output::<String, String>(topic).unwrap().into_iter().map(|r| (r.key, r.value)).collect()
    };
    let s = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(read("inner-out"), [s("o1", "10")]);
    assert_eq!(read("left-out"), [s("o1", "pen"), s("o2", "-")]);
}
