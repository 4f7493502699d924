//! Async operators: the `*_async` twins of the stream operators, whose
//! closures return futures (`|v| async move { ... }`).
//!
//! Within a bundle, an async step calls its closure for every record in
//! record order, then runs the futures together on the thread processing
//! the bundle, so an I/O-bound step overlaps its waits; outputs keep record
//! order. A future that panics fails its record alone (under the configured
//! policy, as a panicking closure does); one still pending when the
//! bundle's bound ([`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT)) passes is
//! dropped and fails its record, naming the function, token and node.
//!
//! The closure runs synchronously and may read its borrowed arguments;
//! the future it returns owns what it needs (`'static`), and need not be
//! `Send`. The SDK runs no async runtime: a future that needs one's
//! reactor or timer (tokio's `sleep`, an async HTTP client) panics when
//! polled ("no reactor running") and fails its record; runtime-neutral
//! futures (channels, `futures` combinators, your own) run as they are.

use std::future::Future;
use std::sync::Arc;

use crate::bundle::{take, AnyBox, AsyncFold, LocalFuture, Out, StepFn, ValueJoiner};
use crate::dsl::{build_step, filter_op, map_values_op, JoinFn, KGroupedStream, KGroupedTable, KStream, KTable};
use crate::errors::Result;
use crate::fold::{AggregateNames, Aggregations};
use crate::options::{Options, KEY, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::{Serde, Windowed};
use crate::session::fn_name;
use crate::windows::{SessionWindowedKStream, TimeWindowedKStream};

/// The future of an element's outcome, boxed for the executor.
fn outcome(f: impl Future<Output = Out> + 'static) -> LocalFuture<std::result::Result<Out, String>> {
    Box::pin(async move { Ok(f.await) })
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// `f(value)` resolves to the new value; keys are unchanged
    /// (`KStream.mapValues` with an async mapper).
    ///
    /// ```no_run
    /// # fn f(orders: polystreams::KStream<String, String>) -> polystreams::Result<()> {
    /// orders.map_values_async(|v: String| async move { v.to_uppercase() })?;
    /// # Ok(()) }
    /// ```
    pub fn map_values_async<V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        self.map_values_async_with(f, Options::new())
    }

    /// [`map_values_async`](Self::map_values_async) with `name` and `value_serde`.
    pub fn map_values_async_with<V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        o.check("map_values", NAME | VALUE)?;
        let name = fn_name::<F>("map_values");
        let step = map_values_step_async::<K, V, V2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            name,
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, false),
        )?;
        self.stream(h, "map_values")
    }

    /// Keeps the records for which `f(key, value)` resolves to true
    /// (`KStream.filter` with an async predicate).
    pub fn filter_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        self.filter_async_with(f, Options::new())
    }

    /// [`filter_async`](Self::filter_async) with `name`.
    pub fn filter_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        o.check("filter", NAME)?;
        let name = fn_name::<F>("filter");
        let step = predicate_step_async(name.clone(), false, f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, filter_op(input, false, o.name_or_empty(), None))?;
        self.stream(h, "filter")
    }

    /// Drops the records for which `f(key, value)` resolves to true
    /// (`KStream.filterNot` with an async predicate).
    pub fn filter_not_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        self.filter_not_async_with(f, Options::new())
    }

    /// [`filter_not_async`](Self::filter_not_async) with `name`.
    pub fn filter_not_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        o.check("filter_not", NAME)?;
        let name = fn_name::<F>("filter_not");
        let step = predicate_step_async(name.clone(), true, f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, filter_op(input, true, o.name_or_empty(), None))?;
        self.stream(h, "filter_not")
    }

    /// `f(value)` resolves to zero, one or many values, each a record with
    /// the input's key (`KStream.flatMapValues` with an async mapper).
    pub fn flat_map_values_async<V2: Serde, I, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        self.flat_map_values_async_with(f, Options::new())
    }

    /// [`flat_map_values_async`](Self::flat_map_values_async) with `name` and `value_serde`.
    pub fn flat_map_values_async_with<V2: Serde, I, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        o.check("flat_map_values", NAME | VALUE)?;
        let name = fn_name::<F>("flat_map_values");
        let step = flat_map_values_step_async::<K, V, V2, I, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

    /// `f(key, value)` resolves to the new key and value (`KStream.map`
    /// with an async mapper). Changing keys marks the stream for
    /// repartitioning before a grouping.
    pub fn map_async<K2: Serde, V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (K2, V2)> + 'static,
    {
        self.map_async_with(f, Options::new())
    }

    /// [`map_async`](Self::map_async) with `name`, `key_serde` and `value_serde`.
    pub fn map_async_with<K2: Serde, V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (K2, V2)> + 'static,
    {
        o.check("map", NAME | KEY | VALUE)?;
        let name = fn_name::<F>("map");
        let step = map_step_async::<K, V, K2, V2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

    /// `f(key, value)` resolves to the new key; values are unchanged
    /// (`KStream.selectKey` with an async selector).
    pub fn select_key_async<K2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        self.select_key_async_with(f, Options::new())
    }

    /// [`select_key_async`](Self::select_key_async) with `name` and `key_serde`.
    pub fn select_key_async_with<K2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        o.check("select_key", NAME | KEY)?;
        let name = fn_name::<F>("select_key");
        let step = key_step_async::<K, V, K2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
            Op::SelectKey(pb::SelectKeyOp { input, token, key_serde: o.key_or(K2::NAME), name: o.name_or_empty() })
        })?;
        self.stream(h, "select_key")
    }

    /// Awaits `f(key, value)` for each record and passes it on unchanged
    /// (`KStream.peek` with an async action).
    pub fn peek_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.peek_async_with(f, Options::new())
    }

    /// [`peek_async`](Self::peek_async) with `name`.
    pub fn peek_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        o.check("peek", NAME)?;
        let name = fn_name::<F>("peek");
        let step = action_step_async(name.clone(), true, f);
        let input = self.handle.id;
        let h =
            build_step(&self.app, name, step, |token| Op::Peek(pb::PeekOp { input, token, name: o.name_or_empty() }))?;
        self.stream(h, "peek")
    }

    /// Awaits `f(key, value)` for each record; terminal (`KStream.foreach`
    /// with an async action), e.g. a write to another system.
    pub fn foreach_async<F, Fut>(&self, f: F) -> Result<()>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.foreach_async_with(f, Options::new())
    }

    /// [`foreach_async`](Self::foreach_async) with `name`.
    pub fn foreach_async_with<F, Fut>(&self, f: F, o: Options) -> Result<()>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        o.check("foreach", NAME)?;
        let name = fn_name::<F>("foreach");
        let step = action_step_async(name.clone(), false, f);
        let input = self.handle.id;
        build_step(&self.app, name, step, |token| {
            Op::Foreach(pb::ForeachOp { input, token, name: o.name_or_empty() })
        })?;
        Ok(())
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// [`join`](Self::join) with an async joiner: `f(value, table value)`
    /// resolves to the new value (`KStream.join(KTable)`), e.g. an
    /// enrichment that also calls a service.
    pub fn join_async<VT: Serde, VR: Serde, F, Fut>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.join_async_with(table, f, Options::new())
    }

    /// [`join_async`](Self::join_async) with `name` and `value_serde`.
    pub fn join_async_with<VT: Serde, VR: Serde, F, Fut>(
        &self,
        table: &KTable<K, VT>,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("join");
        let joiner = ValueJoiner::<V, VT, VR>::new_async(name.clone(), move |v, t| match t {
            Some(t) => {
                let fut = f(v, t);
                Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
            }
            None => Err("an inner join's record came without a table value (a malformed bundle)".to_owned()),
        });
        self.join_with_joiner("join", table, false, JoinFn::Host(name, Arc::new(joiner)), o)
    }

    /// [`left_join`](Self::left_join) with an async joiner: `f` gets `None`
    /// for a key the table does not hold.
    pub fn left_join_async<VT: Serde, VR: Serde, F, Fut>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.left_join_async_with(table, f, Options::new())
    }

    /// [`left_join_async`](Self::left_join_async) with `name` and `value_serde`.
    pub fn left_join_async_with<VT: Serde, VR: Serde, F, Fut>(
        &self,
        table: &KTable<K, VT>,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("left_join");
        let joiner = ValueJoiner::<V, VT, VR>::new_async(name.clone(), move |v, t| {
            let fut = f(v, t);
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        });
        self.join_with_joiner("left_join", table, true, JoinFn::Host(name, Arc::new(joiner)), o)
    }
}

