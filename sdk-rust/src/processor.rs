//! The Processor API (Kafka Streams' `api.Processor`, 3.3+): processors with
//! state stores, forwards of any number of records with new keys, values,
//! timestamps and headers, and punctuators (docs/design/processor.md).
//!
//! ```no_run
//! use std::time::Duration;
//! use polystreams::processor::{
//!     KeyValueStore, Processor, ProcessorContext, ProcessorResult, PunctuationType, Record, Stores,
//! };
//! use polystreams::App;
//!
//! /// Counts records per key and forwards each new count.
//! struct CountPerKey;
//!
//! impl Processor<String, String, String, i64> for CountPerKey {
//!     fn process(&mut self, ctx: &mut ProcessorContext<String, i64>, record: Record<String, String>) -> ProcessorResult {
//!         let counts: KeyValueStore<String, i64> = ctx.get_state_store("counts")?;
//!         let n = counts.get(&record.key)?.unwrap_or(0) + 1;
//!         counts.put(&record.key, &n)?;
//!         ctx.forward(record.with_value(n))?;
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> polystreams::Result<()> {
//! let app = App::new("counter")?;
//! app.add_state_store(Stores::key_value_store::<String, i64>("counts"))?;
//! app.stream::<String, String>("input")?.process(|| CountPerKey, &["counts"])?.to("counts-out")?;
//! # Ok(())
//! # }
//! ```
//!
//! A processor instance lives in this process, one per task and node, as
//! Kafka Streams makes one per task; its stores live in the engine. A
//! bundle of records brings the current store entries of the keys it
//! touches, so `get` of those keys costs no call; any other read is one
//! `Read` call to the engine (see the design note). Writes and forwards are
//! answered with the bundle, in call order.

use std::any::{Any, TypeId};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::errors::{Error, Result};
use crate::pb;
use crate::serdes::Serde;

pub(crate) mod host;
mod stores;
#[cfg(test)]
mod tests;

use host::{with_run, Core};
pub use stores::{
    KeyValueStore, StateStore, TimestampedKeyValueStore, ValueAndTimestamp, VersionedKeyValueStore, VersionedRecord,
    WindowStore, PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED,
};

/// A record's headers: (key, value) pairs in order; a value may be null.
pub type Headers = Vec<(String, Option<Vec<u8>>)>;

/// What a processor, its `init` or a punctuator answers: any error fails
/// the record (or the punctuation) under `processing.exception.handler`,
/// keeping what the call did before it (Kafka Streams undoes nothing). A
/// panic does the same.
pub type ProcessorResult = std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A record as a processor sees and forwards it (`api.Record`).
#[derive(Debug, Clone, PartialEq)]
pub struct Record<K, V> {
    pub key: K,
    pub value: V,
    /// Epoch millis.
    pub timestamp: i64,
    pub headers: Headers,
}

impl<K, V> Record<K, V> {
    /// A record with no headers.
    pub fn new(key: K, value: V, timestamp: i64) -> Record<K, V> {
        Record { key, value, timestamp, headers: Vec::new() }
    }
    /// The same record with another key.
    pub fn with_key<K2>(self, key: K2) -> Record<K2, V> {
        Record { key, value: self.value, timestamp: self.timestamp, headers: self.headers }
    }
    /// The same record with another value.
    pub fn with_value<V2>(self, value: V2) -> Record<K, V2> {
        Record { key: self.key, value, timestamp: self.timestamp, headers: self.headers }
    }
    /// The same record with another timestamp.
    pub fn with_timestamp(mut self, timestamp: i64) -> Record<K, V> {
        self.timestamp = timestamp;
        self
    }
    /// The same record with other headers.
    pub fn with_headers(mut self, headers: Headers) -> Record<K, V> {
        self.headers = headers;
        self
    }
}

/// A record whose key a fixed-key processor (`process_values`) cannot
/// change (`api.FixedKeyRecord`).
#[derive(Debug, Clone, PartialEq)]
pub struct FixedKeyRecord<K, V> {
    key: K,
    pub value: V,
    /// Epoch millis.
    pub timestamp: i64,
    pub headers: Headers,
}

impl<K, V> FixedKeyRecord<K, V> {
    pub fn key(&self) -> &K {
        &self.key
    }
    /// The same record with another value.
    pub fn with_value<V2>(self, value: V2) -> FixedKeyRecord<K, V2> {
        FixedKeyRecord { key: self.key, value, timestamp: self.timestamp, headers: self.headers }
    }
    /// The same record with another timestamp.
    pub fn with_timestamp(mut self, timestamp: i64) -> FixedKeyRecord<K, V> {
        self.timestamp = timestamp;
        self
    }
    /// The same record with other headers.
    pub fn with_headers(mut self, headers: Headers) -> FixedKeyRecord<K, V> {
        self.headers = headers;
        self
    }
}

/// Where the record being processed came from (`api.RecordMetadata`), and
/// its timestamp and headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub headers: Headers,
}

