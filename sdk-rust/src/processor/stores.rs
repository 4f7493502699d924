//! A processor's stores over the bundle's overlay (see host.rs): reads the
//! bundle brought cost nothing, others are one `Read` call each; writes are
//! ops of the bundle's answer. Iterators read the engine's whole answer
//! (chunk by chunk) and merge the bundle's writes into it, so they see what
//! Kafka Streams' would: puts replace or add keys, deletes hide them.

use std::marker::PhantomData;

use super::host::{encode, with_run, Entry, Op, Query, Row, Run, StoreState};
use crate::errors::{Error, Result};
use crate::pb;
use crate::serdes::{Serde, Windowed};

mod sealed {
    pub trait Sealed {}
}

/// A store a processor gets with `ctx.get_state_store(name)`: a
/// [`KeyValueStore`], [`TimestampedKeyValueStore`] or [`WindowStore`].
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
