//! Interactive queries: read a table's key-value store while the app runs
//! (Kafka Streams' `ReadOnlyKeyValueStore`).

use std::marker::PhantomData;
use std::sync::Arc;

use crate::bundle::column;
use crate::errors::{Error, Result};
use crate::pb::{self, query_request::Query};
use crate::serdes::{inner_serde, Windowed};
use crate::serdes::{to_bytes, Serde};
use crate::session::Session;

/// Entries asked for per Query call; longer answers are read page by page.
const PAGE: i32 = 10_000;

/// A read-only view of a key-value store of the running topology
/// ([`App::store`](crate::App::store) or [`KTable::query`](crate::KTable::query)).
///
/// Keys are encoded with the store's key serde; entries come back decoded,
/// in the order of their **serialized** keys (as in Kafka Streams' RocksDB
/// stores): byte order of UTF-8 text for string keys, big-endian two's
/// complement for long and integer keys (so negative numbers sort after
/// positive ones). Entries are those of the store partitions this engine
/// holds. Queries may be made from any thread while the app runs; before it
/// runs they return [`Error::FailedPrecondition`], and a store that does
/// not exist [`Error::NotFound`] naming it and the stores that do.
///
/// With `application.server` set on every instance of the application, the
/// engine answers from whichever instance holds the key (for `range`,
/// `prefix` and `all`, from every instance); while the group moves a
/// partition, a query of it returns [`Error::Unavailable`] naming store, key
/// and partition: retry it.
pub struct KeyValueStore<K, V> {
    app: Arc<Session>,
    name: String,
    stale: bool,
    _types: PhantomData<fn() -> (K, V)>,
}

/// An instance's `application.server` (Kafka Streams' `HostInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostInfo {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for HostInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl From<&pb::HostInfo> for HostInfo {
    fn from(h: &pb::HostInfo) -> Self {
        HostInfo { host: h.host.clone(), port: u16::try_from(h.port).unwrap_or(0) }
    }
}

/// Where a key of a store lives (Kafka Streams' `KeyQueryMetadata`):
/// `active_host` is None while no instance holds the key's partition
/// (`NOT_AVAILABLE`, e.g. during a rebalance); `partition` is murmur2 of the
/// serialized key modulo the partitions of the store's source topic (-1 for
/// a global store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyQueryMetadata {
    pub active_host: Option<HostInfo>,
    pub standby_hosts: Vec<HostInfo>,
    pub partition: i32,
}

/// One instance of the application (Kafka Streams' `StreamsMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamsMetadata {
    pub host_info: HostInfo,
    pub state_store_names: Vec<String>,
    pub topic_partitions: Vec<(String, i32)>,
    pub standby_state_store_names: Vec<String>,
    pub standby_topic_partitions: Vec<(String, i32)>,
}

impl From<&pb::StreamsMetadata> for StreamsMetadata {
    fn from(m: &pb::StreamsMetadata) -> Self {
        let tps = |l: &[pb::TopicPartition]| l.iter().map(|tp| (tp.topic.clone(), tp.partition)).collect();
        StreamsMetadata {
            host_info: m.host_info.as_ref().map(HostInfo::from).unwrap_or(HostInfo { host: String::new(), port: 0 }),
            state_store_names: m.state_store_names.clone(),
            topic_partitions: tps(&m.topic_partitions),
            standby_state_store_names: m.standby_state_store_names.clone(),
            standby_topic_partitions: tps(&m.standby_topic_partitions),
        }
    }
}

/// The answer of [`KeyValueStore::query`] (an IQv2 `KeyQuery` result).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyQueryResult<V> {
    /// None when the store holds no value for the key.
    pub value: Option<V>,
    /// The timestamp of the record that last wrote the value.
    pub timestamp: Option<i64>,
    /// The key's partition.
    pub partition: Option<i32>,
    /// A standby copy answered (only with stale stores enabled): it may lag.
    pub from_standby: bool,
    /// The instances that answered (their `application.server`).
    pub served_by: Vec<String>,
}

