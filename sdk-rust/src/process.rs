//! The Processor API in the builder: `KStream::process` /
//! `process_values`, `App::add_state_store`, and [`Topology`] for
//! topologies built without the DSL (`addSource` / `addProcessor` /
//! `addSink` / `addStateStore`). Each call is one Build call, answered at
//! once; a refused call returns the engine's error naming node and store.

use std::sync::Arc;

use crate::app::{App, Topics};
use crate::bundle::Func;
use crate::dsl::KStream;
use crate::errors::Result;
use crate::options::{Options, KEY, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::{self, AsyncFixedKeyProcessor, AsyncProcessor, FixedKeyProcessor, Processor, StoreBuilder};
use crate::serdes::Serde;
use crate::session::{fn_name, lock, Session};

fn register_store(app: &Session, store: &StoreBuilder, processors: &[&str]) -> Result<()> {
    let mut op = store.op.clone();
    op.processors = processors.iter().map(|p| (*p).to_owned()).collect();
    app.build(Op::AddStateStore(op), &[])?;
    if store.op.r#type == pb::StoreType::Window as i32 || store.op.r#type == pb::StoreType::TimestampedWindow as i32 {
        lock(&app.window_sizes).insert(store.op.name.clone(), store.op.window_size_ms);
    }
    Ok(())
}

impl App {
    /// Adds a state store for processors to use (`StreamsBuilder.addStateStore`):
    /// [`KStream::process`] names it among its stores.
    pub fn add_state_store(&self, store: StoreBuilder) -> Result<()> {
        register_store(&self.inner.session, &store, &[])
    }

    /// A [`Topology`] of this application, to build with sources,
    /// processors and sinks (Kafka Streams' `Topology`), beside or instead
    /// of the DSL.
    pub fn topology(&self) -> Topology {
        Topology { app: self.inner.session.clone() }
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// Runs a processor on every record (`KStream.process`, Kafka 3.3+):
    /// `supplier` makes one per task; `stores` names the stores (added with
    /// [`App::add_state_store`]) it may use. The result is a stream of what
    /// it forwards.
    pub fn process<K2: Serde, V2: Serde, P, F>(&self, supplier: F, stores: &[&str]) -> Result<KStream<K2, V2>>
    where
        P: Processor<K, V, K2, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.process_with(supplier, stores, Options::new())
    }

