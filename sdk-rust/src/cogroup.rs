//! Cogroups (KIP-150): grouped streams aggregated into one table, each with
//! its own aggregator.

use std::future::Future;
use std::sync::Arc;

use crate::bundle::metadata::{meta_owned, with_meta};
use crate::bundle::{AsyncFold, Fold, FoldRun, Func, LocalFuture};
use crate::dsl::{KGroupedStream, KTable};
use crate::errors::Result;
use crate::fold::{Aggregate, Aggregator, Initializer, Merger};
use crate::options::{Options, MATERIALIZED, NAME};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::RecordMetadata;
use crate::serdes::{Serde, Windowed};
use crate::session::{expect_handle, fn_name, Handle, Session};
use crate::windows::{SessionWindows, SlidingWindows, TimeWindows, Windows};

/// One grouped stream of a cogroup: its handle, and its aggregator's fold
/// once the initializer (and merger) are known.
struct Part<K, A> {
    input: u64,
    name: String,
    fold: MakeFold<K, A>,
    /// What its aggregator asks of the records' metadata (READ: it reads it).
    metadata: pb::Metadata,
}

type MakeFold<K, A> = Arc<dyn Fn(Initializer<A>, Option<CogroupMerger<K, A>>) -> Arc<dyn FoldRun> + Send + Sync>;

/// An async aggregator: the next aggregate's future from the key, the value
/// and the aggregate.
type AsyncAggregator<K, V, A> = Arc<dyn Fn(&K, V, A) -> LocalFuture<A> + Send + Sync>;
/// An async merger: two sessions' aggregates to their merge's future.
type AsyncMerger<K, A> = Arc<dyn Fn(&K, A, A) -> LocalFuture<A> + Send + Sync>;

/// A session-windowed cogroup's merger: synchronous, or async with its name
/// (for a timeout's message).
enum CogroupMerger<K, A> {
    Sync(Merger<K, A>),
    Async(AsyncMerger<K, A>, String),
}

impl<K, A> Clone for CogroupMerger<K, A> {
    fn clone(&self) -> Self {
        match self {
            CogroupMerger::Sync(m) => CogroupMerger::Sync(m.clone()),
            CogroupMerger::Async(m, n) => CogroupMerger::Async(m.clone(), n.clone()),
        }
    }
}

/// A part's aggregator, synchronous or async.
enum Add<K, V, A> {
    Sync(Aggregator<K, V, A>),
    Async(AsyncAggregator<K, V, A>),
}

impl<K, A> Clone for Part<K, A> {
    fn clone(&self) -> Self {
        Part { input: self.input, name: self.name.clone(), fold: self.fold.clone(), metadata: self.metadata }
    }
}

/// The fold of a part's aggregator: the synchronous fold when it and the
/// merger are synchronous, else an async fold (a synchronous aggregator or
/// merger then answers a ready future), each group's values folded in
/// order and a bundle's groups together, as `aggregate_async`'s.
fn make_fold<K: Serde, V: Serde, A: Serde>(name: String, add: Add<K, V, A>) -> MakeFold<K, A> {
    Arc::new(move |init: Initializer<A>, merger: Option<CogroupMerger<K, A>>| {
        let add: AsyncAggregator<K, V, A> = match (&add, &merger) {
            (Add::Sync(add), None) => return Arc::new(Fold(Aggregate::from_parts(init, add.clone(), None))),
            (Add::Sync(add), Some(CogroupMerger::Sync(m))) => {
                return Arc::new(Fold(Aggregate::from_parts(init, add.clone(), Some(m.clone()))))
            }
            (Add::Sync(add), Some(CogroupMerger::Async(..))) => {
                let add = add.clone();
                Arc::new(move |k: &K, v: V, a: A| Box::pin(std::future::ready(add(k, v, a))) as LocalFuture<A>)
            }
            (Add::Async(add), _) => add.clone(),
        };
        let (first, start) = (add.clone(), init.clone());
        let fold = AsyncFold::<K, V, A>::new(
            name.clone(),
            Arc::new(move |k: &K, v: V| first(k, v, start())),
            Arc::new(move |k: &K, a: A, v: V| add(k, v, a)),
        )
        .with_initial(init);
        let fold = match merger {
            None => fold,
            Some(CogroupMerger::Sync(m)) => fold.with_merge(
                Arc::new(move |k: &K, a: A, b: A| Box::pin(std::future::ready(m(k, a, b))) as LocalFuture<A>),
                None,
            ),
            Some(CogroupMerger::Async(m, name)) => fold.with_merge(m, Some(name)),
        };
        Arc::new(fold)
    })
}

