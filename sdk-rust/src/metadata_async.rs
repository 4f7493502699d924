//! Async operators with record metadata: the `*_async` operators of
//! [`MetadataStream`], [`MetadataGroupedStream`], the windowed
//! [`MetadataTimeWindowedStream`] and [`MetadataSessionWindowedStream`], and
//! [`MetadataGroupedTable`] (`stream.with_metadata().map_values_async(..)`).
//!
//! A future cannot borrow the record's metadata, as the synchronous
//! functions do (`&mut RecordMetadata`): the closure gets it by value,
//! its own copy, for the future to move in. A mapper's future resolves
//! to its output together with the metadata its outputs get:
//! `(value, metadata)` (`map_values_async`, `flat_map_values_async`,
//! `select_key_async`; `map_async`: `((key, value), metadata)`), so that a
//! timestamp or header that depends on what the future awaited can be set.
//! The other functions read only (filters, peek, foreach, joiners,
//! reducers, aggregators and their initializer): as in Kafka Streams,
//! their operator sets the outputs' timestamp and headers.
//!
//! The futures run as those of the other async operators do
//! ([`crate::asynchronous`]): together, per bundle, outputs in record
//! order, a panic or a timeout failing its record alone.

use std::future::Future;
use std::sync::Arc;

use crate::async_join::extractor_step_async;
use crate::asynchronous::{action_step_async, key_step_async, predicate_step_async};
use crate::bundle::metadata::{meta_owned, with_meta};
use crate::bundle::{take, AnyBox, AnyKey, AsyncFold, LocalFuture, Out, StepFn, ValueJoiner};
use crate::dsl::{filter_op, map_values_op, JoinFn, KStream, KTable};
use crate::errors::Result;
use crate::fold::AggregateNames;
use crate::options::{Options, KEY, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::RecordMetadata;
use crate::serdes::Serde;
use crate::serdes::Windowed;
use crate::session::fn_name;
use crate::{
    MetadataGroupedStream, MetadataGroupedTable, MetadataSessionWindowedStream, MetadataStream, MetadataTable,
    MetadataTimeWindowedStream,
};

/// The future of an element's outcome with the metadata its outputs get.
fn with_meta_out(
    f: impl Future<Output = (Out, RecordMetadata)> + 'static,
) -> LocalFuture<std::result::Result<Out, String>> {
    Box::pin(async move {
        let (out, meta) = f.await;
        Ok(Out::Meta(Box::new(out), meta))
    })
}

impl<K: Serde, V: Serde> MetadataStream<K, V> {
    /// `KStream.mapValues` with an async mapper and metadata: `f(value,
    /// metadata)` resolves to `(new value, metadata)`, the metadata (its
    /// timestamp and headers) being the output's.
    ///
    /// ```no_run
    /// # fn f(orders: polystreams::KStream<String, String>) -> polystreams::Result<()> {
    /// orders.with_metadata().map_values_async(|v: String, mut m| async move {
    ///     m.headers.push(("seen".to_owned(), Some(b"1".to_vec())));
    ///     (v.to_uppercase(), m)
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn map_values_async<V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (V2, RecordMetadata)> + 'static,
    {
        self.map_values_async_with(f, Options::new())
    }

    /// [`map_values_async`](Self::map_values_async) with `name` and `value_serde`.
    pub fn map_values_async_with<V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (V2, RecordMetadata)> + 'static,
    {
        o.check("map_values", NAME | VALUE)?;
        let name = fn_name::<F>("map_values");
        let step = StepFn::new_async::<V, K, V2>(name.clone(), move |_, v| {
            let fut = f(take::<V>(v)?, meta_owned());
            Ok(with_meta_out(async move {
                let (v2, m) = fut.await;
                (Out::One(None, Box::new(v2)), m)
            }))
        });
        self.build("map_values", name, step, |input, token| {
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, false)(token)
        })
    }

    /// `KStream.flatMapValues` with an async mapper and metadata: `f(value,
    /// metadata)` resolves to `(values, metadata)`; the outputs share the
    /// metadata.
    pub fn flat_map_values_async<V2: Serde, I, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (I, RecordMetadata)> + 'static,
    {
        let name = fn_name::<F>("flat_map_values");
        let step = StepFn::new_async::<V, K, V2>(name.clone(), move |_, v| {
            let fut = f(take::<V>(v)?, meta_owned());
            Ok(with_meta_out(async move {
                let (vs, m) = fut.await;
                (Out::Many(vs.into_iter().map(|x| Box::new(x) as AnyBox).collect()), m)
            }))
        });
        self.build("flat_map_values", name, step, |input, token| {
            Op::FlatMapValues(pb::FlatMapValuesOp {
                input,
                token,
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
                with_key: false,
            })
        })
    }

    /// `KStream.map` with an async mapper and metadata: `f(key, value,
    /// metadata)` resolves to `((new key, new value), metadata)`.
    pub fn map_async<K2: Serde, V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ((K2, V2), RecordMetadata)> + 'static,
    {
        self.map_async_with(f, Options::new())
    }

    /// [`map_async`](Self::map_async) with `name`, `key_serde` and `value_serde`.
    pub fn map_async_with<K2: Serde, V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ((K2, V2), RecordMetadata)> + 'static,
    {
        o.check("map", NAME | KEY | VALUE)?;
        let name = fn_name::<F>("map");
        let step = StepFn::new_async::<V, K2, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v, meta_owned());
            Ok(with_meta_out(async move {
                let ((k2, v2), m) = fut.await;
                (Out::One(Some(Arc::new(k2)), Box::new(v2)), m)
            }))
        });
        self.build("map", name, step, |input, token| {
            Op::Map(pb::MapOp {
                input,
                token,
                key_serde: o.key_or(K2::NAME),
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
            })
        })
    }

    /// `KStream.selectKey` with an async selector and metadata: `f(key,
    /// value, metadata)` resolves to `(new key, metadata)`.
    pub fn select_key_async<K2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (K2, RecordMetadata)> + 'static,
    {
        let name = fn_name::<F>("select_key");
        let step = StepFn::new_async::<V, K2, V>(name.clone(), move |key, v| {
            let fut = {
                let value = v.downcast_ref::<V>().ok_or("the value in flight has another type")?;
                f(key.get::<K>()?, value, meta_owned())
            };
            Ok(with_meta_out(async move {
                let (k2, m) = fut.await;
                (Out::One(Some(Arc::new(k2)), v), m)
            }))
        });
        self.build("select_key", name, step, |input, token| {
            Op::SelectKey(pb::SelectKeyOp { input, token, key_serde: K2::NAME.to_owned(), name: String::new() })
        })
    }

    /// `KStream.filter` with an async predicate and metadata: `f(key,
    /// value, metadata)` resolves to whether the record passes (as it came).
    pub fn filter_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        let name = fn_name::<F>("filter");
        let step = predicate_step_async(name.clone(), false, move |k: &K, v: &V| f(k, v, meta_owned()));
        self.build("filter", name, step, |input, token| filter_op(input, false, String::new(), None)(token))
    }

    /// `KStream.filterNot` with an async predicate and metadata.
    pub fn filter_not_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        let name = fn_name::<F>("filter_not");
        let step = predicate_step_async(name.clone(), true, move |k: &K, v: &V| f(k, v, meta_owned()));
        self.build("filter_not", name, step, |input, token| filter_op(input, true, String::new(), None)(token))
    }

    /// `KStream.peek` with an async action and metadata: awaits `f(key,
    /// value, metadata)` and passes the record on as it came.
    pub fn peek_async<F, Fut>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let name = fn_name::<F>("peek");
        let step = action_step_async(name.clone(), true, move |k: &K, v: &V| f(k, v, meta_owned()));
        self.build("peek", name, step, |input, token| Op::Peek(pb::PeekOp { input, token, name: String::new() }))
    }

    /// `KStream.foreach` with an async action and metadata; terminal.
    pub fn foreach_async<F, Fut>(&self, f: F) -> Result<()>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let name = fn_name::<F>("foreach");
        let step = action_step_async(name.clone(), false, move |k: &K, v: &V| f(k, v, meta_owned()));
        self.register(name, step, |input, token| Op::Foreach(pb::ForeachOp { input, token, name: String::new() }))?;
        Ok(())
    }

    /// `KStream.join(KTable)` with an async joiner and metadata: `f(value,
    /// table value, metadata)` resolves to the new value, the metadata
    /// being the stream record's.
    pub fn join_async<VT: Serde, VR: Serde, F, Fut>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("join");
        let joiner = ValueJoiner::<V, VT, VR>::new_async(name.clone(), move |v, t| match t {
            Some(t) => {
                let fut = f(v, t, meta_owned());
                Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
            }
            None => Err("an inner join's record came without a table value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream().join_op("join", table.handle.id, false, joiner, Options::new())
    }

    /// `KStream.leftJoin(KTable)` with an async joiner and metadata: `f`
    /// gets `None` for a key the table does not hold.
    pub fn left_join_async<VT: Serde, VR: Serde, F, Fut>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("left_join");
        let joiner = ValueJoiner::<V, VT, VR>::new_async(name.clone(), move |v, t| {
            let fut = f(v, t, meta_owned());
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream().join_op("left_join", table.handle.id, true, joiner, Options::new())
    }
}

impl<K: Serde, V: Serde> MetadataStream<K, V> {
    /// `KStream.mapValues(ValueMapperWithKey)` with an async mapper and
    /// metadata: `f(key, value, metadata)` resolves to `(new value,
    /// metadata)`, the metadata its output gets.
    pub fn map_values_with_key_async<V2: Serde, F, Fut>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (V2, RecordMetadata)> + 'static,
    {
        let name = fn_name::<F>("map_values_with_key");
        let step = StepFn::new_async::<V, K, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v, meta_owned());
            Ok(with_meta_out(async move {
                let (v2, m) = fut.await;
                (Out::One(None, Box::new(v2)), m)
            }))
        });
        self.build("map_values_with_key", name, step, |input, token| {
            map_values_op(input, V2::NAME.to_owned(), String::new(), None, true)(token)
        })
    }

    /// `KStream.flatMap` with an async mapper and metadata: `f(key, value,
    /// metadata)` resolves to `(pairs, metadata)`, the outputs sharing the
    /// metadata.
    pub fn flat_map_async<K2: Serde, V2: Serde, I, F, Fut>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (I, RecordMetadata)> + 'static,
    {
        let name = fn_name::<F>("flat_map");
        let step = StepFn::new_async::<V, K2, V2>(name.clone(), move |key, v| {
            let v: V = take(v)?;
            let fut = f(key.get::<K>()?, v, meta_owned());
            Ok(with_meta_out(async move {
                let (pairs, m) = fut.await;
                let pairs = pairs.into_iter().map(|(k2, v2)| (Arc::new(k2) as AnyKey, Box::new(v2) as AnyBox));
                (Out::Pairs(pairs.collect()), m)
            }))
        });
        self.build("flat_map", name, step, |input, token| {
            Op::FlatMap(pb::FlatMapOp {
                input,
                token,
                key_serde: K2::NAME.to_owned(),
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
            })
        })
    }
}