    /// [`process`](Self::process) with `name` (`Named.as`), `key_serde` and
    /// `value_serde` (the forwarded records'; default their types').
    pub fn process_with<K2: Serde, V2: Serde, P, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KStream<K2, V2>>
    where
        P: Processor<K, V, K2, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.add_processor(
            "process",
            processor::supplier::<P, K, V, K2, V2>(supplier),
            &fn_name::<P>("process"),
            stores,
            o,
        )
    }

    /// A process step (`op`: "process", or "process_values" for a
    /// fixed-key processor, whose forwards keep their keys) running the
    /// supplier's processors.
    fn add_processor<K2: Serde, V2: Serde>(
        &self,
        op: &str,
        supplier: Arc<dyn processor::Supplier>,
        fn_name: &str,
        stores: &[&str],
        o: Options,
    ) -> Result<KStream<K2, V2>> {
        let values_only = op == "process_values";
        o.check(op, if values_only { NAME | VALUE } else { NAME | KEY | VALUE })?;
        let token = self.app.register(fn_name, Func::Processor(supplier))?;
        let build = Op::Process(pb::ProcessOp {
            input: self.handle.id,
            token,
            name: o.name_or_empty(),
            stores: stores.iter().map(|s| (*s).to_owned()).collect(),
            values_only,
            key_serde: if values_only { String::new() } else { o.key_or(K2::NAME) },
            value_serde: o.value_or(V2::NAME),
        });
        let h = self.app.build(build, &[token])?;
        self.stream(h, op)
    }

    /// [`process`](Self::process) with an [`AsyncProcessor`]: its
    /// `process` is async, awaited one record at a time, in order.
    pub fn process_async<K2: Serde, V2: Serde, P, F>(&self, supplier: F, stores: &[&str]) -> Result<KStream<K2, V2>>
    where
        P: AsyncProcessor<K, V, K2, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.process_async_with(supplier, stores, Options::new())
    }

    /// [`process_async`](Self::process_async) with `name`, `key_serde` and `value_serde`.
    pub fn process_async_with<K2: Serde, V2: Serde, P, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KStream<K2, V2>>
    where
        P: AsyncProcessor<K, V, K2, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        let supplier = processor::async_supplier::<P, K, V, K2, V2>(supplier);
        self.add_processor("process", supplier, &fn_name::<P>("process"), stores, o)
    }

    /// Runs a fixed-key processor on every record (`KStream.processValues`):
    /// it may change values, timestamps and headers, never keys, so no
    /// repartition follows.
    pub fn process_values<V2: Serde, P, F>(&self, supplier: F, stores: &[&str]) -> Result<KStream<K, V2>>
    where
        P: FixedKeyProcessor<K, V, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.process_values_with(supplier, stores, Options::new())
    }

    /// [`process_values`](Self::process_values) with `name` and `value_serde`.
    pub fn process_values_with<V2: Serde, P, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KStream<K, V2>>
    where
        P: FixedKeyProcessor<K, V, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        let supplier = processor::fixed_supplier::<P, K, V, V2>(supplier);
        self.add_processor("process_values", supplier, &fn_name::<P>("process_values"), stores, o)
    }

    /// [`process_values`](Self::process_values) with an
    /// [`AsyncFixedKeyProcessor`]: its `process` is async, awaited one record
    /// at a time, in order (as [`process_async`](Self::process_async)'s);
    /// its forwards keep their keys.
    pub fn process_values_async<V2: Serde, P, F>(&self, supplier: F, stores: &[&str]) -> Result<KStream<K, V2>>
    where
        P: AsyncFixedKeyProcessor<K, V, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.process_values_async_with(supplier, stores, Options::new())
    }

    /// [`process_values_async`](Self::process_values_async) with `name` and `value_serde`.
    pub fn process_values_async_with<V2: Serde, P, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KStream<K, V2>>
    where
        P: AsyncFixedKeyProcessor<K, V, V2>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        let supplier = processor::async_fixed_supplier::<P, K, V, V2>(supplier);
        self.add_processor("process_values", supplier, &fn_name::<P>("process_values"), stores, o)
    }
}

/// A topology built node by node (Kafka Streams' `Topology`), from
/// [`App::topology`]: sources, processors, sinks and the stores they use.
/// Each call is one Build call; the engine refuses an unknown parent, a
/// name used twice or a store no call added, naming them.
#[derive(Clone)]
pub struct Topology {
    app: Arc<Session>,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Topology(app {:?})", self.app.application_id)
    }
}

impl Topology {
    /// A source node reading `topics` with K's and V's serdes
    /// (`Topology.addSource(name, topics...)`), or, given a
    /// [`Pattern`](crate::Pattern), every topic whose whole name it matches
    /// (`Topology.addSource(name, Pattern)`).
    pub fn add_source<K: Serde, V: Serde>(&self, name: &str, topics: impl Topics) -> Result<&Topology> {
        self.add_source_with::<K, V>(name, topics, Options::new())
    }

    /// [`add_source`](Self::add_source) with `key_serde` and `value_serde` by name.
    pub fn add_source_with<K: Serde, V: Serde>(
        &self,
        name: &str,
        topics: impl Topics,
        o: Options,
    ) -> Result<&Topology> {
        o.check("add_source", KEY | VALUE)?;
        let (topics, topic_pattern) = topics.source();
        let op = Op::AddSource(pb::AddSourceOp {
            name: name.to_owned(),
            topics: topics.clone(),
            topic_pattern,
            key_serde: o.key_or(K::NAME),
            value_serde: o.value_or(V::NAME),
        });
        self.app.build(op, &[])?;
        lock(&self.app.sources).extend(topics);
        Ok(self)
    }

