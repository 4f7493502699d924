//! The builder: KStream, KGroupedStream, KTable and KGroupedTable, in Kafka
//! Streams' vocabulary, typed by their keys and values.
//!
//! Each operator is one Build call to the engine, answered with a handle; an
//! operator the engine refuses returns its error at once (the session stays
//! usable). Closures never cross the wire: each is registered under a token,
//! and the engine later sends records to be run through it.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::bundle::{guarded, take, Fold, Func, KeySlot, Out, StepFn};
use crate::errors::{Error, Result};
use crate::fold::{Aggregate, AggregateNames, Aggregations, Reducer, StreamReduce};
use crate::options::{Options, KEY, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::{Serde, Value};
use crate::session::Session;
use crate::session::{expect_handle, fn_name, Handle, Kind};

/// A joiner that runs in the engine and never crosses to the host, for the
/// `*_builtin` joins: `Pair` makes the JSON array `[value, other value]`
/// (each side decoded by its serde, which must not be `bytes`; null for a
/// missing side), so its result type is JSON (`serde_json::Value` or
/// [`Json`](crate::Json)); `This` keeps this side's value and `Other` the
/// other side's (`None` when missing), so the result type is that side's.
/// A value serde other than the built-in's result is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joiner {
    Pair,
    This,
    Other,
}

impl Joiner {
    pub(crate) fn to_proto(self) -> i32 {
        (match self {
            Joiner::Pair => pb::Joiner::Pair,
            Joiner::This => pb::Joiner::This,
            Joiner::Other => pb::Joiner::Other,
        }) as i32
    }
}

/// A join's joiner: a host function (its type name, for registering) or a
/// built-in.
pub(crate) enum JoinFn {
    Host(String, std::sync::Arc<dyn crate::bundle::JoinRun>),
    /// A host joiner that reads the records' metadata (registered METADATA_READ).
    HostMeta(String, std::sync::Arc<dyn crate::bundle::JoinRun>),
    Builtin(Joiner),
}

impl JoinFn {
    /// Registers a host joiner; returns (joiner_token, builtin_joiner) and
    /// the tokens the Build call registered.
    pub(crate) fn register(self, app: &crate::session::Session) -> crate::errors::Result<(u32, i32, Vec<u32>)> {
        match self {
            JoinFn::Host(fn_type, joiner) => {
                let token = app.register(&fn_type, crate::bundle::Func::Join(joiner))?;
                Ok((token, 0, vec![token]))
            }
            JoinFn::HostMeta(fn_type, joiner) => {
                let token = app.register_with(&fn_type, crate::bundle::Func::Join(joiner), pb::Metadata::Read)?;
                Ok((token, 0, vec![token]))
            }
            JoinFn::Builtin(j) => Ok((0, j.to_proto(), vec![])),
        }
    }
}

/// Registers a step and builds an operator naming it.
pub(crate) fn build_step(
    app: &Arc<Session>,
    fn_type: String,
    step: StepFn,
    op: impl FnOnce(u32) -> Op,
) -> Result<Option<Handle>> {
    let token = app.register(&fn_type, Func::Step(Arc::new(step)))?;
    app.build(op(token), &[token])
}

/// The protocol operation of a filter (`negate`: filter_not) of handle
/// `input` for [`build_step`]; `materialized` only on a table.
pub(crate) fn filter_op(
    input: u64,
    negate: bool,
    name: String,
    materialized: Option<pb::Materialized>,
) -> impl FnOnce(u32) -> Op {
    move |token| {
        if negate {
            Op::FilterNot(pb::FilterNotOp { input, token, name, materialized })
        } else {
            Op::Filter(pb::FilterOp { input, token, name, materialized })
        }
    }
}

/// The protocol operation of a map_values of handle `input` for
/// [`build_step`]; `materialized` only on a table.
pub(crate) fn map_values_op(
    input: u64,
    value_serde: String,
    name: String,
    materialized: Option<pb::Materialized>,
    with_key: bool,
) -> impl FnOnce(u32) -> Op {
    move |token| Op::MapValues(pb::MapValuesOp { input, token, value_serde, name, materialized, with_key })
}

/// A stream of records (Kafka Streams' `KStream<K, V>`).
pub struct KStream<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    pub(crate) _types: PhantomData<fn() -> (K, V)>,
}