fn part<K: Serde, V: Serde, A: Serde, F>(g: &KGroupedStream<K, V>, f: F) -> Part<K, A>
where
    F: Fn(&K, V, A) -> A + Send + Sync + 'static,
{
    let name = fn_name::<F>("cogroup");
    Part {
        input: g.handle().id,
        fold: make_fold(name.clone(), Add::Sync(Arc::new(f))),
        name,
        metadata: pb::Metadata::Unspecified,
    }
}

/// A part whose aggregator also gets the record's metadata.
fn metadata_part<K: Serde, V: Serde, A: Serde, F>(g: &KGroupedStream<K, V>, f: F) -> Part<K, A>
where
    F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
{
    let name = fn_name::<F>("cogroup");
    let add: Aggregator<K, V, A> = Arc::new(move |k: &K, v: V, a: A| with_meta(|m| f(k, v, a, m)));
    Part { input: g.handle().id, fold: make_fold(name.clone(), Add::Sync(add)), name, metadata: pb::Metadata::Read }
}

/// A part whose aggregator returns a future.
fn async_part<K: Serde, V: Serde, A: Serde, F, Fut>(g: &KGroupedStream<K, V>, f: F) -> Part<K, A>
where
    F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = A> + 'static,
{
    let name = fn_name::<F>("cogroup");
    let add: AsyncAggregator<K, V, A> = Arc::new(move |k: &K, v: V, a: A| Box::pin(f(k, v, a)) as LocalFuture<A>);
    Part {
        input: g.handle().id,
        fold: make_fold(name.clone(), Add::Async(add)),
        name,
        metadata: pb::Metadata::Unspecified,
    }
}

/// A part whose aggregator returns a future and gets the record's metadata
/// (owned, as the future may outlive the call).
fn async_metadata_part<K: Serde, V: Serde, A: Serde, F, Fut>(g: &KGroupedStream<K, V>, f: F) -> Part<K, A>
where
    F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = A> + 'static,
{
    let name = fn_name::<F>("cogroup");
    let add: AsyncAggregator<K, V, A> =
        Arc::new(move |k: &K, v: V, a: A| Box::pin(f(k, v, a, meta_owned())) as LocalFuture<A>);
    Part { input: g.handle().id, fold: make_fold(name.clone(), Add::Async(add)), name, metadata: pb::Metadata::Read }
}

/// Grouped streams aggregated into one table, each with its own aggregator
/// (`CogroupedKStream<K, A>`, KIP-150; `A` is the aggregate). Every record
/// updates its key's one aggregate, in one store, and the table forwards one
/// update per record. The grouped streams share their key type and are
/// co-partitioned; one whose key changed upstream is repartitioned first
/// (through its `group_by_key_with` name's topic, else
/// `<store>-repartition`).
///
/// The cogroup is sent to the engine by [`aggregate`](Self::aggregate), when
/// its initializer is known; an error in a `cogroup` call surfaces there.
pub struct CogroupedKStream<K, A> {
    app: Arc<Session>,
    parts: Vec<Part<K, A>>,
}

impl<K, A> Clone for CogroupedKStream<K, A> {
    fn clone(&self) -> Self {
        CogroupedKStream { app: self.app.clone(), parts: self.parts.clone() }
    }
}

impl<K, A> std::fmt::Debug for CogroupedKStream<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inputs: Vec<u64> = self.parts.iter().map(|p| p.input).collect();
        write!(f, "CogroupedKStream(grouped streams={inputs:?})")
    }
}

