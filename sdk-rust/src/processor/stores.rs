//! A processor's stores over the bundle's overlay (see host.rs): reads the
//! bundle brought cost nothing, others are one `Read` call each; writes are
//! ops of the bundle's answer. Iterators read the engine's whole answer
//! (chunk by chunk) and merge the bundle's writes into it, so they see what
//! Kafka Streams' would: puts replace or add keys, deletes hide them.

use std::marker::PhantomData;

use super::host::{encode, with_run, Entry, Op, Query, Row, Run, StoreState, Version};
use crate::errors::{Error, Result};
use crate::pb;
use crate::serdes::{Serde, Windowed};

mod sealed {
    pub trait Sealed {}
}

/// A store a processor gets with `ctx.get_state_store(name)`: a
/// [`KeyValueStore`], [`TimestampedKeyValueStore`], [`WindowStore`] or
/// [`VersionedKeyValueStore`].
pub trait StateStore: sealed::Sealed + Sized {
    #[doc(hidden)]
    fn open(node: &str, name: &str) -> Result<Self>;
}

/// A value with its timestamp, as a [`TimestampedKeyValueStore`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueAndTimestamp<V> {
    pub value: V,
    pub timestamp: i64,
}

fn open_checked(node: &str, name: &str, want: &[pb::StoreType], what: &str) -> Result<()> {
    with_run("get_state_store", node, |run| {
        let st = run.check_store(node, name)?;
        if !want.contains(&st.store_type) {
            return Err(Error::invalid(format!(
                "get_state_store: node {node}: store {name:?} is a {:?} store, not a {what}",
                st.store_type
            )));
        }
        Ok(())
    })
}

fn key_bytes<K: Serde>(st: &StoreState, key: &K, call: &str) -> Result<Vec<u8>> {
    match encode(key, &st.key_serde) {
        Ok(Some(k)) => Ok(k),
        Ok(None) => Err(Error::invalid(format!("store {:?}: {call}: a key must not be null", st.name))),
        Err(e) => Err(Error::invalid(format!(
            "store {:?}: {call}: the key does not encode with key serde {:?}: {e}",
            st.name, st.key_serde
        ))),
    }
}

fn value_bytes<V: Serde>(st: &StoreState, value: &V, call: &str) -> Result<Option<Vec<u8>>> {
    encode(value, &st.value_serde).map_err(|e| {
        Error::invalid(format!(
            "store {:?}: {call}: the value does not encode with value serde {:?}: {e}",
            st.name, st.value_serde
        ))
    })
}

fn decode<T: Serde>(store: &str, serde: &str, data: Option<&[u8]>, what: &str) -> Result<T> {
    T::decode(serde, data).map_err(|e| {
        Error::invalid(format!("store {store:?}: a stored {what} does not decode with serde {serde:?}: {e}"))
    })
}

/// The engine's rows of a query with the bundle's writes in range merged in.
fn merged(
    run: &mut Run,
    store: &str,
    q: impl Fn() -> Query,
    reverse: bool,
    inside: impl Fn(&[u8]) -> bool,
) -> Result<Vec<(Vec<u8>, Entry)>> {
    let rows = run.read_all(store, q, reverse)?;
    let st = run.store("read", store)?;
    let mut writes: Vec<(Vec<u8>, Entry)> =
        st.written.iter().filter(|(k, _)| inside(k)).map(|(k, e)| (k.clone(), e.clone())).collect();
    if reverse {
        writes.reverse();
    }
    let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
    let mut out = Vec::new();
    let mut wi = 0;
    for (k, v, t, _) in rows {
        while wi < writes.len() && before(&writes[wi].0, &k) {
            out.push(writes[wi].clone());
            wi += 1;
        }
        if wi < writes.len() && writes[wi].0 == k {
            out.push(writes[wi].clone());
            wi += 1;
            continue;
        }
        st.known.entry(k.clone()).or_insert((v.clone(), t));
        out.push((k, (v, t)));
    }
    out.extend(writes.drain(wi..));
    out.retain(|(_, (v, _))| v.is_some());
    Ok(out)
}

