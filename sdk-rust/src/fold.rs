//! The closures of one reduce or aggregate, as the host's [`Fold`] runs them,
//! and the Build calls of count, reduce and aggregate, shared by grouped
//! streams, grouped tables and windowed streams.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::bundle::{Folder, Func};
use crate::errors::Result;
use crate::options::{Options, MATERIALIZED, NAME};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::Session;
use crate::session::{expect_handle, Handle};

/// A built-in reduce that runs in the engine and never crosses to the host:
/// `Sum`, `Min` and `Max` need `long` or `double` values; `Latest` keeps the
/// last value (any serde).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reducer {
    Sum,
    Min,
    Max,
    Latest,
}

impl Reducer {
    pub(crate) fn to_proto(self) -> i32 {
        (match self {
            Reducer::Sum => pb::Reducer::Sum,
            Reducer::Min => pb::Reducer::Min,
            Reducer::Max => pb::Reducer::Max,
            Reducer::Latest => pb::Reducer::Latest,
        }) as i32
    }
}

pub(crate) struct StreamReduce<V, F> {
    f: F,
    _t: PhantomData<fn() -> V>,
}

impl<V, F> StreamReduce<V, F> {
    pub(crate) fn new(f: F) -> Self {
        StreamReduce { f, _t: PhantomData }
    }
}

impl<V: Serde, F: Fn(V, V) -> V + Send + Sync + 'static> Folder for StreamReduce<V, F> {
    type K = ();
    type V = V;
    type A = V;
    fn start(&self, _: &(), v: V) -> V {
        v
    }
    fn add(&self, _: &(), agg: V, v: V) -> V {
        (self.f)(agg, v)
    }
    fn sub(&self, _: &(), agg: V, _: V) -> V {
        agg
    }
    fn has_sub(&self) -> bool {
        false
    }
    fn initial(&self) -> Option<V> {
        None
    }
    fn merge(&self, _: &(), a: V, b: V) -> V {
        (self.f)(a, b)
    }
    fn has_merge(&self) -> bool {
        true
    }
}

pub(crate) struct TableReduce<V, F, G> {
    add: F,
    sub: G,
    _t: PhantomData<fn() -> V>,
}

impl<V, F, G> TableReduce<V, F, G> {
    pub(crate) fn new(add: F, sub: G) -> Self {
        TableReduce { add, sub, _t: PhantomData }
    }
}

impl<V: Serde, F, G> Folder for TableReduce<V, F, G>
where
    F: Fn(V, V) -> V + Send + Sync + 'static,
    G: Fn(V, V) -> V + Send + Sync + 'static,
{
    type K = ();
    type V = V;
    type A = V;
    fn start(&self, _: &(), v: V) -> V {
        v
    }
    fn add(&self, _: &(), agg: V, v: V) -> V {
        (self.add)(agg, v)
    }
    fn sub(&self, _: &(), agg: V, old: V) -> V {
        (self.sub)(agg, old)
    }
    fn has_sub(&self) -> bool {
        true
    }
    fn initial(&self) -> Option<V> {
        None
    }
    fn merge(&self, _: &(), a: V, b: V) -> V {
        (self.add)(a, b)
    }
    fn has_merge(&self) -> bool {
        true
    }
}

pub(crate) type Initializer<A> = Arc<dyn Fn() -> A + Send + Sync>;
pub(crate) type Aggregator<K, V, A> = Arc<dyn Fn(&K, V, A) -> A + Send + Sync>;
pub(crate) type Merger<K, A> = Arc<dyn Fn(&K, A, A) -> A + Send + Sync>;

pub(crate) struct Aggregate<K, V, A> {
    init: Initializer<A>,
    add: Aggregator<K, V, A>,
    sub: Option<Aggregator<K, V, A>>,
    merger: Option<Merger<K, A>>,
}

impl<K, V, A> Aggregate<K, V, A> {
    pub(crate) fn new(
        init: impl Fn() -> A + Send + Sync + 'static,
        add: impl Fn(&K, V, A) -> A + Send + Sync + 'static,
        sub: Option<Aggregator<K, V, A>>,
    ) -> Self {
        Aggregate { init: Arc::new(init), add: Arc::new(add), sub, merger: None }
    }

    /// A cogroup's aggregate of one grouped stream: the cogroup's
    /// initializer and merger, this stream's aggregator.
    pub(crate) fn from_parts(init: Initializer<A>, add: Aggregator<K, V, A>, merger: Option<Merger<K, A>>) -> Self {
        Aggregate { init, add, sub: None, merger }
    }

    /// An aggregate over session windows: `merger(key, aggregate1,
    /// aggregate2)` merges the sessions a record bridges.
    pub(crate) fn with_merger(self, merger: impl Fn(&K, A, A) -> A + Send + Sync + 'static) -> Self {
        Aggregate { merger: Some(Arc::new(merger)), ..self }
    }
}

