//! Windowed aggregations: `KGroupedStream::windowed_by(TimeWindows)`, the
//! aggregations of a [`TimeWindowedKStream`], `suppress(untilWindowCloses)`,
//! `suppress(untilTimeLimit)` with its [`BufferConfig`], and [`Windowed`]
//! keys.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::bundle::metadata::with_meta;
use crate::bundle::Fold;
use crate::dsl::{KGroupedStream, KTable};
use crate::errors::{Error, Result};
use crate::fold::Reducer;
use crate::fold::{Aggregate, AggregateNames, Aggregations, StreamReduce};
use crate::options::Options;
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::RecordMetadata;
use crate::serdes::{Serde, Windowed};
use crate::session::{expect_handle, Handle, Kind};
use crate::session::{fn_name, Session};
use crate::store::WindowStore;

/// Fixed-size windows aligned to the epoch (Kafka Streams' `TimeWindows`):
/// tumbling, or hopping with [`advance_by`](Self::advance_by). A record
/// belongs to every window with start <= timestamp < end; a window accepts
/// records until stream time passes its end plus the grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindows {
    size_ms: i64,
    advance_ms: i64,
    grace_ms: i64,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl TimeWindows {
    /// `TimeWindows.ofSizeWithNoGrace(size)`: tumbling windows, no late records.
    pub fn of_size_with_no_grace(size: Duration) -> TimeWindows {
        TimeWindows { size_ms: ms(size), advance_ms: 0, grace_ms: 0 }
    }
    /// `TimeWindows.ofSizeAndGrace(size, grace)`.
    pub fn of_size_and_grace(size: Duration, grace: Duration) -> TimeWindows {
        TimeWindows { size_ms: ms(size), advance_ms: 0, grace_ms: ms(grace) }
    }
    /// `advanceBy(advance)`: hopping windows (0 < advance <= size).
    pub fn advance_by(mut self, advance: Duration) -> TimeWindows {
        self.advance_ms = ms(advance);
        self
    }
}

/// When a windowed aggregation forwards its results (Kafka Streams'
/// `EmitStrategy`, KIP-825), set with `emit_strategy` on a windowed stream.
/// The engine keeps the last close time it emitted with the store, so a
/// restart neither emits a window again nor loses one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EmitStrategy {
    /// `EmitStrategy.onWindowUpdate()`: every update of a window (the default).
    #[default]
    OnWindowUpdate,
    /// `EmitStrategy.onWindowClose()`: only each window's final result,
    /// once, when stream time passes the window's end plus grace (session
    /// windows: end + inactivity gap + grace).
    OnWindowClose,
}

impl EmitStrategy {
    fn to_proto(self) -> i32 {
        match self {
            EmitStrategy::OnWindowUpdate => pb::EmitStrategy::OnWindowUpdate as i32,
            EmitStrategy::OnWindowClose => pb::EmitStrategy::OnWindowClose as i32,
        }
    }
}

/// The Build call of `emit_strategy`: the windowed stream's new handle,
/// checked to be of `kind`.
fn emit_strategy_handle(app: &Session, input: u64, s: EmitStrategy, kind: Kind) -> Result<Handle> {
    let op = Op::EmitStrategy(pb::EmitStrategyOp { input, strategy: s.to_proto() });
    let h = expect_handle(app.build(op, &[])?, "emit_strategy")?;
    if h.kind != kind {
        return Err(Error::internal(format!("emit_strategy answered handle {}, a {:?}", h.id, h.kind)));
    }
    Ok(h)
}

/// A grouped stream windowed by time (`TimeWindowedKStream<K, V>`): its
/// aggregations keep one aggregate per key and window, in a table keyed by
/// [`Windowed<K>`].
pub struct TimeWindowedKStream<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> std::fmt::Debug for TimeWindowedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TimeWindowedKStream(id={}, node={:?})", self.handle.id, self.handle.node)
    }
}

