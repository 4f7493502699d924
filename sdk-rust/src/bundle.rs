//! The host side of the data plane: runs a bundle through its chain of steps.
//!
//! User functions are registered type-erased: each builder call wraps its
//! closure in a [`StepFn`] (or a [`FoldRun`] for reduce and aggregate) that
//! knows the Rust types of its input and output. A bundle's values are
//! decoded once, by the first step's input type, and encoded once, by the
//! last step's output types; in between they stay native Rust values (boxed
//! as `dyn Any`), as Kafka Streams does not serialise between processors.
//! Keys are decoded only when a step reads them, by that step's key type.
//!
//! A closure that panics fails its record alone: the panic is caught, the
//! record's outputs are dropped and a RecordFailure names it (with the
//! panic's message and location); the rest of the bundle goes on.
//!
//! A step may be async (`map_values_async` and friends): its closure is
//! called for every element first, in record order, and the futures it
//! returns are then run together on this thread ([`await_all`]); their
//! outputs go on in record order. A future that panics or answers an error
//! fails its record alone, and one still pending when the bundle's bound
//! passes is dropped and fails its record, naming the function.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pb;
use crate::serdes::{Serde, SerdeError};

/// A value in flight between steps.
pub(crate) type AnyBox = Box<dyn Any + Send>;
/// A key in flight: shared, as flat_map_values gives one key many values.
pub(crate) type AnyKey = Arc<dyn Any + Send + Sync>;

/// What a step's function made of one element.
pub(crate) enum Out {
    /// One output: the value, with the new key when the step changes keys.
    One(Option<AnyKey>, AnyBox),
    /// flat_map_values: the values, each with the element's key.
    Many(Vec<AnyBox>),
    /// flat_map: new keys with their values.
    Pairs(Vec<(AnyKey, AnyBox)>),
    /// Nothing passes (filtered out, foreach).
    Nothing,
    /// An async mapper's outcome with the metadata it set for its outputs
    /// (a step that asked for metadata; `MetadataStream::map_values_async`).
    Meta(Box<Out>, crate::processor::RecordMetadata),
}

/// The key of an element: decoded (by a step that read it or changed it),
/// or still the input record's bytes.
pub(crate) struct KeySlot<'a> {
    pub(crate) decoded: &'a mut Option<AnyKey>,
    raw: Option<&'a [u8]>,
    serde: &'a str,
    /// Set when the key does not decode: a deserialization failure.
    undecodable: bool,
}

impl KeySlot<'_> {
    /// The key as a K, decoding the record's key bytes the first time.
    pub(crate) fn get<K: Serde>(&mut self) -> Result<&K, String> {
        if self.decoded.is_none() {
            let k = K::decode(self.serde, self.raw).map_err(|e| {
                self.undecodable = true;
                format!("the key does not decode: {e}")
            })?;
            *self.decoded = Some(Arc::new(k));
        }
        let k = self.decoded.as_ref().expect("set above");
        k.downcast_ref::<K>().ok_or_else(|| mismatch::<K>("key"))
    }
}

fn mismatch<T>(what: &str) -> String {
    format!("the {what} in flight is not a {} (a chain whose steps disagree on types)", std::any::type_name::<T>())
}