/// What drives a punctuator (`PunctuationType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PunctuationType {
    /// The task's stream time (the largest timestamp it has seen): fires as
    /// records advance it, aligned to multiples of the interval.
    StreamTime,
    /// The system's clock (a test driver's virtual clock): fires interval
    /// after interval, records or not.
    WallClockTime,
}

/// A scheduled punctuator; [`Cancellable::cancel`] stops it.
#[derive(Clone)]
pub struct Cancellable {
    core: Arc<Core>,
    id: u64,
}

impl std::fmt::Debug for Cancellable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cancellable(schedule {} of node {})", self.id, self.core.node)
    }
}

impl Cancellable {
    /// The schedule `id` of the processor of `core` (a transformer's).
    pub(crate) fn new(core: Arc<Core>, id: u64) -> Cancellable {
        Cancellable { core, id }
    }
    /// Stops the punctuator (at once; the engine drops its schedule with
    /// the bundle's answer). Cancelling twice does nothing.
    pub fn cancel(&self) {
        self.core.cancel(self.id);
    }
}

/// A processor (`api.Processor<KIn, VIn, KOut, VOut>`): the host makes one
/// per task from the supplier given to [`KStream::process`](crate::KStream::process),
/// calls `init` before its first record, `process` for each record and
/// `close` when the task closes.
pub trait Processor<KIn, VIn, KOut, VOut>: Send + 'static {
    /// Called once, before the first record: get stores, schedule punctuators.
    fn init(&mut self, ctx: &mut ProcessorContext<KOut, VOut>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    /// Called for each record, in order.
    fn process(&mut self, ctx: &mut ProcessorContext<KOut, VOut>, record: Record<KIn, VIn>) -> ProcessorResult;
    /// Called when the task closes (its stores may no longer be used).
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A processor whose `process` is async, for
/// [`KStream::process_async`](crate::KStream::process_async): write it
/// `async fn process(&mut self, ctx, record) -> ProcessorResult` and await
/// I/O in it. Records are awaited one at a time, in order, so each sees the
/// store writes of the one before (as Kafka Streams processes them); the
/// future runs on the same executor as the async operators'
/// ([`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT) bounds a bundle's). `init`,
/// `close` and punctuators are synchronous.
pub trait AsyncProcessor<KIn, VIn, KOut, VOut>: Send + 'static {
    /// Called once, before the first record: get stores, schedule punctuators.
    fn init(&mut self, ctx: &mut ProcessorContext<KOut, VOut>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    /// Called for each record, in order; the next record waits for its future.
    fn process(
        &mut self,
        ctx: &mut ProcessorContext<KOut, VOut>,
        record: Record<KIn, VIn>,
    ) -> impl Future<Output = ProcessorResult>;
    /// Called when the task closes (its stores may no longer be used).
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A processor that keeps each record's key (`api.FixedKeyProcessor<KIn,
/// VIn, VOut>`), for [`KStream::process_values`](crate::KStream::process_values):
/// no repartition follows it.
pub trait FixedKeyProcessor<KIn, VIn, VOut>: Send + 'static {
    fn init(&mut self, ctx: &mut FixedKeyProcessorContext<KIn, VOut>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<KIn, VOut>,
        record: FixedKeyRecord<KIn, VIn>,
    ) -> ProcessorResult;
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A fixed-key processor whose `process` is async, for
/// [`KStream::process_values_async`](crate::KStream::process_values_async):
/// write it `async fn process(&mut self, ctx, record) -> ProcessorResult`.
/// It runs as an [`AsyncProcessor`] does (records awaited one at a time, in
/// order; `init`, `close` and punctuators synchronous) and keeps each
/// record's key, as a [`FixedKeyProcessor`] does.
pub trait AsyncFixedKeyProcessor<KIn, VIn, VOut>: Send + 'static {
    /// Called once, before the first record: get stores, schedule punctuators.
    fn init(&mut self, ctx: &mut FixedKeyProcessorContext<KIn, VOut>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    /// Called for each record, in order; the next record waits for its future.
    fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<KIn, VOut>,
        record: FixedKeyRecord<KIn, VIn>,
    ) -> impl Future<Output = ProcessorResult>;
    /// Called when the task closes (its stores may no longer be used).
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A processor's view of its task (`api.ProcessorContext<KOut, VOut>`):
/// forwards, stores, punctuators and the record's metadata. It acts on the
/// bundle being run, so it works inside `init`, `process`, a punctuator
/// and `close`.
pub struct ProcessorContext<K, V> {
    core: Arc<Core>,
    _types: PhantomData<fn() -> (K, V)>,
}

/// The context of a fixed-key processor (`api.FixedKeyProcessorContext`):
/// its forwards keep the input record's key.
pub struct FixedKeyProcessorContext<K, V> {
    core: Arc<Core>,
    _types: PhantomData<fn() -> (K, V)>,
}

macro_rules! common_context {
    ($t:ident) => {
        impl<K, V> std::fmt::Debug for $t<K, V> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}(node {:?}, task {})", stringify!($t), self.core.node, self.core.task)
            }
        }

        impl<K: Serde, V: Serde> $t<K, V> {
            pub(crate) fn new(core: Arc<Core>) -> Self {
                $t { core, _types: PhantomData }
            }

            /// The application's id.
            pub fn application_id(&self) -> &str {
                &self.core.application_id
            }
            /// The task's id, e.g. `0_1` (subtopology 0, partition 1).
            pub fn task_id(&self) -> &str {
                &self.core.task
            }
            /// The processor's node name.
            pub fn node(&self) -> &str {
                &self.core.node
            }

            /// A store connected to this processor, typed by what it is:
            /// `let s: KeyValueStore<String, i64> = ctx.get_state_store("counts")?`.
            /// A store the processor was not connected to is an error naming
            /// node and store.
            pub fn get_state_store<S: StateStore>(&self, name: &str) -> Result<S> {
                S::open(&self.core.node, name)
            }

            /// Where the record in hand came from; None in `init`, a
            /// punctuator or `close`.
            pub fn record_metadata(&self) -> Option<RecordMetadata> {
                with_run("record_metadata", &self.core.node, |run| Ok(run.record_metadata())).ok().flatten()
            }

            /// Schedules `punctuator` every `interval` (at least 1 ms) of
            /// stream time or wall-clock time (`ProcessorContext.schedule`).
            /// It is called with the processor (of type P, the processor
            /// this context belongs to), this context and the time.
            pub fn schedule<P: 'static>(
                &mut self,
                interval: Duration,
                kind: PunctuationType,
                mut punctuator: impl FnMut(&mut P, &mut Self, i64) -> ProcessorResult + Send + 'static,
            ) -> Result<Cancellable> {
                if self.core.processor_type != TypeId::of::<P>() {
                    return Err(Error::invalid(format!(
                        "schedule: node {}: the punctuator takes a {}, which is not this node's processor type",
                        self.core.node,
                        std::any::type_name::<P>()
                    )));
                }
                let core = self.core.clone();
                let id = self.core.schedule(
                    interval,
                    kind,
                    Box::new(move |p: &mut dyn Any, time| {
                        let p = p.downcast_mut::<P>().ok_or("the processor is not the punctuator's type")?;
                        punctuator(p, &mut $t::new(core.clone()), time)
                    }),
                )?;
                Ok(Cancellable { core: self.core.clone(), id })
            }
        }
    };
}

