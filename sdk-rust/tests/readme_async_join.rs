//! The README's "Async joins and table operators" example, as it is printed there (the last test here checks they are the same).
use polystreams::TopologyTestDriver;

// Stands in for an async call to a pricing service.
async fn price_of(item: &str, tier: &str) -> u32 {
    let base = if item == "book" { 20 } else { 5 };
    match tier {
        "gold" => base / 2,
        _ => base,
    }
}

#[test]
fn carts_priced_for_their_users_tier() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("price-carts")?;
    let tiers = driver.table::<String, String>("tiers")?;
    driver
        .table::<String, String>("carts")?
        // A table-table join whose joiner awaits the pricing service.
        .join_async(&tiers, |item: String, tier: String| async move {
            let price = price_of(&item, &tier).await;
            format!("{item} at {price}")
        })?
        // A table filter with an async predicate: the rows it drops are deleted.
        .filter_async(|_user: &String, offer: &String| {
            let cheap = offer.ends_with(" at 2");
            async move { !cheap }
        })?
        .to_stream()?
        .to("offers")?;
    driver.pipe_input("tiers", "ann".to_owned(), "gold".to_owned())?;
    driver.pipe_input("carts", "ann".to_owned(), "book".to_owned())?;
    let out = driver.read_output::<String, String>("offers")?;
    assert_eq!(out.iter().map(|r| r.value.as_str()).collect::<Vec<_>>(), ["book at 10"]);
    Ok(())
}

/// The README prints this file's body above, verbatim, as its example.
#[test]
fn readme_async_join_example_is_this_test() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let section = &readme[readme.find("\n#### Async joins and table operators\n").expect("the section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &section[start..start + section[start..].find("\n```").expect("the block ends") + 1];
    let test = std::fs::read_to_string(dir.join("tests").join("readme_async_join.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    let example = &body[..body.find("\n\n/// The README prints").expect("this test") + 1];
    assert_eq!(block, example, "README.md's async join example and tests/readme_async_join.rs differ");
}
