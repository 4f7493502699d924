//! KTable and KGroupedTable: tables, their operators and their aggregations.

use std::sync::Arc;

use crate::bundle::{guarded, take, Fold, Out, StepFn};
use crate::dsl::{build_step, filter_op, map_values_op, predicate_step, KGroupedTable, KStream, KTable};
use crate::errors::{Error, Result};
use crate::fold::Reducer;
use crate::fold::{Aggregate, AggregateNames, Aggregations, TableReduce};
use crate::options::{Options, KEY, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name, Handle};
use crate::store::KeyValueStore;

impl<K: Serde, V: Serde> KTable<K, V> {
    fn table<V2: Serde>(&self, h: Option<Handle>, op: &str) -> Result<KTable<K, V2>> {
        KTable::wrap(self.app.clone(), expect_handle(h, op)?)
    }

    /// Keeps the rows for which `f(key, value)` is true; a row that does not
    /// pass is deleted, so the result forwards a tombstone for it (`KTable.filter`).
    pub fn filter<F>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        self.filter_with(f, Options::new())
    }

    /// [`filter`](Self::filter) with `name` and `materialized` (queryable when named).
    pub fn filter_with<F>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        o.check("filter", NAME | MATERIALIZED)?;
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("filter"),
            predicate_step(false, f),
            filter_op(input, false, o.name_or_empty(), o.materialized_proto()),
        )?;
        self.table(h, "filter")
    }

    /// Deletes the rows for which `f(key, value)` is true (`KTable.filterNot`).
    pub fn filter_not<F>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        self.filter_not_with(f, Options::new())
    }

    /// [`filter_not`](Self::filter_not) with `name` and `materialized`.
    pub fn filter_not_with<F>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        o.check("filter_not", NAME | MATERIALIZED)?;
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("filter_not"),
            predicate_step(true, f),
            filter_op(input, true, o.name_or_empty(), o.materialized_proto()),
        )?;
        self.table(h, "filter_not")
    }

    /// `f(value) -> new value` for each row, never called for a tombstone,
    /// which passes on as one (`KTable.mapValues`).
    pub fn map_values<V2: Serde, F>(&self, f: F) -> Result<KTable<K, V2>>
    where
        F: Fn(V) -> V2 + Send + Sync + 'static,
    {
        self.map_values_with(f, Options::new())
    }

    /// [`map_values`](Self::map_values) with `name`, `value_serde` and `materialized`.
    pub fn map_values_with<V2: Serde, F>(&self, f: F, o: Options) -> Result<KTable<K, V2>>
    where
        F: Fn(V) -> V2 + Send + Sync + 'static,
    {
        o.check("map_values", NAME | VALUE | MATERIALIZED)?;
        let step = StepFn::new::<V, K, V2>(move |_, v| {
            let v: V = take(v)?;
            Ok(Out::One(None, Box::new(guarded(|| f(v))?)))
        });
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            fn_name::<F>("map_values"),
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), o.materialized_proto(), false),
        )?;
        self.table(h, "map_values")
    }

    /// Regroups the table: `f(key, value) -> (new key, new value)`
    /// (`KTable.groupBy`). Each update removes the row's old pair from its
    /// group and adds the new one, so aggregations of the result take an
    /// adder and a subtractor. A pair whose key or value is null (with an
    /// `Option` key type: `None`) is skipped, as Kafka Streams skips a
    /// mapper's null pair: a row that maps to none leaves its old group.
    pub fn group_by<K2: Serde, V2: Serde, F>(&self, f: F) -> Result<KGroupedTable<K2, V2>>
    where
        F: Fn(&K, V) -> (K2, V2) + Send + Sync + 'static,
    {
        self.group_by_with(f, Options::new())
    }

    /// [`group_by`](Self::group_by) with `name` (the repartition topic's),
    /// `key_serde` and `value_serde` (the new pairs').
    pub fn group_by_with<K2: Serde, V2: Serde, F>(&self, f: F, o: Options) -> Result<KGroupedTable<K2, V2>>
    where
        F: Fn(&K, V) -> (K2, V2) + Send + Sync + 'static,
    {
        o.check("group_by", NAME | KEY | VALUE)?;
        let step = StepFn::new::<V, K2, V2>(move |key, v| {
            let v: V = take(v)?;
            let k = key.get::<K>()?;
            let (k2, v2) = guarded(|| f(k, v))?;
            Ok(Out::One(Some(Arc::new(k2)), Box::new(v2)))
        });
        let input = self.handle.id;
        let h = build_step(&self.app, fn_name::<F>("group_by"), step, |token| {
            Op::GroupBy(pb::GroupByOp {
                input,
                token,
                key_serde: o.key_or(K2::NAME),
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
            })
        })?;
        KGroupedTable::wrap(self.app.clone(), expect_handle(h, "group_by")?)
    }

    /// The table's changes as a stream (`KTable.toStream`).
    pub fn to_stream(&self) -> Result<KStream<K, V>> {
        self.to_stream_with(Options::new())
    }

    /// [`to_stream`](Self::to_stream) with `name`.
    pub fn to_stream_with(&self, o: Options) -> Result<KStream<K, V>> {
        o.check("to_stream", NAME)?;
        let op = Op::ToStream(pb::ToStreamOp { input: self.handle.id, name: o.name_or_empty() });
        KStream::wrap(self.app.clone(), expect_handle(self.app.build(op, &[])?, "to_stream")?)
    }

    /// The table's changes as a stream keyed by `f(key, value)`
    /// (`KTable.toStream(KeyValueMapper)`): as in Kafka Streams, a to_stream
    /// node then a select_key node, so a grouping downstream repartitions.
    pub fn to_stream_keyed<K2: Serde, F>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        self.to_stream_keyed_with(f, Options::new())
    }

    /// [`to_stream_keyed`](Self::to_stream_keyed) with `name` (the to_stream
    /// node's) and `key_serde` (the new keys').
    pub fn to_stream_keyed_with<K2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> K2 + Send + Sync + 'static,
    {
        o.check("to_stream_keyed", NAME | KEY)?;
        let stream = self.to_stream_with(o.name_only())?;
        stream.select_key_with(f, o.key_only())
    }

    /// The name of the store the table is kept in (generated when not given
    /// with `materialized`), or None when it has none.
    pub fn store(&self) -> Option<&str> {
        Some(self.handle.store.as_str()).filter(|s| !s.is_empty())
    }

    /// The table's store, for interactive queries while the app runs.
    pub fn query(&self) -> Result<KeyValueStore<K, V>> {
        match self.store() {
            Some(s) => Ok(KeyValueStore::new(self.app.clone(), s)),
            None => Err(Error::invalid(format!("{self:?} is kept in no store, so it cannot be queried"))),
        }
    }
}

