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
use crate::processor::{self, AsyncProcessor, FixedKeyProcessor, Processor, StoreBuilder};
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
    /// (`Topology.addSource(name, topics...)`).
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
        let topics = topics.topics();
        let op = Op::AddSource(pb::AddSourceOp {
            name: name.to_owned(),
            topics: topics.clone(),
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
        o.check("add_processor", KEY | VALUE)?;
        let f = Func::Processor(processor::supplier::<P, KIn, VIn, KOut, VOut>(supplier));
        let token = self.app.register(&fn_name::<P>("add_processor"), f)?;
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

// Record metadata for the stateless operators (opt-in).

use crate::bundle::metadata::with_meta;
use crate::bundle::StepFn;
use crate::dsl::{
    action_step, flat_map_step, flat_map_values_step, key_step, map_step, map_values_step, map_values_with_key_step,
    predicate_step,
};
use crate::processor::RecordMetadata;

/// A stream whose next operator's function also gets each record's
/// [`RecordMetadata`] (timestamp, headers, topic, partition, offset), from
/// [`KStream::with_metadata`]. Mappers get it `&mut`: the timestamp and
/// headers they set become their outputs'. Only functions that ask pay for
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
    fn build<K2: Serde, V2: Serde>(
        &self,
        op: &str,
        fn_type: String,
        mut step: StepFn,
        make: impl FnOnce(u64, u32) -> Op,
    ) -> Result<KStream<K2, V2>> {
        step.metadata = true;
        let app = &self.stream.app;
        let token = app.register_with(&fn_type, Func::Step(Arc::new(step)), pb::Metadata::Write)?;
        let h = app.build(make(self.stream.handle.id, token), &[token])?;
        self.stream.stream(h, op)
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
            Op::MapValues(pb::MapValuesOp {
                input,
                token,
                value_serde: o.value_or(V2::NAME),
                name: o.name_or_empty(),
                materialized: None,
                with_key: false,
            })
        })
    }

    /// `KStream.mapValues(ValueMapperWithKey)` with metadata.
    pub fn map_values_with_key<V2: Serde, F>(&self, f: F) -> Result<KStream<K, V2>>
    where
        F: Fn(&K, V, &mut RecordMetadata) -> V2 + Send + Sync + 'static,
    {
        let step = map_values_with_key_step::<K, V, V2>(move |k, v| with_meta(|m| f(k, v, m)));
        self.build("map_values_with_key", fn_name::<F>("map_values_with_key"), step, |input, token| {
            Op::MapValues(pb::MapValuesOp {
                input,
                token,
                value_serde: V2::NAME.to_owned(),
                name: String::new(),
                materialized: None,
                with_key: true,
            })
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
            Op::Filter(pb::FilterOp { input, token, name: String::new(), materialized: None })
        })
    }

    /// `KStream.filterNot` with metadata.
    pub fn filter_not<F>(&self, f: F) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata) -> bool + Send + Sync + 'static,
    {
        let step = predicate_step::<K, V>(true, move |k, v| with_meta(|m| f(k, v, m)));
        self.build("filter_not", fn_name::<F>("filter_not"), step, |input, token| {
            Op::FilterNot(pb::FilterNotOp { input, token, name: String::new(), materialized: None })
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