macro_rules! store_common {
    ($t:ident) => {
        impl<K, V> std::fmt::Debug for $t<K, V> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?} of node {})", stringify!($t), self.name, self.node)
            }
        }
        impl<K, V> Clone for $t<K, V> {
            fn clone(&self) -> Self {
                $t { name: self.name.clone(), node: self.node.clone(), _types: PhantomData }
            }
        }
        impl<K, V> sealed::Sealed for $t<K, V> {}
        impl<K, V> $t<K, V> {
            /// The store's name.
            pub fn name(&self) -> &str {
                &self.name
            }
        }
    };
}

/// A processor's key-value store (`KeyValueStore<K, V>`).
pub struct KeyValueStore<K, V> {
    name: String,
    node: String,
    _types: PhantomData<fn() -> (K, V)>,
}
store_common!(KeyValueStore);

impl<K: Serde, V: Serde> StateStore for KeyValueStore<K, V> {
    fn open(node: &str, name: &str) -> Result<Self> {
        open_checked(node, name, &[pb::StoreType::KeyValue], "key-value store")?;
        Ok(KeyValueStore { name: name.to_owned(), node: node.to_owned(), _types: PhantomData })
    }
}

/// What both key-value stores share, over raw entries.
fn kv_get(node: &str, name: &str, call: &str, key: &impl Serde) -> Result<(Entry, String)> {
    with_run(call, node, |run| {
        let st = run.store(call, name)?;
        let kb = key_bytes(st, key, call)?;
        let serde = st.value_serde.clone();
        Ok((run.lookup(name, &kb)?, serde))
    })
}

fn kv_write(node: &str, name: &str, call: &str, key: &impl Serde, value: Option<Vec<u8>>, ts: i64) -> Result<()> {
    with_run(call, node, |run| {
        let target = run.target(name);
        let st = run.store(call, name)?;
        let kb = key_bytes(st, key, call)?;
        let (kind, ts) = if value.is_some() { (pb::OpKind::Put, ts) } else { (pb::OpKind::Delete, 0) };
        st.known.insert(kb.clone(), (value.clone(), ts));
        st.written.insert(kb.clone(), (value.clone(), ts));
        run.op(Op { kind, target, key: Some(kb), value, time: ts, schedule: 0 });
        Ok(())
    })
}

fn kv_scan(node: &str, name: &str, call: &str, q: KvQuery, reverse: bool) -> Result<Scanned> {
    with_run(call, node, |run| {
        let st = run.store(call, name)?;
        let (ks, vs) = (st.key_serde.clone(), st.value_serde.clone());
        let rows = match q {
            KvQuery::All => merged(run, name, || Query::All, reverse, |_| true)?,
            KvQuery::Range(lo, hi) => {
                let (l, h) = (lo.clone(), hi.clone());
                merged(
                    run,
                    name,
                    move || Query::Range(l.clone(), h.clone()),
                    reverse,
                    |k| lo.as_deref().is_none_or(|lo| k >= lo) && hi.as_deref().is_none_or(|hi| k <= hi),
                )?
            }
            KvQuery::Prefix(p) => {
                let q = p.clone();
                merged(run, name, move || Query::Prefix(q.clone()), reverse, |k| k.starts_with(&p))?
            }
        };
        Ok((rows, ks, vs))
    })
}

/// A scan's entries (serialized key, entry) and the store's key and value serdes.
type Scanned = (Vec<(Vec<u8>, Entry)>, String, String);
/// A window store's row: (serialized key, window start) and its value.
type WindowRow = ((Vec<u8>, i64), Option<Vec<u8>>);

enum KvQuery {
    All,
    Range(Option<Vec<u8>>, Option<Vec<u8>>),
    Prefix(Vec<u8>),
}

/// A key's bytes by the store's key serde.
fn key_of<K: Serde>(node: &str, name: &str, call: &str, key: &K) -> Result<Vec<u8>> {
    with_run(call, node, |run| key_bytes(run.store(call, name)?, key, call))
}