impl<K: Serde, V: Serde, A: Serde> Folder for Aggregate<K, V, A> {
    type K = K;
    type V = V;
    type A = A;
    fn start(&self, key: &K, v: V) -> A {
        (self.add)(key, v, (self.init)())
    }
    fn add(&self, key: &K, agg: A, v: V) -> A {
        (self.add)(key, v, agg)
    }
    fn sub(&self, key: &K, agg: A, old: V) -> A {
        match &self.sub {
            Some(s) => s(key, old, agg),
            None => agg,
        }
    }
    fn has_sub(&self) -> bool {
        self.sub.is_some()
    }
    fn initial(&self) -> Option<A> {
        Some((self.init)())
    }
    fn merge(&self, key: &K, a: A, b: A) -> A {
        match &self.merger {
            Some(m) => m(key, a, b),
            None => a,
        }
    }
    fn has_merge(&self) -> bool {
        self.merger.is_some()
    }
}

/// The names an aggregate's functions are registered under (describe
/// output and error messages).
pub(crate) struct AggregateNames {
    pub(crate) init: String,
    pub(crate) aggregator: String,
    /// A grouped table's subtractor.
    pub(crate) subtractor: Option<String>,
    /// A session-windowed aggregate's merger.
    pub(crate) merger: Option<String>,
}

/// count, reduce and aggregate, shared by grouped streams and grouped tables.
pub(crate) struct Aggregations<'a> {
    pub(crate) app: &'a Arc<Session>,
    pub(crate) input: u64,
    /// What the fold's functions ask of the records' metadata
    /// (`with_metadata`: READ; a fold's functions cannot set it).
    pub(crate) metadata: pb::Metadata,
}

impl Aggregations<'_> {
    pub(crate) fn count(&self, o: &Options) -> Result<Handle> {
        o.check("count", NAME | MATERIALIZED)?;
        let op =
            Op::Count(pb::CountOp { input: self.input, materialized: o.materialized_proto(), name: o.name_or_empty() });
        expect_handle(self.app.build(op, &[])?, "count")
    }

    pub(crate) fn builtin(&self, r: Reducer, o: &Options) -> Result<Handle> {
        o.check("reduce", NAME | MATERIALIZED)?;
        let op = Op::Reduce(pb::ReduceOp {
            input: self.input,
            token: 0,
            builtin: r.to_proto(),
            materialized: o.materialized_proto(),
            name: o.name_or_empty(),
            subtractor_token: 0,
        });
        expect_handle(self.app.build(op, &[])?, "reduce")
    }

    pub(crate) fn reduce(
        &self,
        fold: Arc<dyn crate::bundle::FoldRun>,
        names: (String, Option<String>),
        o: &Options,
    ) -> Result<Handle> {
        o.check("reduce", NAME | MATERIALIZED)?;
        let token = self.app.register_with(&names.0, Func::Fold(fold), self.metadata)?;
        let sub = match names.1 {
            Some(n) => self.app.register(&n, Func::Part)?,
            None => 0,
        };
        let op = Op::Reduce(pb::ReduceOp {
            input: self.input,
            token,
            builtin: 0,
            materialized: o.materialized_proto(),
            name: o.name_or_empty(),
            subtractor_token: sub,
        });
        expect_handle(self.app.build(op, &[token, sub])?, "reduce")
    }

    pub(crate) fn aggregate(
        &self,
        fold: Arc<dyn crate::bundle::FoldRun>,
        names: AggregateNames,
        agg_serde: &str,
        o: &Options,
    ) -> Result<Handle> {
        o.check("aggregate", NAME | MATERIALIZED)?;
        let init = self.app.register_with(&names.init, Func::Part, self.metadata)?;
        let token = self.app.register_with(&names.aggregator, Func::Fold(fold), self.metadata)?;
        let part = |name: Option<String>| match name {
            Some(n) => self.app.register_with(&n, Func::Part, self.metadata),
            None => Ok(0),
        };
        let sub = part(names.subtractor)?;
        let merger = part(names.merger)?;
        // The aggregate's serde is its Rust type's unless materialized names one.
        let mut m = o.materialized_proto();
        if !agg_serde.is_empty() {
            let m = m.get_or_insert_with(Default::default);
            if m.value_serde.is_empty() {
                m.value_serde = agg_serde.to_owned();
            }
        }
        let op = Op::Aggregate(pb::AggregateOp {
            input: self.input,
            initializer_token: init,
            aggregator_token: token,
            materialized: m,
            name: o.name_or_empty(),
            subtractor_token: sub,
            merger_token: merger,
        });
        expect_handle(self.app.build(op, &[init, token, sub, merger])?, "aggregate")
    }
}
