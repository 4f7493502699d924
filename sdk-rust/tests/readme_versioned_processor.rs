//! The README's "A processor's versioned store" example, as it is printed there (tests/readme.rs checks they are the same).
use std::time::Duration;

use polystreams::processor::{
    Processor, ProcessorContext, ProcessorResult, Record, Stores, VersionedKeyValueStore, PUT_RETURN_CODE_NOT_PUT,
};
use polystreams::TopologyTestDriver;

/// Puts each price as a version at its record's time; says what it replaced.
struct PriceHistory;

impl Processor<String, i64, String, String> for PriceHistory {
    fn process(&mut self, ctx: &mut ProcessorContext<String, String>, r: Record<String, i64>) -> ProcessorResult {
        let prices: VersionedKeyValueStore<String, i64> = ctx.get_state_store("prices")?;
        let valid_to = prices.put(&r.key, &r.value, r.timestamp)?;
        let note = if valid_to == PUT_RETURN_CODE_NOT_PUT {
            "too late".to_owned()
        } else {
            let before = prices.get_as_of(&r.key, r.timestamp - 1)?.map(|v| v.value);
            format!("was {before:?}, valid to {valid_to}")
        };
        Ok(ctx.forward(r.with_value(note))?)
    }
}

#[test]
fn price_history() -> polystreams::Result<()> {
    let driver = TopologyTestDriver::new("price-history")?;
    driver.add_state_store(Stores::versioned_key_value_store::<String, i64>("prices", Duration::from_secs(60)))?;
    driver.stream::<String, i64>("prices")?.process(|| PriceHistory, &["prices"])?.to("notes")?;
    for (t, price) in [(100_000, 10_i64), (200_000, 12), (150_000, 11), (10_000, 9)] {
        driver.pipe_record("prices", "apple".to_owned(), price, Some(t), &[])?;
    }
    let notes: Vec<String> = driver.read_output::<String, String>("notes")?.into_iter().map(|r| r.value).collect();
    assert_eq!(
        notes,
        ["was None, valid to -1", "was Some(10), valid to -1", "was Some(10), valid to 200000", "too late"]
    );
    Ok(())
}