impl<K: Serde, V: Serde> KeyValueStore<K, V> {
    /// The key's value, or None.
    pub fn get(&self, key: &K) -> Result<Option<V>> {
        let ((v, _), serde) = kv_get(&self.node, &self.name, "get", key)?;
        v.map(|v| decode(&self.name, &serde, Some(&v), "value")).transpose()
    }
    /// Sets the key's value (a value that encodes to null deletes it).
    pub fn put(&self, key: &K, value: &V) -> Result<()> {
        let v = with_run("put", &self.node, |run| value_bytes(run.store("put", &self.name)?, value, "put"))?;
        kv_write(&self.node, &self.name, "put", key, v, 0)
    }
    /// Puts the value unless the key has one; answers the old value.
    pub fn put_if_absent(&self, key: &K, value: &V) -> Result<Option<V>> {
        let old = self.get(key)?;
        if old.is_none() {
            self.put(key, value)?;
        }
        Ok(old)
    }
    /// Puts every entry, in order.
    pub fn put_all<'a>(&self, entries: impl IntoIterator<Item = (&'a K, &'a V)>) -> Result<()> {
        entries.into_iter().try_for_each(|(k, v)| self.put(k, v))
    }
    /// Deletes the key; answers its old value.
    pub fn delete(&self, key: &K) -> Result<Option<V>> {
        let old = self.get(key)?;
        kv_write(&self.node, &self.name, "delete", key, None, 0)?;
        Ok(old)
    }
    /// Every entry, in the serialized keys' byte order.
    pub fn all(&self) -> Result<std::vec::IntoIter<(K, V)>> {
        self.scan("all", KvQuery::All, false)
    }
    /// Every entry, in descending order.
    pub fn reverse_all(&self) -> Result<std::vec::IntoIter<(K, V)>> {
        self.scan("reverse_all", KvQuery::All, true)
    }
    /// The entries from `from` to `to` (inclusive; None: unbounded).
    pub fn range(&self, from: Option<&K>, to: Option<&K>) -> Result<std::vec::IntoIter<(K, V)>> {
        self.scan("range", self.bounds("range", from, to)?, false)
    }
    /// [`range`](Self::range), in descending order.
    pub fn reverse_range(&self, from: Option<&K>, to: Option<&K>) -> Result<std::vec::IntoIter<(K, V)>> {
        self.scan("reverse_range", self.bounds("reverse_range", from, to)?, true)
    }
    /// The entries whose serialized key starts with `prefix`'s bytes.
    pub fn prefix_scan(&self, prefix: &[u8]) -> Result<std::vec::IntoIter<(K, V)>> {
        self.scan("prefix_scan", KvQuery::Prefix(prefix.to_vec()), false)
    }
    /// How many entries the store holds (counted: one `all` read).
    pub fn approximate_num_entries(&self) -> Result<u64> {
        Ok(self.all()?.len() as u64)
    }

    fn bounds(&self, call: &str, from: Option<&K>, to: Option<&K>) -> Result<KvQuery> {
        let lo = from.map(|k| key_of(&self.node, &self.name, call, k)).transpose()?;
        let hi = to.map(|k| key_of(&self.node, &self.name, call, k)).transpose()?;
        Ok(KvQuery::Range(lo, hi))
    }

    fn scan(&self, call: &str, q: KvQuery, reverse: bool) -> Result<std::vec::IntoIter<(K, V)>> {
        let (rows, ks, vs) = kv_scan(&self.node, &self.name, call, q, reverse)?;
        rows.into_iter()
            .map(|(k, (v, _))| {
                Ok((decode(&self.name, &ks, Some(&k), "key")?, decode(&self.name, &vs, v.as_deref(), "value")?))
            })
            .collect::<Result<Vec<_>>>()
            .map(Vec::into_iter)
    }
}

/// A processor's timestamped key-value store (`TimestampedKeyValueStore<K, V>`).
pub struct TimestampedKeyValueStore<K, V> {
    name: String,
    node: String,
    _types: PhantomData<fn() -> (K, V)>,
}
store_common!(TimestampedKeyValueStore);

impl<K: Serde, V: Serde> StateStore for TimestampedKeyValueStore<K, V> {
    fn open(node: &str, name: &str) -> Result<Self> {
        open_checked(node, name, &[pb::StoreType::TimestampedKeyValue], "timestamped key-value store")?;
        Ok(TimestampedKeyValueStore { name: name.to_owned(), node: node.to_owned(), _types: PhantomData })
    }
}