impl<K: Serde, V: Serde> KGroupedStream<K, V> {
    /// Windows the grouped stream (`KGroupedStream.windowedBy`): with
    /// [`TimeWindows`] or [`SlidingWindows`] a [`TimeWindowedKStream`], with [`SessionWindows`] a
    /// [`SessionWindowedKStream`]. The engine runs the windows: records too
    /// late for every window they fall in are dropped and counted.
    pub fn windowed_by<W: Windows>(&self, w: W) -> Result<W::Stream<K, V>> {
        let op = Op::WindowedBy(pb::WindowedByOp { input: self.handle().id, windows: Some(w.to_proto()) });
        let h = expect_handle(self.app().build(op, &[])?, "windowed_by")?;
        if h.kind != W::KIND {
            return Err(Error::internal(format!("windowed_by answered handle {}, a {:?}", h.id, h.kind)));
        }
        Ok(W::wrap(self, h))
    }
}

/// Windows a grouped stream can be windowed by: [`TimeWindows`], [`SlidingWindows`] or [`SessionWindows`].
pub trait Windows: sealed::Sealed {
    /// What windowing makes of a `KGroupedStream<K, V>`.
    type Stream<K: Serde, V: Serde>;
    #[doc(hidden)]
    const KIND: Kind;
    #[doc(hidden)]
    fn to_proto(&self) -> pb::windowed_by_op::Windows;
    #[doc(hidden)]
    fn wrap<K: Serde, V: Serde>(from: &KGroupedStream<K, V>, h: Handle) -> Self::Stream<K, V>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::TimeWindows {}
    impl Sealed for super::SessionWindows {}
    impl Sealed for super::SlidingWindows {}
}

impl Windows for TimeWindows {
    type Stream<K: Serde, V: Serde> = TimeWindowedKStream<K, V>;
    const KIND: Kind = Kind::WindowedStream;
    fn to_proto(&self) -> pb::windowed_by_op::Windows {
        pb::windowed_by_op::Windows::Time(pb::TimeWindows {
            size_ms: self.size_ms,
            advance_ms: self.advance_ms,
            grace_ms: self.grace_ms,
        })
    }
    fn wrap<K: Serde, V: Serde>(from: &KGroupedStream<K, V>, handle: Handle) -> TimeWindowedKStream<K, V> {
        TimeWindowedKStream { app: from.app().clone(), handle, _types: PhantomData }
    }
}

/// Windows of a fixed time difference that slide with the records (Kafka
/// Streams' `SlidingWindows`): two records are in a common window when their
/// timestamps are at most the difference apart; both ends are inclusive.
/// Windowing by them makes a [`TimeWindowedKStream`], as in Kafka Streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindows {
    difference_ms: i64,
    grace_ms: i64,
}

impl SlidingWindows {
    /// `SlidingWindows.ofTimeDifferenceWithNoGrace(difference)`.
    pub fn of_time_difference_with_no_grace(difference: Duration) -> SlidingWindows {
        SlidingWindows { difference_ms: ms(difference), grace_ms: 0 }
    }
    /// `SlidingWindows.ofTimeDifferenceAndGrace(difference, grace)`.
    pub fn of_time_difference_and_grace(difference: Duration, grace: Duration) -> SlidingWindows {
        SlidingWindows { difference_ms: ms(difference), grace_ms: ms(grace) }
    }
}

impl Windows for SlidingWindows {
    type Stream<K: Serde, V: Serde> = TimeWindowedKStream<K, V>;
    const KIND: Kind = Kind::WindowedStream;
    fn to_proto(&self) -> pb::windowed_by_op::Windows {
        pb::windowed_by_op::Windows::Sliding(pb::SlidingWindows {
            time_difference_ms: self.difference_ms,
            grace_ms: self.grace_ms,
        })
    }
    fn wrap<K: Serde, V: Serde>(from: &KGroupedStream<K, V>, handle: Handle) -> TimeWindowedKStream<K, V> {
        TimeWindowedKStream { app: from.app().clone(), handle, _types: PhantomData }
    }
}

/// Sessions (Kafka Streams' `SessionWindows`): a key's records at most the
/// inactivity gap apart share a session; a record between two sessions
/// merges them (an aggregate's merger, or the reducer, merges their
/// aggregates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionWindows {
    gap_ms: i64,
    grace_ms: i64,
}