impl<K: Serde, V: Serde> KeyValueStore<K, V> {
    pub(crate) fn new(app: Arc<Session>, name: &str) -> Self {
        KeyValueStore { app, name: name.to_owned(), stale: false, _types: PhantomData }
    }

    /// Lets standby copies answer (Kafka Streams'
    /// `StoreQueryParameters.enableStaleStores()`): a key whose active
    /// instance cannot answer is read from a standby, which may lag.
    #[must_use]
    pub fn enable_stale_stores(mut self) -> Self {
        self.stale = true;
        self
    }

    /// The value of `key` with its timestamp, partition and whether a
    /// standby answered (Kafka Streams' IQv2 `KeyQuery`).
    pub fn query(&self, key: &K) -> Result<KeyQueryResult<V>> {
        let k = self.encode(key, "query")?;
        let (mut entries, _, resp) = self.run(Query::Get(k))?;
        Ok(KeyQueryResult {
            timestamp: if entries.is_empty() { None } else { resp.timestamps.first().copied() },
            value: entries.pop().map(|(_, _, v)| v),
            partition: resp.partition,
            from_standby: resp.from_standby,
            served_by: resp.served_by,
        })
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value of `key`, or None when the store holds none.
    pub fn get(&self, key: &K) -> Result<Option<V>> {
        let k = self.encode(key, "get")?;
        let (mut entries, _, _) = self.run(Query::Get(k))?;
        Ok(entries.pop().map(|(_, _, v)| v))
    }

    /// The entries with keys from `from` to `to`, both inclusive; None
    /// leaves that end open.
    pub fn range(&self, from: Option<&K>, to: Option<&K>) -> Result<Vec<(K, V)>> {
        let lo = from.map(|k| self.encode(k, "range")).transpose()?;
        let hi = to.map(|k| self.encode(k, "range")).transpose()?;
        self.scan(lo, hi, None)
    }

    /// The entries whose serialized key starts with `prefix` (for string
    /// keys, the prefix's UTF-8 bytes: a text prefix).
    pub fn prefix(&self, prefix: &[u8]) -> Result<Vec<(K, V)>> {
        self.scan(Some(prefix.to_vec()), None, Some(prefix.to_vec()))
    }

    /// Every entry.
    pub fn all(&self) -> Result<Vec<(K, V)>> {
        self.scan(None, None, None)
    }

    /// The number of entries (counted by reading them).
    pub fn approximate_num_entries(&self) -> Result<usize> {
        Ok(self.all()?.len())
    }

    pub(crate) fn key_serde(&self) -> String {
        let known = self.app.store_key_serdes.lock().unwrap_or_else(|e| e.into_inner()).get(&self.name).cloned();
        known.unwrap_or_else(|| K::NAME.to_owned())
    }

    fn encode(&self, key: &K, what: &str) -> Result<Vec<u8>> {
        let serde = self.key_serde();
        match to_bytes(&serde, key) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Err(Error::invalid(format!("store {:?}: {what}: a key must not be null", self.name))),
            Err(e) => Err(Error::invalid(format!(
                "store {:?}: {what}: cannot encode the key with key serde {serde:?}: {e}",
                self.name
            ))),
        }
    }