impl<K: Serde, V: Serde> TimestampedKeyValueStore<K, V> {
    /// The key's value and timestamp, or None.
    pub fn get(&self, key: &K) -> Result<Option<ValueAndTimestamp<V>>> {
        let ((v, ts), serde) = kv_get(&self.node, &self.name, "get", key)?;
        v.map(|v| Ok(ValueAndTimestamp { value: decode(&self.name, &serde, Some(&v), "value")?, timestamp: ts }))
            .transpose()
    }
    /// Sets the key's value and timestamp.
    pub fn put(&self, key: &K, value: &V, timestamp: i64) -> Result<()> {
        let v = with_run("put", &self.node, |run| value_bytes(run.store("put", &self.name)?, value, "put"))?;
        kv_write(&self.node, &self.name, "put", key, v, timestamp)
    }
    /// Deletes the key; answers its old value.
    pub fn delete(&self, key: &K) -> Result<Option<ValueAndTimestamp<V>>> {
        let old = self.get(key)?;
        kv_write(&self.node, &self.name, "delete", key, None, 0)?;
        Ok(old)
    }
    /// Every entry, in the serialized keys' byte order.
    pub fn all(&self) -> Result<std::vec::IntoIter<(K, ValueAndTimestamp<V>)>> {
        let (rows, ks, vs) = kv_scan(&self.node, &self.name, "all", KvQuery::All, false)?;
        rows.into_iter()
            .map(|(k, (v, ts))| {
                Ok((
                    decode(&self.name, &ks, Some(&k), "key")?,
                    ValueAndTimestamp { value: decode(&self.name, &vs, v.as_deref(), "value")?, timestamp: ts },
                ))
            })
            .collect::<Result<Vec<_>>>()
            .map(Vec::into_iter)
    }
}

/// A processor's window store (`WindowStore<K, V>`): values per key and
/// window start. Its fetches are `Read` calls (this engine prefetches no
/// window rows), merged with the bundle's puts.
pub struct WindowStore<K, V> {
    name: String,
    node: String,
    _types: PhantomData<fn() -> (K, V)>,
}
store_common!(WindowStore);

impl<K: Serde, V: Serde> StateStore for WindowStore<K, V> {
    fn open(node: &str, name: &str) -> Result<Self> {
        open_checked(node, name, &[pb::StoreType::Window, pb::StoreType::TimestampedWindow], "window store")?;
        Ok(WindowStore { name: name.to_owned(), node: node.to_owned(), _types: PhantomData })
    }
}

impl<K: Serde, V: Serde> WindowStore<K, V> {
    /// Puts the value of the key's window starting at `window_start` (a
    /// value that encodes to null deletes the window's row).
    pub fn put(&self, key: &K, value: &V, window_start: i64) -> Result<()> {
        let name = &self.name;
        with_run("put", &self.node, |run| {
            let target = run.target(name);
            let st = run.store("put", name)?;
            let kb = key_bytes(st, key, "put")?;
            let v = value_bytes(st, value, "put")?;
            st.window_written.insert((kb.clone(), window_start), v.clone());
            let kind = if v.is_some() { pb::OpKind::Put } else { pb::OpKind::Delete };
            run.op(Op { kind, target, key: Some(kb), value: v, time: window_start, schedule: 0 });
            Ok(())
        })
    }
    /// The key's value in the window starting at `window_start`.
    pub fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>> {
        Ok(self.fetch_range(key, window_start, window_start)?.next().map(|(_, v)| v))
    }
    /// The key's windows starting from `from` to `to` (inclusive), by start.
    pub fn fetch_range(&self, key: &K, from: i64, to: i64) -> Result<std::vec::IntoIter<(i64, V)>> {
        self.rows_of(Some(key), from, to, false)
            .map(|rows| rows.into_iter().map(|(_, ws, v)| (ws, v)).collect::<Vec<_>>().into_iter())
    }
    /// [`fetch_range`](Self::fetch_range), latest window first.
    pub fn backward_fetch_range(&self, key: &K, from: i64, to: i64) -> Result<std::vec::IntoIter<(i64, V)>> {
        self.rows_of(Some(key), from, to, true)
            .map(|rows| rows.into_iter().map(|(_, ws, v)| (ws, v)).collect::<Vec<_>>().into_iter())
    }
    /// Every key's windows starting from `from` to `to`, by key then start.
    pub fn fetch_all(&self, from: i64, to: i64) -> Result<std::vec::IntoIter<(Windowed<K>, V)>> {
        self.windowed(self.rows_of(None, from, to, false)?)
    }
    /// Every window of every key.
    pub fn all(&self) -> Result<std::vec::IntoIter<(Windowed<K>, V)>> {
        self.windowed(self.rows_of(None, i64::MIN, i64::MAX, false)?)
    }

