//! Async reduce and aggregate (`reduce_async`, `aggregate_async`) of grouped
//! streams, time and session windows and grouped tables: a fold bundle's
//! groups (keys, or a key's windows) fold together, each group's values in
//! order, every call's future awaited before the group's next call (a table
//! update's subtractor before its adder). Fold programs (session and sliding
//! windows) run each key's program in order. The outcomes are those of the
//! synchronous [`Fold`](super::Fold): each value's output is the group's
//! aggregate after it; a value whose call panics (or whose future does),
//! whose aggregate is null or does not encode fails alone, and the group
//! goes on from the aggregate before it. Values of a group still folding
//! when the bundle's bound passes fail, naming the function awaited (the
//! subtractor or merger, else the adder); those before keep their outputs.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{await_all, column, fail_all, fail_all_as, guarded, kind, outcomes, FoldRun, LocalFuture};
use crate::pb;
use crate::processor::RecordMetadata;
use crate::serdes::Serde;

/// A key's first value to its aggregate (reduce: the value, without a call).
type First<K, V, A> = Arc<dyn Fn(&K, V) -> LocalFuture<A> + Send + Sync>;
/// The next aggregate from the key, the aggregate and the value.
type Next<K, V, A> = Arc<dyn Fn(&K, A, V) -> LocalFuture<A> + Send + Sync>;

/// Merges two aggregates (fold programs: the sessions a record bridges).
type Merge<K, A> = Arc<dyn Fn(&K, A, A) -> LocalFuture<A> + Send + Sync>;
/// The aggregate a fold program's ref -1 names (aggregate: the initializer's).
type Initial<A> = Arc<dyn Fn() -> A + Send + Sync>;

/// An async stream fold of keys K, values V and aggregates A.
pub(crate) struct AsyncFold<K, V, A> {
    name: String,
    first: First<K, V, A>,
    next: Next<K, V, A>,
    initial: Option<Initial<A>>,
    merge: Option<Merge<K, A>>,
    sub: Option<Sub<K, V, A>>,
    /// The subtractor's and the merger's names (a reduce merges with its
    /// reducer: None), for a timeout's message.
    sub_name: String,
    merge_name: Option<String>,
}

/// Which function a span's future awaits (a timeout names it).
#[derive(Clone, Copy)]
enum Awaiting {
    Fold,
    Sub,
    Merge,
}

/// What each span's future awaits now.
type Awaits = Rc<RefCell<Vec<Awaiting>>>;

impl<K, V, A> AsyncFold<K, V, A> {
    /// `name` names the function in a timeout's message.
    pub(crate) fn new(name: String, first: First<K, V, A>, next: Next<K, V, A>) -> Self {
        AsyncFold {
            name,
            first,
            next,
            initial: None,
            merge: None,
            sub: None,
            sub_name: String::new(),
            merge_name: None,
        }
    }

    /// An aggregate's initializer, which a fold program's ref -1 names.
    pub(crate) fn with_initial(self, initial: Initial<A>) -> Self {
        AsyncFold { initial: Some(initial), ..self }
    }

    /// A grouped table's subtractor, which removes a replaced or deleted value.
    /// `name` names it in a timeout's message.
    pub(crate) fn with_sub(self, sub: Sub<K, V, A>, name: String) -> Self {
        AsyncFold { sub: Some(sub), sub_name: name, ..self }
    }

    /// The merger of the aggregates a fold program merges (session
    /// windows; a reduce merges with its reducer).
    /// `name`: the merger's, for a timeout's message (None: the fold's own
    /// function merges, as a reduce's reducer does).
    pub(crate) fn with_merge(self, merge: Merge<K, A>, name: Option<String>) -> Self {
        AsyncFold { merge: Some(merge), merge_name: name, ..self }
    }
}

/// A value's outcome: its encoded aggregate (None: a table fold's key has
/// none left), or why it failed (and whether its value did not decode).
type Outcome = Result<Option<Vec<u8>>, (String, bool)>;
/// A value to fold in and a table fold's old value to remove first (a
/// stream fold's value is never None, and its old value always is).
type Update<V> = (Option<V>, Option<V>);
/// The subtractor of a grouped table's fold: the aggregate without an old value.
type Sub<K, V, A> = Arc<dyn Fn(&K, A, V) -> LocalFuture<A> + Send + Sync>;

/// Polls a future, turning its panic into the panic's message.
struct CatchPanic<A>(LocalFuture<A>);