impl SessionWindows {
    /// `SessionWindows.ofInactivityGapWithNoGrace(gap)`.
    pub fn of_inactivity_gap_with_no_grace(gap: Duration) -> SessionWindows {
        SessionWindows { gap_ms: ms(gap), grace_ms: 0 }
    }
    /// `SessionWindows.ofInactivityGapAndGrace(gap, grace)`.
    pub fn of_inactivity_gap_and_grace(gap: Duration, grace: Duration) -> SessionWindows {
        SessionWindows { gap_ms: ms(gap), grace_ms: ms(grace) }
    }
}

impl Windows for SessionWindows {
    type Stream<K: Serde, V: Serde> = SessionWindowedKStream<K, V>;
    const KIND: Kind = Kind::SessionWindowedStream;
    fn to_proto(&self) -> pb::windowed_by_op::Windows {
        pb::windowed_by_op::Windows::Session(pb::SessionWindows {
            inactivity_gap_ms: self.gap_ms,
            grace_ms: self.grace_ms,
        })
    }
    fn wrap<K: Serde, V: Serde>(from: &KGroupedStream<K, V>, handle: Handle) -> SessionWindowedKStream<K, V> {
        SessionWindowedKStream { app: from.app().clone(), handle, _types: PhantomData }
    }
}

/// A grouped stream windowed by sessions (`SessionWindowedKStream<K, V>`):
/// its aggregations keep one aggregate per key and session, in a table
/// keyed by [`Windowed<K>`] (the session's start and end).
pub struct SessionWindowedKStream<K, V> {
    pub(crate) app: Arc<Session>,
    pub(crate) handle: Handle,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> std::fmt::Debug for SessionWindowedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionWindowedKStream(id={}, node={:?})", self.handle.id, self.handle.node)
    }
}

impl<K: Serde, V: Serde> SessionWindowedKStream<K, V> {
    /// The engine's handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// When this windowed stream's count, reduce and aggregate forward their
    /// results (`emitStrategy`, KIP-825). Adds no node.
    pub fn emit_strategy(&self, s: EmitStrategy) -> Result<SessionWindowedKStream<K, V>> {
        let handle = emit_strategy_handle(&self.app, self.handle.id, s, Kind::SessionWindowedStream)?;
        Ok(SessionWindowedKStream { app: self.app.clone(), handle, _types: PhantomData })
    }

    /// Counts the records per key and session, in the engine.
    pub fn count(&self) -> Result<KTable<Windowed<K>, i64>> {
        self.count_with(Options::new())
    }

