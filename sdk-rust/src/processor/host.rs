//! The host side of processor bundles (docs/design/processor.md): the
//! executor's processor mode.
//!
//! A processor bundle's one step is a processor (OPERATION_PROCESS or
//! OPERATION_PROCESS_VALUES). Its entries, in order, are `Bundle.inits`, the
//! records, then `Bundle.after` (punctuations, then closes); the answer holds
//! one op group per entry, in call order: `put` / `delete` of a store,
//! `forward` to the children, `schedule` / `cancel` of a punctuator.
//!
//! Processor instances live across bundles, one per (task, node): an init
//! entry makes the instance and calls `init`; a record for a node with no
//! instance makes one first (its init's ops join the record's group); a
//! close entry calls `close` and drops it.
//!
//! Stores go through an overlay: the entries the bundle prefetched
//! (`Bundle.stores`) under the bundle's own writes, so a record reads what
//! the records before it wrote; a read the bundle did not bring is a `Read`
//! call to the engine, whose answer joins the overlay. The bundle being run
//! is this thread's (a thread-local), which contexts and stores reach; user
//! code never runs while it is borrowed.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Headers, ProcessorResult, PunctuationType, RecordMetadata};
use crate::calls::{column, guarded};
use crate::errors::{Error, Result};
use crate::pb;
use crate::serdes::Serde;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A Read call to the engine, made while the bundle is held.
pub(crate) type ReadFn = dyn Fn(pb::ReadRequest) -> Result<pb::ReadResponse> + Send + Sync;

/// A record as a processor's wrapper decodes it.
pub(crate) struct Input<'a> {
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) key_serde: &'a str,
    pub(crate) value_serde: &'a str,
    pub(crate) timestamp: i64,
    pub(crate) headers: Headers,
    /// The bound of the bundle's async work (an async processor's futures).
    pub(crate) deadline: Instant,
}

/// A processor behind its typed wrapper.
pub(crate) trait Erased: Send {
    fn init(&mut self, core: &Arc<Core>) -> ProcessorResult;
    /// Err: the record did not decode; Ok: what process answered.
    fn process(&mut self, core: &Arc<Core>, input: Input<'_>) -> std::result::Result<ProcessorResult, String>;
    fn close(&mut self) -> ProcessorResult;
    /// The user's processor, for its punctuators.
    fn as_any(&mut self) -> &mut dyn Any;
}

/// Makes a task's processor.
pub(crate) trait Supplier: Send + Sync {
    fn make(&self) -> Box<dyn Erased>;
    fn processor_type(&self) -> TypeId;
}

type MakeBox = Box<dyn Fn() -> Box<dyn Erased> + Send + Sync>;

pub(crate) struct MakeFn {
    pub(crate) processor_type: TypeId,
    pub(crate) make: MakeBox,
}

impl Supplier for MakeFn {
    fn make(&self) -> Box<dyn Erased> {
        (self.make)()
    }
    fn processor_type(&self) -> TypeId {
        self.processor_type
    }
}

pub(crate) type Punctuator = Box<dyn FnMut(&mut dyn Any, i64) -> ProcessorResult + Send>;

#[derive(Default)]
struct Schedules {
    /// Ids count from 1 per instance.
    last: u64,
    /// The live schedules; None while its punctuator runs.
    live: HashMap<u64, Option<Punctuator>>,
}

/// What a processor's contexts share: its node and task, and its schedules.
pub(crate) struct Core {
    pub(crate) node: String,
    pub(crate) task: String,
    pub(crate) application_id: String,
    pub(crate) processor_type: TypeId,
    schedules: Mutex<Schedules>,
}

impl Core {
    pub(crate) fn schedule(&self, interval: Duration, kind: PunctuationType, f: Punctuator) -> Result<u64> {
        let ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
        if ms < 1 {
            return Err(Error::invalid(format!(
                "schedule: node {}: interval {} ms; the minimum is 1 ms",
                self.node,
                interval.as_millis()
            )));
        }
        with_run("schedule", &self.node, |run| {
            let id = {
                let mut s = lock(&self.schedules);
                s.last += 1;
                let id = s.last;
                s.live.insert(id, Some(f));
                id
            };
            let target = match kind {
                PunctuationType::StreamTime => 1,
                PunctuationType::WallClockTime => 2,
            };
            run.op(Op { kind: pb::OpKind::Schedule, target, key: None, value: None, time: ms, schedule: id });
            Ok(id)
        })
    }

