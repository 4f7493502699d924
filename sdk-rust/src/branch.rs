//! Merging, splitting and repartitioning streams: `KStream.merge`,
//! `KStream.split` with its [`BranchedKStream`], and `KStream.repartition`.

use std::collections::HashMap;
use std::future::Future;

use crate::asynchronous::predicate_step_async;
use crate::bundle::{Func, StepFn};
use crate::dsl::{predicate_step, KStream};
use crate::errors::{Error, Result};
use crate::options::{Options, NAME};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::fn_name;

/// How [`KStream::repartition_with`] repartitions (Kafka Streams'
/// `Repartitioned`): the topic's name and its partition count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repartitioned {
    name: String,
    partitions: i32,
}

impl Repartitioned {
    /// A generated name (`KSTREAM-REPARTITION-<n>`) and as many partitions
    /// as the sub-topology writing the topic.
    pub fn new() -> Repartitioned {
        Repartitioned::default()
    }
    /// `Repartitioned.as(name)`: the topic is `<application.id>-<name>-repartition`.
    pub fn named(name: impl Into<String>) -> Repartitioned {
        Repartitioned::new().name(name)
    }
    pub fn name(mut self, name: impl Into<String>) -> Repartitioned {
        self.name = name.into();
        self
    }
    /// `Repartitioned.withNumberOfPartitions(partitions)`; 0 (the default):
    /// as many as the sub-topology writing the topic.
    pub fn partitions(mut self, partitions: u32) -> Repartitioned {
        self.partitions = i32::try_from(partitions).unwrap_or(i32::MAX);
        self
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// One stream of this stream's and `other`'s records (`KStream.merge`);
    /// both must carry the same key and value serdes, or the engine refuses.
    pub fn merge(&self, other: &KStream<K, V>) -> Result<KStream<K, V>> {
        self.merge_with(other, Options::new())
    }

    /// [`merge`](Self::merge) with `name`.
    pub fn merge_with(&self, other: &KStream<K, V>, o: Options) -> Result<KStream<K, V>> {
        o.check("merge", NAME)?;
        let op = Op::Merge(pb::MergeOp { input: self.handle.id, other: other.handle.id, name: o.name_or_empty() });
        let h = self.app.build(op, &[])?;
        self.stream(h, "merge")
    }

    /// Sends the stream through the topic
    /// `<application.id>-KSTREAM-REPARTITION-<n>-repartition` and on from a
    /// new sub-topology (`KStream.repartition`). Records with a null key
    /// are dropped.
    pub fn repartition(&self) -> Result<KStream<K, V>> {
        self.repartition_with(Repartitioned::new())
    }

    /// [`repartition`](Self::repartition) with the topic's name and
    /// partition count: `Repartitioned::named("by-key").partitions(3)`.
    pub fn repartition_with(&self, r: Repartitioned) -> Result<KStream<K, V>> {
        self.build_repartition(r, 0)
    }

    /// The repartition of `r`, with the stream partitioner registered under
    /// `partitioner_token` (0: Kafka's default partitioner).
    pub(crate) fn build_repartition(&self, r: Repartitioned, partitioner_token: u32) -> Result<KStream<K, V>> {
        let op = Op::Repartition(pb::RepartitionOp {
            input: self.handle.id,
            name: r.name,
            partitions: r.partitions,
            partitioner_token,
        });
        let h = self.app.build(op, &[])?;
        self.stream(h, "repartition")
    }

    /// Routes each record to the first branch whose predicate passes it
    /// (`KStream.split`):
    ///
    /// ```ignore
    /// let branches = orders
    ///     .split_with(Options::named("orders-"))
    ///     .branch_with(|_, o: &Json<Order>| o.0.total > 100, Options::named("big"))
    ///     .branch(|_, o: &Json<Order>| o.0.country != "NL")
    ///     .default_branch_with(Options::named("rest"))?;
    /// branches["orders-big"].to("big-orders")?;
    /// ```
    ///
    /// The streams are keyed as Kafka Streams keys them: the split's name
    /// (default `KSTREAM-BRANCH-<n>`) followed by the branch's name or number
    /// (from 1; the default branch's is 0).
    pub fn split(&self) -> BranchedKStream<K, V> {
        self.split_with(Options::new())
    }

    /// [`split`](Self::split) with `name` (`Named.as`).
    pub fn split_with(&self, o: Options) -> BranchedKStream<K, V> {
        BranchedKStream {
            stream: self.clone(),
            error: o.check("split", NAME).err(),
            name: o.name_or_empty(),
            branches: Vec::new(),
        }
    }
}

/// The branches of a [`KStream::split`] being made (Kafka Streams'
/// `BranchedKStream`): add them with [`branch`](Self::branch), then end with
/// [`default_branch`](Self::default_branch) or
/// [`no_default_branch`](Self::no_default_branch), which build the split and
/// return its streams by name. Nothing reaches the engine before then: an
/// error in the options is reported by the call that ends the split.
pub struct BranchedKStream<K, V> {
    stream: KStream<K, V>,
    name: String,
    branches: Vec<(String, String, StepFn)>,
    error: Option<Error>,
}

impl<K: Serde, V: Serde> BranchedKStream<K, V> {
    /// A branch for the records `f(key, value)` passes, of those no earlier
    /// branch took; it is named by its number (from 1).
    pub fn branch<F>(self, f: F) -> BranchedKStream<K, V>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        self.branch_with(f, Options::new())
    }