    /// A processor node fed by the named sources and processors
    /// (`Topology.addProcessor(name, supplier, parentNames...)`); `supplier`
    /// makes one processor per task. Its forwards are encoded with KOut's
    /// and VOut's serdes.
    pub fn add_processor<KIn, VIn, KOut, VOut, P, F>(
        &self,
        name: &str,
        supplier: F,
        parents: &[&str],
    ) -> Result<&Topology>
    where
        KIn: Serde,
        VIn: Serde,
        KOut: Serde,
        VOut: Serde,
        P: Processor<KIn, VIn, KOut, VOut>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.add_processor_with(name, supplier, parents, &[], Options::new())
    }

    /// [`add_processor`](Self::add_processor) connected to `stores` (added
    /// before), with the forwards' `key_serde` and `value_serde` by name.
    pub fn add_processor_with<KIn, VIn, KOut, VOut, P, F>(
        &self,
        name: &str,
        supplier: F,
        parents: &[&str],
        stores: &[&str],
        o: Options,
    ) -> Result<&Topology>
    where
        KIn: Serde,
        VIn: Serde,
        KOut: Serde,
        VOut: Serde,
        P: Processor<KIn, VIn, KOut, VOut>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.add_supplier::<KOut, VOut>(
            name,
            processor::supplier::<P, KIn, VIn, KOut, VOut>(supplier),
            &fn_name::<P>("add_processor"),
            parents,
            stores,
            o,
        )
    }

    /// [`add_processor`](Self::add_processor) with an [`AsyncProcessor`]:
    /// its `process` is async, awaited one record at a time, in order (as
    /// [`KStream::process_async`]'s).
    pub fn add_processor_async<KIn, VIn, KOut, VOut, P, F>(
        &self,
        name: &str,
        supplier: F,
        parents: &[&str],
    ) -> Result<&Topology>
    where
        KIn: Serde,
        VIn: Serde,
        KOut: Serde,
        VOut: Serde,
        P: AsyncProcessor<KIn, VIn, KOut, VOut>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.add_processor_async_with(name, supplier, parents, &[], Options::new())
    }

    /// [`add_processor_async`](Self::add_processor_async) connected to
    /// `stores`, with the forwards' `key_serde` and `value_serde` by name.
    pub fn add_processor_async_with<KIn, VIn, KOut, VOut, P, F>(
        &self,
        name: &str,
        supplier: F,
        parents: &[&str],
        stores: &[&str],
        o: Options,
    ) -> Result<&Topology>
    where
        KIn: Serde,
        VIn: Serde,
        KOut: Serde,
        VOut: Serde,
        P: AsyncProcessor<KIn, VIn, KOut, VOut>,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.add_supplier::<KOut, VOut>(
            name,
            processor::async_supplier::<P, KIn, VIn, KOut, VOut>(supplier),
            &fn_name::<P>("add_processor"),
            parents,
            stores,
            o,
        )
    }

    /// A processor node running the supplier's processors.
    fn add_supplier<KOut: Serde, VOut: Serde>(
        &self,
        name: &str,
        supplier: Arc<dyn processor::Supplier>,
        fn_name: &str,
        parents: &[&str],
        stores: &[&str],
        o: Options,
    ) -> Result<&Topology> {
        o.check("add_processor", KEY | VALUE)?;
        let token = self.app.register(fn_name, Func::Processor(supplier))?;
        let op = Op::AddProcessor(pb::AddProcessorOp {
            name: name.to_owned(),
            token,
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            stores: stores.iter().map(|s| (*s).to_owned()).collect(),
            key_serde: o.key_or(KOut::NAME),
            value_serde: o.value_or(VOut::NAME),
        });
        self.app.build(op, &[token])?;
        Ok(self)
    }

    /// A sink node writing what its parents forward to `topic` with K's and
    /// V's serdes (`Topology.addSink(name, topic, parentNames...)`).
    pub fn add_sink<K: Serde, V: Serde>(&self, name: &str, topic: &str, parents: &[&str]) -> Result<&Topology> {
        self.add_sink_with::<K, V>(name, topic, parents, Options::new())
    }

    /// [`add_sink`](Self::add_sink) with `key_serde` and `value_serde` by name.
    pub fn add_sink_with<K: Serde, V: Serde>(
        &self,
        name: &str,
        topic: &str,
        parents: &[&str],
        o: Options,
    ) -> Result<&Topology> {
        o.check("add_sink", KEY | VALUE)?;
        let op = Op::AddSink(pb::AddSinkOp {
            name: name.to_owned(),
            topic: topic.to_owned(),
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            key_serde: o.key_or(K::NAME),
            value_serde: o.value_or(V::NAME),
        });
        self.app.build(op, &[])?;
        Ok(self)
    }

    /// A store connected to the named processors
    /// (`Topology.addStateStore(storeBuilder, processorNames...)`).
    pub fn add_state_store(&self, store: StoreBuilder, processors: &[&str]) -> Result<&Topology> {
        register_store(&self.app, &store, processors)?;
        Ok(self)
    }
}

// Record metadata for the stateless operators, folds and joins (opt-in).

