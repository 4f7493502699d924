//! The example of docs/testing.md (Rust), run as it is printed there.
use polystreams::{Config, Options, TopologyTestDriver};

fn build_word_count(driver: &TopologyTestDriver) -> polystreams::Result<()> {
    driver
        .stream::<(), String>("lines")?
        .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())?
        .group_by(|_, word: &String| word.clone())?
        .count_with(Options::new().materialized("counts"))?
        .to_stream()?
        .to("word-counts")?;
    Ok(())
}

#[test]
fn word_count() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::with_config("wordcount", Config::new().statestore_cache_max_bytes(0))?;
    build_word_count(&driver)?;
    driver.pipe_record("lines", (), "the cat".to_owned(), Some(1_000), &[])?;
    driver.pipe_record("lines", (), "the dog".to_owned(), Some(2_000), &[])?;
    let out: Vec<(String, i64)> =
        driver.read_output::<String, i64>("word-counts")?.into_iter().map(|r| (r.key, r.value)).collect();
    let want = [("the", 1), ("cat", 1), ("the", 2), ("dog", 1)];
    assert_eq!(out, want.map(|(k, v)| (k.to_owned(), v)));
    assert_eq!(driver.get_store::<String, i64>("counts")?.get(&"the".to_owned())?, Some(2));
    Ok(())
}

#[test]
fn word_count_with_the_record_cache() -> polystreams::Result<()> {
    // The cache (on by default) is flushed after each piped record, so each
    // line yields the latest count of each of its words once.
    let driver = TopologyTestDriver::new("wordcount")?;
    build_word_count(&driver)?;
    driver.pipe_input("lines", (), "b a b".to_owned())?;
    let counts = driver.read_key_values_to_map::<String, i64>("word-counts")?;
    assert_eq!(counts, [("a".to_owned(), 1), ("b".to_owned(), 2)].into_iter().collect());
    Ok(())
}
