//! The options of an operator ([`Options`]) and of a state store
//! ([`Materialized`]).

use crate::errors::{Error, Result};
use crate::extract::TimestampExtractor;
use crate::pb;

/// Names and types a state store (Kafka Streams' `Materialized`).
///
/// `Materialized::named("counts")` names the store (and so its changelog
/// topic, `<application.id>-counts-changelog`) and makes it queryable;
/// `Materialized::new().value_serde("long")` gives serdes only, and the
/// store's name is generated. `.changelog_config("min.compaction.lag.ms",
/// "60000")` is `Materialized.withLoggingEnabled`: topic configs of the
/// store's changelog, applied when the engine creates it (a key-value
/// store's changelog stays compacted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Materialized {
    store_name: String,
    key_serde: String,
    value_serde: String,
    changelog_config: std::collections::BTreeMap<String, String>,
    retention_ms: i64,
    versioned: Option<(i64, i64)>,
}

impl Materialized {
    /// Materialized with a generated name.
    pub fn new() -> Materialized {
        Materialized::default()
    }
    /// `Materialized.as(name)`.
    pub fn named(store_name: impl Into<String>) -> Materialized {
        Materialized { store_name: store_name.into(), ..Materialized::default() }
    }
    /// The store's key serde (a serde name: bytes, string, json, long, integer, double).
    pub fn key_serde(mut self, serde: impl Into<String>) -> Materialized {
        self.key_serde = serde.into();
        self
    }
    /// The store's value serde.
    pub fn value_serde(mut self, serde: impl Into<String>) -> Materialized {
        self.value_serde = serde.into();
        self
    }
    /// A topic config of the store's changelog (`Materialized.withLoggingEnabled`).
    pub fn changelog_config(mut self, key: impl Into<String>, value: impl Into<String>) -> Materialized {
        self.changelog_config.insert(key.into(), value.into());
        self
    }
    /// `Materialized.withRetention(retention)`: how long a windowed
    /// aggregation's store keeps its windows (at least window size plus
    /// grace; the engine refuses less). Unset, the engine's default.
    pub fn retention(mut self, retention: std::time::Duration) -> Materialized {
        self.retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        self
    }
    /// `Materialized.as(Stores.persistentVersionedKeyValueStore(name,
    /// historyRetention))` (KIP-889), for a table source's named store: it
    /// keeps every version of a key for `history_retention`, and a
    /// stream-table join reads the version valid at each stream record's
    /// timestamp (KIP-914). Query it with
    /// [`App::versioned_store`](crate::App::versioned_store).
    pub fn versioned(self, history_retention: std::time::Duration) -> Materialized {
        self.versioned_segments(history_retention, std::time::Duration::ZERO)
    }
    /// [`versioned`](Self::versioned) with the store's segment interval
    /// (`persistentVersionedKeyValueStore`'s third argument; checked, not
    /// used: the engine's layout has no segments). Zero: not given.
    pub fn versioned_segments(
        mut self,
        history_retention: std::time::Duration,
        segment_interval: std::time::Duration,
    ) -> Materialized {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.versioned = Some((ms(history_retention), ms(segment_interval)));
        self
    }
    pub(crate) fn to_proto(&self) -> pb::Materialized {
        pb::Materialized {
            store_name: self.store_name.clone(),
            key_serde: self.key_serde.clone(),
            value_serde: self.value_serde.clone(),
            changelog_config: self.changelog_config.clone().into_iter().collect(),
            retention_ms: self.retention_ms,
            versioned: self
                .versioned
                .map(|(h, s)| pb::VersionedStore { history_retention_ms: h, segment_interval_ms: s }),
        }
    }
}

impl From<&str> for Materialized {
    fn from(name: &str) -> Materialized {
        Materialized::named(name)
    }
}

/// The options of an operator, as Kafka Streams' `Named`, `Grouped`,
/// `Produced`, `Consumed` and `Materialized` give them: `name` names the
/// processor node (or the repartition topic, for a grouping; the source, for
/// a stream or table); `key_serde` and `value_serde` override the serdes the
/// Rust types would give; `materialized` keeps an aggregation's or a
/// table operator's result in a store. Each `*_with` method says which it
/// takes, and refuses the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    name: Option<String>,
    key_serde: Option<String>,
    value_serde: Option<String>,
    materialized: Option<Materialized>,
    offset_reset: Option<OffsetReset>,
    timestamp_extractor: Option<TimestampExtractor>,
}