    /// [`count`](Self::count) with `name` and `materialized`.
    pub fn count_with(&self, o: Options) -> Result<KTable<Windowed<K>, i64>> {
        KTable::wrap(
            self.app.clone(),
            Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified }.count(&o)?,
        )
    }

    /// A built-in reduce per session, in the engine.
    pub fn reduce_builtin(&self, r: Reducer, o: Options) -> Result<KTable<Windowed<K>, V>> {
        KTable::wrap(
            self.app.clone(),
            Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified }
                .builtin(r, &o)?,
        )
    }

    /// Folds each key's values per session: `f(aggregate, value)`; a
    /// session's first value becomes its aggregate without a call, and
    /// merging two sessions a record bridges is `f(aggregate1, aggregate2)`.
    pub fn reduce<F>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(StreamReduce::<V, F>::new(f)));
        let name = format!("reduce {}", std::any::type_name::<F>());
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.reduce(fold, (name, None), &o)?)
    }

    /// `init()` starts each session's aggregate, `f(key, value, aggregate)`
    /// folds in a value, and `merger(key, aggregate1, aggregate2)` merges
    /// the sessions a record bridges (Kafka Streams' `Merger`; the merged
    /// session starts from `init()` and merges each session in, in time
    /// order, before the record is added).
    pub fn aggregate<A: Serde, I, F, M>(&self, init: I, f: F, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, merger, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F, M>(
        &self,
        init: I,
        f: F,
        merger: M,
        o: Options,
    ) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> A + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(init, f, None).with_merger(merger)));
        let names = AggregateNames {
            init: format!("aggregate initializer {}", std::any::type_name::<I>()),
            aggregator: format!("aggregate {}", std::any::type_name::<F>()),
            subtractor: None,
            merger: Some(format!("aggregate merger {}", std::any::type_name::<M>())),
        };
        let aggregations = Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified };
        KTable::wrap(self.app.clone(), aggregations.aggregate(fold, names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> TimeWindowedKStream<K, V> {
    fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.app, input: self.handle.id, metadata: pb::Metadata::Unspecified }
    }

    /// The engine's handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// When this windowed stream's count, reduce and aggregate forward their
    /// results (`emitStrategy`, KIP-825): [`EmitStrategy::OnWindowClose`]
    /// only each window's final result, once it closes. Adds no node.
    pub fn emit_strategy(&self, s: EmitStrategy) -> Result<TimeWindowedKStream<K, V>> {
        let handle = emit_strategy_handle(&self.app, self.handle.id, s, Kind::WindowedStream)?;
        Ok(TimeWindowedKStream { app: self.app.clone(), handle, _types: PhantomData })
    }

    /// Counts the records per key and window, in the engine.
    pub fn count(&self) -> Result<KTable<Windowed<K>, i64>> {
        self.count_with(Options::new())
    }

    /// [`count`](Self::count) with `name` and `materialized`.
    pub fn count_with(&self, o: Options) -> Result<KTable<Windowed<K>, i64>> {
        KTable::wrap(self.app.clone(), self.aggregations().count(&o)?)
    }

    /// Folds each key's values per window: `f(aggregate, value)`; a window's
    /// first value becomes its aggregate without a call.
    pub fn reduce<F>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V) -> V + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(StreamReduce::<V, F>::new(f)));
        let name = format!("reduce {}", std::any::type_name::<F>());
        KTable::wrap(self.app.clone(), self.aggregations().reduce(fold, (name, None), &o)?)
    }

    /// A built-in reduce per window, in the engine.
    pub fn reduce_builtin(&self, r: Reducer, o: Options) -> Result<KTable<Windowed<K>, V>> {
        KTable::wrap(self.app.clone(), self.aggregations().builtin(r, &o)?)
    }

    /// `init()` starts each key's aggregate in each window, `f(key, value,
    /// aggregate)` folds in a value.
    pub fn aggregate<A: Serde, I, F>(&self, init: I, f: F) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F>(&self, init: I, f: F, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        let fold = Arc::new(Fold(Aggregate::<K, V, A>::new(init, f, None)));
        let names = AggregateNames {
            init: format!("aggregate initializer {}", std::any::type_name::<I>()),
            aggregator: format!("aggregate {}", std::any::type_name::<F>()),
            subtractor: None,
            merger: None,
        };
        KTable::wrap(self.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}

/// A time-windowed stream whose reducer or aggregator (and initializer)
/// also get the [`RecordMetadata`] of the record being folded (timestamp,
/// headers, topic, partition, offset), from
/// [`TimeWindowedKStream::with_metadata`]. They read it only: as in Kafka
/// Streams, the fold sets its outputs' timestamp and headers. A record
/// that falls in several windows (hopping or sliding windows) is folded
/// into each with its own metadata.
pub struct MetadataTimeWindowedStream<K, V> {
    windowed: TimeWindowedKStream<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataTimeWindowedStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataTimeWindowedStream({:?})", self.windowed)
    }
}

impl<K: Serde, V: Serde> TimeWindowedKStream<K, V> {
    /// The reducer or aggregator (and initializer) also get the metadata of
    /// the record being folded (Python's `with_metadata(fn)`, Node's
    /// `withMetadata(fn)`): `windowed.with_metadata().reduce(|a, v, m| a + v + m.offset)`.
    pub fn with_metadata(&self) -> MetadataTimeWindowedStream<K, V> {
        MetadataTimeWindowedStream {
            windowed: TimeWindowedKStream { app: self.app.clone(), handle: self.handle.clone(), _types: PhantomData },
        }
    }
}