common_context!(ProcessorContext);
common_context!(FixedKeyProcessorContext);

impl<K, V> FixedKeyProcessorContext<K, V> {
    /// The task's processor core, for a context of other types on the same
    /// node (a transformer's).
    pub(crate) fn core(&self) -> Arc<Core> {
        self.core.clone()
    }
}

impl<K: Serde, V: Serde> ProcessorContext<K, V> {
    /// Forwards a record to every child of this node (`forward(record)`).
    pub fn forward(&mut self, record: Record<K, V>) -> Result<()> {
        self.send(None, record)
    }
    /// Forwards a record to the named child only (`forward(record, childName)`);
    /// a name that is not a child is an error naming node and children.
    pub fn forward_to(&mut self, child: &str, record: Record<K, V>) -> Result<()> {
        self.send(Some(child), record)
    }

    fn send(&mut self, child: Option<&str>, r: Record<K, V>) -> Result<()> {
        let node = &self.core.node;
        with_run("forward", node, |run| {
            let key = host::encode(&r.key, &run.out_key_serde).map_err(|e| {
                Error::invalid(format!(
                    "forward: node {node}: the key does not encode with serde {:?}: {e}",
                    run.out_key_serde
                ))
            })?;
            let value = host::encode(&r.value, &run.out_value_serde).map_err(|e| {
                Error::invalid(format!(
                    "forward: node {node}: the value does not encode with serde {:?}: {e}",
                    run.out_value_serde
                ))
            })?;
            run.forward(node, child, key, value, r.timestamp, r.headers)
        })
    }
}