    fn windowed(&self, rows: Vec<(K, i64, V)>) -> Result<std::vec::IntoIter<(Windowed<K>, V)>> {
        let size = with_run("fetch", &self.node, |run| Ok(run.window_size(&self.name)))?;
        Ok(rows
            .into_iter()
            .map(|(key, ws, v)| (Windowed { key, start_ms: ws, end_ms: ws.saturating_add(size) }, v))
            .collect::<Vec<_>>()
            .into_iter())
    }

    fn rows_of(&self, key: Option<&K>, from: i64, to: i64, reverse: bool) -> Result<Vec<(K, i64, V)>> {
        let name = &self.name;
        let (rows, ks, vs) = with_run("fetch", &self.node, |run| {
            let st = run.store("fetch", name)?;
            let kb = key.map(|k| key_bytes(st, k, "fetch")).transpose()?;
            let (ks, vs) = (st.key_serde.clone(), st.value_serde.clone());
            let all = key.is_none() && from == i64::MIN && to == i64::MAX;
            let k2 = kb.clone();
            let engine: Vec<Row> = if all {
                run.read_all(name, || Query::All, reverse)?
            } else {
                run.read_all(name, move || Query::Window(k2.clone(), from, to), reverse)?
            };
            let st = run.store("fetch", name)?;
            let mut writes: Vec<WindowRow> = st
                .window_written
                .iter()
                .filter(|((k, ws), _)| kb.as_ref().is_none_or(|kb| kb == k) && *ws >= from && *ws <= to)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut rows: Vec<WindowRow> = engine
                .into_iter()
                .map(|(k, v, _, ws)| ((k, ws), v))
                .filter(|(k, _)| !st.window_written.contains_key(k))
                .collect();
            rows.append(&mut writes);
            rows.sort_by(|a, b| if reverse { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) });
            Ok((rows, ks, vs))
        })?;
        rows.into_iter()
            .filter_map(|((k, ws), v)| v.map(|v| (k, ws, v)))
            .map(|(k, ws, v)| Ok((decode(name, &ks, Some(&k), "key")?, ws, decode(name, &vs, Some(&v), "value")?)))
            .collect()
    }
}

/// One version of a versioned store's value (Kafka Streams'
/// `VersionedRecord`): valid from `timestamp` (epoch ms) until `valid_to`
/// (exclusive; None for the latest version, and always None through a
/// processor's [`VersionedKeyValueStore`], as Kafka Streams' processor
/// stores answer).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedRecord<V> {
    pub value: V,
    pub timestamp: i64,
    pub valid_to: Option<i64>,
}

/// [`VersionedKeyValueStore::put`]'s answer when the version is the key's
/// latest (`PUT_RETURN_CODE_VALID_TO_UNDEFINED`).
pub const PUT_RETURN_CODE_VALID_TO_UNDEFINED: i64 = -1;
/// [`VersionedKeyValueStore::put`]'s answer when nothing was put: the
/// timestamp is older than the history retention behind the store's stream
/// time (`PUT_RETURN_CODE_NOT_PUT`, `Long.MIN_VALUE`).
pub const PUT_RETURN_CODE_NOT_PUT: i64 = i64::MIN;

/// A processor's versioned key-value store (`VersionedKeyValueStore<K, V>`,
/// KIP-889; [`Stores::versioned_key_value_store`](crate::Stores::versioned_key_value_store)):
/// every version of a key's value, each valid from its timestamp until the
/// next version's, kept for the store's history retention behind its stream
/// time (the largest timestamp put into it). Answers are computed over the
/// bundle's version lists (the engine sends each record key's), by the
/// engine's rules; a key the bundle lacks is one `Read`.
pub struct VersionedKeyValueStore<K, V> {
    name: String,
    node: String,
    _types: PhantomData<fn() -> (K, V)>,
}
store_common!(VersionedKeyValueStore);

impl<K: Serde, V: Serde> StateStore for VersionedKeyValueStore<K, V> {
    fn open(node: &str, name: &str) -> Result<Self> {
        open_checked(node, name, &[pb::StoreType::VersionedKeyValue], "versioned key-value store")?;
        Ok(VersionedKeyValueStore { name: name.to_owned(), node: node.to_owned(), _types: PhantomData })
    }
}

/// A version a read found: its validFrom and value.
type Found = (i64, Vec<u8>);