/// Kafka Streams' `auto.offset.reset`, and a source's
/// `Consumed.withOffsetResetPolicy`: where a partition with no committed
/// offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// From the first record the partition holds (the default).
    Earliest,
    /// From the records written after the application starts.
    Latest,
    /// Nowhere: the application fails naming the partition.
    None,
}

impl OffsetReset {
    /// The value's Kafka Streams name: `earliest`, `latest` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetReset::Earliest => "earliest",
            OffsetReset::Latest => "latest",
            OffsetReset::None => "none",
        }
    }
}

pub(crate) const NAME: u8 = 1;
pub(crate) const KEY: u8 = 2;
pub(crate) const VALUE: u8 = 4;
pub(crate) const MATERIALIZED: u8 = 8;
pub(crate) const OFFSET_RESET: u8 = 16;
pub(crate) const TIMESTAMP_EXTRACTOR: u8 = 32;

impl Options {
    pub fn new() -> Options {
        Options::default()
    }
    /// Options naming the node: `Named.as(name)`.
    pub fn named(name: impl Into<String>) -> Options {
        Options::new().name(name)
    }
    pub fn name(mut self, name: impl Into<String>) -> Options {
        self.name = Some(name.into());
        self
    }
    /// A serde name: bytes, string, json, long, integer, double.
    pub fn key_serde(mut self, serde: impl Into<String>) -> Options {
        self.key_serde = Some(serde.into());
        self
    }
    pub fn value_serde(mut self, serde: impl Into<String>) -> Options {
        self.value_serde = Some(serde.into());
        self
    }
    /// A source's `Consumed.withOffsetResetPolicy` (stream and table):
    /// where a partition with no committed offset starts; absent, the
    /// config's `auto.offset.reset` decides.
    pub fn offset_reset(mut self, policy: OffsetReset) -> Options {
        self.offset_reset = Some(policy);
        self
    }
    /// A source's `Consumed.withTimestampExtractor` (stream and table) with
    /// one of Kafka Streams' built-in extractors; for a Rust function see
    /// [`App::stream_with_extractor`](crate::App::stream_with_extractor).
    pub fn timestamp_extractor(mut self, extractor: TimestampExtractor) -> Options {
        self.timestamp_extractor = Some(extractor);
        self
    }
    /// A store: `Materialized::named("counts")`, or just `"counts"`.
    pub fn materialized(mut self, m: impl Into<Materialized>) -> Options {
        self.materialized = Some(m.into());
        self
    }

    pub(crate) fn check(&self, op: &str, allowed: u8) -> Result<()> {
        let mut bad = Vec::new();
        for (set, bit, what) in [
            (self.name.is_some(), NAME, "name"),
            (self.key_serde.is_some(), KEY, "key_serde"),
            (self.value_serde.is_some(), VALUE, "value_serde"),
            (self.materialized.is_some(), MATERIALIZED, "materialized"),
            (self.offset_reset.is_some(), OFFSET_RESET, "offset_reset"),
            (self.timestamp_extractor.is_some(), TIMESTAMP_EXTRACTOR, "timestamp_extractor"),
        ] {
            if set && allowed & bit == 0 {
                bad.push(what);
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid(format!("{op}: takes no {} option", bad.join(" or "))))
        }
    }
    /// These options' name alone.
    pub(crate) fn name_only(&self) -> Options {
        Options { name: self.name.clone(), ..Options::default() }
    }
    /// These options' key serde alone.
    pub(crate) fn key_only(&self) -> Options {
        Options { key_serde: self.key_serde.clone(), ..Options::default() }
    }
    /// The source's built-in extractor as the protocol gives it.
    pub(crate) fn extractor_proto(&self) -> Option<pb::TimestampExtractor> {
        self.timestamp_extractor.map(|e| pb::TimestampExtractor { token: 0, builtin: e.as_str().to_owned() })
    }
    pub(crate) fn offset_reset_or_empty(&self) -> String {
        self.offset_reset.map(|p| p.as_str().to_owned()).unwrap_or_default()
    }
    pub(crate) fn name_or_empty(&self) -> String {
        self.name.clone().unwrap_or_default()
    }
    pub(crate) fn key_or(&self, default: &str) -> String {
        self.key_serde.clone().unwrap_or_else(|| default.to_owned())
    }
    pub(crate) fn value_or(&self, default: &str) -> String {
        self.value_serde.clone().unwrap_or_else(|| default.to_owned())
    }
    pub(crate) fn materialized_proto(&self) -> Option<pb::Materialized> {
        self.materialized.as_ref().map(Materialized::to_proto)
    }
}