impl<K: Serde, V: Serde> KGroupedTable<K, V> {
    fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified }
    }

    /// Counts the rows per group (a group whose rows all left keeps 0).
    pub fn count(&self) -> Result<KTable<K, i64>> {
        self.count_with(Options::new())
    }

    /// [`count`](Self::count) with `name` and `materialized`.
    pub fn count_with(&self, o: Options) -> Result<KTable<K, i64>> {
        KTable::wrap(self.app.clone(), self.aggregations().count(&o)?)
    }

    /// `adder(aggregate, value)` adds a new value to its group,
    /// `subtractor(aggregate, old value)` removes a replaced or deleted one;
    /// a group's first value becomes its aggregate (`KGroupedTable.reduce`).
    pub fn reduce<F, G>(&self, adder: F, subtractor: G) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
        G: Fn(V, V) -> V + Send + Sync + 'static,
    {
        self.reduce_with(adder, subtractor, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F, G>(&self, adder: F, subtractor: G, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
        G: Fn(V, V) -> V + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(TableReduce::new(adder, subtractor)));
        let names = (fn_name::<F>("reduce"), Some(fn_name::<G>("reduce subtractor")));
        KTable::wrap(self.app.clone(), self.aggregations().reduce(fold, names, &o)?)
    }

    /// A built-in reduce, run in the engine: only [`Reducer::Sum`] can remove
    /// values, so the engine refuses the others on a grouped table.
    pub fn reduce_builtin(&self, r: Reducer, o: Options) -> Result<KTable<K, V>> {
        KTable::wrap(self.app.clone(), self.aggregations().builtin(r, &o)?)
    }

    /// The sum of each group's values (`long` or `double`), in the engine.
    pub fn sum(&self) -> Result<KTable<K, V>> {
        self.reduce_builtin(Reducer::Sum, Options::new())
    }

    /// `init()` starts a group's aggregate, `adder(key, value, aggregate)`
    /// adds a new value and `subtractor(key, old value, aggregate)` removes
    /// one (`KGroupedTable.aggregate`).
    pub fn aggregate<A: Serde, I, F, G>(&self, init: I, adder: F, subtractor: G) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
        G: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, adder, subtractor, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F, G>(
        &self,
        init: I,
        adder: F,
        subtractor: G,
        o: Options,
    ) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
        G: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(init, adder, Some(Arc::new(subtractor)))));
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: Some(fn_name::<G>("aggregate subtractor")),
            merger: None,
        };
        KTable::wrap(self.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}