impl<K: Serde, V: Serde> FixedKeyProcessorContext<K, V> {
    /// Forwards a record to every child of this node, with its input's key.
    pub fn forward(&mut self, record: FixedKeyRecord<K, V>) -> Result<()> {
        self.send(None, record)
    }
    /// Forwards a record to the named child only.
    pub fn forward_to(&mut self, child: &str, record: FixedKeyRecord<K, V>) -> Result<()> {
        self.send(Some(child), record)
    }

    fn send(&mut self, child: Option<&str>, r: FixedKeyRecord<K, V>) -> Result<()> {
        let node = &self.core.node;
        with_run("forward", node, |run| {
            let Some(key) = run.input_key.clone() else {
                return Err(Error::invalid(format!(
                    "forward: node {node} is a fixed-key processor (process_values): there is no input record whose key to keep"
                )));
            };
            let value = host::encode(&r.value, &run.out_value_serde).map_err(|e| {
                Error::invalid(format!(
                    "forward: node {node}: the value does not encode with serde {:?}: {e}",
                    run.out_value_serde
                ))
            })?;
            run.forward(node, child, key, value, r.timestamp, r.headers)
        })
    }
}

// Stores as the topology declares them.

/// A store to add to the topology ([`App::add_state_store`](crate::App::add_state_store),
/// [`Topology::add_state_store`](crate::Topology::add_state_store)), from [`Stores`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoreBuilder {
    pub(crate) op: pb::AddStateStoreOp,
}

impl StoreBuilder {
    /// The store's name.
    pub fn name(&self) -> &str {
        &self.op.name
    }
    /// The serde of the store's keys, by name (default: the key type's).
    pub fn key_serde(mut self, serde: impl Into<String>) -> StoreBuilder {
        self.op.key_serde = serde.into();
        self
    }
    /// The serde of the store's values, by name (default: the value type's).
    pub fn value_serde(mut self, serde: impl Into<String>) -> StoreBuilder {
        self.op.value_serde = serde.into();
        self
    }
    /// No changelog topic (`withLoggingDisabled`).
    pub fn with_logging_disabled(mut self) -> StoreBuilder {
        self.op.logging_disabled = true;
        self
    }
    /// The segment interval of a versioned store
    /// (`persistentVersionedKeyValueStore(name, historyRetention,
    /// segmentInterval)`); default: Kafka Streams'. Only versioned stores
    /// take one.
    pub fn with_segment_interval(mut self, segment_interval: Duration) -> StoreBuilder {
        let v = self.op.versioned.get_or_insert_with(Default::default);
        v.segment_interval_ms = segment_interval.as_millis() as i64;
        self
    }
    /// A changelog topic, with these topic configs (`withLoggingEnabled`).
    pub fn with_logging_enabled(mut self, config: impl IntoIterator<Item = (String, String)>) -> StoreBuilder {
        self.op.logging_disabled = false;
        self.op.changelog_config = config.into_iter().collect();
        self
    }
    /// `withCachingEnabled`.
    pub fn with_caching_enabled(mut self) -> StoreBuilder {
        self.op.caching = true;
        self
    }
    /// `withCachingDisabled`.
    pub fn with_caching_disabled(mut self) -> StoreBuilder {
        self.op.caching = false;
        self
    }
}