    /// Runs one query: (raw key, key, value) entries, whether more matched,
    /// and the answer.
    #[allow(clippy::type_complexity)]
    fn run(&self, q: Query) -> Result<(Vec<(Vec<u8>, K, V)>, bool, pb::QueryResponse)> {
        let limit = if matches!(q, Query::Get(_)) { 0 } else { PAGE };
        let req = pb::QueryRequest {
            session_id: self.app.id.clone(),
            store: self.name.clone(),
            query: Some(q),
            limit,
            enable_stale_stores: self.stale,
            ..Default::default()
        };
        let resp = self.app.client.query(&req)?;
        let bad =
            |e: String| Error::internal(format!("Query {:?}: the engine's answer does not decode: {e}", self.name));
        let keys = column(&resp.keys, &resp.key_lengths).map_err(bad)?;
        let values = column(&resp.values, &resp.value_lengths).map_err(bad)?;
        if keys.len() != values.len() {
            return Err(bad(format!("{} keys, {} values", keys.len(), values.len())));
        }
        let mut out = Vec::with_capacity(keys.len());
        for (k, v) in keys.into_iter().zip(values) {
            let key = K::decode(&resp.key_serde, k).map_err(|e| bad(e.0))?;
            let value = V::decode(&resp.value_serde, v).map_err(|e| bad(e.0))?;
            out.push((k.unwrap_or_default().to_vec(), key, value));
        }
        let truncated = resp.truncated;
        Ok((out, truncated, resp))
    }

    fn scan(&self, lo: Option<Vec<u8>>, hi: Option<Vec<u8>>, prefix: Option<Vec<u8>>) -> Result<Vec<(K, V)>> {
        let mut q = match (&prefix, &lo, &hi) {
            (Some(p), _, _) => Query::Prefix(p.clone()),
            (None, None, None) => Query::All(true),
            _ => Query::Range(pb::KeyRange { from: lo, to: hi.clone() }),
        };
        let mut out = Vec::new();
        loop {
            let (entries, truncated, _) = self.run(q)?;
            let mut last = None;
            for (raw, k, v) in entries {
                if let Some(p) = &prefix {
                    if !raw.starts_with(p) {
                        return Ok(out);
                    }
                }
                out.push((k, v));
                last = Some(raw);
            }
            let Some(mut next) = last.filter(|_| truncated) else {
                return Ok(out);
            };
            // The next page starts just after the last key (key + 0x00 is the
            // next possible key in byte order).
            next.push(0);
            q = Query::Range(pb::KeyRange { from: Some(next), to: hi.clone() });
        }
    }
}

pub use crate::processor::VersionedRecord;

/// A read-only view of a versioned store of the running topology
/// ([`App::versioned_store`](crate::App::versioned_store)): a table
/// materialized with [`Materialized::versioned`](crate::Materialized::versioned)
/// (Kafka Streams' `VersionedKeyValueStore`, KIP-889).
///
/// [`get`](Self::get) answers the latest version of a key,
/// [`get_as_of`](Self::get_as_of) the version valid at a time. A read as of
/// a time older than the store's history retention (behind the newest
/// timestamp the store saw) finds nothing, unless the key's latest version
/// is older still; a deleted key (a tombstone) finds nothing. Errors are as
/// for [`KeyValueStore`].
pub struct VersionedKeyValueStore<K, V> {
    kv: KeyValueStore<K, V>,
}

impl<K: Serde, V: Serde> VersionedKeyValueStore<K, V> {
    pub(crate) fn new(app: Arc<Session>, name: &str) -> Self {
        VersionedKeyValueStore { kv: KeyValueStore::new(app, name) }
    }

    /// Lets standby copies answer, as [`KeyValueStore::enable_stale_stores`].
    #[must_use]
    pub fn enable_stale_stores(self) -> Self {
        VersionedKeyValueStore { kv: self.kv.enable_stale_stores() }
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.kv.name
    }

    /// The latest version of `key` (`VersionedKeyValueStore.get(key)`), or
    /// None when there is none.
    pub fn get(&self, key: &K) -> Result<Option<VersionedRecord<V>>> {
        self.version(key, None)
    }

    /// The version of `key` valid at `as_of` (epoch ms;
    /// `VersionedKeyValueStore.get(key, asOfTimestamp)`), or None.
    pub fn get_as_of(&self, key: &K, as_of: i64) -> Result<Option<VersionedRecord<V>>> {
        self.version(key, Some(as_of))
    }