    /// [`branch`](Self::branch) with `name` (`Branched.as`).
    pub fn branch_with<F>(mut self, f: F, o: Options) -> BranchedKStream<K, V>
    where
        F: Fn(&K, &V) -> bool + Send + Sync + 'static,
    {
        if let Err(e) = o.check("split: branch", NAME) {
            self.error.get_or_insert(e);
        }
        self.branches.push((fn_name::<F>("split"), o.name_or_empty(), predicate_step(false, f)));
        self
    }

    /// [`branch`](Self::branch) with an async predicate: the records
    /// `f(key, value)` resolves to true for, of those no earlier branch
    /// took. A bundle's futures run together, as
    /// [`filter_async`](KStream::filter_async)'s; each record still goes to
    /// the first branch that passes it, and a panicking or timed-out future
    /// fails its record, naming the predicate and the node.
    pub fn branch_async<F, Fut>(self, f: F) -> BranchedKStream<K, V>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        self.branch_async_with(f, Options::new())
    }

    /// [`branch_async`](Self::branch_async) with `name` (`Branched.as`).
    pub fn branch_async_with<F, Fut>(mut self, f: F, o: Options) -> BranchedKStream<K, V>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        if let Err(e) = o.check("split: branch", NAME) {
            self.error.get_or_insert(e);
        }
        let name = fn_name::<F>("split");
        let step = predicate_step_async(name.clone(), false, f);
        self.branches.push((name, o.name_or_empty(), step));
        self
    }

    /// Ends the split with a branch for the records no predicate passed
    /// (named `0`); returns every branch's stream by name.
    pub fn default_branch(self) -> Result<HashMap<String, KStream<K, V>>> {
        self.default_branch_with(Options::new())
    }

    /// [`default_branch`](Self::default_branch) with `name` (`Branched.as`).
    pub fn default_branch_with(self, o: Options) -> Result<HashMap<String, KStream<K, V>>> {
        o.check("split: default_branch", NAME)?;
        let name = o.name_or_empty();
        self.build(true, name)
    }

    /// Ends the split; records no predicate passed are dropped. Returns
    /// every branch's stream by name.
    pub fn no_default_branch(self) -> Result<HashMap<String, KStream<K, V>>> {
        self.build(false, String::new())
    }

    fn build(self, default_branch: bool, default_name: String) -> Result<HashMap<String, KStream<K, V>>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let app = &self.stream.app;
        let mut tokens = Vec::with_capacity(self.branches.len());
        let mut branches = Vec::with_capacity(self.branches.len());
        for (fn_type, name, step) in self.branches {
            let token = match app.register(&fn_type, Func::Step(std::sync::Arc::new(step))) {
                Ok(t) => t,
                Err(e) => {
                    app.forget(&tokens);
                    return Err(e);
                }
            };
            tokens.push(token);
            branches.push(pb::Branch { predicate_token: token, name });
        }
        let op = Op::Split(pb::SplitOp {
            input: self.stream.handle.id,
            name: self.name,
            branches,
            default_branch,
            default_name,
        });
        let mut out = HashMap::new();
        for h in app.build_branches(op, &tokens)? {
            let name = h.node.clone();
            out.insert(name, self.stream.stream(Some(h), "split")?);
        }
        if out.len() != tokens.len() + usize::from(default_branch) {
            return Err(Error::internal(format!(
                "Build(split): the engine answered {} branches for {} asked",
                out.len(),
                tokens.len() + usize::from(default_branch)
            )));
        }
        Ok(out)
    }
}

impl<K, V> std::fmt::Debug for BranchedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.branches.iter().map(|(_, n, _)| n.as_str()).collect();
        f.debug_struct("BranchedKStream")
            .field("input", &self.stream.handle.id)
            .field("name", &self.name)
            .field("branches", &names)
            .finish()
    }
}