/// A stream grouped by key, ready to aggregate (`KGroupedStream<K, V>`).
pub struct KGroupedStream<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    pub(crate) _types: PhantomData<fn() -> (K, V)>,
}

/// A changelog table: the latest value per key (`KTable<K, V>`). Its records
/// are updates: a null value deletes its key (a tombstone), and operators
/// forward tombstones as Kafka Streams does (the engine never calls a
/// table operator's function for one).
pub struct KTable<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    pub(crate) _types: PhantomData<fn() -> (K, V)>,
}

/// A table regrouped by [`KTable::group_by`], ready to aggregate
/// (`KGroupedTable<K, V>`): each update of the source table removes its old
/// value from one group (the subtractor) and adds its new one (the adder).
pub struct KGroupedTable<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    pub(crate) _types: PhantomData<fn() -> (K, V)>,
}

macro_rules! node {
    ($t:ident, $kind:expr) => {
        impl<K: Serde, V: Serde> $t<K, V> {
            pub(crate) fn wrap(app: Arc<Session>, handle: Handle) -> Result<Self> {
                if handle.kind != $kind {
                    return Err(Error::internal(format!(
                        "{} cannot wrap handle {}, a {:?}",
                        stringify!($t),
                        handle.id,
                        handle.kind
                    )));
                }
                Ok($t { app, handle, _types: PhantomData })
            }
            /// The engine's handle.
            pub fn handle(&self) -> &Handle {
                &self.handle
            }
            #[allow(dead_code)] // used by some kinds only
            pub(crate) fn app(&self) -> &Arc<Session> {
                &self.app
            }
            /// The same, with values that may be null (`Option<V>`, of V's
            /// serde): a table's tombstones, say, as `to_stream()` forwards them.
            pub fn nullable(&self) -> $t<K, Option<V>> {
                $t { app: self.app.clone(), handle: self.handle.clone(), _types: PhantomData }
            }
            /// The same, with keys and values as [`Value`]s, which decode
            /// whatever serde the records have (for programs that choose
            /// serdes at run time).
            pub fn dynamic(&self) -> $t<Value, Value> {
                $t { app: self.app.clone(), handle: self.handle.clone(), _types: PhantomData }
            }
        }
        impl<K, V> Clone for $t<K, V> {
            fn clone(&self) -> Self {
                $t { app: self.app.clone(), handle: self.handle.clone(), _types: PhantomData }
            }
        }
        impl<K, V> std::fmt::Debug for $t<K, V> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let h = &self.handle;
                write!(
                    f,
                    "{}(id={}, key={:?}, value={:?}, node={:?})",
                    stringify!($t),
                    h.id,
                    h.key_serde,
                    h.value_serde,
                    h.node
                )
            }
        }
    };
}

node!(KStream, Kind::Stream);
node!(KGroupedStream, Kind::GroupedStream);
node!(KTable, Kind::Table);
node!(KGroupedTable, Kind::GroupedTable);
node!(GlobalKTable, Kind::GlobalTable);

/// A table of every partition of its topic, kept whole by every engine
/// instance (`GlobalKTable<K, V>`), from [`App::global_table`](crate::App::global_table).
/// A stream joins it through a key mapper
/// ([`KStream::join_global`]), with no co-partitioning; it is restored
/// before any record is processed, then follows its topic (the store's
/// changelog).
pub struct GlobalKTable<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    pub(crate) _types: PhantomData<fn() -> (K, V)>,
}

/// A step reading (key, value) and answering whether the record passes.
pub(crate) fn predicate_step<K: Serde, V: Serde>(
    negate: bool,
    f: impl Fn(&K, &V) -> bool + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K, V>(move |key: &mut KeySlot<'_>, v| {
        let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
        let k = key.get::<K>()?;
        let keep = guarded(|| f(k, value))? != negate;
        Ok(if keep { Out::One(None, v) } else { Out::Nothing })
    })
}

impl<K: Serde, V: Serde> KStream<K, V> {
    pub(crate) fn stream<K2: Serde, V2: Serde>(&self, h: Option<Handle>, op: &str) -> Result<KStream<K2, V2>> {
        KStream::wrap(self.app.clone(), expect_handle(h, op)?)
    }

    /// `f(value) -> new value`; keys are unchanged (`KStream.mapValues`).
    pub fn map_values<V2: Serde, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(V) -> V2 + Send + Sync + 'static,
    {
        self.map_values_with(f, Options::new())
    }