/// Makes [`StoreBuilder`]s (Kafka Streams' `Stores`), typed by the keys and
/// values the store holds (their serdes; `Value` stores name theirs with
/// [`StoreBuilder::key_serde`] / [`StoreBuilder::value_serde`]).
#[derive(Debug)]
pub struct Stores;

impl Stores {
    fn builder<K: Serde, V: Serde>(name: &str, t: pb::StoreType) -> StoreBuilder {
        StoreBuilder {
            op: pb::AddStateStoreOp {
                name: name.to_owned(),
                r#type: t as i32,
                key_serde: K::NAME.to_owned(),
                value_serde: V::NAME.to_owned(),
                ..Default::default()
            },
        }
    }
    /// `Stores.keyValueStoreBuilder(persistentKeyValueStore(name), ...)`: a
    /// [`KeyValueStore<K, V>`].
    pub fn key_value_store<K: Serde, V: Serde>(name: &str) -> StoreBuilder {
        Stores::builder::<K, V>(name, pb::StoreType::KeyValue)
    }
    /// `Stores.timestampedKeyValueStoreBuilder`: a [`TimestampedKeyValueStore<K, V>`].
    pub fn timestamped_key_value_store<K: Serde, V: Serde>(name: &str) -> StoreBuilder {
        Stores::builder::<K, V>(name, pb::StoreType::TimestampedKeyValue)
    }
    /// `Stores.windowStoreBuilder(persistentWindowStore(name, retention,
    /// windowSize, retainDuplicates), ...)`: a [`WindowStore<K, V>`].
    pub fn window_store<K: Serde, V: Serde>(
        name: &str,
        retention: Duration,
        window_size: Duration,
        retain_duplicates: bool,
    ) -> StoreBuilder {
        let mut b = Stores::builder::<K, V>(name, pb::StoreType::Window);
        b.op.retention_ms = retention.as_millis() as i64;
        b.op.window_size_ms = window_size.as_millis() as i64;
        b.op.retain_duplicates = retain_duplicates;
        b
    }
    /// `Stores.versionedKeyValueStoreBuilder(persistentVersionedKeyValueStore(name,
    /// historyRetention), ...)`: a [`VersionedKeyValueStore<K, V>`] keeping
    /// every version of a key's value for `history_retention`.
    pub fn versioned_key_value_store<K: Serde, V: Serde>(name: &str, history_retention: Duration) -> StoreBuilder {
        let mut b = Stores::builder::<K, V>(name, pb::StoreType::VersionedKeyValue);
        b.op.versioned = Some(pb::VersionedStore {
            history_retention_ms: history_retention.as_millis() as i64,
            ..Default::default()
        });
        b
    }
}

// Processors as the host runs them: typed wrappers behind one object-safe trait.

pub(crate) use host::{Erased, Supplier};

/// How the host runs one kind of processor (`Processor`, `FixedKeyProcessor`,
/// `AsyncProcessor`): the types it decodes, and its calls with the context
/// of its kind. `Self` is a marker carrying the kind's type parameters.
trait Kind<P>: 'static {
    type K: Serde;
    type V: Serde;
    fn init(p: &mut P, core: &Arc<Core>) -> ProcessorResult;
    fn process(p: &mut P, core: &Arc<Core>, r: Record<Self::K, Self::V>, deadline: Instant) -> ProcessorResult;
    fn close(p: &mut P) -> ProcessorResult;
}