type Call = dyn Fn(&mut KeySlot<'_>, AnyBox) -> Result<Out, String> + Send + Sync;
type AsyncCall = dyn Fn(&mut KeySlot<'_>, AnyBox) -> Result<LocalFuture<Result<Out, String>>, String> + Send + Sync;

/// How a step calls its function: at once, or through a future.
enum Calls {
    Sync(Box<Call>),
    /// The function's name for messages, and the call.
    Async(String, Box<AsyncCall>),
}
type DecodeValue = fn(&str, Option<&[u8]>) -> Result<AnyBox, SerdeError>;
type EncodeKey = fn(&(dyn Any + Send + Sync), &str, &mut Vec<u8>) -> Result<bool, SerdeError>;
type EncodeValue = fn(&(dyn Any + Send), &str, &mut Vec<u8>) -> Result<bool, SerdeError>;

/// A registered stream operator: the closure, and the serdes of its types.
pub(crate) struct StepFn {
    call: Calls,
    /// Its function takes the record's metadata (registered METADATA_WRITE).
    pub(crate) metadata: bool,
    decode_value: DecodeValue,
    encode_key: EncodeKey,
    encode_value: EncodeValue,
}

impl StepFn {
    /// A step with input value type V, output key type K2 and output value type V2.
    pub(crate) fn new<V: Serde, K2: Serde, V2: Serde>(
        call: impl Fn(&mut KeySlot<'_>, AnyBox) -> Result<Out, String> + Send + Sync + 'static,
    ) -> StepFn {
        StepFn::with_calls::<V, K2, V2>(Calls::Sync(Box::new(call)))
    }

    /// An async step (see the module doc): `call` decodes what it reads and
    /// answers the future of the element's outcome; `name` names the
    /// function in a timeout's message.
    pub(crate) fn new_async<V: Serde, K2: Serde, V2: Serde>(
        name: String,
        call: impl Fn(&mut KeySlot<'_>, AnyBox) -> Result<LocalFuture<Result<Out, String>>, String> + Send + Sync + 'static,
    ) -> StepFn {
        StepFn::with_calls::<V, K2, V2>(Calls::Async(name, Box::new(call)))
    }

    fn with_calls<V: Serde, K2: Serde, V2: Serde>(call: Calls) -> StepFn {
        StepFn {
            call,
            metadata: false,
            decode_value: |s, d| V::decode(s, d).map(|v| Box::new(v) as AnyBox),
            encode_key: |k, s, out| {
                k.downcast_ref::<K2>().ok_or_else(|| SerdeError(mismatch::<K2>("key")))?.encode(s, out)
            },
            encode_value: |v, s, out| {
                v.downcast_ref::<V2>().ok_or_else(|| SerdeError(mismatch::<V2>("value")))?.encode(s, out)
            },
        }
    }
}

/// Unboxes a value in flight.
pub(crate) fn take<V: 'static>(v: AnyBox) -> Result<V, String> {
    v.downcast::<V>().map(|b| *b).map_err(|_| mismatch::<V>("value"))
}

/// A registered reduce or aggregate, which runs a whole fold bundle.
pub(crate) trait FoldRun: Send + Sync {
    fn run(&self, b: &pb::Bundle, async_timeout: Duration) -> pb::BundleResult;
}

/// A function registered under a token.
#[derive(Clone)]
pub(crate) enum Func {
    Step(Arc<StepFn>),
    Fold(Arc<dyn FoldRun>),
    /// A stream-table join's joiner.
    Join(Arc<dyn JoinRun>),
    /// The initializer or subtractor of a fold, run by the fold's Func.
    Part,
    /// A processor supplier (Processor API).
    Processor(Arc<dyn crate::processor::Supplier>),
    /// A source's timestamp extractor (OPERATION_EXTRACT_TIMESTAMP).
    Extract(Arc<ExtractFn>),
    /// A sink's stream partitioner or topic name extractor
    /// (OPERATION_STREAM_PARTITION, OPERATION_TOPIC_NAME).
    Route(Arc<ExtractFn>),
}

/// Runs one extractor, partitioner or topic name extractor bundle; an async
/// one's futures are bounded by the duration.
pub(crate) type ExtractFn = dyn Fn(&pb::Bundle, Duration) -> pb::BundleResult + Send + Sync;

pub(crate) use crate::calls::{column, guarded};

/// Runs bundles with the functions registered under their tokens. Safe for
/// concurrent use: each bundle's futures run on the thread processing it.
pub(crate) struct Executor {
    pub(crate) functions: Arc<HashMap<u32, Func>>,
    /// The bound of a bundle's futures ([`ASYNC_TIMEOUT`]).
    pub(crate) async_timeout: Duration,
    /// The processor instances of the tasks this host serves.
    pub(crate) processors: crate::processor::host::Host,
    /// The engine's Read RPC, for processor bundles (None: reads the bundle
    /// did not bring fail).
    pub(crate) read: Option<Arc<crate::processor::host::ReadFn>>,
}

impl Executor {
    /// An executor of these functions, with no engine to Read from.
    pub(crate) fn new(functions: HashMap<u32, Func>) -> Executor {
        Executor {
            functions: Arc::new(functions),
            async_timeout: ASYNC_TIMEOUT,
            processors: Default::default(),
            read: None,
        }
    }

    pub(crate) fn process(&self, b: &pb::Bundle) -> pb::BundleResult {
        if crate::processor::host::is_processor_bundle(b) {
            let supplier = b.steps.first().and_then(|s| match self.functions.get(&s.token) {
                Some(Func::Processor(p)) => Some(p.clone()),
                _ => None,
            });
            return self.processors.process(b, supplier, self.read.clone());
        }
        if b.steps.len() == 1 && b.steps[0].operation == pb::Operation::ExtractTimestamp as i32 {
            let st = &b.steps[0];
            return match self.functions.get(&st.token) {
                Some(Func::Extract(f)) => f(b, self.async_timeout),
                _ => fail_all(
                    b,
                    0,
                    format!(
                        "timestamp extractor ({}) names token {}, which is not an extractor registered in this host",
                        st.node, st.token
                    ),
                ),
            };
        }
        let is_route = |s: &pb::Step| {
            s.operation == pb::Operation::StreamPartition as i32 || s.operation == pb::Operation::TopicName as i32
        };
        if b.steps.len() == 1 && is_route(&b.steps[0]) {
            let st = &b.steps[0];
            return match self.functions.get(&st.token) {
                Some(Func::Route(f)) => f(b, self.async_timeout),
                _ => fail_all(
                    b,
                    0,
                    format!(
                        "the sink's {} ({}) names token {}, which is not one registered in this host",
                        if st.operation == pb::Operation::StreamPartition as i32 {
                            "stream partitioner"
                        } else {
                            "topic name extractor"
                        },
                        st.node,
                        st.token
                    ),
                ),
            };
        }
        let is_fold = |s: &pb::Step| {
            s.operation == pb::Operation::Reduce as i32 || s.operation == pb::Operation::Aggregate as i32
        };
        if b.steps.len() == 1 && is_fold(&b.steps[0]) {
            let st = &b.steps[0];
            return match self.functions.get(&st.token) {
                Some(Func::Fold(f)) => f.run(b, self.async_timeout),
                _ => fail_all(
                    b,
                    0,
                    format!(
                        "step 0 ({}) names token {}, which is not a fold registered in this host",
                        st.node, st.token
                    ),
                ),
            };
        }
        let is_join = |s: &pb::Step| s.operation == pb::Operation::ValueJoin as i32;
        if b.steps.len() == 1 && is_join(&b.steps[0]) {
            let st = &b.steps[0];
            return match self.functions.get(&st.token) {
                Some(Func::Join(f)) => f.run(b, self.async_timeout),
                _ => fail_all(
                    b,
                    0,
                    format!(
                        "join step ({}) names token {}, which is not a joiner registered in this host",
                        st.node, st.token
                    ),
                ),
            };
        }
        let mut steps: Vec<(i32, &StepFn)> = Vec::with_capacity(b.steps.len());
        for (i, st) in b.steps.iter().enumerate() {
            match self.functions.get(&st.token) {
                Some(Func::Step(f)) if !is_fold(st) && !is_join(st) => steps.push((st.operation, f)),
                Some(_) if is_fold(st) || is_join(st) => {
                    return fail_all(
                        b,
                        i,
                        format!(
                            "step {i} ({}) is a reduce, aggregate or join, which must be its bundle's only step",
                            st.node
                        ),
                    )
                }
                _ => {
                    return fail_all(
                        b,
                        i,
                        format!(
                            "step {i} ({}) names token {}, which is not registered in this host",
                            st.node, st.token
                        ),
                    )
                }
            }
        }
        if metadata::wants_metadata(b, &steps) {
            return metadata::run(b, &steps, self.async_timeout);
        }
        run_chain(b, &steps, self.async_timeout)
    }
}

/// RecordFailure.kind: deserialization when the record's key, value or
/// aggregate did not decode, else processing (the engine applies
/// default.deserialization.exception.handler or processing.exception.handler).
fn kind(undecodable: bool) -> i32 {
    if undecodable {
        pb::record_failure::Kind::Deserialization as i32
    } else {
        pb::record_failure::Kind::Processing as i32
    }
}

/// A result that fails every record of the bundle at one step.
pub(crate) fn fail_all(b: &pb::Bundle, step: usize, msg: String) -> pb::BundleResult {
    fail_all_as(b, step, msg, false)
}

/// A result that fails every record of a bundle whose columns do not
/// split (a malformed bundle): deserialization failures, as the records'
/// bytes cannot be read.
pub(crate) fn fail_unreadable(b: &pb::Bundle, msg: String) -> pb::BundleResult {
    fail_all_as(b, 0, msg, true)
}

fn fail_all_as(b: &pb::Bundle, step: usize, msg: String, undecodable: bool) -> pb::BundleResult {
    let n = outcomes(b);
    pb::BundleResult {
        bundle_id: b.id,
        output_counts: vec![0; n],
        failures: (0..n)
            .map(|i| pb::RecordFailure {
                index: i as i32,
                step: step as i32,
                message: msg.clone(),
                kind: kind(undecodable),
            })
            .collect(),
        ..Default::default()
    }
}

/// How many outcomes a bundle's result gives: one per record, or for a
/// fold bundle with value_refs ("fold_value_refs"), one per fold value.
pub(crate) fn outcomes(b: &pb::Bundle) -> usize {
    if b.value_refs.is_empty() {
        b.value_lengths.len()
    } else {
        b.value_refs.len()
    }
}

struct Elem {
    key: Option<AnyKey>,
    value: AnyBox,
    origin: usize,
}

fn run_chain(b: &pb::Bundle, steps: &[(i32, &StepFn)], async_timeout: Duration) -> pb::BundleResult {
    let n = b.value_lengths.len();
    let values = match column(&b.values, &b.value_lengths) {
        Ok(v) => v,
        Err(e) => return fail_unreadable(b, e),
    };
    let keys = if b.key_lengths.len() == n {
        match column(&b.keys, &b.key_lengths) {
            Ok(k) => k,
            Err(e) => return fail_unreadable(b, e),
        }
    } else {
        vec![None; n]
    };
    let Some(&(_, first)) = steps.first() else {
        return fail_all(b, 0, "a bundle with no steps".to_owned());
    };
    let mut failed: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    // Records whose key or value did not decode (deserialization failures);
    // the others failed in a function or did not encode (processing).
    let mut undecoded: BTreeSet<usize> = BTreeSet::new();
    let mut elems: Vec<Elem> = Vec::with_capacity(n);
    for (i, v) in values.iter().enumerate() {
        match (first.decode_value)(&b.value_serde, *v) {
            Ok(value) => elems.push(Elem { key: None, value, origin: i }),
            Err(e) => {
                failed.insert(i, (0, format!("the value does not decode: {e}")));
                undecoded.insert(i);
            }
        }
    }
    // The bound of this bundle's futures, from its first async step on.
    let mut deadline: Option<Instant> = None;
    for (s, &(_, step)) in steps.iter().enumerate() {
        let mut next = Vec::with_capacity(elems.len());
        let mut failed_now = false;
        match &step.call {
            Calls::Sync(call) => {
                for mut e in elems {
                    if failed.contains_key(&e.origin) {
                        continue;
                    }
                    let mut slot =
                        KeySlot { decoded: &mut e.key, raw: keys[e.origin], serde: &b.key_serde, undecodable: false };
                    let out = call(&mut slot, e.value);
                    if slot.undecodable {
                        undecoded.insert(e.origin);
                    }
                    failed_now |= settle(&mut next, &mut failed, s, e.origin, e.key, out);
                }
            }
            Calls::Async(name, call) => {
                // Every call first, in record order; then the futures
                // together; then their outcomes, in record order.
                let mut made = Vec::with_capacity(elems.len());
                let mut futures = Vec::with_capacity(elems.len());
                for mut e in elems {
                    if failed.contains_key(&e.origin) {
                        continue;
                    }
                    let mut slot =
                        KeySlot { decoded: &mut e.key, raw: keys[e.origin], serde: &b.key_serde, undecodable: false };
                    let call = guarded(|| call(&mut slot, e.value)).and_then(|r| r);
                    if slot.undecodable {
                        undecoded.insert(e.origin);
                    }
                    made.push((e.origin, e.key, call.map(|f| futures.push(f))));
                }
                let until = *deadline.get_or_insert_with(|| Instant::now() + async_timeout);
                let mut done = await_all::run(futures, until).into_iter();
                let st = &b.steps[s];
                for (origin, key, call) in made {
                    let out = match call {
                        Err(msg) => Err(msg),
                        Ok(()) => done.next().flatten().unwrap_or_else(|| {
                            Err(format!(
                                "TimeoutError: {name} (token {}, step {s}, node {}) did not finish within {} s (cancelled)",
                                st.token,
                                st.node,
                                async_timeout.as_secs_f64()
                            ))
                        }),
                    };
                    failed_now |= settle(&mut next, &mut failed, s, origin, key, out);
                }
            }
        }
        if failed_now {
            // A record's outputs are all or nothing.
            next.retain(|e| !failed.contains_key(&e.origin));
        }
        elems = next;
    }

    // Encode with the last step's output types.
    let last = steps[steps.len() - 1].1;
    let changes_keys = steps.iter().any(|(op, _)| {
        *op == pb::Operation::Map as i32
            || *op == pb::Operation::SelectKey as i32
            || *op == pb::Operation::FlatMap as i32
    });
    let key_serde = if b.output_key_serde.is_empty() { &b.key_serde } else { &b.output_key_serde };
    let value_serde = if b.output_value_serde.is_empty() { &b.value_serde } else { &b.output_value_serde };
    let last_step = steps.len() - 1;
    // Per output: its record, and where its key and value are in the buffers.
    type Cell = Option<(usize, usize)>;
    let mut encoded: Vec<(usize, Cell, Cell)> = Vec::with_capacity(elems.len());
    let (mut kbuf, mut vbuf) = (Vec::new(), Vec::new());
    for e in &elems {
        if failed.contains_key(&e.origin) {
            continue;
        }
        let k = if changes_keys {
            let start = kbuf.len();
            let r = match &e.key {
                Some(k) => (last.encode_key)(k.as_ref(), key_serde, &mut kbuf),
                None => Ok(keys[e.origin].map(|raw| kbuf.extend_from_slice(raw)).is_some()),
            };
            match r {
                Ok(true) => Some((start, kbuf.len())),
                Ok(false) => None,
                Err(err) => {
                    kbuf.truncate(start);
                    failed.insert(e.origin, (last_step, format!("the key does not encode: {err}")));
                    continue;
                }
            }
        } else {
            None
        };
        let start = vbuf.len();
        let v = match (last.encode_value)(e.value.as_ref(), value_serde, &mut vbuf) {
            Ok(true) => Some((start, vbuf.len())),
            Ok(false) => None,
            Err(err) => {
                vbuf.truncate(start);
                failed.insert(e.origin, (last_step, format!("the value does not encode: {err}")));
                continue;
            }
        };
        encoded.push((e.origin, k, v));
    }
    let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
    let (mut keys_out, mut values_out) = (Vec::with_capacity(kbuf.len()), Vec::with_capacity(vbuf.len()));
    for (origin, k, v) in encoded {
        if failed.contains_key(&origin) {
            continue; // a later element of the record failed to encode
        }
        result.output_counts[origin] += 1;
        push_cell(&mut result.value_lengths, &mut values_out, &vbuf, v);
        if changes_keys {
            push_cell(&mut result.key_lengths, &mut keys_out, &kbuf, k);
        }
    }
    result.values = values_out;
    result.keys = keys_out;
    result.failures = failed
        .into_iter()
        .map(|(i, (step, message))| pb::RecordFailure {
            index: i as i32,
            step: step as i32,
            message,
            kind: kind(undecoded.contains(&i)),
        })
        .collect();
    result
}

/// Puts an element's outcome at step s into next (or failed); answers
/// whether it failed.
#[inline]
fn settle(
    next: &mut Vec<Elem>,
    failed: &mut BTreeMap<usize, (usize, String)>,
    s: usize,
    origin: usize,
    key: Option<AnyKey>,
    out: Result<Out, String>,
) -> bool {
    match out {
        Ok(Out::One(k, value)) => next.push(Elem { key: k.or(key), value, origin }),
        Ok(Out::Many(vs)) => {
            for value in vs {
                next.push(Elem { key: key.clone(), value, origin });
            }
        }
        Ok(Out::Pairs(kvs)) => {
            for (k, value) in kvs {
                next.push(Elem { key: Some(k), value, origin });
            }
        }
        Ok(Out::Nothing) => {}
        // Only a metadata chain's steps set metadata; another chain keeps the input's.
        Ok(Out::Meta(out, _)) => return settle(next, failed, s, origin, key, Ok(*out)),
        Err(msg) => {
            failed.insert(origin, (s, msg));
            return true;
        }
    }
    false
}

fn push_cell(lengths: &mut Vec<i32>, out: &mut Vec<u8>, buf: &[u8], cell: Option<(usize, usize)>) {
    match cell {
        Some((a, z)) => {
            lengths.push((z - a) as i32);
            out.extend_from_slice(&buf[a..z]);
        }
        None => lengths.push(-1),
    }
}

// Folds.

/// How one fold combines values: a reduce or an aggregate, for streams
/// (no subtractor) and tables (with one).
pub(crate) trait Folder: Send + Sync + 'static {
    type K: Serde;
    type V: Serde;
    type A: Serde;
    /// The aggregate of a key that has none after its first value (reduce:
    /// the value itself, without a call; aggregate: adder(initializer())).
    fn start(&self, key: &Self::K, v: Self::V) -> Self::A;
    fn add(&self, key: &Self::K, agg: Self::A, v: Self::V) -> Self::A;
    /// Removes an old value (grouped tables only).
    fn sub(&self, key: &Self::K, agg: Self::A, old: Self::V) -> Self::A;
    fn has_sub(&self) -> bool;
    /// A fold program's aggregate of ref -1: the initializer's (aggregate),
    /// or none (reduce).
    fn initial(&self) -> Option<Self::A>;
    /// Merges two aggregates (fold programs: sessions a record bridges):
    /// the merger for an aggregate, the reducer for a reduce.
    fn merge(&self, key: &Self::K, a: Self::A, b: Self::A) -> Self::A;
    /// Whether merge can run: an aggregate registered with a merger, or a reduce.
    fn has_merge(&self) -> bool;
}

pub(crate) struct Fold<F: Folder>(pub(crate) F);

impl<F: Folder> FoldRun for Fold<F> {
    fn run(&self, b: &pb::Bundle, _: Duration) -> pb::BundleResult {
        let f = &self.0;
        if !b.fold_bases.is_empty() {
            return program::run(f, b);
        }
        // Fold values: record i, or with value_refs record value_refs[i] (a
        // record in several windows is sent once).
        let n = outcomes(b);
        let table = b.steps.first().is_some_and(|s| s.subtractor_token != 0);
        if table && !f.has_sub() {
            return fail_all(b, 0, "a table fold bundle for a fold registered without a subtractor".to_owned());
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
        // An error: its message, and whether a column did not split.
        let cols = (|| {
            let unreadable = |e: String| (e, true);
            let values = column(&b.values, &b.value_lengths).map_err(unreadable)?;
            let keys = column(&b.keys, &b.key_lengths).map_err(unreadable)?;
            let aggs = column(&b.aggregates, &b.aggregate_lengths).map_err(unreadable)?;
            let olds = if table {
                if b.old_value_lengths.len() != n {
                    return Err((
                        format!("malformed table fold bundle: {} old values for {n} values", b.old_value_lengths.len()),
                        false,
                    ));
                }
                column(&b.old_values, &b.old_value_lengths).map_err(unreadable)?
            } else {
                Vec::new()
            };
            let values = if b.value_refs.is_empty() {
                values
            } else {
                let mut refd = Vec::with_capacity(n);
                for &r in &b.value_refs {
                    let v = usize::try_from(r).ok().and_then(|r| values.get(r)).ok_or_else(|| {
                        (
                            format!("malformed fold bundle: value ref {r} names none of its {} values", values.len()),
                            false,
                        )
                    })?;
                    refd.push(*v);
                }
                refd
            };
            Ok((values, keys, aggs, olds))
        })();
        let (values, keys, aggs, olds) = match cols {
            Ok(c) => c,
            Err((e, unreadable)) => return fail_all_as(b, 0, e, unreadable),
        };
        // The records' metadata when the fold's functions asked for it
        // (with_metadata); fold value i is record value_refs[i] (or i).
        let metas = match metadata::record_metas(b) {
            Ok(m) => m,
            Err(e) => return fail_all_as(b, 0, e, true),
        };
        let meta_of = |i: usize| {
            let r = b.value_refs.get(i).map_or(i, |&r| r as usize);
            metas.as_ref().and_then(|m| m.get(r))
        };
        let agg_serde: &str = [&b.aggregate_serde, &b.output_value_serde, &b.value_serde]
            .into_iter()
            .find(|s| !s.is_empty())
            .map_or("", |s| s.as_str());

        let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
        let mut failures = Vec::new();
        let mut fail = |i: usize, message: String, undecodable: bool| {
            failures.push(pb::RecordFailure { index: i as i32, step: 0, message, kind: kind(undecodable) })
        };
        let mut pos = 0usize;
        for (g, &size) in sizes.iter().enumerate() {
            let end = pos + size as usize;
            let key = match F::K::decode(&b.key_serde, keys[g]) {
                Ok(k) => k,
                Err(e) => {
                    (pos..end).for_each(|i| fail(i, format!("the key of this group does not decode: {e}"), true));
                    pos = end;
                    continue;
                }
            };
            // The aggregate as it was after the last value that folded (its
            // bytes), to start again from when a call fails.
            let mut good: Option<Vec<u8>> = aggs[g].map(<[u8]>::to_vec);
            let restore = |good: &Option<Vec<u8>>| -> Result<Option<F::A>, String> {
                match good {
                    None => Ok(None),
                    Some(bytes) => F::A::decode(agg_serde, Some(bytes))
                        .map(Some)
                        .map_err(|e| format!("the stored aggregate of this group does not decode: {e}")),
                }
            };
            let mut cur = match restore(&good) {
                Ok(a) => a,
                Err(e) => {
                    (pos..end).for_each(|i| fail(i, e.clone(), true));
                    pos = end;
                    continue;
                }
            };
            for i in pos..end {
                let decode = |data: Option<&[u8]>, what: &str| -> Result<Option<F::V>, String> {
                    match data {
                        // A table fold's new value is null when the key was
                        // deleted or moved away; a stream fold's never is.
                        None if table => Ok(None),
                        _ => F::V::decode(&b.value_serde, data)
                            .map(Some)
                            .map_err(|e| format!("the {what} does not decode: {e}")),
                    }
                };
                let decoded = decode(values[i], "value").and_then(|v| {
                    let old = if table && olds[i].is_some() { decode(olds[i], "old value")? } else { None };
                    Ok((v, old))
                });
                let (v, old) = match decoded {
                    Ok(x) => x,
                    Err(e) => {
                        fail(i, e, true);
                        continue;
                    }
                };
                let prev = cur.take();
                let folded = metadata::with_record(meta_of(i), || {
                    guarded(|| {
                        let mut a = prev;
                        if let Some(old) = old {
                            if let Some(agg) = a.take() {
                                // A null from the subtractor leaves the key with no
                                // aggregate (KTableReduce / KTableAggregate store null).
                                let left = f.sub(&key, agg, old);
                                if left.encode(agg_serde, &mut Vec::new()).unwrap_or(true) {
                                    a = Some(left);
                                }
                            }
                        }
                        match v {
                            None => (a, false),
                            Some(v) => (
                                Some(match a {
                                    Some(agg) => f.add(&key, agg, v),
                                    None => f.start(&key, v),
                                }),
                                true,
                            ),
                        }
                    })
                });
                let (a, added) = match folded {
                    Ok(x) => x,
                    Err(msg) => {
                        fail(i, msg, false);
                        cur = restore(&good).unwrap_or(None);
                        continue;
                    }
                };
                let mut buf = Vec::new();
                let encoded = match &a {
                    None => Ok(false),
                    Some(a) => a.encode(agg_serde, &mut buf),
                };
                match encoded {
                    Ok(true) => {
                        result.output_counts[i] = 1;
                        result.value_lengths.push(buf.len() as i32);
                        result.values.extend_from_slice(&buf);
                        good = Some(buf);
                        cur = a;
                    }
                    // A null aggregate: after an add it is an error; after a
                    // removal the key has no aggregate any more.
                    Ok(false) if table && !added => {
                        result.output_counts[i] = 1;
                        result.value_lengths.push(-1);
                        good = None;
                        cur = None;
                    }
                    Ok(false) => {
                        fail(i, "the aggregate is null; an aggregate cannot be null".to_owned(), false);
                        cur = restore(&good).unwrap_or(None);
                    }
                    Err(e) => {
                        fail(i, format!("the aggregate does not encode: {e}"), false);
                        cur = restore(&good).unwrap_or(None);
                    }
                }
            }
            pos = end;
        }
        result.failures = failures;
        result
    }
}

mod fold_async;
mod join;
pub(crate) mod metadata;
mod program;
use crate::await_all;
pub(crate) use crate::await_all::{LocalFuture, ASYNC_TIMEOUT};
pub(crate) use fold_async::AsyncFold;
pub(crate) use join::{JoinRun, ValueJoiner};
#[cfg(test)]
mod metadata_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;