    /// [`map_values`](Self::map_values) with `name` and `value_serde`.
    pub fn map_values_with<V2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(V) -> V2 + Send + Sync + 'static,
    {
        o.check("map_values", NAME | VALUE)?;
        let step = map_values_step::<K, V, V2>(f);
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("map_values"),
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, false),
        )?;
        self.stream(h, "map_values")
    }

    /// Keeps the records for which `f(key, value)` is true (`KStream.filter`).
    pub fn filter<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        self.filter_with(f, Options::new())
    }

    /// [`filter`](Self::filter) with `name`.
    pub fn filter_with<F>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        o.check("filter", NAME)?;
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("filter"),
            predicate_step(false, f),
            filter_op(input, false, o.name_or_empty(), None),
        )?;
        self.stream(h, "filter")
    }

    /// Drops the records for which `f(key, value)` is true (`KStream.filterNot`).
    pub fn filter_not<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        self.filter_not_with(f, Options::new())
    }

    /// [`filter_not`](Self::filter_not) with `name`.
    pub fn filter_not_with<F>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        o.check("filter_not", NAME)?;
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("filter_not"),
            predicate_step(true, f),
            filter_op(input, true, o.name_or_empty(), None),
        )?;
        self.stream(h, "filter_not")
    }

    /// `f(value) -> values`: zero, one or many records per record, each with
    /// the input's key (`KStream.flatMapValues`).
    pub fn flat_map_values<V2: Serde, I, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V) -> I + Send + Sync + 'static,
    {
        self.flat_map_values_with(f, Options::new())
    }

    /// [`flat_map_values`](Self::flat_map_values) with `name` and `value_serde`.
    pub fn flat_map_values_with<V2: Serde, I, F>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V) -> I + Send + Sync + 'static,
    {
        o.check("flat_map_values", NAME | VALUE)?;
        let step = flat_map_values_step::<K, V, V2, I>(f);
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("flat_map_values"), step, |token| {
            Op::FlatMapValues(pb::FlatMapValuesOp {
                input,
                token,
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
                with_key: false,
            })
        })?;
        self.stream(h, "flat_map_values")
    }

    /// `f(key, value) -> new value` (`KStream.mapValues` with a
    /// `ValueMapperWithKey`): reads the key, keeps it; no repartition follows.
    pub fn map_values_with_key<V2: Serde, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V) -> V2 + Send + Sync + 'static,
    {
        self.map_values_with_key_with(f, Options::new())
    }

    /// [`map_values_with_key`](Self::map_values_with_key) with `name` and `value_serde`.
    pub fn map_values_with_key_with<V2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V) -> V2 + Send + Sync + 'static,
    {
        o.check("map_values_with_key", NAME | VALUE)?;
        let step = map_values_with_key_step::<K, V, V2>(f);
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("map_values"),
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, true),
        )?;
        self.stream(h, "map_values_with_key")
    }

    /// `f(key, value) -> values` (`KStream.flatMapValues` with a
    /// `ValueMapperWithKey`): each value a record with the input's key.
    pub fn flat_map_values_with_key<V2: Serde, I, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(&K, V) -> I + Send + Sync + 'static,
    {
        self.flat_map_values_with_key_with(f, Options::new())
    }

    /// [`flat_map_values_with_key`](Self::flat_map_values_with_key) with `name` and `value_serde`.
    pub fn flat_map_values_with_key_with<V2: Serde, I, F>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(&K, V) -> I + Send + Sync + 'static,
    {
        o.check("flat_map_values_with_key", NAME | VALUE)?;
        let step = flat_map_values_with_key_step::<K, V, V2, I>(f);
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("flat_map_values"), step, |token| {
            Op::FlatMapValues(pb::FlatMapValuesOp {
                input,
                token,
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
                with_key: true,
            })
        })?;
        self.stream(h, "flat_map_values_with_key")
    }

    /// `f(key, value) -> (new key, new value) pairs` (`KStream.flatMap`):
    /// zero, one or many records per record, each with the input's timestamp
    /// and headers. Like [`map`](Self::map), it marks the stream for
    /// repartitioning before a grouping or join.
    pub fn flat_map<K2: Serde, V2: Serde, I, F>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V) -> I + Send + Sync + 'static,
    {
        self.flat_map_with(f, Options::new())
    }

    /// [`flat_map`](Self::flat_map) with `name`, `key_serde` and `value_serde`.
    pub fn flat_map_with<K2: Serde, V2: Serde, I, F>(&self, f: F, o: Options) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V) -> I + Send + Sync + 'static,
    {
        o.check("flat_map", NAME | KEY | VALUE)?;
        let step = flat_map_step::<K, V, K2, V2, I>(f);
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("flat_map"), step, |token| {
            Op::FlatMap(pb::FlatMapOp {
                input,
                token,
                key_serde: o.key_or(K2::NAME),
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
            })
        })?;
        self.stream(h, "flat_map")
    }

    /// `f(key, value) -> (new key, new value)` (`KStream.map`). Changing
    /// keys marks the stream for repartitioning before a grouping.
    pub fn map<K2: Serde, V2: Serde, F>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V) -> (K2, V2) + Send + Sync + 'static,
    {
        self.map_with(f, Options::new())
    }

    /// [`map`](Self::map) with `name`, `key_serde` and `value_serde`.
    pub fn map_with<K2: Serde, V2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V) -> (K2, V2) + Send + Sync + 'static,
    {
        o.check("map", NAME | KEY | VALUE)?;
        let step = map_step::<K, V, K2, V2>(f);
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("map"), step, |token| {
            Op::Map(pb::MapOp {
                input,
                token,
                key_serde: o.key_or(K2::NAME),
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
            })
        })?;
        self.stream(h, "map")
    }

    /// `f(key, value) -> new key`; values are unchanged (`KStream.selectKey`).
    pub fn select_key<K2: Serde, F>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        self.select_key_with(f, Options::new())
    }

    /// [`select_key`](Self::select_key) with `name` and `key_serde`.
    pub fn select_key_with<K2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        o.check("select_key", NAME | KEY)?;
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("select_key"), key_step(f), |token| {
            Op::SelectKey(pb::SelectKeyOp { input, token, key_serde: o.key_or(K2::NAME), name: o.name_or_empty() })
        })?;
        self.stream(h, "select_key")
    }

    /// Calls `f(key, value)` for each record and passes it on unchanged (`KStream.peek`).
    pub fn peek<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) + Send + Sync + 'static,
    {
        self.peek_with(f, Options::new())
    }

    /// [`peek`](Self::peek) with `name`.
    pub fn peek_with<F>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) + Send + Sync + 'static,
    {
        o.check("peek", NAME)?;
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("peek"), action_step(true, f), |token| {
            Op::Peek(pb::PeekOp { input, token, name: o.name_or_empty() })
        })?;
        self.stream(h, "peek")
    }

    /// Calls `f(key, value)` for each record; terminal (`KStream.foreach`).
    pub fn foreach<F>(&self, f: F) -> Result<()>
    where
        F: Fn(&K, &V) + Send + Sync + 'static,
    {
        self.foreach_with(f, Options::new())
    }

    /// [`foreach`](Self::foreach) with `name`.
    pub fn foreach_with<F>(&self, f: F, o: Options) -> Result<()>
    where
        F: Fn(&K, &V) + Send + Sync + 'static,
    {
        o.check("foreach", NAME)?;
        let input = self.handle.id;
        build_step(&self.app, fn_name::<F>("foreach"), action_step(false, f), |token| {
            Op::Foreach(pb::ForeachOp { input, token, name: o.name_or_empty() })
        })?;
        Ok(())
    }

    /// Groups by the current key (`KStream.groupByKey`).
    pub fn group_by_key(&self) -> Result<KGroupedStream<K, V>> {
        self.group_by_key_with(Options::new())
    }

    /// [`group_by_key`](Self::group_by_key) with `name` (`Grouped.as`: names
    /// the repartition topic if one is needed), `key_serde` and `value_serde`
    /// (`Grouped.with`).
    pub fn group_by_key_with(&self, o: Options) -> Result<KGroupedStream<K, V>> {
        o.check("group_by_key", NAME | KEY | VALUE)?;
        let op = Op::GroupByKey(pb::GroupByKeyOp {
            input: self.handle.id,
            key_serde: o.key_or(""),
            value_serde: o.value_or(""),
            name: o.name_or_empty(),
        });
        KGroupedStream::wrap(self.app.clone(), expect_handle(self.app.build(op, &[])?, "group_by_key")?)
    }

    /// The stream as a table of upserts (`KStream.toTable`): a `None` value
    /// deletes its key, a record with a `None` key is dropped. The node is
    /// `KSTREAM-TOTABLE-<n>`; a stream whose key changed upstream is
    /// repartitioned first. The table's store exists only if a later
    /// operator needs it (see [`to_table_with`](Self::to_table_with)).
    pub fn to_table(&self) -> Result<KTable<K, V>> {
        self.to_table_with(Options::new())
    }

    /// [`to_table`](Self::to_table) with `name` (`Named.as`) and
    /// `materialized` (a named store exists and is queryable).
    pub fn to_table_with(&self, o: Options) -> Result<KTable<K, V>> {
        o.check("to_table", NAME | MATERIALIZED)?;
        let op = Op::ToTable(pb::ToTableOp {
            input: self.handle.id,
            name: o.name_or_empty(),
            materialized: o.materialized_proto(),
        });
        KTable::wrap(self.app.clone(), expect_handle(self.app.build(op, &[])?, "to_table")?)
    }

    /// Groups by `f(key, value) -> new key`; the records are repartitioned by
    /// the new key, through `<application.id>-<name>-repartition` (`KStream.groupBy`).
    pub fn group_by<K2: Serde, F>(&self, f: F) -> Result<KGroupedStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        self.group_by_with(f, Options::new())
    }

    /// [`group_by`](Self::group_by) with `name`, `key_serde` and `value_serde`.
    pub fn group_by_with<K2: Serde, F>(&self, f: F, o: Options) -> Result<KGroupedStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        o.check("group_by", NAME | KEY | VALUE)?;
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("group_by"), key_step(f), |token| {
            Op::GroupBy(pb::GroupByOp {
                input,
                token,
                key_serde: o.key_or(K2::NAME),
                value_serde: o.value_or(""),
                name: o.name_or_empty(),
            })
        })?;
        KGroupedStream::wrap(self.app.clone(), expect_handle(h, "group_by")?)
    }
}