/// The types a kind carries (no values).
type Types<T> = PhantomData<fn() -> T>;

/// [`Processor`]'s kind.
struct Plain<KIn, VIn, KOut, VOut>(Types<(KIn, VIn, KOut, VOut)>);

impl<P, KIn: Serde, VIn: Serde, KOut: Serde, VOut: Serde> Kind<P> for Plain<KIn, VIn, KOut, VOut>
where
    P: Processor<KIn, VIn, KOut, VOut>,
{
    type K = KIn;
    type V = VIn;
    fn init(p: &mut P, core: &Arc<Core>) -> ProcessorResult {
        p.init(&mut ProcessorContext::new(core.clone()))
    }
    fn process(p: &mut P, core: &Arc<Core>, r: Record<KIn, VIn>, _: Instant) -> ProcessorResult {
        p.process(&mut ProcessorContext::new(core.clone()), r)
    }
    fn close(p: &mut P) -> ProcessorResult {
        p.close()
    }
}

/// [`FixedKeyProcessor`]'s kind.
struct Fixed<K, VIn, VOut>(Types<(K, VIn, VOut)>);

impl<P, K: Serde, VIn: Serde, VOut: Serde> Kind<P> for Fixed<K, VIn, VOut>
where
    P: FixedKeyProcessor<K, VIn, VOut>,
{
    type K = K;
    type V = VIn;
    fn init(p: &mut P, core: &Arc<Core>) -> ProcessorResult {
        p.init(&mut FixedKeyProcessorContext::new(core.clone()))
    }
    fn process(p: &mut P, core: &Arc<Core>, r: Record<K, VIn>, _: Instant) -> ProcessorResult {
        let r = FixedKeyRecord { key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers };
        p.process(&mut FixedKeyProcessorContext::new(core.clone()), r)
    }
    fn close(p: &mut P) -> ProcessorResult {
        p.close()
    }
}

/// [`AsyncProcessor`]'s kind: each record's future runs to its end (or the
/// bundle's deadline) before the next record.
struct Async<KIn, VIn, KOut, VOut>(Types<(KIn, VIn, KOut, VOut)>);

impl<P, KIn: Serde, VIn: Serde, KOut: Serde, VOut: Serde> Kind<P> for Async<KIn, VIn, KOut, VOut>
where
    P: AsyncProcessor<KIn, VIn, KOut, VOut>,
{
    type K = KIn;
    type V = VIn;
    fn init(p: &mut P, core: &Arc<Core>) -> ProcessorResult {
        p.init(&mut ProcessorContext::new(core.clone()))
    }
    fn process(p: &mut P, core: &Arc<Core>, r: Record<KIn, VIn>, deadline: Instant) -> ProcessorResult {
        let mut ctx = ProcessorContext::new(core.clone());
        await_process(core, p.process(&mut ctx, r), deadline)
    }
    fn close(p: &mut P) -> ProcessorResult {
        p.close()
    }
}

/// Runs an async `process`'s future to its end, or fails it at the bundle's deadline.
fn await_process(
    core: &Arc<Core>,
    future: impl Future<Output = ProcessorResult>,
    deadline: Instant,
) -> ProcessorResult {
    match crate::await_all::block_on(Box::pin(async move { Ok(future.await) }), deadline) {
        Some(Ok(answer)) => answer,
        Some(Err(panic)) => Err(panic.into()),
        None => Err(format!(
            "TimeoutError: process of node {} in task {} did not finish within {} s (cancelled)",
            core.node,
            core.task,
            crate::await_all::ASYNC_TIMEOUT.as_secs()
        )
        .into()),
    }
}

/// [`AsyncFixedKeyProcessor`]'s kind: as [`Async`], keeping the keys.
struct AsyncFixed<K, VIn, VOut>(Types<(K, VIn, VOut)>);