impl<K: Serde, V: Serde> MetadataTimeWindowedStream<K, V> {
    pub(crate) fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.windowed.app, input: self.windowed.handle.id, metadata: pb::Metadata::Read }
    }

    /// [`TimeWindowedKStream::reduce`] with metadata: `f(aggregate, value,
    /// metadata)` (a window's first value becomes its aggregate without a call).
    pub fn reduce<F>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        let name = fn_name::<F>("reduce");
        let fold = Arc::new(Fold(StreamReduce::<V, _>::new(move |a, v| with_meta(|m| f(a, v, m)))));
        KTable::wrap(self.windowed.app.clone(), self.aggregations().reduce(fold, (name, None), &o)?)
    }

    /// [`TimeWindowedKStream::aggregate`] with metadata: `init(metadata)`
    /// starts a key's aggregate in a window, `f(key, value, aggregate,
    /// metadata)` folds in a value.
    pub fn aggregate<A: Serde, I, F>(&self, init: I, f: F) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F>(&self, init: I, f: F, o: Options) -> Result<KTable<Windowed<K>, A>>
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
        KTable::wrap(self.windowed.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}

/// A session-windowed stream whose reducer, aggregator, initializer and
/// merger also get the [`RecordMetadata`] of the record being folded, from
/// [`SessionWindowedKStream::with_metadata`]; read-only, as for
/// [`MetadataTimeWindowedStream`]. Merging the sessions a record bridges
/// happens while that record is folded, so the merger gets its metadata.
pub struct MetadataSessionWindowedStream<K, V> {
    windowed: SessionWindowedKStream<K, V>,
}

impl<K, V> std::fmt::Debug for MetadataSessionWindowedStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataSessionWindowedStream({:?})", self.windowed)
    }
}

impl<K: Serde, V: Serde> SessionWindowedKStream<K, V> {
    /// The reducer or aggregator (initializer and merger) also get the
    /// metadata of the record being folded (Python's `with_metadata(fn)`,
    /// Node's `withMetadata(fn)`).
    pub fn with_metadata(&self) -> MetadataSessionWindowedStream<K, V> {
        MetadataSessionWindowedStream {
            windowed: SessionWindowedKStream {
                app: self.app.clone(),
                handle: self.handle.clone(),
                _types: PhantomData,
            },
        }
    }
}

impl<K: Serde, V: Serde> MetadataSessionWindowedStream<K, V> {
    pub(crate) fn aggregations(&self) -> Aggregations<'_> {
        Aggregations { app: &self.windowed.app, input: self.windowed.handle.id, metadata: pb::Metadata::Read }
    }

    /// [`SessionWindowedKStream::reduce`] with metadata: `f(aggregate,
    /// value, metadata)`; merging two sessions a record bridges is
    /// `f(aggregate1, aggregate2, that record's metadata)`.
    pub fn reduce<F>(&self, f: F) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        self.reduce_with(f, Options::new())
    }

    /// [`reduce`](Self::reduce) with `name` and `materialized`.
    pub fn reduce_with<F>(&self, f: F, o: Options) -> Result<KTable<Windowed<K>, V>>
    where
        F: Fn(V, V, &RecordMetadata) -> V + Send + Sync + 'static,
    {
        let name = fn_name::<F>("reduce");
        let fold = Arc::new(Fold(StreamReduce::<V, _>::new(move |a, v| with_meta(|m| f(a, v, m)))));
        KTable::wrap(self.windowed.app.clone(), self.aggregations().reduce(fold, (name, None), &o)?)
    }

    /// [`SessionWindowedKStream::aggregate`] with metadata: `init(metadata)`,
    /// `f(key, value, aggregate, metadata)` and `merger(key, aggregate1,
    /// aggregate2, metadata)`.
    pub fn aggregate<A: Serde, I, F, M>(&self, init: I, f: F, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, f, merger, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<A: Serde, I, F, M>(
        &self,
        init: I,
        f: F,
        merger: M,
        o: Options,
    ) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        let names = AggregateNames {
            init: fn_name::<I>("aggregate initializer"),
            aggregator: fn_name::<F>("aggregate"),
            subtractor: None,
            merger: Some(fn_name::<M>("aggregate merger")),
        };
        let fold = Arc::new(Fold(
            Aggregate::<K, V, A>::new(
                move || with_meta(|m| init(m)),
                move |k, v, a| with_meta(|m| f(k, v, a, m)),
                None,
            )
            .with_merger(move |k, a, b| with_meta(|m| merger(k, a, b, m))),
        ));
        KTable::wrap(self.windowed.app.clone(), self.aggregations().aggregate(fold, names, A::NAME, &o)?)
    }
}