impl<A> Future for CatchPanic<A> {
    type Output = Result<A, String>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match guarded(|| self.0.as_mut().poll(cx)) {
            Ok(Poll::Ready(a)) => Poll::Ready(Ok(a)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

impl<K: Serde, V: Serde, A: Serde> FoldRun for AsyncFold<K, V, A> {
    fn run(&self, b: &pb::Bundle, async_timeout: Duration) -> pb::BundleResult {
        let n = outcomes(b);
        let table = b.steps.first().is_some_and(|s| s.subtractor_token != 0);
        if table && self.sub.is_none() {
            return fail_all(b, 0, "a table fold bundle for a fold registered without a subtractor".to_owned());
        }
        if !b.fold_bases.is_empty() {
            return self.run_program(b, async_timeout);
        }
        if table && b.old_value_lengths.len() != n {
            return fail_all(
                b,
                0,
                format!("malformed table fold bundle: {} old values for {n} values", b.old_value_lengths.len()),
            );
        }
        let sizes = &b.group_sizes;
        let total: i64 = sizes.iter().map(|&s| i64::from(s)).sum();
        if b.aggregate_lengths.len() != sizes.len()
            || b.key_lengths.len() != sizes.len()
            || total != n as i64
            || sizes.iter().any(|&s| s < 0)
        {
            return fail_all(
                b,
                0,
                format!(
                    "malformed fold bundle: {} group sizes adding up to {total}, {} keys, {} aggregates and {n} values",
                    sizes.len(),
                    b.key_lengths.len(),
                    b.aggregate_lengths.len()
                ),
            );
        }
        let cols = column(&b.values, &b.value_lengths).and_then(|v| {
            Ok((
                v,
                column(&b.keys, &b.key_lengths)?,
                column(&b.aggregates, &b.aggregate_lengths)?,
                if table { column(&b.old_values, &b.old_value_lengths)? } else { Vec::new() },
            ))
        });
        let (values, keys, aggs, olds) = match cols {
            Ok(c) => c,
            Err(e) => return fail_all_as(b, 0, e, true),
        };
        // Fold value i is record value_refs[i] (a record in several time
        // windows is sent once), or record i.
        let records = values.len();
        if let Some(r) = b.value_refs.iter().find(|&&r| usize::try_from(r).map_or(true, |r| r >= records)) {
            return fail_all(b, 0, format!("malformed fold bundle: value ref {r} names none of its {records} values"));
        }
        let rec = |i: usize| b.value_refs.get(i).map_or(i, |&r| r as usize);
        // The records' metadata when the fold's functions asked for it (with_metadata).
        let metas = match super::metadata::record_metas(b) {
            Ok(m) => m,
            Err(e) => return fail_all_as(b, 0, e, true),
        };
        let agg_serde: String = [&b.aggregate_serde, &b.output_value_serde, &b.value_serde]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned()
            .unwrap_or_default();
        let outs: Rc<RefCell<Vec<Option<Outcome>>>> = Rc::new(RefCell::new(vec![None; n]));
        let mut groups = Vec::new(); // (first value, end) of each group folding
        let awaits: Awaits = Rc::default();
        let mut futures: Vec<LocalFuture<Result<(), String>>> = Vec::new();
        let mut pos = 0usize;
        for (g, &size) in sizes.iter().enumerate() {
            let end = pos + size as usize;
            let start = (|| {
                let key = K::decode(&b.key_serde, keys[g])
                    .map_err(|e| format!("the key of this group does not decode: {e}"))?;
                let agg = match aggs[g] {
                    None => None,
                    Some(bytes) => Some(
                        A::decode(&agg_serde, Some(bytes))
                            .map_err(|e| format!("the stored aggregate of this group does not decode: {e}"))?,
                    ),
                };
                Ok::<_, String>((key, agg, aggs[g].map(<[u8]>::to_vec)))
            })();
            let (key, agg, good) = match start {
                Ok(s) => s,
                Err(e) => {
                    let mut o = outs.borrow_mut();
                    (pos..end).for_each(|i| o[i] = Some(Err((e.clone(), true))));
                    pos = end;
                    continue;
                }
            };
            // Each value, and a table fold's old value: a table fold's new
            // value is null when the key was deleted or moved away; a stream
            // fold's never is.
            let decode = |data: Option<&[u8]>, what: &str| -> Result<Option<V>, String> {
                match data {
                    None if table => Ok(None),
                    _ => V::decode(&b.value_serde, data)
                        .map(Some)
                        .map_err(|e| format!("the {what} does not decode: {e}")),
                }
            };
            let vals: Vec<Result<Update<V>, String>> = (pos..end)
                .map(|i| {
                    let v = decode(values[rec(i)], "value")?;
                    let old = if table && olds[i].is_some() { decode(olds[i], "old value")? } else { None };
                    Ok((v, old))
                })
                .collect();
            let group_metas: Option<Vec<RecordMetadata>> =
                metas.as_ref().map(|m| (pos..end).filter_map(|i| m.get(rec(i)).cloned()).collect());
            let (first, next, sub) = (self.first.clone(), self.next.clone(), self.sub.clone());
            let (outs, serde) = (outs.clone(), agg_serde.clone());
            let span = groups.len();
            awaits.borrow_mut().push(Awaiting::Fold);
            let awaiting = awaits.clone();
            let set = move |w: Awaiting| awaiting.borrow_mut()[span] = w;
            let start = pos;
            futures.push(Box::pin(async move {
                let restore = |good: &Option<Vec<u8>>| good.as_ref().and_then(|g| A::decode(&serde, Some(g)).ok());
                let (mut cur, mut good) = (agg, good);
                for (j, v) in vals.into_iter().enumerate() {
                    let i = start + j;
                    let v = match v {
                        Ok(v) => v,
                        Err(e) => {
                            outs.borrow_mut()[i] = Some(Err((e, true)));
                            continue;
                        }
                    };
                    let (v, old) = v;
                    // The calls (not their futures) see the record's metadata.
                    let meta = group_metas.as_ref().and_then(|m| m.get(j));
                    let folded = async {
                        let mut a = cur.take();
                        if let (Some(old), Some(sub)) = (old, &sub) {
                            if let Some(agg) = a.take() {
                                // A null from the subtractor leaves the key with no
                                // aggregate (KTableReduce / KTableAggregate store null).
                                set(Awaiting::Sub);
                                let left = await_call(call(meta, || sub(&key, agg, old))).await?;
                                if left.encode(&serde, &mut Vec::new()).unwrap_or(true) {
                                    a = Some(left);
                                }
                            }
                        }
                        Ok::<_, (String, bool)>(match v {
                            None => (a, false),
                            Some(v) => {
                                let called = match a {
                                    Some(agg) => call(meta, || next(&key, agg, v)),
                                    None => call(meta, || first(&key, v)),
                                };
                                set(Awaiting::Fold);
                                (Some(await_call(called).await?), true)
                            }
                        })
                    }
                    .await;
                    let mut buf = Vec::new();
                    let outcome = match folded {
                        Err((msg, _)) => Err(msg),
                        Ok((a, added)) => match a.as_ref().map_or(Ok(false), |a| a.encode(&serde, &mut buf)) {
                            Ok(true) => {
                                good = Some(buf.clone());
                                cur = a;
                                Ok(Some(buf))
                            }
                            // A null aggregate: after an add it is an error; after a
                            // removal the key has no aggregate any more.
                            Ok(false) if table && !added => {
                                good = None;
                                Ok(None)
                            }
                            Ok(false) => Err("the aggregate is null; an aggregate cannot be null".to_owned()),
                            Err(e) => Err(format!("the aggregate does not encode: {e}")),
                        },
                    };
                    if outcome.is_err() {
                        cur = restore(&good);
                    }
                    outs.borrow_mut()[i] = Some(outcome.map_err(|m| (m, false)));
                }
                Ok(())
            }));
            groups.push((pos, end));
            pos = end;
        }
        self.settle(b, futures, groups, outs, awaits, async_timeout)
    }
}

impl<K: Serde, V: Serde, A: Serde> AsyncFold<K, V, A> {
    /// Runs the futures, each folding the values of its span, and answers
    /// the bundle: a span's values without an outcome when its future did
    /// not finish fail, naming the function.
    fn settle(
        &self,
        b: &pb::Bundle,
        futures: Vec<LocalFuture<Result<(), String>>>,
        groups: Vec<(usize, usize)>,
        outs: Rc<RefCell<Vec<Option<Outcome>>>>,
        awaits: Awaits,
        async_timeout: Duration,
    ) -> pb::BundleResult {
        let n = outcomes(b);
        let done = await_all::run(futures, Instant::now() + async_timeout);
        let st = b.steps.first();
        let timeout = |w: Awaiting| {
            let token = st.map_or(0, |s| s.token);
            let (name, token) = match (w, &self.merge_name) {
                (Awaiting::Fold, _) | (Awaiting::Merge, None) => (&self.name, token),
                (Awaiting::Sub, _) => (&self.sub_name, st.map_or(0, |s| s.subtractor_token)),
                (Awaiting::Merge, Some(m)) => (m, st.map_or(0, |s| s.merger_token)),
            };
            format!(
                "TimeoutError: {name} (token {token}, step 0, node {}) did not finish within {} s (cancelled)",
                st.map_or("", |s| s.node.as_str()),
                async_timeout.as_secs_f64()
            )
        };
        let awaits = awaits.borrow();
        let mut outs = outs.borrow_mut();
        for (span, ((start, end), r)) in groups.into_iter().zip(done).enumerate() {
            let why = match r {
                None => timeout(awaits.get(span).copied().unwrap_or(Awaiting::Fold)),
                Some(Err(panic)) => panic, // outside a call: not expected
                Some(Ok(())) => continue,
            };
            for o in &mut outs[start..end] {
                if o.is_none() {
                    *o = Some(Err((why.clone(), false)));
                }
            }
        }
        let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
        for (i, o) in outs.iter_mut().enumerate() {
            match o.take() {
                Some(Ok(Some(bytes))) => {
                    result.output_counts[i] = 1;
                    result.value_lengths.push(bytes.len() as i32);
                    result.values.extend_from_slice(&bytes);
                }
                Some(Ok(None)) => {
                    result.output_counts[i] = 1;
                    result.value_lengths.push(-1);
                }
                Some(Err((message, undecodable))) => result.failures.push(pb::RecordFailure {
                    index: i as i32,
                    step: 0,
                    message,
                    kind: kind(undecodable),
                }),
                None => result.failures.push(pb::RecordFailure {
                    index: i as i32,
                    step: 0,
                    message: timeout(Awaiting::Fold),
                    kind: kind(false),
                }),
            }
        }
        result
    }

    /// A fold program's bundle (session and sliding windows; see
    /// [`program`](super::program)): each value starts from the aggregate
    /// its base names, merges its operands, then folds its value, every
    /// call's future awaited before the next. A key's values refer to each
    /// other's outputs, so a key's program runs in order; keys run
    /// together when none refers to another's outputs (else the bundle's
    /// program runs in order as one).
    fn run_program(&self, b: &pb::Bundle, async_timeout: Duration) -> pb::BundleResult {
        let n = outcomes(b);
        if let Some(p) = super::program::problem(self.merge.is_some(), b, n) {
            return fail_all(b, 0, p);
        }
        let checked = column(&b.values, &b.value_lengths)
            .and_then(|_| column(&b.keys, &b.key_lengths))
            .and_then(|_| column(&b.aggregates, &b.aggregate_lengths));
        if let Err(e) = checked {
            return fail_all_as(b, 0, e, true);
        }
        let metas = match super::metadata::record_metas(b) {
            Ok(m) => Rc::new(m),
            Err(e) => return fail_all_as(b, 0, e, true),
        };
        let pool = b.aggregate_lengths.len();
        let mut starts = Vec::with_capacity(n); // each value's first merge ref
        let mut m = 0usize;
        for &c in &b.merge_counts {
            starts.push(m);
            m += c as usize;
        }
        // Each value's group: (group, its first value).
        let mut group_of = Vec::with_capacity(n);
        let mut spans = Vec::new();
        let mut pos = 0usize;
        for (g, &size) in b.group_sizes.iter().enumerate() {
            let end = pos + size as usize;
            group_of.extend((pos..end).map(|_| (g, pos)));
            spans.push((g, pos, end));
            pos = end;
        }
        let local = (0..n).all(|i| {
            let refs = std::iter::once(&b.fold_bases[i])
                .chain(&b.merge_refs[starts[i]..starts[i] + b.merge_counts[i] as usize]);
            refs.into_iter().all(|&r| r < pool as i32 || r as usize - pool >= group_of[i].1)
        });
        // The chains of groups that fold in order, each one future.
        let chains: Vec<Vec<(usize, usize, usize)>> =
            if local { spans.into_iter().map(|s| vec![s]).collect() } else { vec![spans] };
        let serde: String = [&b.aggregate_serde, &b.output_value_serde, &b.value_serde]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned()
            .unwrap_or_default();
        let shared = Rc::new((b.clone(), starts, serde));
        let outs: Rc<RefCell<Vec<Option<Outcome>>>> = Rc::new(RefCell::new(vec![None; n]));
        let fns = (self.first.clone(), self.next.clone(), self.initial.clone(), self.merge.clone());
        let mut groups = Vec::new();
        let awaits: Awaits = Rc::default();
        let mut futures: Vec<LocalFuture<Result<(), String>>> = Vec::new();
        for chain in chains {
            let (Some(&(_, first, _)), Some(&(_, _, last))) = (chain.first(), chain.last()) else { continue };
            let span = groups.len();
            groups.push((first, last));
            awaits.borrow_mut().push(Awaiting::Fold);
            let awaiting = awaits.clone();
            let set = move |w: Awaiting| awaiting.borrow_mut()[span] = w;
            let (shared, outs, metas, fns) = (shared.clone(), outs.clone(), metas.clone(), fns.clone());
            futures.push(Box::pin(async move {
                let (b, starts, serde) = &*shared;
                let (start, add, initial, merge) = &fns;
                let values = column(&b.values, &b.value_lengths)?;
                let keys = column(&b.keys, &b.key_lengths)?;
                let pool = column(&b.aggregates, &b.aggregate_lengths)?;
                for (g, pos, end) in chain {
                    let key = K::decode(&b.key_serde, keys[g])
                        .map_err(|e| (format!("the key of this group does not decode: {e}"), true));
                    #[allow(clippy::needless_range_loop)] // i indexes several columns
                    for i in pos..end {
                        let outcome = match &key {
                            Err(e) => Err(e.clone()),
                            Ok(key) => {
                                let r = b.value_refs[i] as usize;
                                let meta = metas.as_ref().as_ref().and_then(|m| m.get(r));
                                // The aggregate ref r names, decoded from its bytes; None: none.
                                let resolve = |r: i32| -> Result<Option<A>, (String, bool)> {
                                    if r == -1 {
                                        return match initial {
                                            None => Ok(None),
                                            Some(init) => super::metadata::with_record(meta, || guarded(|| init()))
                                                .map(Some)
                                                .map_err(|panic| (panic, false)),
                                        };
                                    }
                                    let r = r as usize;
                                    if let Some(stored) = pool.get(r) {
                                        return match stored {
                                            None => Ok(None),
                                            Some(bytes) => A::decode(serde, Some(bytes)).map(Some).map_err(|e| {
                                                (format!("the stored aggregate {r} does not decode: {e}"), true)
                                            }),
                                        };
                                    }
                                    let j = r - pool.len();
                                    match &outs.borrow()[j] {
                                        Some(Ok(Some(bytes))) => A::decode(serde, Some(bytes)).map(Some).map_err(|e| {
                                            (format!("the output of fold value {j} does not decode: {e}"), false)
                                        }),
                                        _ => Err((format!("depends on fold value {j}, which failed"), false)),
                                    }
                                };
                                async {
                                    let v = V::decode(&b.value_serde, values[r])
                                        .map_err(|e| (format!("the value does not decode: {e}"), true))?;
                                    let mut acc = resolve(b.fold_bases[i])?;
                                    let merges = &b.merge_refs[starts[i]..starts[i] + b.merge_counts[i] as usize];
                                    for &r in merges {
                                        let other = resolve(r)?;
                                        acc = match (acc, other) {
                                            (Some(a), Some(o)) => {
                                                let merge = merge.as_ref().expect("checked: the fold merges");
                                                let fut = call(meta, || merge(key, a, o));
                                                set(Awaiting::Merge);
                                                Some(await_call(fut).await?)
                                            }
                                            (a, None) => a,
                                            (None, o) => o,
                                        };
                                    }
                                    let fut = match acc {
                                        Some(a) => call(meta, || add(key, a, v)),
                                        None => call(meta, || start(key, v)),
                                    };
                                    set(Awaiting::Fold);
                                    let a = await_call(fut).await?;
                                    let mut buf = Vec::new();
                                    match a.encode(serde, &mut buf) {
                                        Ok(true) => Ok(Some(buf)),
                                        Ok(false) => Err((
                                            "the aggregate is null; an aggregate cannot be null".to_owned(),
                                            false,
                                        )),
                                        Err(e) => Err((format!("the aggregate does not encode: {e}"), false)),
                                    }
                                }
                                .await
                            }
                        };
                        outs.borrow_mut()[i] = Some(outcome);
                    }
                }
                Ok(())
            }));
        }
        self.settle(b, futures, groups, outs, awaits, async_timeout)
    }
}

/// Calls a function with the record's metadata (the call, not its future, sees it).
fn call<A>(meta: Option<&RecordMetadata>, c: impl FnOnce() -> LocalFuture<A>) -> Result<LocalFuture<A>, String> {
    super::metadata::with_record(meta, || guarded(c))
}

/// Awaits a call's future; a panic of the call or of its future is its message.
async fn await_call<A>(called: Result<LocalFuture<A>, String>) -> Result<A, (String, bool)> {
    match called {
        Ok(fut) => CatchPanic(fut).await.map_err(|panic| (panic, false)),
        Err(panic) => Err((panic, false)),
    }
}