impl<K: Serde, V: Serde> KGroupedStream<K, V> {
    /// Starts a cogroup (`KGroupedStream.cogroup`): each record of this
    /// grouped stream is folded in by `f(key, value, aggregate)`. Add more
    /// grouped streams with [`CogroupedKStream::cogroup`], then
    /// [`aggregate`](CogroupedKStream::aggregate). Adds no node.
    pub fn cogroup<A: Serde, F>(&self, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        CogroupedKStream { app: self.app().clone(), parts: vec![part(self, f)] }
    }

    /// [`cogroup`](Self::cogroup) with an async aggregator: `f(key, value,
    /// aggregate)` resolves to the key's new aggregate. A bundle's keys
    /// (windows) fold together, each key's values in record order (each
    /// future awaited before the key's next value), as
    /// [`aggregate_async`](KGroupedStream::aggregate_async)'s; a panicking
    /// or timed-out future fails its record, naming the aggregator and its
    /// node. Async and synchronous aggregators mix in one cogroup.
    pub fn cogroup_async<A: Serde, F, Fut>(&self, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        CogroupedKStream { app: self.app().clone(), parts: vec![async_part(self, f)] }
    }
}

impl<K: Serde, V: Serde> crate::MetadataGroupedStream<K, V> {
    /// [`KGroupedStream::cogroup`] whose aggregator also gets the metadata
    /// of the record being folded: `f(key, value, aggregate, metadata)`
    /// (read-only). Only the aggregators asked get it: add more grouped
    /// streams with [`CogroupedKStream::cogroup`] or
    /// [`CogroupedKStream::cogroup_with_metadata`].
    pub fn cogroup<A: Serde, F>(&self, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        let g = self.grouped();
        CogroupedKStream { app: g.app().clone(), parts: vec![metadata_part(g, f)] }
    }

    /// [`cogroup`](Self::cogroup) with an async aggregator: `f(key, value,
    /// aggregate, metadata)` resolves to the new aggregate (the metadata
    /// owned, as the future may outlive the call).
    pub fn cogroup_async<A: Serde, F, Fut>(&self, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        let g = self.grouped();
        CogroupedKStream { app: g.app().clone(), parts: vec![async_metadata_part(g, f)] }
    }
}

impl<K: Serde, A: Serde> CogroupedKStream<K, A> {
    /// [`cogroup`](Self::cogroup) whose aggregator also gets the metadata
    /// of the record being folded: `f(key, value, aggregate, metadata)`
    /// (read-only; Python's `with_metadata(fn)`, Node's `withMetadata(fn)`).
    pub fn cogroup_with_metadata<V: Serde, F>(mut self, grouped: &KGroupedStream<K, V>, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.parts.push(metadata_part(grouped, f));
        self
    }

    /// Adds `grouped`, whose records `f(key, value, aggregate)` folds in
    /// (`CogroupedKStream.cogroup`). Adds no node.
    pub fn cogroup<V: Serde, F>(mut self, grouped: &KGroupedStream<K, V>, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A) -> A + Send + Sync + 'static,
    {
        self.parts.push(part(grouped, f));
        self
    }