use crate::bundle::metadata::with_meta;
use crate::bundle::StepFn;
use crate::bundle::{Fold, ValueJoiner};
use crate::dsl::{
    action_step, filter_op, flat_map_step, flat_map_values_step, key_step, map_step, map_values_op, map_values_step,
    map_values_with_key_step, predicate_step,
};
use crate::dsl::{JoinFn, KGroupedStream, KGroupedTable, KTable};
use crate::fold::{Aggregate, AggregateNames, Aggregations, StreamReduce, TableReduce};
use crate::processor::RecordMetadata;

/// A stream whose next operator's function also gets each record's
/// [`RecordMetadata`] (timestamp, headers, topic, partition, offset), from
/// [`KStream::with_metadata`]. Mappers get it `&mut`: the timestamp and
/// headers they set become their outputs'. The `*_async` operators' closures
/// get it by value, and a mapper's future answers its output with the
/// metadata its outputs get (`(value, metadata)`; [`map_values_async`](Self::map_values_async)).
/// Only functions that ask pay for
/// it: their bundles carry the records' headers, and their answers the
/// outputs' timestamps and headers.
pub struct MetadataStream<K, V> {
    stream: KStream<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataStream({:?})", self.stream.handle)
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// The next operator's function also gets the record's metadata
    /// (Python's `with_metadata(fn)`, Node's `withMetadata(fn)`):
    /// `stream.with_metadata().map_values(|v, m| format!("{}@{}: {v}", m.topic, m.offset))`.
    pub fn with_metadata(&self) -> MetadataStream<K, V> {
        MetadataStream { stream: self.clone() }
    }
}

impl<K: Serde, V: Serde> MetadataStream<K, V> {
    pub(crate) fn build<K2: Serde, V2: Serde>(
        &self,
        op: &str,
        fn_type: String,
        step: StepFn,
        make: impl FnOnce(u64, u32) -> Op,
    ) -> Result<KStream<K2, V2>> {
        let h = self.register(fn_type, step, make)?;
        self.stream.stream(h, op)
    }

    /// Registers a step whose function gets the records' metadata
    /// (METADATA_WRITE) and adds its operator; answers its handle, if any.
    pub(crate) fn register(
        &self,
        fn_type: String,
        mut step: StepFn,
        make: impl FnOnce(u64, u32) -> Op,
    ) -> Result<Option<crate::session::Handle>> {
        step.metadata = true;
        let app = &self.stream.app;
        let token = app.register_with(&fn_type, Func::Step(Arc::new(step)), pb::Metadata::Write)?;
        app.build(make(self.stream.handle.id, token), &[token])
    }

    pub(crate) fn stream(&self) -> &KStream<K, V> {
        &self.stream
    }

    /// `KStream.mapValues` with metadata.
    pub fn map_values<V2: Serde, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(V, &mut RecordMetadata) -> V2 + Send + Sync + 'static,
    {
        self.map_values_with(f, Options::new())
    }

