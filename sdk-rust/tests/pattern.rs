//! stream(Pattern) refused when Go's RE2 cannot read the pattern.
use polystreams::{Error, Pattern, TopologyTestDriver};

#[test]
fn a_pattern_re2_cannot_read_is_refused_naming_it() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("pattern-refused")?;
    match driver.stream::<String, String>(Pattern::new("orders-(?!eu).*")) {
        Err(e @ Error::InvalidArgument { .. }) => {
            assert!(
                e.to_string().contains(r#"pattern "orders-(?!eu).*" is not a regular expression Go's RE2 reads"#),
                "{e}"
            )
        }
        Err(e) => panic!("want InvalidArgument, got {e}"),
        Ok(_) => panic!("a lookahead was accepted"),
    }
    Ok(())
}

#[test]
fn a_topology_source_reads_a_pattern() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("pattern-topology")?;
    driver
        .topology()
        .add_source::<String, String>("orders", Pattern::new("orders-[a-z]{2}"))?
        .add_sink::<String, String>("all", "all-orders", &["orders"])?;
    assert!(driver.describe()?.contains("Source: orders (topics: orders-[a-z]{2})"));
    driver.pipe_input("orders-eu", "o1".to_owned(), "eu".to_owned())?;
    driver.pipe_input("orders-us", "o2".to_owned(), "us".to_owned())?;
    let got: Vec<(String, String)> =
        driver.read_output::<String, String>("all-orders")?.into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(got, [("o1".to_owned(), "eu".to_owned()), ("o2".to_owned(), "us".to_owned())]);
    Ok(())
}