    /// Adds `grouped` with an async aggregator: `f(key, value, aggregate)`
    /// resolves to the new aggregate (see [`KGroupedStream::cogroup_async`]).
    pub fn cogroup_async<V: Serde, F, Fut>(mut self, grouped: &KGroupedStream<K, V>, f: F) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.parts.push(async_part(grouped, f));
        self
    }

    /// [`cogroup_async`](Self::cogroup_async) whose aggregator also gets the
    /// metadata of the record being folded, owned: `f(key, value,
    /// aggregate, metadata)`.
    pub fn cogroup_with_metadata_async<V: Serde, F, Fut>(
        mut self,
        grouped: &KGroupedStream<K, V>,
        f: F,
    ) -> CogroupedKStream<K, A>
    where
        F: Fn(&K, V, A, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + 'static,
    {
        self.parts.push(async_metadata_part(grouped, f));
        self
    }

    /// The cogroup's table (`CogroupedKStream.aggregate`): `init()` starts a
    /// key's aggregate, and each record is folded in by its own stream's
    /// aggregator. The aggregate's serde is `A`'s.
    pub fn aggregate<I>(self, init: I) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` (the nodes are then
    /// `<name>-cogroup-agg-<i>` and `<name>-cogroup-merge`) and `materialized`.
    pub fn aggregate_with<I>(self, init: I, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
    {
        let app = self.app.clone();
        let init_name = fn_name::<I>("aggregate initializer");
        let h = self.build(None, (Arc::new(init), init_name, pb::Metadata::Unspecified), None, None, o)?;
        KTable::wrap(app, h)
    }

    /// The cogroup whose initializer also gets the metadata of the record
    /// being folded, the one that creates the key's aggregate (Python's
    /// `aggregate(with_metadata(init))`, Node's `aggregate(withMetadata(init))`):
    /// `cogrouped.with_metadata().aggregate(|m| ..)`. Its aggregators ask
    /// for themselves ([`cogroup_with_metadata`](Self::cogroup_with_metadata)).
    pub fn with_metadata(self) -> MetadataCogroupedKStream<K, A> {
        MetadataCogroupedKStream { cogroup: self }
    }

    /// Windows the cogroup (`CogroupedKStream.windowedBy`): with
    /// [`TimeWindows`](crate::TimeWindows) or [`SlidingWindows`](crate::SlidingWindows)
    /// a [`TimeWindowedCogroupedKStream`], with
    /// [`SessionWindows`](crate::SessionWindows) a
    /// [`SessionWindowedCogroupedKStream`]. Every window update is forwarded.
    pub fn windowed_by<W: CogroupWindows>(self, w: W) -> W::Cogrouped<K, A> {
        W::wrap_cogrouped(self, w.to_proto())
    }

    /// Sends the cogroup, its windows and its aggregate to the engine.
    /// `init`: the initializer, its name and what it (and the merger) ask
    /// of the records' metadata (READ: every aggregation's bundles carry
    /// it, as any of them may create a key's aggregate).
    fn build(
        self,
        windows: Option<pb::windowed_by_op::Windows>,
        init: (Initializer<A>, String, pb::Metadata),
        merger: Option<CogroupMerger<K, A>>,
        merger_name: Option<String>,
        o: Options,
    ) -> Result<Handle> {
        o.check("aggregate", NAME | MATERIALIZED)?;
        let app = &self.app;
        let (init, init_name, init_metadata) = init;
        let init_token = app.register_with(&init_name, Func::Part, init_metadata)?;
        let merger_token = match merger_name {
            // A merger with metadata comes with an initializer with it.
            Some(n) => app.register_with(&n, Func::Part, init_metadata)?,
            None => 0,
        };
        let mut input = 0;
        for (i, p) in self.parts.iter().enumerate() {
            let token = app.register_with(&p.name, Func::Fold((p.fold)(init.clone(), merger.clone())), p.metadata)?;
            let op = if i == 0 {
                pb::CogroupOp { input: p.input, grouped: 0, aggregator_token: token }
            } else {
                pb::CogroupOp { input, grouped: p.input, aggregator_token: token }
            };
            input = expect_handle(app.build(Op::Cogroup(op), &[token])?, "cogroup")?.id;
        }
        if let Some(w) = windows {
            let op = Op::WindowedBy(pb::WindowedByOp { input, windows: Some(w) });
            input = expect_handle(app.build(op, &[])?, "windowed_by")?.id;
        }
        // The aggregate's serde is its Rust type's unless materialized names one.
        let mut m = o.materialized_proto();
        if !A::NAME.is_empty() {
            let m = m.get_or_insert_with(Default::default);
            if m.value_serde.is_empty() {
                m.value_serde = A::NAME.to_owned();
            }
        }
        let op = Op::Aggregate(pb::AggregateOp {
            input,
            initializer_token: init_token,
            aggregator_token: 0,
            materialized: m,
            name: o.name_or_empty(),
            subtractor_token: 0,
            merger_token,
        });
        expect_handle(app.build(op, &[init_token, merger_token])?, "aggregate")
    }
}

/// A cogroup whose initializer also gets the [`RecordMetadata`] of the
/// record being folded when it creates a key's aggregate, from
/// [`CogroupedKStream::with_metadata`]; read-only, as for
/// [`MetadataGroupedStream`](crate::MetadataGroupedStream).
pub struct MetadataCogroupedKStream<K, A> {
    cogroup: CogroupedKStream<K, A>,
}

impl<K, A> std::fmt::Debug for MetadataCogroupedKStream<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataCogroupedKStream({:?})", self.cogroup)
    }
}

impl<K: Serde, A: Serde> MetadataCogroupedKStream<K, A> {
    /// `CogroupedKStream.aggregate` with metadata: `init(metadata)` starts a
    /// key's aggregate, getting the metadata of the record that creates it
    /// (whichever grouped stream it came from); each record is then folded
    /// in by its own stream's aggregator.
    pub fn aggregate<I>(self, init: I) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<I>(self, init: I, o: Options) -> Result<KTable<K, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
    {
        let app = self.cogroup.app.clone();
        let name = fn_name::<I>("aggregate initializer");
        let init: Initializer<A> = Arc::new(move || with_meta(|m| init(m)));
        let h = self.cogroup.build(None, (init, name, pb::Metadata::Read), None, None, o)?;
        KTable::wrap(app, h)
    }
}

/// A windowed cogroup: its cogroup and windows, with Clone, Debug and `new`.
macro_rules! windowed_cogroup {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<K, A> {
            cogroup: CogroupedKStream<K, A>,
            windows: pb::windowed_by_op::Windows,
        }

        impl<K, A> Clone for $name<K, A> {
            fn clone(&self) -> Self {
                $name { cogroup: self.cogroup.clone(), windows: self.windows }
            }
        }

        impl<K, A> std::fmt::Debug for $name<K, A> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?}, {:?})", stringify!($name), self.cogroup, self.windows)
            }
        }

        impl<K: Serde, A: Serde> $name<K, A> {
            pub(crate) fn new(cogroup: CogroupedKStream<K, A>, windows: pb::windowed_by_op::Windows) -> Self {
                $name { cogroup, windows }
            }
        }
    };
}

windowed_cogroup!(
    /// A cogroup windowed by time or sliding windows
    /// (`TimeWindowedCogroupedKStream`).
    TimeWindowedCogroupedKStream
);

windowed_cogroup!(
    /// A cogroup windowed by sessions (`SessionWindowedCogroupedKStream`).
    SessionWindowedCogroupedKStream
);

impl<K: Serde, A: Serde> TimeWindowedCogroupedKStream<K, A> {
    /// `init()` starts each window's aggregate; each record is folded in by
    /// its own stream's aggregator.
    pub fn aggregate<I>(self, init: I) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<I>(self, init: I, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
    {
        let app = self.cogroup.app.clone();
        let init = (Arc::new(init) as Initializer<A>, fn_name::<I>("aggregate initializer"), pb::Metadata::Unspecified);
        let h = self.cogroup.build(Some(self.windows), init, None, None, o)?;
        KTable::wrap(app, h)
    }
}

impl<K: Serde, A: Serde> SessionWindowedCogroupedKStream<K, A> {
    /// `init()` starts each session's aggregate, each record is folded in by
    /// its own stream's aggregator, and `merger(key, aggregate1,
    /// aggregate2)` merges the sessions a record bridges.
    pub fn aggregate<I, M>(self, init: I, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, merger, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<I, M>(self, init: I, merger: M, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> A + Send + Sync + 'static,
    {
        let app = self.cogroup.app.clone();
        let init = (Arc::new(init) as Initializer<A>, fn_name::<I>("aggregate initializer"), pb::Metadata::Unspecified);
        let merger_name = Some(fn_name::<M>("aggregate merger"));
        let merger = CogroupMerger::Sync(Arc::new(merger));
        let h = self.cogroup.build(Some(self.windows), init, Some(merger), merger_name, o)?;
        KTable::wrap(app, h)
    }
}

impl<K: Serde, A: Serde> SessionWindowedCogroupedKStream<K, A> {
    /// [`aggregate`](Self::aggregate) with an async merger: `merger(key,
    /// aggregate1, aggregate2)` resolves to the merged sessions' aggregate.
    /// The sessions' aggregators, synchronous or async, then fold
    /// asynchronously too: a key's merges and values in record order, each
    /// future awaited before the next, a bundle's keys together.
    pub fn aggregate_async<I, M, MFut>(self, init: I, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, merger, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<I, M, MFut>(self, init: I, merger: M, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn() -> A + Send + Sync + 'static,
        M: Fn(&K, A, A) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        let app = self.cogroup.app.clone();
        let init = (Arc::new(init) as Initializer<A>, fn_name::<I>("aggregate initializer"), pb::Metadata::Unspecified);
        let name = fn_name::<M>("aggregate merger");
        let m: AsyncMerger<K, A> = Arc::new(move |k: &K, a: A, b: A| Box::pin(merger(k, a, b)) as LocalFuture<A>);
        let merger = CogroupMerger::Async(m, name.clone());
        let h = self.cogroup.build(Some(self.windows), init, Some(merger), Some(name), o)?;
        KTable::wrap(app, h)
    }
}

impl<K: Serde, A: Serde> TimeWindowedCogroupedKStream<K, A> {
    /// The windowed cogroup whose initializer also gets the metadata of the
    /// record that creates each window's aggregate:
    /// `cogrouped.windowed_by(w).with_metadata().aggregate(|m| ..)`.
    pub fn with_metadata(self) -> MetadataTimeWindowedCogroupedKStream<K, A> {
        MetadataTimeWindowedCogroupedKStream { windowed: self }
    }
}

impl<K: Serde, A: Serde> SessionWindowedCogroupedKStream<K, A> {
    /// The session-windowed cogroup whose initializer and merger also get
    /// the metadata of the record being folded (for the merger, the record
    /// bridging the sessions): `.with_metadata().aggregate(|m| .., |k, a, b, m| ..)`.
    pub fn with_metadata(self) -> MetadataSessionWindowedCogroupedKStream<K, A> {
        MetadataSessionWindowedCogroupedKStream { windowed: self }
    }
}

/// A time- or sliding-windowed cogroup whose initializer gets the
/// [`RecordMetadata`] of the record that creates a window's aggregate,
/// from [`TimeWindowedCogroupedKStream::with_metadata`]; read-only.
pub struct MetadataTimeWindowedCogroupedKStream<K, A> {
    windowed: TimeWindowedCogroupedKStream<K, A>,
}

/// A session-windowed cogroup whose initializer and merger get the
/// [`RecordMetadata`] of the record being folded, from
/// [`SessionWindowedCogroupedKStream::with_metadata`]; read-only.
pub struct MetadataSessionWindowedCogroupedKStream<K, A> {
    windowed: SessionWindowedCogroupedKStream<K, A>,
}

impl<K, A> std::fmt::Debug for MetadataTimeWindowedCogroupedKStream<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataTimeWindowedCogroupedKStream({:?})", self.windowed)
    }
}

impl<K, A> std::fmt::Debug for MetadataSessionWindowedCogroupedKStream<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetadataSessionWindowedCogroupedKStream({:?})", self.windowed)
    }
}