impl<K: Serde, V: Serde> KTable<Windowed<K>, V> {
    /// The table's window (or session) store, for interactive queries while
    /// the app runs.
    pub fn window_store(&self) -> Result<WindowStore<K, V>> {
        match self.store() {
            Some(s) => Ok(WindowStore::new(self.app().clone(), s)),
            None => Err(Error::invalid(format!("{self:?} is kept in no store, so it cannot be queried"))),
        }
    }

    /// `suppress(Suppressed.untilWindowCloses(unbounded()))`: exactly one
    /// result per window, once stream time passes the window's end plus
    /// grace (a partition that receives nothing emits nothing).
    pub fn suppress_until_window_closes(&self) -> Result<KTable<Windowed<K>, V>> {
        self.suppress_until_window_closes_with(Options::new())
    }

    /// [`suppress_until_window_closes`](Self::suppress_until_window_closes)
    /// with `name` (`Suppressed.withName`; its store is `<name>-store`).
    pub fn suppress_until_window_closes_with(&self, o: Options) -> Result<KTable<Windowed<K>, V>> {
        self.suppress_until_window_closes_bounded(BufferConfig::unbounded(), o)
    }

    /// `suppress(Suppressed.untilWindowCloses(buffer))`: as
    /// [`suppress_until_window_closes_with`](Self::suppress_until_window_closes_with),
    /// its buffer bounded. `buffer` must shut down when full (Kafka
    /// Streams' `StrictBufferConfig`): a window emitted early would not be
    /// final, and the engine refuses [`BufferFull::EmitEarly`].
    pub fn suppress_until_window_closes_bounded(
        &self,
        buffer: BufferConfig,
        o: Options,
    ) -> Result<KTable<Windowed<K>, V>> {
        o.check("suppress", crate::options::NAME)?;
        let op = Op::Suppress(pb::SuppressOp {
            input: self.handle().id,
            name: o.name_or_empty(),
            time_limit_ms: None,
            buffer: buffer.to_proto(),
        });
        KTable::wrap(self.app().clone(), expect_handle(self.app().build(op, &[])?, "suppress")?)
    }
}

impl<K: Serde, V: Serde> KTable<K, V> {
    /// `suppress(Suppressed.untilTimeLimit(limit, buffer))`: each key's
    /// updates are held until stream time (the largest timestamp the
    /// suppression has seen) reaches the time of its first held update plus
    /// `limit`; then its latest (a tombstone too) is forwarded, or earlier
    /// when a bounded buffer is full and emits early.
    pub fn suppress_until_time_limit(&self, limit: Duration, buffer: BufferConfig) -> Result<KTable<K, V>> {
        self.suppress_until_time_limit_with(limit, buffer, Options::new())
    }

    /// [`suppress_until_time_limit`](Self::suppress_until_time_limit) with
    /// `name` (`Suppressed.withName`; its store is `<name>-store`).
    pub fn suppress_until_time_limit_with(
        &self,
        limit: Duration,
        buffer: BufferConfig,
        o: Options,
    ) -> Result<KTable<K, V>> {
        o.check("suppress", crate::options::NAME)?;
        let op = Op::Suppress(pb::SuppressOp {
            input: self.handle().id,
            name: o.name_or_empty(),
            time_limit_ms: Some(ms(limit)),
            buffer: buffer.to_proto(),
        });
        KTable::wrap(self.app().clone(), expect_handle(self.app().build(op, &[])?, "suppress")?)
    }
}

/// What a full suppression buffer does (Kafka Streams' `BufferConfig`
/// strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BufferFull {
    /// `emitEarlyWhenFull`: forward the oldest held updates until the rest
    /// fit (`maxRecords`' and `maxBytes`' default).
    #[default]
    EmitEarly,
    /// `shutDownWhenFull`: fail the record that overfills the buffer (the
    /// processing error policy applies), naming the node and its store.
    ShutDown,
}

/// The bounds of a suppression's buffer (Kafka Streams'
/// `Suppressed.BufferConfig`): at most `max_records` keys and `max_bytes`
/// bytes (counted as Kafka Streams counts them: key, values, the record's
/// topic and headers), and what it does when full. Without a bound it is
/// [`unbounded`](Self::unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferConfig {
    max_records: Option<i64>,
    max_bytes: Option<i64>,
    when_full: BufferFull,
}