/// FindVersion (the engine's state/versioned.go): the latest version (as_of
/// None) or the one valid at as_of; before stream time - history retention
/// only the latest; a tombstone finds nothing.
fn find_version(vs: &[Version], as_of: Option<i64>, stream_time: i64, retention: i64) -> Option<Found> {
    let last = vs.len().checked_sub(1)?;
    let Some(t) = as_of else {
        let (from, v) = &vs[last];
        return v.clone().map(|v| (*from, v));
    };
    let i = vs.iter().rposition(|(from, _)| *from <= t)?;
    let (from, v) = &vs[i];
    if t < stream_time.saturating_sub(retention) && i != last {
        return None;
    }
    v.clone().map(|v| (*from, v))
}

/// A version put into vs (value None: a tombstone): put's answer, as
/// RocksDBVersionedStore's; advances the store's stream time.
fn put_version(st: &mut StoreState, kb: &[u8], from: i64, value: Option<Vec<u8>>) -> i64 {
    if from < st.stream_time.saturating_sub(st.history_retention) {
        return PUT_RETURN_CODE_NOT_PUT;
    }
    st.stream_time = st.stream_time.max(from);
    let vs = st.versions.entry(kb.to_vec()).or_default();
    let latest = vs.last().is_none_or(|(f, _)| from >= *f);
    let next = vs.iter().find(|(f, _)| *f > from).map(|(f, _)| *f);
    match vs.binary_search_by_key(&from, |(f, _)| *f) {
        Ok(i) => vs[i] = (from, value),
        Err(i) => vs.insert(i, (from, value)),
    }
    match next {
        Some(f) if !latest => f,
        _ => PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    }
}

impl<K: Serde, V: Serde> VersionedKeyValueStore<K, V> {
    /// Puts a version of the key's value valid from `timestamp` (a value
    /// that encodes to null is a tombstone). Answers the version's validTo
    /// (the next version's timestamp) when it lands in the past,
    /// [`PUT_RETURN_CODE_VALID_TO_UNDEFINED`] when it is the key's latest,
    /// [`PUT_RETURN_CODE_NOT_PUT`] when it is older than the history
    /// retention (nothing is put; dropped-records counts it).
    pub fn put(&self, key: &K, value: &V, timestamp: i64) -> Result<i64> {
        let v = with_run("put", &self.node, |run| value_bytes(run.store("put", &self.name)?, value, "put"))?;
        self.write("put", key, v, timestamp).map(|(code, _)| code)
    }
    /// The key's latest version, or None (none, or a tombstone).
    pub fn get(&self, key: &K) -> Result<Option<VersionedRecord<V>>> {
        self.read("get", key, None)
    }
    /// The version valid at `as_of`, or None (none then, a tombstone, or
    /// older than the history retention unless it is the latest).
    pub fn get_as_of(&self, key: &K, as_of: i64) -> Result<Option<VersionedRecord<V>>> {
        self.read("get_as_of", key, Some(as_of))
    }
    /// Puts a tombstone valid from `timestamp`; answers the version valid at
    /// `timestamp` before it (None when older than the history retention:
    /// then nothing is put).
    pub fn delete(&self, key: &K, timestamp: i64) -> Result<Option<VersionedRecord<V>>> {
        let (_, old) = self.write("delete", key, None, timestamp)?;
        let serde = with_run("delete", &self.node, |run| Ok(run.store("delete", &self.name)?.value_serde.clone()))?;
        old.map(|(from, v)| self.record(&serde, from, &v)).transpose()
    }

    fn record(&self, serde: &str, from: i64, v: &[u8]) -> Result<VersionedRecord<V>> {
        // No validTo: Kafka Streams' MeteredVersionedKeyValueStore rebuilds
        // a processor's VersionedRecord from value and timestamp only.
        Ok(VersionedRecord { value: decode(&self.name, serde, Some(v), "value")?, timestamp: from, valid_to: None })
    }

    fn read(&self, call: &str, key: &K, as_of: Option<i64>) -> Result<Option<VersionedRecord<V>>> {
        let name = &self.name;
        let (found, serde) = with_run(call, &self.node, |run| {
            let kb = key_bytes(run.store(call, name)?, key, call)?;
            run.versions(call, name, &kb)?;
            let st = run.store(call, name)?;
            let found = find_version(&st.versions[&kb], as_of, st.stream_time, st.history_retention);
            Ok((found, st.value_serde.clone()))
        })?;
        found.map(|(from, v)| self.record(&serde, from, &v)).transpose()
    }