    /// [`map_values`](Self::map_values) with `name` and `value_serde`.
    pub fn map_values_with<V2: Serde, F>(&self, f: F, o: Options) -> Result<KStream<K, V2>>
    where
        F: Fn(V, &mut RecordMetadata) -> V2 + Send + Sync + 'static,
    {
        o.check("map_values", NAME | VALUE)?;
        let step = map_values_step::<K, V, V2>(move |v| with_meta(|m| f(v, m)));
        self.build("map_values", fn_name::<F>("map_values"), step, |input, token| {
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), None, false)(token)
        })
    }

    /// `KStream.mapValues(ValueMapperWithKey)` with metadata.
    pub fn map_values_with_key<V2: Serde, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V, &mut RecordMetadata) -> V2 + Send + Sync + 'static,
    {
        let step = map_values_with_key_step::<K, V, V2>(move |k, v| with_meta(|m| f(k, v, m)));
        self.build("map_values_with_key", fn_name::<F>("map_values_with_key"), step, |input, token| {
            map_values_op(input, V2::NAME.to_owned(), String::new(), None, true)(token)
        })
    }

    /// `KStream.flatMap` with metadata (the outputs share it).
    pub fn flat_map<K2: Serde, V2: Serde, I, F>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        I: IntoIterator<Item = (K2, V2)>,
        F: Fn(&K, V, &mut RecordMetadata) -> I + Send + Sync + 'static,
    {
        let step =
            flat_map_step::<K, V, K2, V2, Vec<(K2, V2)>>(move |k, v| with_meta(|m| f(k, v, m).into_iter().collect()));
        self.build("flat_map", fn_name::<F>("flat_map"), step, |input, token| {
            Op::FlatMap(pb::FlatMapOp {
                input,
                token,
                key_serde: K2::NAME.to_owned(),
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
            })
        })
    }

    /// `KStream.flatMapValues` with metadata (the outputs share it).
    pub fn flat_map_values<V2: Serde, I, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        I: IntoIterator<Item = V2>,
        F: Fn(V, &mut RecordMetadata) -> I + Send + Sync + 'static,
    {
        let step = flat_map_values_step::<K, V, V2, Vec<V2>>(move |v| with_meta(|m| f(v, m).into_iter().collect()));
        self.build("flat_map_values", fn_name::<F>("flat_map_values"), step, |input, token| {
            Op::FlatMapValues(pb::FlatMapValuesOp {
                input,
                token,
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
                with_key: false,
            })
        })
    }

    /// `KStream.map` with metadata.
    pub fn map<K2: Serde, V2: Serde, F>(&self, f: F) -> Result<KStream<K2, V2>>
    where
        F: Fn(&K, V, &mut RecordMetadata) -> (K2, V2) + Send + Sync + 'static,
    {
        let step = map_step::<K, V, K2, V2>(move |k, v| with_meta(|m| f(k, v, m)));
        self.build("map", fn_name::<F>("map"), step, |input, token| {
            Op::Map(pb::MapOp {
                input,
                token,
                key_serde: K2::NAME.to_owned(),
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
            })
        })
    }

    /// `KStream.selectKey` with metadata.
    pub fn select_key<K2: Serde, F>(&self, f: F) -> Result<KStream<K2, V>>
    where
        F: Fn(&K, &V, &mut RecordMetadata) -> K2 + Send + Sync + 'static,
    {
        let step = key_step::<K, V, K2>(move |k, v| with_meta(|m| f(k, v, m)));
        self.build("select_key", fn_name::<F>("select_key"), step, |input, token| {
            Op::SelectKey(pb::SelectKeyOp { input, token, key_serde: K2::NAME.to_owned(), name: String::new() })
        })
    }

    /// `KStream.filter` with metadata (read only: a record passes as it came).
    pub fn filter<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata) -> bool + Send + Sync + 'static,
    {
        let step = predicate_step::<K, V>(false, move |k, v| with_meta(|m| f(k, v, m)));
        self.build("filter", fn_name::<F>("filter"), step, |input, token| {
            filter_op(input, false, String::new(), None)(token)
        })
    }

    /// `KStream.filterNot` with metadata.
    pub fn filter_not<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata) -> bool + Send + Sync + 'static,
    {
        let step = predicate_step::<K, V>(true, move |k, v| with_meta(|m| f(k, v, m)));
        self.build("filter_not", fn_name::<F>("filter_not"), step, |input, token| {
            filter_op(input, true, String::new(), None)(token)
        })
    }

    /// `KStream.peek` with metadata.
    pub fn peek<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata) + Send + Sync + 'static,
    {
        let step = action_step::<K, V>(true, move |k, v| with_meta(|m| f(k, v, m)));
        self.build("peek", fn_name::<F>("peek"), step, |input, token| {
            Op::Peek(pb::PeekOp { input, token, name: String::new() })
        })
    }
}

/// A grouped stream whose reducer or aggregator (and initializer) also get
/// the [`RecordMetadata`] of the record being folded (timestamp, headers,
/// topic, partition, offset), from [`KGroupedStream::with_metadata`]. They
/// read it only: as in Kafka Streams, the fold sets its outputs' timestamp
/// and headers.
pub struct MetadataGroupedStream<K, V> {
    grouped: KGroupedStream<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataGroupedStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataGroupedStream({:?})", self.grouped.handle)
    }
}

impl<K: Serde, V: Serde> KGroupedStream<K, V> {
    /// The reducer or aggregator (and initializer) also get the metadata of
    /// the record being folded (Python's `with_metadata(fn)`, Node's
    /// `withMetadata(fn)`): `grouped.with_metadata().reduce(|a, v, m| a + v + m.offset)`.
    pub fn with_metadata(&self) -> MetadataGroupedStream<K, V> {
        MetadataGroupedStream { grouped: self.clone() }
    }
}