    fn version(&self, key: &K, as_of_ms: Option<i64>) -> Result<Option<VersionedRecord<V>>> {
        let k = self.kv.encode(key, "get")?;
        let (mut entries, _, resp) = self.kv.run(Query::VersionedGet(pb::VersionedGet { key: k, as_of_ms }))?;
        Ok(entries.pop().map(|(_, _, value)| VersionedRecord {
            value,
            timestamp: resp.timestamps.first().copied().unwrap_or_default(),
            valid_to: resp.valid_to_ms,
        }))
    }
}

impl<K, V> std::fmt::Debug for VersionedKeyValueStore<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VersionedKeyValueStore({:?})", self.kv.name)
    }
}

impl<K, V> std::fmt::Debug for KeyValueStore<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyValueStore({:?})", self.name)
    }
}

/// A read-only view of a window or session store of the running topology
/// (a windowed aggregation's table: [`KTable::window_store`](crate::KTable::window_store),
/// or [`App::window_store`](crate::App::window_store)): Kafka Streams'
/// `ReadOnlyWindowStore.fetch` / `fetchAll` and `SessionStore.findSessions`.
pub struct WindowStore<K, V> {
    app: Arc<Session>,
    name: String,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K: Serde, V: Serde> WindowStore<K, V> {
    pub(crate) fn new(app: Arc<Session>, name: &str) -> Self {
        WindowStore { app, name: name.to_owned(), _types: PhantomData }
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The windows of `key` that start from `from_ms` to `to_ms`, both
    /// inclusive (a session store: sessions ending at or after `from_ms`
    /// and starting at or before `to_ms`), with their aggregates.
    pub fn fetch(&self, key: &K, from_ms: i64, to_ms: i64) -> Result<Vec<(Windowed<K>, V)>> {
        let serde = self.app.store_key_serdes.lock().unwrap_or_else(|e| e.into_inner()).get(&self.name).cloned();
        let inner = serde.as_deref().and_then(inner_serde).unwrap_or(K::NAME).to_owned();
        let k = match to_bytes(&inner, key) {
            Ok(Some(b)) => b,
            Ok(None) => {
                return Err(Error::invalid(format!("window store {:?}: fetch: a key must not be null", self.name)))
            }
            Err(e) => {
                return Err(Error::invalid(format!("window store {:?}: fetch: cannot encode the key: {e}", self.name)))
            }
        };
        self.fetch_windows(Some(k), from_ms, to_ms)
    }

    /// The windows of every key in the time range (`fetchAll`).
    pub fn fetch_all(&self, from_ms: i64, to_ms: i64) -> Result<Vec<(Windowed<K>, V)>> {
        self.fetch_windows(None, from_ms, to_ms)
    }

    fn fetch_windows(&self, key: Option<Vec<u8>>, from_ms: i64, to_ms: i64) -> Result<Vec<(Windowed<K>, V)>> {
        let req = pb::QueryRequest {
            session_id: self.app.id.clone(),
            store: self.name.clone(),
            query: Some(Query::WindowFetch(pb::WindowFetch { key, from_ms, to_ms })),
            limit: 0,
            ..Default::default()
        };
        let resp = self.app.client.query(&req)?;
        if resp.truncated {
            return Err(Error::invalid(format!(
                "window store {:?}: more windows match than one query answers (100,000): narrow the time range",
                self.name
            )));
        }
        let bad =
            |e: String| Error::internal(format!("Query {:?}: the engine's answer does not decode: {e}", self.name));
        let keys = column(&resp.keys, &resp.key_lengths).map_err(bad)?;
        let values = column(&resp.values, &resp.value_lengths).map_err(bad)?;
        if keys.len() != values.len() {
            return Err(bad(format!("{} keys, {} values", keys.len(), values.len())));
        }
        keys.into_iter()
            .zip(values)
            .map(|(k, v)| {
                let key = Windowed::<K>::decode(&resp.key_serde, k).map_err(|e| bad(e.0))?;
                Ok((key, V::decode(&resp.value_serde, v).map_err(|e| bad(e.0))?))
            })
            .collect()
    }
}

impl<K, V> std::fmt::Debug for WindowStore<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WindowStore({:?})", self.name)
    }
}