impl<P, K: Serde, VIn: Serde, VOut: Serde> Kind<P> for AsyncFixed<K, VIn, VOut>
where
    P: AsyncFixedKeyProcessor<K, VIn, VOut>,
{
    type K = K;
    type V = VIn;
    fn init(p: &mut P, core: &Arc<Core>) -> ProcessorResult {
        p.init(&mut FixedKeyProcessorContext::new(core.clone()))
    }
    fn process(p: &mut P, core: &Arc<Core>, r: Record<K, VIn>, deadline: Instant) -> ProcessorResult {
        let r = FixedKeyRecord { key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers };
        let mut ctx = FixedKeyProcessorContext::new(core.clone());
        await_process(core, p.process(&mut ctx, r), deadline)
    }
    fn close(p: &mut P) -> ProcessorResult {
        p.close()
    }
}

/// A processor of kind `R` behind [`Erased`]: decodes each record, then
/// calls it as its kind does.
struct Adapt<P, R> {
    p: P,
    _kind: PhantomData<fn() -> R>,
}

impl<P: Send + 'static, R: Kind<P>> Erased for Adapt<P, R> {
    fn init(&mut self, core: &Arc<Core>) -> ProcessorResult {
        R::init(&mut self.p, core)
    }
    fn process(&mut self, core: &Arc<Core>, input: host::Input<'_>) -> std::result::Result<ProcessorResult, String> {
        let key = R::K::decode(input.key_serde, input.key).map_err(|e| format!("the key does not decode: {e}"))?;
        let value =
            R::V::decode(input.value_serde, input.value).map_err(|e| format!("the value does not decode: {e}"))?;
        let r = Record { key, value, timestamp: input.timestamp, headers: input.headers };
        Ok(R::process(&mut self.p, core, r, input.deadline))
    }
    fn close(&mut self) -> ProcessorResult {
        R::close(&mut self.p)
    }
    fn as_any(&mut self) -> &mut dyn Any {
        &mut self.p
    }
}

/// A supplier of processors of kind `R`, type-erased.
fn erased<P: Send + 'static, R: Kind<P>>(make: impl Fn() -> P + Send + Sync + 'static) -> Arc<dyn Supplier> {
    Arc::new(host::MakeFn {
        processor_type: TypeId::of::<P>(),
        make: Box::new(move || Box::new(Adapt::<P, R> { p: make(), _kind: PhantomData }) as Box<dyn Erased>),
    })
}

/// A processor supplier (`ProcessorSupplier.get`), type-erased.
pub(crate) fn supplier<P, KIn, VIn, KOut, VOut>(make: impl Fn() -> P + Send + Sync + 'static) -> Arc<dyn Supplier>
where
    P: Processor<KIn, VIn, KOut, VOut>,
    KIn: Serde,
    VIn: Serde,
    KOut: Serde,
    VOut: Serde,
{
    erased::<P, Plain<KIn, VIn, KOut, VOut>>(make)
}

/// A fixed-key processor supplier (`FixedKeyProcessorSupplier.get`), type-erased.
pub(crate) fn fixed_supplier<P, K, VIn, VOut>(make: impl Fn() -> P + Send + Sync + 'static) -> Arc<dyn Supplier>
where
    P: FixedKeyProcessor<K, VIn, VOut>,
    K: Serde,
    VIn: Serde,
    VOut: Serde,
{
    erased::<P, Fixed<K, VIn, VOut>>(make)
}

/// An async processor supplier, type-erased.
pub(crate) fn async_supplier<P, KIn, VIn, KOut, VOut>(make: impl Fn() -> P + Send + Sync + 'static) -> Arc<dyn Supplier>
where
    P: AsyncProcessor<KIn, VIn, KOut, VOut>,
    KIn: Serde,
    VIn: Serde,
    KOut: Serde,
    VOut: Serde,
{
    erased::<P, Async<KIn, VIn, KOut, VOut>>(make)
}

/// An async fixed-key processor supplier, type-erased.
pub(crate) fn async_fixed_supplier<P, K, VIn, VOut>(make: impl Fn() -> P + Send + Sync + 'static) -> Arc<dyn Supplier>
where
    P: AsyncFixedKeyProcessor<K, VIn, VOut>,
    K: Serde,
    VIn: Serde,
    VOut: Serde,
{
    erased::<P, AsyncFixed<K, VIn, VOut>>(make)
}
