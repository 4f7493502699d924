//! More async twins: the stream operators that read the key
//! (`map_values_with_key_async`, `flat_map_values_with_key_async`,
//! `flat_map_async`), the groupings' key selectors (`KStream::group_by_async`,
//! `KTable::group_by_async`) and `KTable::to_stream_keyed_async`. They run
//! as the other async operators do (see the `asynchronous` module).

use std::future::Future;
use std::sync::Arc;

use crate::asynchronous::{key_step_async, map_step_async};
use crate::bundle::{take, AnyBox, AnyKey, LocalFuture, Out, StepFn};
use crate::dsl::{build_step, map_values_op, KGroupedStream, KGroupedTable, KStream, KTable};
use crate::errors::Result;
use crate::options::{Options, KEY, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

/// The future of an element's outcome, boxed for the executor.
fn outcome(f: impl Future<Output = Out> + 'static) -> Result<LocalFuture<std::result::Result<Out, String>>, String> {
    Ok(Box::pin(async move { Ok(f.await) }))
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// [`map_values_with_key`](Self::map_values_with_key) with an async
    /// mapper: `f(key, value)` resolves to the new value; keys are unchanged.
    pub fn map_values_with_key_async<V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        self.map_values_with_key_async_with(f, Options::new())
    }

    /// [`map_values_with_key_async`](Self::map_values_with_key_async) with `name` and `value_serde`.
    pub fn map_values_with_key_async_with<V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        o.check("map_values_with_key", NAME | VALUE)?;
        let name = fn_name::<F>("map_values");
        let step = StepFn::new_async::<V, K, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v);
            outcome(async move { Out::One(None, Box::new(fut.await)) })
        });
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            name,
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, true),
        )?;
        self.stream(h, "map_values_with_key")
    }

    /// [`flat_map_values_with_key`](Self::flat_map_values_with_key) with an
    /// async mapper: `f(key, value)` resolves to zero, one or many values.
    pub fn flat_map_values_with_key_async<V2: Serde, I, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        self.flat_map_values_with_key_async_with(f, Options::new())
    }

    /// [`flat_map_values_with_key_async`](Self::flat_map_values_with_key_async)
    /// with `name` and `value_serde`.
    pub fn flat_map_values_with_key_async_with<V2: Serde, I, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        o.check("flat_map_values_with_key", NAME | VALUE)?;
        let name = fn_name::<F>("flat_map_values");
        let step = StepFn::new_async::<V, K, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v);
            outcome(async move { Out::Many(fut.await.into_iter().map(|x| Box::new(x) as AnyBox).collect()) })
        });
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

    /// [`flat_map`](Self::flat_map) with an async mapper: `f(key, value)`
    /// resolves to zero, one or many (new key, new value) pairs. It marks
    /// the stream for repartitioning before a grouping or join.
    pub fn flat_map_async<K2: Serde, V2: Serde, I, F, Fut>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        self.flat_map_async_with(f, Options::new())
    }

    /// [`flat_map_async`](Self::flat_map_async) with `name`, `key_serde` and `value_serde`.
    pub fn flat_map_async_with<K2: Serde, V2: Serde, I, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = I> + 'static,
    {
        o.check("flat_map", NAME | KEY | VALUE)?;
        let name = fn_name::<F>("flat_map");
        let step = StepFn::new_async::<V, K2, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v);
            outcome(async move {
                let pairs = fut.await.into_iter();
                Out::Pairs(pairs.map(|(k2, v2)| (Arc::new(k2) as AnyKey, Box::new(v2) as AnyBox)).collect())
            })
        });
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

    /// [`group_by`](Self::group_by) with an async key selector:
    /// `f(key, value)` resolves to the new key; the records are
    /// repartitioned by it.
    pub fn group_by_async<K2: Serde, F, Fut>(&self, f: F) -> Result<KGroupedStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        self.group_by_async_with(f, Options::new())
    }

    /// [`group_by_async`](Self::group_by_async) with `name`, `key_serde` and `value_serde`.
    pub fn group_by_async_with<K2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KGroupedStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        o.check("group_by", NAME | KEY | VALUE)?;
        let name = fn_name::<F>("group_by");
        let step = key_step_async::<K, V, K2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

impl<K: Serde, V: Serde> KTable<K, V> {
    /// [`group_by`](Self::group_by) with an async mapper: `f(key, value)`
    /// resolves to the row's (new key, new value) pair.
    pub fn group_by_async<K2: Serde, V2: Serde, F, Fut>(&self, f: F) -> Result<KGroupedTable<K2, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (K2, V2)> + 'static,
    {
        self.group_by_async_with(f, Options::new())
    }

    /// [`group_by_async`](Self::group_by_async) with `name`, `key_serde` and `value_serde`.
    pub fn group_by_async_with<K2: Serde, V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KGroupedTable<K2, V2>>
    where
        F: Fn(&K, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (K2, V2)> + 'static,
    {
        o.check("group_by", NAME | KEY | VALUE)?;
        let name = fn_name::<F>("group_by");
        let step = map_step_async::<K, V, K2, V2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, |token| {
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

    /// [`to_stream_keyed`](Self::to_stream_keyed) with an async key
    /// mapper: `f(key, value)` resolves to the change's new key.
    pub fn to_stream_keyed_async<K2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        self.to_stream_keyed_async_with(f, Options::new())
    }

    /// [`to_stream_keyed_async`](Self::to_stream_keyed_async) with `name`
    /// (the to_stream node's) and `key_serde`.
    pub fn to_stream_keyed_async_with<K2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = K2> + 'static,
    {
        o.check("to_stream_keyed", NAME | KEY)?;
        let stream = self.to_stream_with(o.name_only())?;
        stream.select_key_async_with(f, o.key_only())
    }
}