impl<K: Serde, A: Serde> MetadataTimeWindowedCogroupedKStream<K, A> {
    /// `init(metadata)` starts each window's aggregate; each record is
    /// folded in by its own stream's aggregator.
    pub fn aggregate<I>(self, init: I) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<I>(self, init: I, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
    {
        let w = self.windowed;
        let app = w.cogroup.app.clone();
        let name = fn_name::<I>("aggregate initializer");
        let init: Initializer<A> = Arc::new(move || with_meta(|m| init(m)));
        let h = w.cogroup.build(Some(w.windows), (init, name, pb::Metadata::Read), None, None, o)?;
        KTable::wrap(app, h)
    }
}

impl<K: Serde, A: Serde> MetadataSessionWindowedCogroupedKStream<K, A> {
    /// `init(metadata)` starts each session's aggregate, each record is
    /// folded in by its own stream's aggregator, and `merger(key,
    /// aggregate1, aggregate2, metadata)` merges the sessions a record
    /// bridges (that record's metadata).
    pub fn aggregate<I, M>(self, init: I, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        self.aggregate_with(init, merger, Options::new())
    }

    /// [`aggregate`](Self::aggregate) with `name` and `materialized`.
    pub fn aggregate_with<I, M>(self, init: I, merger: M, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, &RecordMetadata) -> A + Send + Sync + 'static,
    {
        let w = self.windowed;
        let app = w.cogroup.app.clone();
        let name = fn_name::<I>("aggregate initializer");
        let merger_name = Some(fn_name::<M>("aggregate merger"));
        let init: Initializer<A> = Arc::new(move || with_meta(|m| init(m)));
        let merger: Merger<K, A> = Arc::new(move |k: &K, a: A, b: A| with_meta(|m| merger(k, a, b, m)));
        let merger = Some(CogroupMerger::Sync(merger));
        let h = w.cogroup.build(Some(w.windows), (init, name, pb::Metadata::Read), merger, merger_name, o)?;
        KTable::wrap(app, h)
    }
}

impl<K: Serde, A: Serde> MetadataSessionWindowedCogroupedKStream<K, A> {
    /// [`aggregate`](Self::aggregate) with an async merger: `merger(key,
    /// aggregate1, aggregate2, metadata)` resolves to the merged sessions'
    /// aggregate (the bridging record's metadata, owned). The aggregators
    /// then fold asynchronously too, a key's calls in order.
    pub fn aggregate_async<I, M, MFut>(self, init: I, merger: M) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, RecordMetadata) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        self.aggregate_async_with(init, merger, Options::new())
    }

    /// [`aggregate_async`](Self::aggregate_async) with `name` and `materialized`.
    pub fn aggregate_async_with<I, M, MFut>(self, init: I, merger: M, o: Options) -> Result<KTable<Windowed<K>, A>>
    where
        I: Fn(&RecordMetadata) -> A + Send + Sync + 'static,
        M: Fn(&K, A, A, RecordMetadata) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = A> + 'static,
    {
        let w = self.windowed;
        let app = w.cogroup.app.clone();
        let name = fn_name::<I>("aggregate initializer");
        let merger_name = fn_name::<M>("aggregate merger");
        let init: Initializer<A> = Arc::new(move || with_meta(|m| init(m)));
        let m: AsyncMerger<K, A> =
            Arc::new(move |k: &K, a: A, b: A| Box::pin(merger(k, a, b, meta_owned())) as LocalFuture<A>);
        let merger = Some(CogroupMerger::Async(m, merger_name.clone()));
        let init = (init, name, pb::Metadata::Read);
        let h = w.cogroup.build(Some(w.windows), init, merger, Some(merger_name), o)?;
        KTable::wrap(app, h)
    }
}