/// A step answering a new key from (key, value): select_key, a stream's group_by.
pub(crate) fn key_step<K: Serde, V: Serde, K2: Serde>(f: impl Fn(&K, &V) -> K2 + Send + Sync + 'static) -> StepFn {
    StepFn::new::<V, K2, V>(move |key, v| {
        let k2 = {
            let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
            let k = key.get::<K>()?;
            guarded(|| f(k, value))?
        };
        Ok(Out::One(Some(Arc::new(k2)), v))
    })
}

/// A step answering a new value from the value: map_values.
pub(crate) fn map_values_step<K: Serde, V: Serde, V2: Serde>(f: impl Fn(V) -> V2 + Send + Sync + 'static) -> StepFn {
    StepFn::new::<V, K, V2>(move |_, v| {
        let v: V = take(v)?;
        Ok(Out::One(None, Box::new(guarded(|| f(v))?)))
    })
}

/// A step answering zero, one or many values from the value: flat_map_values.
pub(crate) fn flat_map_values_step<K: Serde, V: Serde, V2: Serde, I: IntoIterator<Item = V2>>(
    f: impl Fn(V) -> I + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K, V2>(move |_, v| {
        let v: V = take(v)?;
        let out = guarded(|| f(v).into_iter().map(|x| Box::new(x) as crate::bundle::AnyBox).collect())?;
        Ok(Out::Many(out))
    })
}