impl<K: Serde, V: Serde> MetadataGroupedStream<K, V> {
    pub(crate) fn grouped(&self) -> &KGroupedStream<K, V> {
        &self.grouped
    }

    pub(crate) fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.grouped.app, input: self.grouped.handle.id, metadata: pb::Metadata::Read }
    }

    /// `KGroupedStream.reduce` with metadata: `f(aggregate, value, metadata)`
    /// (a key's first value becomes its aggregate without a call).
    pub fn reduce<F>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        let name = fn_name::<F>("reduce");
        let fold = Arc::new(Fold(StreamReduce::<V, _>::new(move |a, v| with_meta(|m| f(a, v, m)))));
        KTable::wrap(self.grouped.app.clone(), self.aggregations().reduce(fold, (name, None), &o)?)
    }

    /// `KGroupedStream.aggregate` with metadata: `init(metadata)` starts a
    /// key's aggregate, `f(key, value, aggregate, metadata)` folds in a value.
    pub fn aggregate<A: Serde, I, F>(&self, init: I, f: F) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F>(&self, init: I, f: F, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: None,
            merger: None,
        };
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(
            move || with_meta(|m| init(m)),
            move |k, v, a| with_meta(|m| f(k, v, a, m)),
            None,
        )));
        KTable::wrap(self.grouped.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}

/// A grouped table whose adder, subtractor (and initializer) also get the
/// [`RecordMetadata`] of the table update being folded, from
/// [`KGroupedTable::with_metadata`]; read-only, as for
/// [`MetadataGroupedStream`].
pub struct MetadataGroupedTable<K, V> {
    grouped: KGroupedTable<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataGroupedTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataGroupedTable({:?})", self.grouped.handle)
    }
}

impl<K: Serde, V: Serde> KGroupedTable<K, V> {
    /// The adder, subtractor (and initializer) also get the metadata of the
    /// table update being folded (Python's `with_metadata(fn)`, Node's
    /// `withMetadata(fn)`).
    pub fn with_metadata(&self) -> MetadataGroupedTable<K, V> {
        MetadataGroupedTable { grouped: self.clone() }
    }
}

impl<K: Serde, V: Serde> MetadataGroupedTable<K, V> {
    pub(crate) fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.grouped.app, input: self.grouped.handle.id, metadata: pb::Metadata::Read }
    }

    /// `KGroupedTable.reduce` with metadata: `adder(aggregate, value,
    /// metadata)`, `subtractor(aggregate, old value, metadata)`.
    pub fn reduce<F, G>(&self, adder: F, subtractor: G) -> Result<KTable<K, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
        G: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        let names = (fn_name::<F>("reduce"), Some(fn_name::<G>("reduce subtractor")));
        let fold = Arc::new(Fold(TableReduce::new(
            move |a, v| with_meta(|m| adder(a, v, m)),
            move |a, v| with_meta(|m| subtractor(a, v, m)),
        )));
        KTable::wrap(self.grouped.app.clone(), self.aggregations().reduce(fold, names, &Options::new())?)
    }

    /// `KGroupedTable.aggregate` with metadata: `init(metadata)`,
    /// `adder(key, value, aggregate, metadata)`, `subtractor(key, old value,
    /// aggregate, metadata)`.
    pub fn aggregate<A: Serde, I, F, G>(&self, init: I, adder: F, subtractor: G) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
        G: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: Some(fn_name::<G>("aggregate subtractor")),
            merger: None,
        };
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(
            move || with_meta(|m| init(m)),
            move |k, v, a| with_meta(|m| adder(k, v, a, m)),
            Some(Arc::new(move |k: &K, v: V, a: A| with_meta(|m| subtractor(k, v, a, m)))),
        )));
        KTable::wrap(self.grouped.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &Options::new())?)
    }
}

