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