    /// A put or a delete (value None): the op (sent even when expired: the
    /// engine recomputes the answer with putVersion and counts the dropped
    /// put), put's answer, and the version valid at `ts` before it (for a
    /// delete).
    fn write(&self, call: &str, key: &K, value: Option<Vec<u8>>, ts: i64) -> Result<(i64, Option<Found>)> {
        let name = &self.name;
        with_run(call, &self.node, |run| {
            let target = run.target(name);
            let kb = key_bytes(run.store(call, name)?, key, call)?;
            run.versions(call, name, &kb)?;
            run.op(Op {
                kind: pb::OpKind::Put,
                target,
                key: Some(kb.clone()),
                value: value.clone(),
                time: ts,
                schedule: 0,
            });
            let st = run.store(call, name)?;
            let expired = ts < st.stream_time.saturating_sub(st.history_retention);
            let old = if expired {
                None
            } else {
                find_version(&st.versions[&kb], Some(ts), st.stream_time, st.history_retention)
            };
            Ok((put_version(st, &kb, ts, value), old))
        })
    }
}

#[cfg(test)]
mod versioned_tests {
    use super::*;

    /// A versioned store's state: key a's versions valid from 10 and 30, stream time 30.
    fn state(retention: i64) -> StoreState {
        let v = pb::StoreView {
            store: "h".into(),
            key_serde: "string".into(),
            value_serde: "long".into(),
            r#type: pb::StoreType::VersionedKeyValue as i32,
            key_lengths: vec![1],
            keys: b"a".to_vec(),
            version_counts: vec![2],
            value_lengths: vec![1, 1],
            values: b"13".to_vec(),
            windows: vec![10, 30],
            stream_time_ms: 30,
            history_retention_ms: retention,
            ..Default::default()
        };
        StoreState::of(&v).unwrap()
    }

    #[test]
    fn put_answers_valid_to_replaces_and_drops_expired_puts_as_the_engine() {
        let mut st = state(100);
        assert_eq!(put_version(&mut st, b"a", 20, Some(b"2".to_vec())), 30, "in the past: the next version's time");
        assert_eq!(
            put_version(&mut st, b"a", 30, Some(b"4".to_vec())),
            PUT_RETURN_CODE_VALID_TO_UNDEFINED,
            "replacing the latest"
        );
        assert_eq!(put_version(&mut st, b"a", 5, None), 10, "a tombstone in the past");
        assert_eq!(put_version(&mut st, b"b", 40, Some(b"9".to_vec())), PUT_RETURN_CODE_VALID_TO_UNDEFINED);
        assert_eq!(st.stream_time, 40);
        assert_eq!(
            put_version(&mut st, b"a", -61, Some(b"0".to_vec())),
            PUT_RETURN_CODE_NOT_PUT,
            "older than 40 - 100"
        );
        let a = &st.versions[&b"a".to_vec()];
        assert_eq!(a.iter().map(|(f, _)| *f).collect::<Vec<_>>(), [5, 10, 20, 30]);
        assert_eq!(find_version(a, None, 40, 100), Some((30, b"4".to_vec())));
        assert_eq!(find_version(a, Some(25), 40, 100), Some((20, b"2".to_vec())));
        assert_eq!(find_version(a, Some(7), 40, 100), None, "a tombstone finds nothing");
        assert_eq!(find_version(a, Some(4), 40, 100), None, "before every version");
    }

    #[test]
    fn reads_before_the_history_retention_find_only_the_latest_version() {
        let st = state(5);
        let a = &st.versions[&b"a".to_vec()];
        assert_eq!(find_version(a, Some(15), 30, 5), None, "15 < 30 - 5 and 1@10 is not the latest");
        assert_eq!(find_version(a, Some(24), 30, 5), None, "still before the cut-off");
        assert_eq!(find_version(a, Some(25), 30, 5), Some((10, b"1".to_vec())), "at the cut-off");
        assert_eq!(find_version(a, Some(29), 30, 5), Some((10, b"1".to_vec())));
        assert_eq!(find_version(&a[1..], Some(29), 100, 5), None);
        assert_eq!(find_version(&a[1..], Some(31), 100, 5), Some((30, b"3".to_vec())), "the latest never expires");
    }
}