impl<K: Serde, V: Serde> MetadataStream<K, V> {
    /// `KStream.join(KTable)` with metadata: `f(value, table value,
    /// metadata)`, the metadata being the stream record's.
    pub fn join<VT: Serde, VR: Serde, F>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let name = fn_name::<F>("join");
        let joiner = ValueJoiner::<V, VT, VR>::new(move |v, t| match t {
            Some(t) => Ok(with_meta(|m| f(v, t, m))),
            None => Err("an inner join's record came without a table value (a malformed bundle)".to_owned()),
        });
        self.stream.join_op("join", table.handle.id, false, JoinFn::HostMeta(name, Arc::new(joiner)), Options::new())
    }

    /// `KStream.join(KStream, ValueJoiner, JoinWindows)` with metadata:
    /// `f(value, other value, metadata)`, the metadata being that of the
    /// record being processed when the match is found (either side's; its
    /// timestamp is that record's, not the output's later one).
    pub fn join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let name = fn_name::<F>("join");
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| match t {
            Some(t) => Ok(with_meta(|m| f(v, t, m))),
            None => Err("an inner join's record came without the other value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream.stream_join_op("join", other.handle.id, windows, false, false, joiner, Options::new())
    }

    /// `KStream.leftJoin(KStream, ValueJoiner, JoinWindows)` with metadata:
    /// `f(value, other value or None, metadata)`. A match's metadata is that
    /// of the record being processed when it is found, as for
    /// [`join_stream`](Self::join_stream); an unjoined record's (`None`)
    /// is that of the record being processed when its window closed and it
    /// is emitted (Kafka Streams calls the joiner then), not its own.
    pub fn left_join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let name = fn_name::<F>("left_join");
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| Ok(with_meta(|m| f(v, t, m))));
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream.stream_join_op("left_join", other.handle.id, windows, true, false, joiner, Options::new())
    }

    /// `KStream.outerJoin(KStream, ValueJoiner, JoinWindows)` with metadata:
    /// `f(value or None, other value or None, metadata)`, the metadata as
    /// for [`left_join_stream`](Self::left_join_stream).
    pub fn outer_join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: crate::JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let name = fn_name::<F>("outer_join");
        let joiner = ValueJoiner::<Option<V>, VO, VR>::new(move |v, t| Ok(with_meta(|m| f(v, t, m))));
        let joiner = JoinFn::HostMeta(name, Arc::new(joiner));
        self.stream.stream_join_op("outer_join", other.handle.id, windows, false, true, joiner, Options::new())
    }

    /// `KStream.join(GlobalKTable, KeyValueMapper, ValueJoiner)` with
    /// metadata: `mapper(key, value, metadata)` names the global table's
    /// key, `f(value, global value, metadata)` joins; both get the stream
    /// record's metadata (read-only).
    pub fn join_global<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &crate::GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V, &RecordMetadata) -> KG + Send + Sync + 'static,
        F: Fn(V, VG, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VG, VR>::new(move |v, g| match g {
            Some(g) => Ok(with_meta(|m| f(v, g, m))),
            None => Err("an inner join's record came without a global table value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(fn_name::<F>("join_global"), Arc::new(joiner));
        let mapper = key_step::<K, V, KG>(move |k, v| with_meta(|m| mapper(k, v, m)));
        let name = fn_name::<M>("join_global");
        self.stream.join_global_meta_op("join", name, global, mapper, pb::Metadata::Read, false, joiner, Options::new())
    }

    /// `KStream.leftJoin(GlobalKTable, ...)` with metadata: as
    /// [`join_global`](Self::join_global), `f` getting `None` for a key the
    /// global table does not hold.
    pub fn left_join_global<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &crate::GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V, &RecordMetadata) -> KG + Send + Sync + 'static,
        F: Fn(V, Option<VG>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VG, VR>::new(move |v, g| Ok(with_meta(|m| f(v, g, m))));
        let joiner = JoinFn::HostMeta(fn_name::<F>("left_join_global"), Arc::new(joiner));
        let mapper = key_step::<K, V, KG>(move |k, v| with_meta(|m| mapper(k, v, m)));
        let name = fn_name::<M>("left_join_global");
        let read = pb::Metadata::Read;
        self.stream.join_global_meta_op("left_join", name, global, mapper, read, true, joiner, Options::new())
    }

    /// `KStream.leftJoin(KTable)` with metadata: `f` gets `None` for a key
    /// the table does not hold.
    pub fn left_join<VT: Serde, VR: Serde, F>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let name = fn_name::<F>("left_join");
        let joiner = ValueJoiner::<V, VT, VR>::new(move |v, t| Ok(with_meta(|m| f(v, t, m))));
        self.stream.join_op(
            "left_join",
            table.handle.id,
            true,
            JoinFn::HostMeta(name, Arc::new(joiner)),
            Options::new(),
        )
    }
}