impl BufferConfig {
    /// `BufferConfig.unbounded()`: no bound (memory is the limit).
    pub fn unbounded() -> BufferConfig {
        BufferConfig { max_records: None, max_bytes: None, when_full: BufferFull::ShutDown }
    }
    /// `BufferConfig.maxRecords(n)`: at most `n` keys, emitting early when full.
    pub fn max_records(n: i64) -> BufferConfig {
        BufferConfig::default().with_max_records(n)
    }
    /// `BufferConfig.maxBytes(n)`: at most `n` bytes, emitting early when full.
    pub fn max_bytes(n: i64) -> BufferConfig {
        BufferConfig::default().with_max_bytes(n)
    }
    /// Bounds the buffer to `n` keys as well.
    pub fn with_max_records(mut self, n: i64) -> BufferConfig {
        self.max_records = Some(n);
        self
    }
    /// Bounds the buffer to `n` bytes as well.
    pub fn with_max_bytes(mut self, n: i64) -> BufferConfig {
        self.max_bytes = Some(n);
        self
    }
    /// `emitEarlyWhenFull()`.
    pub fn emit_early_when_full(mut self) -> BufferConfig {
        self.when_full = BufferFull::EmitEarly;
        self
    }
    /// `shutDownWhenFull()`.
    pub fn shut_down_when_full(mut self) -> BufferConfig {
        self.when_full = BufferFull::ShutDown;
        self
    }
    /// The protocol's buffer: none when unbounded (the engine's default).
    fn to_proto(self) -> Option<pb::SuppressBuffer> {
        if self.max_records.is_none() && self.max_bytes.is_none() {
            return None;
        }
        let when_full = match self.when_full {
            BufferFull::EmitEarly => pb::BufferFull::EmitEarly,
            BufferFull::ShutDown => pb::BufferFull::ShutDown,
        };
        Some(pb::SuppressBuffer {
            max_records: self.max_records,
            max_bytes: self.max_bytes,
            when_full: when_full as i32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_keys_are_kafkas_encodings() {
        let w = Windowed { key: "k".to_owned(), start_ms: 60_000, end_ms: 120_000 };
        let mut out = Vec::new();
        assert!(w.encode("windowed(string,60000)", &mut out).unwrap());
        assert_eq!(out, [b"k".as_slice(), &60_000i64.to_be_bytes()].concat());
        assert_eq!(Windowed::<String>::decode("windowed(string,60000)", Some(&out)).unwrap(), w);

        let s = Windowed { key: 7i64, start_ms: 5, end_ms: 9 };
        let mut out = Vec::new();
        s.encode("session-windowed(long)", &mut out).unwrap();
        assert_eq!(out, [7i64.to_be_bytes(), 9i64.to_be_bytes(), 5i64.to_be_bytes()].concat());
        assert_eq!(Windowed::<i64>::decode("session-windowed(long)", Some(&out)).unwrap(), s);

        assert!(Windowed::<String>::decode("string", Some(b"x")).is_err());
        assert!(Windowed::<String>::decode("windowed(string,10)", Some(b"x")).is_err());
    }

    #[test]
    fn buffer_configs_become_the_protocols() {
        assert_eq!(BufferConfig::unbounded().to_proto(), None);
        assert_eq!(BufferConfig::default().to_proto(), None);
        let eager = BufferConfig::max_records(10).with_max_bytes(1 << 20).to_proto().unwrap();
        assert_eq!(
            (eager.max_records, eager.max_bytes, eager.when_full),
            (Some(10), Some(1 << 20), pb::BufferFull::EmitEarly as i32)
        );
        let strict = BufferConfig::max_bytes(100).shut_down_when_full().to_proto().unwrap();
        assert_eq!(
            (strict.max_records, strict.max_bytes, strict.when_full),
            (None, Some(100), pb::BufferFull::ShutDown as i32)
        );
        // Kafka: unbounded().withMaxRecords(n) is a StrictBufferConfig.
        assert_eq!(
            BufferConfig::unbounded().with_max_records(1).to_proto().unwrap().when_full,
            pb::BufferFull::ShutDown as i32
        );
    }
}