    pub(crate) fn cancel(&self, id: u64) {
        if lock(&self.schedules).live.remove(&id).is_none() {
            return;
        }
        let _ = with_run("cancel", &self.node, |run| {
            run.op(Op { kind: pb::OpKind::Cancel, target: 0, key: None, value: None, time: 0, schedule: id });
            Ok(())
        });
    }

    fn drop_schedules(&self) {
        lock(&self.schedules).live.clear();
    }
}

thread_local! {
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

/// Runs f on this thread's bundle in hand; an error when there is none.
pub(crate) fn with_run<R>(call: &str, node: &str, f: impl FnOnce(&mut Run) -> Result<R>) -> Result<R> {
    RUN.with(|r| {
        let mut g = r.try_borrow_mut().map_err(|_| {
            Error::internal(format!(
                "{call}: node {node}: the bundle in hand is busy (a call from inside a store call)"
            ))
        })?;
        match g.as_mut() {
            Some(run) => f(run),
            None => Err(Error::FailedPrecondition {
                message: format!("{call}: node {node} is not running a record, punctuator, init or close now"),
            }),
        }
    })
}

/// Encodes a key or value: None for a Kafka null.
pub(crate) fn encode<T: Serde>(v: &T, serde: &str) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    match v.encode(serde, &mut out) {
        Ok(true) => Ok(Some(out)),
        Ok(false) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

pub(crate) struct Op {
    pub(crate) kind: pb::OpKind,
    pub(crate) target: i32,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) value: Option<Vec<u8>>,
    pub(crate) time: i64,
    pub(crate) schedule: u64,
}

/// An entry of a store the bundle knows: the value (None: absent) and its timestamp.
pub(crate) type Entry = (Option<Vec<u8>>, i64);

/// One store's overlay for one bundle.
pub(crate) struct StoreState {
    pub(crate) name: String,
    pub(crate) key_serde: String,
    pub(crate) value_serde: String,
    pub(crate) store_type: pb::StoreType,
    /// Key-value stores: serialized key -> entry.
    pub(crate) known: HashMap<Vec<u8>, Entry>,
    pub(crate) written: BTreeMap<Vec<u8>, Entry>,
    /// Window stores: (serialized key, window start) -> value written.
    pub(crate) window_written: BTreeMap<(Vec<u8>, i64), Option<Vec<u8>>>,
    prefetched: HashSet<Vec<u8>>,
    hits: HashSet<Vec<u8>>,
    /// Versioned stores: serialized key -> its versions (validFrom, value;
    /// None: a tombstone) in ascending validFrom.
    pub(crate) versions: HashMap<Vec<u8>, Vec<Version>>,
    /// Versioned stores: the store's stream time (advanced by the bundle's
    /// puts) and history retention.
    pub(crate) stream_time: i64,
    pub(crate) history_retention: i64,
}

/// One version of a versioned store's value: valid from, value (None: a tombstone).
pub(crate) type Version = (i64, Option<Vec<u8>>);

impl StoreState {
    pub(crate) fn of(v: &pb::StoreView) -> std::result::Result<StoreState, String> {
        let t = pb::StoreType::try_from(v.r#type).unwrap_or(pb::StoreType::Unspecified);
        let mut s = StoreState {
            name: v.store.clone(),
            key_serde: if v.key_serde.is_empty() { "bytes".into() } else { v.key_serde.clone() },
            value_serde: if v.value_serde.is_empty() { "bytes".into() } else { v.value_serde.clone() },
            store_type: t,
            known: HashMap::new(),
            written: BTreeMap::new(),
            window_written: BTreeMap::new(),
            prefetched: HashSet::new(),
            hits: HashSet::new(),
            versions: HashMap::new(),
            stream_time: v.stream_time_ms,
            history_retention: v.history_retention_ms,
        };
        let keys = column(&v.keys, &v.key_lengths).map_err(|e| format!("store view {:?}: {e}", v.store))?;
        let values = column(&v.values, &v.value_lengths).map_err(|e| format!("store view {:?}: {e}", v.store))?;
        if t == pb::StoreType::VersionedKeyValue {
            // Each key once, its version count, then its versions' values
            // and validFroms (StoreView.windows).
            let total: i64 = v.version_counts.iter().map(|&n| i64::from(n)).sum();
            if v.version_counts.len() != keys.len() || total != values.len() as i64 || v.windows.len() != values.len() {
                return Err(format!(
                    "malformed store view {:?}: {} keys, {} version counts adding up to {total}, {} values, {} validFroms",
                    v.store,
                    keys.len(),
                    v.version_counts.len(),
                    values.len(),
                    v.windows.len()
                ));
            }
            let mut at = 0;
            for (k, &n) in keys.into_iter().zip(&v.version_counts) {
                let Some(k) = k else { return Err(format!("malformed store view {:?}: a null key", v.store)) };
                let n = n.max(0) as usize;
                let vs = (at..at + n).map(|j| (v.windows[j], values[j].map(<[u8]>::to_vec))).collect();
                at += n;
                s.prefetched.insert(k.to_vec());
                s.versions.insert(k.to_vec(), vs);
            }
            return Ok(s);
        }
        if keys.len() != values.len() {
            return Err(format!("malformed store view {:?}: {} keys, {} values", v.store, keys.len(), values.len()));
        }
        if s.is_window() {
            // Window stores get no prefetch from this engine: every fetch is a Read.
            return Ok(s);
        }
        for (i, (k, val)) in keys.into_iter().zip(values).enumerate() {
            let Some(k) = k else { continue };
            let ts = v.timestamps.get(i).copied().unwrap_or(0);
            s.prefetched.insert(k.to_vec());
            s.known.insert(k.to_vec(), (val.map(<[u8]>::to_vec), ts));
        }
        Ok(s)
    }

    pub(crate) fn is_window(&self) -> bool {
        matches!(self.store_type, pb::StoreType::Window | pb::StoreType::TimestampedWindow)
    }
}

/// A Read's query.
pub(crate) enum Query {
    Get(Vec<u8>),
    Range(Option<Vec<u8>>, Option<Vec<u8>>),
    Prefix(Vec<u8>),
    All,
    Window(Option<Vec<u8>>, i64, i64),
    Versions(Vec<u8>),
}

/// A row a Read answered: key, value, timestamp, window start.
pub(crate) type Row = (Vec<u8>, Option<Vec<u8>>, i64, i64);

/// One processor bundle being run.
pub(crate) struct Run {
    bundle_id: u64,
    topic: String,
    partition: i32,
    node: String,
    pub(crate) stores: HashMap<String, StoreState>,
    /// Bundle.stores order (prefetch_hits).
    store_order: Vec<String>,
    /// The step's stores, in order (op targets).
    pub(crate) step_stores: Vec<String>,
    children: Vec<String>,
    ops: Vec<Op>,
    /// Per forward: its headers, None when they are the input's.
    forward_headers: Vec<Option<Headers>>,
    counts: Vec<i32>,
    mark: usize,
    /// The record in hand: its offset (None: an init, punctuation or close).
    offset: Option<i64>,
    pub(crate) time: i64,
    input_headers: Headers,
    pub(crate) input_key: Option<Option<Vec<u8>>>,
    pub(crate) out_key_serde: String,
    pub(crate) out_value_serde: String,
    read: Option<Arc<ReadFn>>,
    window_sizes: Arc<HashMap<String, i64>>,
}

impl Run {
    /// A window store's window size (as the topology declared it; 0 if unknown).
    pub(crate) fn window_size(&self, store: &str) -> i64 {
        self.window_sizes.get(store).copied().unwrap_or(0)
    }

    pub(crate) fn op(&mut self, op: Op) {
        self.ops.push(op);
    }

    fn end_entry(&mut self) {
        let n = self.ops.len();
        self.counts.push((n - self.mark) as i32);
        self.mark = n;
    }

    pub(crate) fn record_metadata(&self) -> Option<RecordMetadata> {
        self.offset.map(|offset| RecordMetadata {
            topic: self.topic.clone(),
            partition: self.partition,
            offset,
            timestamp: self.time,
            headers: self.input_headers.clone(),
        })
    }

    /// The op target of a store: its index in the step's stores.
    pub(crate) fn target(&self, store: &str) -> i32 {
        self.step_stores.iter().position(|s| s == store).unwrap_or(0) as i32
    }

    pub(crate) fn forward(
        &mut self,
        node: &str,
        child: Option<&str>,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<()> {
        let target = match child {
            None => 0,
            Some(c) => match self.children.iter().position(|x| x == c) {
                Some(i) => i as i32 + 1,
                None => {
                    return Err(Error::invalid(format!(
                        "forward: node {node} has no child {c:?} (children: [{}])",
                        self.children.join(", ")
                    )))
                }
            },
        };
        self.ops.push(Op { kind: pb::OpKind::Forward, target, key, value, time: timestamp, schedule: 0 });
        self.forward_headers.push(if headers == self.input_headers { None } else { Some(headers) });
        Ok(())
    }

    /// A store's state, checked against the node's stores.
    pub(crate) fn store(&mut self, call: &str, name: &str) -> Result<&mut StoreState> {
        let node = &self.node;
        self.stores.get_mut(name).ok_or_else(|| {
            Error::invalid(format!(
                "{name}.{call}: node {node}: the bundle brought no view of store {name:?} (malformed bundle)"
            ))
        })
    }

    /// Checks that the node may use a store (get_state_store).
    pub(crate) fn check_store(&self, node: &str, name: &str) -> Result<&StoreState> {
        if !self.step_stores.iter().any(|s| s == name) {
            return Err(Error::invalid(format!(
                "get_state_store: node {node} has no access to store {name:?} (its stores: [{}])",
                self.step_stores.join(", ")
            )));
        }
        self.stores.get(name).ok_or_else(|| {
            Error::invalid(format!(
                "get_state_store: node {node}: the bundle brought no view of store {name:?} (malformed bundle)"
            ))
        })
    }

    /// A key-value store's entry for a key: the overlay's, else one Read.
    pub(crate) fn lookup(&mut self, store: &str, kb: &[u8]) -> Result<Entry> {
        let st = self.store("get", store)?;
        if st.prefetched.contains(kb) {
            st.hits.insert(kb.to_vec());
        }
        if let Some(e) = st.known.get(kb) {
            return Ok(e.clone());
        }
        let resp = self.call_read(store, Query::Get(kb.to_vec()), false, Vec::new())?;
        let values = column(&resp.values, &resp.value_lengths).map_err(|e| Error::internal(format!("Read: {e}")))?;
        let entry = match values.first() {
            Some(Some(v)) => (Some(v.to_vec()), resp.timestamps.first().copied().unwrap_or(0)),
            _ => (None, 0),
        };
        self.store("get", store)?.known.insert(kb.to_vec(), entry.clone());
        Ok(entry)
    }

    /// A versioned store's versions of a key: the overlay's, else one Read
    /// (ReadRequest.versions) whose answer joins the overlay.
    pub(crate) fn versions(&mut self, call: &str, store: &str, kb: &[u8]) -> Result<&mut Vec<Version>> {
        let st = self.store(call, store)?;
        if st.prefetched.contains(kb) {
            st.hits.insert(kb.to_vec());
        }
        if !st.versions.contains_key(kb) {
            let resp = self.call_read(store, Query::Versions(kb.to_vec()), false, Vec::new())?;
            let values = column(&resp.values, &resp.value_lengths)
                .map_err(|e| Error::internal(format!("Read of store {store:?}: {e}")))?;
            let vs = values.into_iter().zip(&resp.windows).map(|(v, &from)| (from, v.map(<[u8]>::to_vec))).collect();
            self.store(call, store)?.versions.insert(kb.to_vec(), vs);
        }
        Ok(self.store(call, store)?.versions.get_mut(kb).expect("inserted above"))
    }

    fn call_read(&self, store: &str, q: Query, reverse: bool, continuation: Vec<u8>) -> Result<pb::ReadResponse> {
        let Some(read) = &self.read else {
            return Err(Error::FailedPrecondition {
                message: format!(
                    "store {store:?}: the bundle did not bring what was read, and this host has no engine to Read from"
                ),
            });
        };
        use pb::read_request::Query as Q;
        let query = match q {
            Query::Get(k) => Q::Get(k),
            Query::Range(from, to) => Q::Range(pb::KeyRange { from, to }),
            Query::Prefix(p) => Q::Prefix(p),
            Query::All => Q::All(true),
            Query::Window(key, from_ms, to_ms) => Q::WindowFetch(pb::WindowFetch { key, from_ms, to_ms }),
            Query::Versions(k) => Q::Versions(k),
        };
        read(pb::ReadRequest {
            session_id: String::new(),
            bundle_id: self.bundle_id,
            store: store.to_owned(),
            query: Some(query),
            reverse,
            continuation,
        })
    }

    /// Every row a query answers, chunk after chunk.
    pub(crate) fn read_all(&mut self, store: &str, q: impl Fn() -> Query, reverse: bool) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        let mut cont = Vec::new();
        loop {
            let resp = self.call_read(store, q(), reverse, cont)?;
            let bad = |e: String| Error::internal(format!("Read of store {store:?}: {e}"));
            let keys = column(&resp.keys, &resp.key_lengths).map_err(bad)?;
            let values = column(&resp.values, &resp.value_lengths).map_err(bad)?;
            for (i, (k, v)) in keys.into_iter().zip(values).enumerate() {
                let Some(k) = k else { continue };
                out.push((
                    k.to_vec(),
                    v.map(<[u8]>::to_vec),
                    resp.timestamps.get(i).copied().unwrap_or(0),
                    resp.windows.get(i).copied().unwrap_or(0),
                ));
            }
            if resp.continuation.is_empty() {
                return Ok(out);
            }
            cont = resp.continuation;
        }
    }
}

/// A task's processor of one node.
struct Instance {
    processor: Box<dyn Erased>,
    core: Arc<Core>,
    /// init failed: records fail with this.
    broken: Option<String>,
}

/// The processor mode of an Executor: the instances of the tasks it serves,
/// per (task, node), across bundles.
#[derive(Default)]
pub(crate) struct Host {
    instances: Mutex<HashMap<(String, String), Instance>>,
    pub(crate) application_id: String,
    /// Window stores' sizes, by name (StoreView does not carry them).
    pub(crate) window_sizes: Arc<HashMap<String, i64>>,
}

pub(crate) fn is_processor_bundle(b: &pb::Bundle) -> bool {
    b.steps
        .iter()
        .any(|s| s.operation == pb::Operation::Process as i32 || s.operation == pb::Operation::ProcessValues as i32)
}

const PROCESSING: i32 = pb::record_failure::Kind::Processing as i32;
const DESERIALIZATION: i32 = pb::record_failure::Kind::Deserialization as i32;

fn failure(index: usize, message: String, kind: i32) -> pb::RecordFailure {
    pb::RecordFailure { index: index as i32, step: 0, message, kind }
}

/// A user call's outcome as a failure's message.
fn outcome(r: std::result::Result<ProcessorResult, String>) -> std::result::Result<(), String> {
    match r {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(panic),
    }
}

/// Each record's headers, from a bundle's header columns.
pub(crate) fn read_headers(b: &pb::Bundle, n: usize) -> std::result::Result<Vec<Headers>, String> {
    let mut out = Vec::with_capacity(n);
    if !b.header_counts.is_empty() {
        let keys = column(&b.header_keys, &b.header_key_lengths)?;
        let values = column(&b.header_values, &b.header_value_lengths)?;
        let mut pos = 0usize;
        for &c in &b.header_counts {
            let c = c.max(0) as usize;
            if pos + c > keys.len() || keys.len() != values.len() {
                return Err(format!(
                    "malformed bundle: header counts account for more than its {} headers",
                    keys.len()
                ));
            }
            out.push(
                (pos..pos + c)
                    .map(|j| {
                        (
                            String::from_utf8_lossy(keys[j].unwrap_or_default()).into_owned(),
                            values[j].map(<[u8]>::to_vec),
                        )
                    })
                    .collect(),
            );
            pos += c;
        }
    }
    out.resize(n.max(out.len()), Vec::new());
    Ok(out)
}

impl Host {
    pub(crate) fn new(application_id: String, window_sizes: HashMap<String, i64>) -> Host {
        Host { instances: Mutex::new(HashMap::new()), application_id, window_sizes: Arc::new(window_sizes) }
    }

    /// Runs a processor bundle.
    /// Runs a processor bundle; `supplier` is the processor its step's token
    /// names (None: not a processor registered in this host).
    pub(crate) fn process(
        &self,
        b: &pb::Bundle,
        supplier: Option<Arc<dyn Supplier>>,
        read: Option<Arc<ReadFn>>,
    ) -> pb::BundleResult {
        let n = b.value_lengths.len();
        let entries = b.inits.len() + n + b.after.len();
        let mut result = pb::BundleResult { bundle_id: b.id, ..Default::default() };
        let fail_all = |mut result: pb::BundleResult, msg: String| {
            result.op_counts = vec![0; entries];
            result.failures = (0..entries).map(|i| failure(i, msg.clone(), PROCESSING)).collect();
            result
        };
        if b.steps.len() != 1 {
            return fail_all(
                result,
                format!(
                    "malformed processor bundle: {} steps (this host runs one processor per bundle: {})",
                    b.steps.len(),
                    b.steps.iter().map(|s| s.node.as_str()).collect::<Vec<_>>().join(", ")
                ),
            );
        }
        let step = &b.steps[0];
        let supplier = match supplier {
            Some(s) => s,
            None => {
                return fail_all(
                    result,
                    format!(
                        "step 0 ({}) names token {}, which is not a processor registered in this host",
                        step.node, step.token
                    ),
                )
            }
        };
        let mut stores = HashMap::new();
        let mut store_order = Vec::new();
        for v in &b.stores {
            match StoreState::of(v) {
                Ok(s) => {
                    store_order.push(s.name.clone());
                    stores.insert(s.name.clone(), s);
                }
                Err(e) => return fail_all(result, e),
            }
        }
        let headers = match read_headers(b, n) {
            Ok(h) => h,
            Err(e) => return fail_all(result, e),
        };
        let (keys, values) = match (column(&b.keys, &b.key_lengths), column(&b.values, &b.value_lengths)) {
            (Ok(k), Ok(v)) if k.len() == v.len() => (k, v),
            (Ok(k), Ok(v)) => {
                return fail_all(result, format!("malformed bundle: {} keys for {} values", k.len(), v.len()))
            }
            (Err(e), _) | (_, Err(e)) => return fail_all(result, e),
        };
        let or_bytes = |s: &str| if s.is_empty() { "bytes".to_owned() } else { s.to_owned() };
        let run = Run {
            bundle_id: b.id,
            topic: b.topic.clone(),
            partition: b.partition,
            node: step.node.clone(),
            stores,
            store_order,
            step_stores: step.stores.clone(),
            children: step.children.clone(),
            ops: Vec::new(),
            forward_headers: Vec::new(),
            counts: Vec::with_capacity(entries),
            mark: 0,
            offset: None,
            time: 0,
            input_headers: Vec::new(),
            input_key: None,
            out_key_serde: or_bytes(if b.output_key_serde.is_empty() { &b.key_serde } else { &b.output_key_serde }),
            out_value_serde: or_bytes(if b.output_value_serde.is_empty() {
                &b.value_serde
            } else {
                &b.output_value_serde
            }),
            read,
            window_sizes: self.window_sizes.clone(),
        };
        let set = |hand: Option<Run>| RUN.with(|r| std::mem::replace(&mut *r.borrow_mut(), hand));
        let before = set(Some(run));
        let slot = (b.task.clone(), step.node.clone());
        let mut inst = lock(&self.instances).remove(&slot);
        let mut failures = Vec::new();
        let mut index = 0usize;
        let key_serde = or_bytes(&b.key_serde);
        let value_serde = or_bytes(&b.value_serde);

        for e in &b.inits {
            self.entry(b, e, &supplier, &mut inst, index, &mut failures);
            index += 1;
        }
        let deadline = Instant::now() + crate::await_all::ASYNC_TIMEOUT;
        for i in 0..n {
            let ts = b.timestamps.get(i).copied().unwrap_or(0).max(0);
            let h = headers[i].clone();
            with_set(|run| {
                run.offset = Some(b.offsets.get(i).copied().unwrap_or(0));
                run.time = ts;
                run.input_headers = h.clone();
                run.input_key = Some(keys[i].map(<[u8]>::to_vec));
            });
            let r = (|| -> std::result::Result<(), (String, i32)> {
                let p = match inst.as_mut() {
                    Some(p) => p,
                    None => {
                        let (i, failed) = self.init(b, &supplier).map_err(|m| (m, PROCESSING))?;
                        let p = inst.insert(i);
                        if let Some(m) = failed {
                            return Err((m, PROCESSING));
                        }
                        p
                    }
                };
                if let Some(broken) = &p.broken {
                    return Err((broken.clone(), PROCESSING));
                }
                let input = Input {
                    key: keys[i],
                    value: values[i],
                    key_serde: &key_serde,
                    value_serde: &value_serde,
                    timestamp: ts,
                    headers: h,
                    deadline,
                };
                let core = p.core.clone();
                match guarded(|| p.processor.process(&core, input)) {
                    Ok(Err(undecodable)) => Err((undecodable, DESERIALIZATION)),
                    Ok(Ok(r)) => outcome(Ok(r)).map_err(|m| (m, PROCESSING)),
                    Err(panic) => Err((panic, PROCESSING)),
                }
            })();
            if let Err((message, kind)) = r {
                failures.push(failure(index, message, kind));
            }
            with_set(Run::end_entry);
            index += 1;
        }
        with_set(|run| {
            run.offset = None;
            run.input_headers = Vec::new();
            run.input_key = None;
        });
        for e in &b.after {
            self.entry(b, e, &supplier, &mut inst, index, &mut failures);
            index += 1;
        }

        let run = set(before).expect("the run set above");
        if let Some(i) = inst {
            lock(&self.instances).insert(slot, i);
        }
        fill(&mut result, run);
        result.failures = failures;
        result
    }

    /// Makes the step's processor for the bundle's task and calls init:
    /// the instance, and init's failure (the instance is then broken); Err:
    /// the supplier failed.
    fn init(
        &self,
        b: &pb::Bundle,
        supplier: &Arc<dyn Supplier>,
    ) -> std::result::Result<(Instance, Option<String>), String> {
        let step = &b.steps[0];
        let core = Arc::new(Core {
            node: step.node.clone(),
            task: b.task.clone(),
            application_id: self.application_id.clone(),
            processor_type: supplier.processor_type(),
            schedules: Mutex::new(Schedules::default()),
        });
        let mut processor = guarded(|| supplier.make()).map_err(|p| format!("the processor supplier failed: {p}"))?;
        let r = outcome(guarded(|| processor.init(&core)));
        let mut inst = Instance { processor, core, broken: None };
        match r {
            Ok(()) => Ok((inst, None)),
            Err(m) => {
                // Kept broken: its records fail with this until it is closed.
                inst.broken = Some(format!("init of node {} in task {} failed: {m}", step.node, b.task));
                Ok((inst, Some(m)))
            }
        }
    }

    fn entry(
        &self,
        b: &pb::Bundle,
        e: &pb::BundleEntry,
        supplier: &Arc<dyn Supplier>,
        inst: &mut Option<Instance>,
        index: usize,
        failures: &mut Vec<pb::RecordFailure>,
    ) {
        with_set(|run| {
            run.offset = None;
            run.input_headers = Vec::new();
            run.input_key = None;
            run.time = e.time_ms;
        });
        let node = &b.steps[0].node;
        let r = (|| -> std::result::Result<(), String> {
            if e.step != 0 {
                return Err(format!("malformed bundle: entry {index} names step {} of {}", e.step, b.steps.len()));
            }
            use pb::bundle_entry::Kind;
            match Kind::try_from(e.kind).unwrap_or(Kind::Unspecified) {
                Kind::Init => {
                    if let Some(old) = inst.take() {
                        old.core.drop_schedules();
                    }
                    let (i, failed) = self.init(b, supplier)?;
                    *inst = Some(i);
                    failed.map_or(Ok(()), Err)
                }
                Kind::Close => {
                    let Some(mut old) = inst.take() else { return Ok(()) };
                    old.core.drop_schedules();
                    outcome(guarded(|| old.processor.close()))
                }
                Kind::PunctuateStreamTime | Kind::PunctuateWallClock => {
                    let missing = || {
                        format!("punctuate: node {node} in task {} has no schedule {} on this host", b.task, e.schedule)
                    };
                    let Some(p) = inst.as_mut() else { return Err(missing()) };
                    let f = lock(&p.core.schedules).live.get_mut(&e.schedule).and_then(Option::take);
                    let Some(mut f) = f else { return Err(missing()) };
                    let r = outcome(guarded(|| f(p.processor.as_any(), e.time_ms)));
                    if let Some(slot) = lock(&p.core.schedules).live.get_mut(&e.schedule) {
                        *slot = Some(f); // not cancelled while it ran
                    }
                    r
                }
                Kind::Unspecified => Err(format!("malformed bundle: entry {index} has kind {}", e.kind)),
            }
        })();
        if let Err(m) = r {
            failures.push(failure(index, m, PROCESSING));
        }
        with_set(Run::end_entry);
    }
}

/// Runs f on the run in hand (set by Host::process).
fn with_set(f: impl FnOnce(&mut Run)) {
    RUN.with(|r| {
        if let Some(run) = r.borrow_mut().as_mut() {
            f(run);
        }
    });
}

/// The answer's op columns, from the run's ops.
fn fill(r: &mut pb::BundleResult, run: Run) {
    r.op_counts = run.counts;
    for op in &run.ops {
        r.op_kinds.push(op.kind as i32);
        r.op_steps.push(0);
        r.op_targets.push(op.target);
        match &op.key {
            Some(k) => {
                r.op_key_lengths.push(k.len() as i32);
                r.op_keys.extend_from_slice(k);
            }
            None => r.op_key_lengths.push(-1),
        }
        match &op.value {
            Some(v) => {
                r.op_value_lengths.push(v.len() as i32);
                r.op_values.extend_from_slice(v);
            }
            None => r.op_value_lengths.push(-1),
        }
        r.op_timestamps.push(op.time);
        r.op_schedules.push(op.schedule);
    }
    for h in &run.forward_headers {
        match h {
            None => r.op_header_counts.push(-1),
            Some(h) => {
                r.op_header_counts.push(h.len() as i32);
                for (k, v) in h {
                    r.op_header_key_lengths.push(k.len() as i32);
                    r.op_header_keys.extend_from_slice(k.as_bytes());
                    match v {
                        Some(v) => {
                            r.op_header_value_lengths.push(v.len() as i32);
                            r.op_header_values.extend_from_slice(v);
                        }
                        None => r.op_header_value_lengths.push(-1),
                    }
                }
            }
        }
    }
    let mut stores = run.stores;
    r.prefetch_hits = run.store_order.iter().map(|s| stores.remove(s).map_or(0, |st| st.hits.len() as i32)).collect();
}