/// A table whose next join's functions (joiner, foreign-key extractor) also
/// get the [`RecordMetadata`] of the update being processed, from
/// [`KTable::with_metadata`]; read-only, as for [`MetadataGroupedStream`].
pub struct MetadataTable<K, V> {
    table: KTable<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataTable({:?})", self.table.handle)
    }
}

impl<K: Serde, V: Serde> KTable<K, V> {
    /// The next join's joiner (and a foreign-key join's extractor) also get
    /// the metadata of the update being processed (Python's
    /// `with_metadata(fn)`, Node's `withMetadata(fn)`):
    /// `table.with_metadata().join(&other, |v, o, m| format!("{v}{o}@{}", m.offset))`.
    pub fn with_metadata(&self) -> MetadataTable<K, V> {
        MetadataTable { table: self.clone() }
    }
}

impl<K, V> MetadataTable<K, V> {
    pub(crate) fn table(&self) -> &KTable<K, V> {
        &self.table
    }
}

impl<K: Serde, V: Serde> MetadataTable<K, V> {
    /// `KTable.join(KTable)` with metadata: `f(value, other value,
    /// metadata)`, the metadata being that of the update (of either table)
    /// that the join is processing.
    pub fn join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| match t {
            Some(t) => Ok(with_meta(|m| f(v, t, m))),
            None => Err("an inner join's row came without the other table's value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(fn_name::<F>("join"), Arc::new(joiner));
        self.table.table_join_op("join", other.handle.id, (false, false), joiner, Options::new())
    }

    /// `KTable.leftJoin(KTable)` with metadata: `f` gets `None` for a key
    /// `other` does not hold.
    pub fn left_join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| Ok(with_meta(|m| f(v, t, m))));
        let joiner = JoinFn::HostMeta(fn_name::<F>("left_join"), Arc::new(joiner));
        self.table.table_join_op("left_join", other.handle.id, (true, false), joiner, Options::new())
    }

    /// `KTable.outerJoin(KTable)` with metadata: `f` gets `None` for the
    /// side that does not hold the key.
    pub fn outer_join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<Option<V>, VO, VR>::new(move |v, t| Ok(with_meta(|m| f(v, t, m))));
        let joiner = JoinFn::HostMeta(fn_name::<F>("outer_join"), Arc::new(joiner));
        self.table.table_join_op("outer_join", other.handle.id, (false, true), joiner, Options::new())
    }

    /// `KTable.join(other, foreignKeyExtractor, joiner)` with metadata:
    /// `foreign_key(value, metadata)` gets the metadata of this table's
    /// update, `f(value, other value, metadata)` that of the record the
    /// join is processing when it joins (as Kafka Streams' record context).
    pub fn foreign_key_join<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V, &RecordMetadata) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, VO, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, o| match o {
            Some(o) => Ok(with_meta(|m| f(v, o, m))),
            None => Err("an inner join's answer came without the other table's value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::HostMeta(fn_name::<F>("foreign_key_join"), Arc::new(joiner));
        let fk_type = fn_name::<FK>("foreign_key_join");
        let extract = move |v: &V| with_meta(|m| foreign_key(v, m));
        let read = pb::Metadata::Read;
        let op = "foreign_key_join";
        self.table.foreign_key_join_meta_op::<KO, VR, _>(
            op,
            fk_type,
            extract,
            read,
            other.handle.id,
            false,
            joiner,
            Options::new(),
        )
    }

    /// `KTable.leftJoin(other, foreignKeyExtractor, joiner)` with metadata:
    /// as [`foreign_key_join`](Self::foreign_key_join), `f` getting `None`
    /// when the foreign key is `None` or names no row of `other`.
    pub fn left_foreign_key_join<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V, &RecordMetadata) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, Option<VO>, &RecordMetadata) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, o| Ok(with_meta(|m| f(v, o, m))));
        let joiner = JoinFn::HostMeta(fn_name::<F>("left_foreign_key_join"), Arc::new(joiner));
        let fk_type = fn_name::<FK>("left_foreign_key_join");
        let extract = move |v: &V| with_meta(|m| foreign_key(v, m));
        let read = pb::Metadata::Read;
        let op = "left_foreign_key_join";
        self.table.foreign_key_join_meta_op::<KO, VR, _>(
            op,
            fk_type,
            extract,
            read,
            other.handle.id,
            true,
            joiner,
            Options::new(),
        )
    }
}