impl<K: Serde, V: Serde> MetadataStream<K, V> {
    /// `KStream.join(KStream, ValueJoiner, JoinWindows)` with an async
    /// joiner and metadata: `f(value, other value, metadata)` resolves to
    /// the joined value, the metadata being that of the record processed
    /// when the match is found (as for [`join_stream`](Self::join_stream)).
    pub fn join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("join");
        let joiner = ValueJoiner::<V, VO, VR>::new_async(name.clone(), move |v, o| match o {
            Some(o) => {
                let fut = f(v, o, meta_owned());
                Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
            }
            None => Err("an inner join's record came without the other value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream().stream_join_op("join", other.handle().id, windows, false, false, joiner, Options::new())
    }

    /// `KStream.leftJoin(KStream, ..)` with an async joiner and metadata:
    /// `f(value, other value or None, metadata)`, the metadata as for
    /// [`left_join_stream`](Self::left_join_stream).
    pub fn left_join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("left_join");
        let joiner = ValueJoiner::<V, VO, VR>::new_async(name.clone(), move |v, o| {
            let fut = f(v, o, meta_owned());
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream().stream_join_op("left_join", other.handle().id, windows, true, false, joiner, Options::new())
    }

    /// `KStream.outerJoin(KStream, ..)` with an async joiner and metadata:
    /// `f(value or None, other value or None, metadata)`.
    pub fn outer_join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("outer_join");
        let joiner = ValueJoiner::<Option<V>, VO, VR>::new_async(name.clone(), move |v, o| {
            let fut = f(v, o, meta_owned());
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream().stream_join_op("outer_join", other.handle().id, windows, false, true, joiner, Options::new())
    }

    /// `KStream.join(GlobalKTable, ..)` with an async key mapper and joiner
    /// and metadata: `mapper(key, value, metadata)` resolves to the global
    /// table's key, `f(value, global value, metadata)` to the joined value;
    /// both get the stream record's metadata.
    pub fn join_global_async<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &crate::GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V, RecordMetadata) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, VG, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("join_global");
        let joiner = ValueJoiner::<V, VG, VR>::new_async(name.clone(), move |v, g| match g {
            Some(g) => {
                let fut = f(v, g, meta_owned());
                Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
            }
            None => Err("an inner join's record came without a global table value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        let mapper_name = fn_name::<M>("join_global");
        let mapper = key_step_async::<K, V, KG, MFut>(mapper_name.clone(), move |k, v| mapper(k, v, meta_owned()));
        let read = pb::Metadata::Read;
        self.stream().join_global_meta_op("join", mapper_name, global, mapper, read, false, joiner, Options::new())
    }

    /// `KStream.leftJoin(GlobalKTable, ..)` with an async key mapper and
    /// joiner and metadata: as [`join_global_async`](Self::join_global_async),
    /// `f` getting `None` for a key the global table does not hold.
    pub fn left_join_global_async<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &crate::GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V, RecordMetadata) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, Option<VG>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let name = fn_name::<F>("left_join_global");
        let joiner = ValueJoiner::<V, VG, VR>::new_async(name.clone(), move |v, g| {
            let fut = f(v, g, meta_owned());
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        let mapper_name = fn_name::<M>("left_join_global");
        let mapper = key_step_async::<K, V, KG, MFut>(mapper_name.clone(), move |k, v| mapper(k, v, meta_owned()));
        let read = pb::Metadata::Read;
        self.stream().join_global_meta_op("left_join", mapper_name, global, mapper, read, true, joiner, Options::new())
    }
}

impl<K: Serde, V: Serde> MetadataGroupedStream<K, V> {
    /// `KGroupedStream.reduce` with an async reducer and metadata:
    /// `f(aggregate, value, metadata)` resolves to the new aggregate, the
    /// metadata being the folded record's. A key's values fold in order; its
    /// first value becomes its aggregate without a call.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let name = fn_name::<F>("reduce");
        let fold = AsyncFold::<(), V, V>::new(
            name.clone(),
            Arc::new(|_: &(), v: V| Box::pin(std::future::ready(v)) as LocalFuture<V>),
            Arc::new(move |_: &(), agg: V, v: V| Box::pin(f(agg, v, meta_owned())) as LocalFuture<V>),
        );
        let app = self.grouped().app.clone();
        KTable::wrap(app, self.aggregations().reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// `KGroupedStream.aggregate` with an async aggregator and metadata:
    /// `init(metadata)` starts a key's aggregate, `f(key, value, aggregate,
    /// metadata)` resolves to the new one; both get the folded record's
    /// metadata.
    pub fn aggregate_async<A: Serde, I, F, Fut>(&self, init: I, f: F) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, f, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, Fut>(&self, init: I, f: F, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: None,
            merger: None,
        };
        let f = Arc::new(f);
        let g = f.clone();
        let fold = AsyncFold::<K, V, A>::new(
            names.aggregator.clone(),
            Arc::new(move |k: &K, v: V| {
                let (a, m) = with_meta(|m| (init(m), m.clone()));
                Box::pin(g(k, v, a, m)) as LocalFuture<A>
            }),
            Arc::new(move |k: &K, agg: A, v: V| Box::pin(f(k, v, agg, meta_owned())) as LocalFuture<A>),
        );
        let app = self.grouped().app.clone();
        KTable::wrap(app, self.aggregations().aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

/// An async reduce with metadata: a group's first value becomes its
/// aggregate without a call; `f(aggregate, value, metadata)` folds in the
/// next, and merges two sessions (the bridging record's metadata).
fn meta_reduce_fold<K: Serde, V: Serde, F, Fut>(f: F) -> (String, AsyncFold<K, V, V>)
where
    F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = V> + 'static,
{
    let name = fn_name::<F>("reduce");
    let f = Arc::new(f);
    let g = f.clone();
    let fold = AsyncFold::<K, V, V>::new(
        name.clone(),
        Arc::new(|_: &K, v: V| Box::pin(std::future::ready(v)) as LocalFuture<V>),
        Arc::new(move |_: &K, agg: V, v: V| Box::pin(f(agg, v, meta_owned())) as LocalFuture<V>),
    )
    .with_merge(Arc::new(move |_: &K, a: V, b: V| Box::pin(g(a, b, meta_owned())) as LocalFuture<V>), None);
    (name, fold)
}

/// An async aggregate with metadata (without a merger): `init(metadata)`
/// starts a group's aggregate, `f(key, value, aggregate, metadata)` folds
/// in a value.
fn meta_aggregate_fold<K: Serde, V: Serde, A: Serde, I, F, Fut>(init: I, f: F) -> (AggregateNames, AsyncFold<K, V, A>)
where
    I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
    F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
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
        Arc::new(move |k: &K, v: V| {
            let (a, m) = with_meta(|m| (init2(m), m.clone()));
            Box::pin(g(k, v, a, m)) as LocalFuture<A>
        }),
        Arc::new(move |k: &K, agg: A, v: V| Box::pin(f(k, v, agg, meta_owned())) as LocalFuture<A>),
    )
    .with_initial(Arc::new(move || with_meta(|m| init(m))));
    (names, fold)
}

impl<K: Serde, V: Serde> MetadataTimeWindowedStream<K, V> {
    /// `TimeWindowedKStream.reduce` with an async reducer and metadata:
    /// `f(aggregate, value, metadata)` resolves to the window's new
    /// aggregate. A bundle's windows fold together, each window's values in
    /// order; a window's first value becomes its aggregate without a call.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let (name, fold) = meta_reduce_fold::<(), V, F, Fut>(f);
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// `TimeWindowedKStream.aggregate` with an async aggregator and
    /// metadata: `init(metadata)` starts a key's aggregate in a window,
    /// `f(key, value, aggregate, metadata)` resolves to the new one.
    pub fn aggregate_async<A: Serde, I, F, Fut>(&self, init: I, f: F) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, f, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<A: Serde, I, F, Fut>(&self, init: I, f: F, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        let (names, fold) = meta_aggregate_fold(init, f);
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> MetadataSessionWindowedStream<K, V> {
    /// `SessionWindowedKStream.reduce` with an async reducer and metadata:
    /// `f(aggregate, value, metadata)` resolves to the session's new
    /// aggregate; merging two sessions a record bridges is `f(aggregate1,
    /// aggregate2, that record's metadata)`. Each key's calls in order.
    pub fn reduce_async<F, Fut>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(f, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + 'static,
    {
        let (name, fold) = meta_reduce_fold::<(), V, F, Fut>(f);
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.reduce(Arc::new(fold), (name, None), &o)?)
    }

    /// `SessionWindowedKStream.aggregate` with an async aggregator and
    /// merger and metadata: `init(metadata)`, `f(key, value, aggregate,
    /// metadata)` and `merger(key, aggregate1, aggregate2, metadata)` (the
    /// bridging record's). Each key's calls in order, each future awaited
    /// before the next; a bundle's keys together.
    pub fn aggregate_async<A: Serde, I, F, Fut, M, MFut>(
        &self,
        init: I,
        f: F,
        merger: M,
    ) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
        M: Fn(&K, A, A, RecordMetadata) -> MFut + Send + Sync + 'static,
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
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
        M: Fn(&K, A, A, RecordMetadata) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        let (mut names, fold) = meta_aggregate_fold(init, f);
        names.merger = Some(fn_name::<M>("aggregate merger"));
        let fold = fold.with_merge(
            Arc::new(move |k: &K, a: A, b: A| Box::pin(merger(k, a, b, meta_owned())) as LocalFuture<A>),
            names.merger.clone(),
        );
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> MetadataGroupedTable<K, V> {
    /// `KGroupedTable.reduce` with an async adder and subtractor and
    /// metadata: `adder(aggregate, value, metadata)` and
    /// `subtractor(aggregate, old value, metadata)` resolve to the new
    /// aggregate (the update's metadata). A bundle's groups fold together,
    /// each group's updates in order, an update's subtractor before its adder.
    pub fn reduce_async<F, FFut, G, GFut>(&self, adder: F, subtractor: G) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, RecordMetadata) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = V> + 'static,
        G: Fn(V, V, RecordMetadata) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = V> + 'static,
    {
        self.reduce_async_with(adder, subtractor, Options::new())
    }

    /// [`reduce_async`](Self::reduce_async) with `name` and `materialized`.
    pub fn reduce_async_with<F, FFut, G, GFut>(&self, adder: F, subtractor: G, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, RecordMetadata) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = V> + 'static,
        G: Fn(V, V, RecordMetadata) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = V> + 'static,
    {
        let (name, fold) = meta_reduce_fold::<(), V, F, FFut>(adder);
        let names = (name, Some(fn_name::<G>("reduce subtractor")));
        let fold = fold.with_sub(
            Arc::new(move |_: &(), agg: V, old: V| Box::pin(subtractor(agg, old, meta_owned())) as LocalFuture<V>),
            names.1.clone().unwrap_or_default(),
        );
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.reduce(Arc::new(fold), names, &o)?)
    }

    /// `KGroupedTable.aggregate` with an async adder and subtractor and
    /// metadata: `init(metadata)` starts a group's aggregate,
    /// `adder(key, value, aggregate, metadata)` and `subtractor(key, old
    /// value, aggregate, metadata)` resolve to the new one.
    pub fn aggregate_async<A: Serde, I, F, FFut, G, GFut>(
        &self,
        init: I,
        adder: F,
        subtractor: G,
    ) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = A> + 'static,
        G: Fn(&K, V, A, RecordMetadata) -> GFut + Send + Sync + 'static,
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
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, RecordMetadata) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = A> + 'static,
        G: Fn(&K, V, A, RecordMetadata) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = A> + 'static,
    {
        let (mut names, fold) = meta_aggregate_fold(init, adder);
        names.subtractor = Some(fn_name::<G>("aggregate subtractor"));
        let fold = fold.with_sub(
            Arc::new(move |k: &K, agg: A, old: V| Box::pin(subtractor(k, old, agg, meta_owned())) as LocalFuture<A>),
            names.subtractor.clone().unwrap_or_default(),
        );
        let a = self.aggregations();
        KTable::wrap(a.app.clone(), a.aggregate(Arc::new(fold), names, A::NAME, &o)?)
    }
}

/// An async joiner with metadata: `f(value, other value or None, metadata)`;
/// `inner`: a record without the other value is malformed (naming `what`).
fn meta_joiner<V: Serde, VO: Serde, VR: Serde, F, Fut>(name: String, inner: Option<&'static str>, f: F) -> JoinFn
where
    F: Fn(V, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = VR> + 'static,
{
    let joiner = ValueJoiner::<V, VO, VR>::new_async(name.clone(), move |v, o| match (o, inner) {
        (None, Some(what)) => Err(format!("an inner join's record came without {what} (a malformed bundle)")),
        (o, _) => {
            let fut = f(v, o, meta_owned());
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        }
    });
    JoinFn::HostMeta(name, Arc::new(joiner))
}

impl<K: Serde, V: Serde> MetadataTable<K, V> {
    /// `KTable.join(KTable)` with an async joiner and metadata: `f(value,
    /// other value, metadata)` resolves to the joined value, the metadata
    /// being that of the update (of either table) the join is processing.
    pub fn join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let f = move |v: V, o: Option<VO>, m| f(v, o.expect("checked: an inner join's other value"), m);
        let joiner = meta_joiner::<V, VO, VR, _, Fut>(fn_name::<F>("join"), Some("the other table's value"), f);
        self.table().table_join_op("join", other.handle().id, (false, false), joiner, Options::new())
    }

    /// `KTable.leftJoin(KTable)` with an async joiner and metadata: `f`
    /// gets `None` for a key `other` does not hold.
    pub fn left_join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = meta_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("left_join"), None, f);
        self.table().table_join_op("left_join", other.handle().id, (true, false), joiner, Options::new())
    }

    /// `KTable.outerJoin(KTable)` with an async joiner and metadata: `f`
    /// gets `None` for the side that does not hold the key.
    pub fn outer_join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = meta_joiner::<Option<V>, VO, VR, F, Fut>(fn_name::<F>("outer_join"), None, f);
        self.table().table_join_op("outer_join", other.handle().id, (false, true), joiner, Options::new())
    }

    /// `KTable.join(other, foreignKeyExtractor, joiner)` with an async
    /// extractor and joiner and metadata: `foreign_key(value, metadata)`
    /// gets this table's update's, `f(value, other value, metadata)` that of
    /// the record the join is processing when it joins.
    pub fn foreign_key_join_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V, RecordMetadata) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, VO, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let f = move |v: V, o: Option<VO>, m| f(v, o.expect("checked: an inner join's other value"), m);
        let name = fn_name::<F>("foreign_key_join");
        let joiner = meta_joiner::<V, VO, VR, _, Fut>(name, Some("the other table's value"), f);
        let fk_name = fn_name::<FK>("foreign_key_join");
        let extractor = extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), move |v| foreign_key(v, meta_owned()));
        let (read, op) = (pb::Metadata::Read, "foreign_key_join");
        let t = self.table();
        t.foreign_key_join_step_op::<VR>(op, fk_name, extractor, read, other.handle().id, false, joiner, Options::new())
    }

    /// `KTable.leftJoin(other, foreignKeyExtractor, joiner)` with an async
    /// extractor and joiner and metadata: as
    /// [`foreign_key_join_async`](Self::foreign_key_join_async), `f` getting
    /// `None` when the foreign key is `None` or names no row of `other`.
    pub fn left_foreign_key_join_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V, RecordMetadata) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, Option<VO>, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = meta_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("left_foreign_key_join"), None, f);
        let fk_name = fn_name::<FK>("left_foreign_key_join");
        let extractor = extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), move |v| foreign_key(v, meta_owned()));
        let (read, op) = (pb::Metadata::Read, "left_foreign_key_join");
        let t = self.table();
        t.foreign_key_join_step_op::<VR>(op, fk_name, extractor, read, other.handle().id, true, joiner, Options::new())
    }
}