/// A step answering a new value from (key, value): map_values with a key.
pub(crate) fn map_values_with_key_step<K: Serde, V: Serde, V2: Serde>(
    f: impl Fn(&K, V) -> V2 + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K, V2>(move |key, v| {
        let v: V = take(v)?;
        let k = key.get::<K>()?;
        Ok(Out::One(None, Box::new(guarded(|| f(k, v))?)))
    })
}

/// A step answering zero, one or many values from (key, value):
/// flat_map_values with a key.
pub(crate) fn flat_map_values_with_key_step<K: Serde, V: Serde, V2: Serde, I: IntoIterator<Item = V2>>(
    f: impl Fn(&K, V) -> I + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K, V2>(move |key, v| {
        let v: V = take(v)?;
        let k = key.get::<K>()?;
        let out = guarded(|| f(k, v).into_iter().map(|x| Box::new(x) as crate::bundle::AnyBox).collect())?;
        Ok(Out::Many(out))
    })
}

/// A step answering zero, one or many new (key, value) pairs: flat_map.
pub(crate) fn flat_map_step<K: Serde, V: Serde, K2: Serde, V2: Serde, I: IntoIterator<Item = (K2, V2)>>(
    f: impl Fn(&K, V) -> I + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K2, V2>(move |key, v| {
        let v: V = take(v)?;
        let k = key.get::<K>()?;
        let out = guarded(|| {
            f(k, v)
                .into_iter()
                .map(|(k2, v2)| (Arc::new(k2) as crate::bundle::AnyKey, Box::new(v2) as crate::bundle::AnyBox))
                .collect()
        })?;
        Ok(Out::Pairs(out))
    })
}