impl<K: Serde, V: Serde> KGroupedStream<K, V> {
    /// [`reduce`](Self::reduce) with an async reducer: `f(aggregate, value)`
    /// resolves to the new aggregate. A bundle's keys fold together, each
    /// key's values in order (each future awaited before the key's next
    /// value); a key's first value becomes its aggregate without a call.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let (name, fold) = reduce_fold::<(), V, F, Fut>(f);
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// [`aggregate`](Self::aggregate) with an async aggregator: `init()`
    /// starts a key's aggregate, `f(key, value, aggregate)` resolves to the
    /// new one. A bundle's keys fold together, each key's values in order.
    pub fn aggregate_async<A: Serde, I, F, Fut>(&self, init: I, f: F) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, f, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, Fut>(&self, init: I, f: F, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        let (names, fold) = aggregate_fold(init, f);
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

/// An async reduce's name and fold: a key's (window's) first value becomes
/// its aggregate without a call; the reducer also merges the sessions a
/// record bridges.
fn reduce_fold<K: Serde, V: Serde, F, Fut>(f: F) -> (String, AsyncFold<K, V, V>)
where
    F: Fn(V, V) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = V> + 'static,
{
    let name = fn_name::<F>("reduce");
    let f = Arc::new(f);
    let g = f.clone();
    let fold = AsyncFold::<K, V, V>::new(
        name.clone(),
        Arc::new(|_: &K, v: V| Box::pin(std::future::ready(v)) as LocalFuture<V>),
        Arc::new(move |_: &K, agg: V, v: V| Box::pin(f(agg, v)) as LocalFuture<V>),
    )
    .with_merge(Arc::new(move |_: &K, a: V, b: V| Box::pin(g(a, b)) as LocalFuture<V>), None);
    (name, fold)
}

/// An async aggregate's names and fold (without a merger).
fn aggregate_fold<K: Serde, V: Serde, A: Serde, I, F, Fut>(init: I, f: F) -> (AggregateNames, AsyncFold<K, V, A>)
where
    I: Fn() -> A + Send + Sync + 'static,
    F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = A> + 'static,
{
    let names = AggregateNames {
        init: fn_name::<I>("aggregate initializer"),
        aggregator: fn_name::<F>("aggregate"),
        subtractor: None,
        merger: None,
    };
    let (f, init) = (Arc::new(f), Arc::new(init));
    let (g, init2) = (f.clone(), init.clone());
    let fold = AsyncFold::<K, V, A>::new(
        names.aggregator.clone(),
        Arc::new(move |k: &K, v: V| Box::pin(g(k, v, init2())) as LocalFuture<A>),
        Arc::new(move |k: &K, agg: A, v: V| Box::pin(f(k, v, agg)) as LocalFuture<A>),
    )
    .with_initial(Arc::new(move || init()));
    (names, fold)
}

impl<K: Serde, V: Serde> TimeWindowedKStream<K, V> {
    /// [`reduce`](Self::reduce) with an async reducer: `f(aggregate,
    /// value)` resolves to the window's new aggregate. A bundle's windows
    /// (and keys) fold together, each window's values in order (each
    /// future awaited before the window's next value); a window's first
    /// value becomes its aggregate without a call. Over time windows
    /// (tumbling, hopping) and sliding windows.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let (name, fold) = reduce_fold::<(), V, F, Fut>(f);
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// [`aggregate`](Self::aggregate) with an async aggregator: `init()`
    /// starts each key's aggregate in each window, `f(key, value,
    /// aggregate)` resolves to the new one; each window's values in order.
    pub fn aggregate_async<A: Serde, I, F, Fut>(&self, init: I, f: F) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, f, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, Fut>(&self, init: I, f: F, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        let (names, fold) = aggregate_fold(init, f);
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> SessionWindowedKStream<K, V> {
    /// [`reduce`](Self::reduce) with an async reducer: `f(aggregate,
    /// value)` resolves to the session's new aggregate, and merging two
    /// sessions a record bridges is `f(aggregate1, aggregate2)`, awaited
    /// likewise. Each key's calls run in order; a bundle's keys together.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let (name, fold) = reduce_fold::<(), V, F, Fut>(f);
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// [`aggregate`](Self::aggregate) with an async aggregator and merger:
    /// `f(key, value, aggregate)` and `merger(key, aggregate1, aggregate2)`
    /// resolve to the new aggregate (the initializer stays synchronous, as
    /// in every aggregate). Each key's calls run in order, each future
    /// awaited before the next; a bundle's keys together.
    pub fn aggregate_async<A: Serde, I, F, Fut, M, MFut>(
        &self,
        init: I,
        f: F,
        merger: M,
    ) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
        M: Fn(&K, A, A) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, f, merger, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, Fut, M, MFut>(
        &self,
        init: I,
        f: F,
        merger: M,
        o: Options,
    ) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
        M: Fn(&K, A, A) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        let (mut names, fold) = aggregate_fold(init, f);
        names.merger = Some(fn_name::<M>("aggregate merger"));
        let fold = fold.with_merge(
            Arc::new(move |k: &K, a: A, b: A| Box::pin(merger(k, a, b)) as LocalFuture<A>),
            names.merger.clone(),
        );
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> KGroupedTable<K, V> {
    /// [`reduce`](Self::reduce) with an async adder and subtractor:
    /// `adder(aggregate, value)` and `subtractor(aggregate, old value)`
    /// resolve to the new aggregate. A bundle's groups fold together, each
    /// group's updates in order (an update's subtractor awaited before its
    /// adder, each future before the group's next call).
    pub fn reduce_async<F, FFut, G, GFut>(&self, adder: F, subtractor: G) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = V> + 'static,
        G: Fn(V, V) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(adder, subtractor, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, FFut, G, GFut>(&self, adder: F, subtractor: G, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = V> + 'static,
        G: Fn(V, V) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = V> + 'static,
    {
        let (name, fold) = reduce_fold::<(), V, F, FFut>(adder);
        let names = (name, Some(fn_name::<G>("reduce subtractor")));
        let fold = fold.with_sub(
            Arc::new(move |_: &(), agg: V, old: V| Box::pin(subtractor(agg, old)) as LocalFuture<V>),
            names.1.clone().unwrap_or_default(),
        );
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.reduce(Arc::new(fold), names, &o)?)
    }

    /// [`aggregate`](Self::aggregate) with an async adder and subtractor:
    /// `init()` starts a group's aggregate, `adder(key, value, aggregate)`
    /// and `subtractor(key, old value, aggregate)` resolve to the new one.
    /// A bundle's groups fold together, each group's updates in order.
    pub fn aggregate_async<A: Serde, I, F, FFut, G, GFut>(
        &self,
        init: I,
        adder: F,
        subtractor: G,
    ) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = A> + 'static,
        G: Fn(&K, V, A) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, adder, subtractor, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, FFut, G, GFut>(
        &self,
        init: I,
        adder: F,
        subtractor: G,
        o: Options,
    ) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = A> + 'static,
        G: Fn(&K, V, A) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = A> + 'static,
    {
        let (mut names, fold) = aggregate_fold(init, adder);
        names.subtractor = Some(fn_name::<G>("aggregate subtractor"));
        let fold = fold.with_sub(
            Arc::new(move |k: &K, agg: A, old: V| Box::pin(subtractor(k, old, agg)) as LocalFuture<A>),
            names.subtractor.clone().unwrap_or_default(),
        );
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

/// An async map_values.
pub(crate) fn map_values_step_async<K: Serde, V: Serde, V2: Serde, Fut: Future<Output = V2> + 'static>(
    name: String,
    f: impl Fn(V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K, V2>(name, move |_, v| {
        let fut = f(take::<V>(v)?);
        Ok(outcome(async move { Out::One(None, Box::new(fut.await)) }))
    })
}

/// An async flat_map_values.
pub(crate) fn flat_map_values_step_async<K: Serde, V: Serde, V2: Serde, I, Fut>(
    name: String,
    f: impl Fn(V) -> Fut + Send + Sync + 'static,
) -> StepFn
where
    I: IntoIterator<Item = V2>,
    Fut: Future<Output = I> + 'static,
{
    StepFn::new_async::<V, K, V2>(name, move |_, v| {
        let fut = f(take::<V>(v)?);
        Ok(outcome(async move { Out::Many(fut.await.into_iter().map(|x| Box::new(x) as AnyBox).collect()) }))
    })
}

/// An async map.
pub(crate) fn map_step_async<K: Serde, V: Serde, K2: Serde, V2: Serde, Fut: Future<Output = (K2, V2)> + 'static>(
    name: String,
    f: impl Fn(&K, V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K2, V2>(name, move |key, v| {
        let v: V = take(v)?;
        let fut = f(key.get::<K>()?, v);
        Ok(outcome(async move {
            let (k2, v2) = fut.await;
            Out::One(Some(Arc::new(k2)), Box::new(v2))
        }))
    })
}

/// An async select_key.
pub(crate) fn key_step_async<K: Serde, V: Serde, K2: Serde, Fut: Future<Output = K2> + 'static>(
    name: String,
    f: impl Fn(&K, &V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K2, V>(name, move |key, v| {
        let fut = {
            let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
            f(key.get::<K>()?, value)
        };
        Ok(outcome(async move { Out::One(Some(Arc::new(fut.await)), v) }))
    })
}

/// An async filter (negate: filter_not).
pub(crate) fn predicate_step_async<K: Serde, V: Serde, Fut: Future<Output = bool> + 'static>(
    name: String,
    negate: bool,
    f: impl Fn(&K, &V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K, V>(name, move |key, v| {
        let fut = {
            let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
            f(key.get::<K>()?, value)
        };
        Ok(outcome(async move {
            if fut.await != negate {
                Out::One(None, v)
            } else {
                Out::Nothing
            }
        }))
    })
}

/// An async peek (pass) or foreach (nothing passes).
pub(crate) fn action_step_async<K: Serde, V: Serde, Fut: Future<Output = ()> + 'static>(
    name: String,
    pass: bool,
    f: impl Fn(&K, &V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K, V>(name, move |key, v| {
        let fut = {
            let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
            f(key.get::<K>()?, value)
        };
        Ok(outcome(async move {
            fut.await;
            if pass {
                Out::One(None, v)
            } else {
                Out::Nothing
            }
        }))
    })
}