/// Windows a cogroup can be windowed by: [`TimeWindows`] and
/// [`SlidingWindows`] make a [`TimeWindowedCogroupedKStream`],
/// [`SessionWindows`] a [`SessionWindowedCogroupedKStream`].
pub trait CogroupWindows: Windows {
    /// What windowing makes of a `CogroupedKStream<K, A>`.
    type Cogrouped<K: Serde, A: Serde>;
    #[doc(hidden)]
    fn wrap_cogrouped<K: Serde, A: Serde>(
        c: CogroupedKStream<K, A>,
        w: pb::windowed_by_op::Windows,
    ) -> Self::Cogrouped<K, A>;
}

/// `CogroupWindows` for windows that make a `$cogrouped`.
macro_rules! cogroup_windows {
    ($($windows:ident => $cogrouped:ident),*) => {$(
        impl CogroupWindows for $windows {
            type Cogrouped<K: Serde, A: Serde> = $cogrouped<K, A>;
            fn wrap_cogrouped<K: Serde, A: Serde>(
                c: CogroupedKStream<K, A>,
                w: pb::windowed_by_op::Windows,
            ) -> Self::Cogrouped<K, A> {
                $cogrouped::new(c, w)
            }
        }
    )*};
}

cogroup_windows!(
    TimeWindows => TimeWindowedCogroupedKStream,
    SlidingWindows => TimeWindowedCogroupedKStream,
    SessionWindows => SessionWindowedCogroupedKStream
);