/// A step answering a new key and value from (key, value): map.
pub(crate) fn map_step<K: Serde, V: Serde, K2: Serde, V2: Serde>(
    f: impl Fn(&K, V) -> (K2, V2) + Send + Sync + 'static,
) -> StepFn {
    StepFn::new::<V, K2, V2>(move |key, v| {
        let v: V = take(v)?;
        let k = key.get::<K>()?;
        let (k2, v2) = guarded(|| f(k, v))?;
        Ok(Out::One(Some(Arc::new(k2)), Box::new(v2)))
    })
}

/// peek (pass) or foreach (nothing passes).
pub(crate) fn action_step<K: Serde, V: Serde>(pass: bool, f: impl Fn(&K, &V) + Send + Sync + 'static) -> StepFn {
    StepFn::new::<V, K, V>(move |key, v| {
        {
            let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
            let k = key.get::<K>()?;
            guarded(|| f(k, value))?;
        }
        Ok(if pass { Out::One(None, v) } else { Out::Nothing })
    })
}

impl<K: Serde, V: Serde> KGroupedStream<K, V> {
    fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified }
    }

    /// Counts the records per key into a table of `long` counts
    /// (`KGroupedStream.count`). Built in: the records never cross.
    pub fn count(&self) -> Result<KTable<K, i64>> {
        self.count_with(Options::new())
    }

    /// [`count`](Self::count) with `name` and `materialized`.
    pub fn count_with(&self, o: Options) -> Result<KTable<K, i64>> {
        KTable::wrap(self.app.clone(), self.aggregations().count(&o)?)
    }

    /// Folds each key's values into a table: `f(aggregate, value) -> new
    /// aggregate` (`KGroupedStream.reduce`). A key's first value becomes its
    /// aggregate without a call, as in Kafka Streams; records with a null
    /// key or value are skipped.
    pub fn reduce<F>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(StreamReduce::<V, F>::new(f)));
        KTable::wrap(self.app.clone(), self.aggregations().reduce(fold, (fn_name::<F>("reduce"), None), &o)?)
    }

    /// A built-in reduce, run in the engine: the values never cross.
    pub fn reduce_builtin(&self, r: Reducer, o: Options) -> Result<KTable<K, V>> {
        KTable::wrap(self.app.clone(), self.aggregations().builtin(r, &o)?)
    }

    /// The sum of each key's values (`long` or `double`), in the engine.
    pub fn sum(&self) -> Result<KTable<K, V>> {
        self.reduce_builtin(Reducer::Sum, Options::new())
    }

    /// The smallest of each key's values (`long` or `double`), in the engine.
    pub fn min(&self) -> Result<KTable<K, V>> {
        self.reduce_builtin(Reducer::Min, Options::new())
    }

    /// The largest of each key's values (`long` or `double`), in the engine.
    pub fn max(&self) -> Result<KTable<K, V>> {
        self.reduce_builtin(Reducer::Max, Options::new())
    }

    /// Each key's latest value, in the engine.
    pub fn latest(&self) -> Result<KTable<K, V>> {
        self.reduce_builtin(Reducer::Latest, Options::new())
    }

    /// Folds each key's values into a table of aggregates (`KGroupedStream.aggregate`):
    /// `init()` starts a key's aggregate, then `f(key, value, aggregate) ->
    /// new aggregate` (Kafka Streams' order) folds in each value. The
    /// aggregate's serde is `A`'s (or `materialized`'s value serde).
    pub fn aggregate<A: Serde, I, F>(&self, init: I, f: F) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F>(&self, init: I, f: F, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(init, f, None)));
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: None,
            merger: None,
        };
        KTable::wrap(self.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}
