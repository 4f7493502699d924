//! App: one polystreams application — its engine session, its builder and
//! its host loop.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::bundle::{Executor, Func};
use crate::client::Client;
use crate::dsl::{KStream, KTable};
use crate::engine::{check_engine_version, feed_hint, find_engine, EngineProcess};
use crate::errors::{record_context, Error, Result};
use crate::options::{OffsetReset, Options, KEY, MATERIALIZED, NAME, OFFSET_RESET, TIMESTAMP_EXTRACTOR, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::RecordMetadata;
use crate::serdes::Serde;
use crate::session::{lock, Session};
use crate::store::KeyValueStore;

/// Bundles a worker takes per Exchange, and how long the engine may hold a
/// call open waiting for one (also how soon a stop is noticed).
const MAX_BUNDLES: i32 = 8;
const WAIT_MS: i32 = 500;
/// When the bundles in hand take longer than this, the results so far are
/// delivered before going on (the engine re-dispatches the bundles of a
/// worker silent for 30 s).
const DELIVER_AFTER: Duration = Duration::from_secs(5);
/// What this host understands beyond the protocol's base (OpenSessionRequest.host_features).
pub(crate) const HOST_FEATURES: &[&str] = &["fold_value_refs", "fold_programs", "processors", "metadata"];

/// The state of an application, as the engine reports it. More states may
/// come: a `match` needs a `_` arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum State {
    #[default]
    Created,
    Rebalancing,
    /// Its tasks restore their stores from the changelogs (see [`App::restore_progress`]).
    Restoring,
    Running,
    /// No Kafka broker has answered the engine for 10 s: processing waits,
    /// and the state goes back to running (or rebalancing) by itself once
    /// one answers (see [`App::broker_outage`]).
    Degraded,
    Stopped,
    Error,
}

impl State {
    fn from_proto(s: i32) -> Option<State> {
        Some(match pb::State::try_from(s).ok()? {
            pb::State::Created => State::Created,
            pb::State::Rebalancing => State::Rebalancing,
            pb::State::Restoring => State::Restoring,
            pb::State::Running => State::Running,
            pb::State::Degraded => State::Degraded,
            pb::State::Stopped => State::Stopped,
            pb::State::Error => State::Error,
            pb::State::Unspecified => return None,
        })
    }

    /// The state's name as every SDK spells it: `created`, `rebalancing`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            State::Created => "created",
            State::Rebalancing => "rebalancing",
            State::Restoring => "restoring",
            State::Running => "running",
            State::Degraded => "degraded",
            State::Stopped => "stopped",
            State::Error => "error",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far restoring stores from their changelogs has come, over the store
/// partitions of the engine's tasks since the last rebalance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestoreProgress {
    pub restored_records: i64,
    /// What the restores have to read (changelog end offset minus the local
    /// checkpoint, summed once each partition's restore has begun).
    pub total_records: i64,
    /// Store partitions not restored yet.
    pub restoring_partitions: i32,
    pub total_partitions: i32,
}

impl RestoreProgress {
    fn from_proto(p: pb::RestoreProgress) -> RestoreProgress {
        RestoreProgress {
            restored_records: p.restored_records,
            total_records: p.total_records,
            restoring_partitions: p.restoring_partitions,
            total_partitions: p.total_partitions,
        }
    }

    /// No store partition is restoring.
    pub fn done(&self) -> bool {
        self.restoring_partitions == 0
    }
    /// restored / total records, between 0.0 and 1.0 (1.0 when nothing is to be read).
    pub fn fraction(&self) -> f64 {
        if self.total_records <= 0 {
            return 1.0;
        }
        (self.restored_records as f64 / self.total_records as f64).min(1.0)
    }
}

/// This session's host as its engine sees it: whether the host processes
/// (this one and any other serving the same session) take the bundles the
/// engine's tasks hand them (docs/scale-out.md). All zero before start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostHealth {
    /// Bundles handed to the host and not answered yet, whether queued for a
    /// worker or being processed by one.
    pub bundles_waiting: i32,
    /// How long no worker has called the engine for bundles (0 while one
    /// waits for them).
    pub idle_ms: i64,
    /// Bundles have waited 5 s with no worker calling: the tasks make no
    /// progress until a host serves them or the session expires, while
    /// [`App::state`] stays running.
    pub stalled: bool,
}

impl HostHealth {
    fn from_proto(r: &pb::GetStateResponse) -> HostHealth {
        HostHealth { bundles_waiting: r.bundles_waiting, idle_ms: r.host_idle_ms, stalled: r.host_stalled }
    }
}

/// No Kafka broker has answered the application for 10 s or more: the
/// state is [`State::Degraded`] (see [`App::broker_outage`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerOutage {
    /// The application's `bootstrap.servers`.
    pub brokers: Vec<String>,
    /// When a broker last answered (the outage began then), in Unix epoch
    /// milliseconds.
    pub since_ms: i64,
    /// The last error a request to a broker ended with (empty when the
    /// requests hang, as with a frozen broker).
    pub last_error: String,
    /// Outages since the topology started, this one included.
    pub outages: i64,
}

impl BrokerOutage {
    fn from_proto(o: pb::BrokerOutage) -> BrokerOutage {
        BrokerOutage { brokers: o.brokers, since_ms: o.since_ms, last_error: o.last_error, outages: o.outages }
    }
}

/// Kafka Streams' `processing.guarantee`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessingGuarantee {
    AtLeastOnce,
    ExactlyOnceV2,
}

/// Kafka Streams' `default.production.exception.handler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductionExceptionHandler {
    /// The application fails naming topic, partition and error (Kafka
    /// Streams' DefaultProductionExceptionHandler).
    Fail,
    /// The record is logged, counted (`polystreams_production_errors_total`)
    /// and skipped.
    Continue,
}

/// Kafka Streams configuration for an App, named as Kafka Streams names it.
///
/// The common settings have methods; anything else goes in with
/// [`Config::set`] under its Kafka Streams (or `polystreams.*`) name. Unset,
/// a setting keeps the engine's documented default (`processing.guarantee`
/// at_least_once; `commit.interval.ms` 30000, or 100 under exactly_once_v2;
/// `statestore.cache.max.bytes` 10 MiB; `num.standby.replicas` 0;
/// `max.task.idle.ms` 0).
/// Credential values never appear in its Debug output.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Config {
    props: BTreeMap<String, String>,
}

impl Config {
    pub fn new() -> Config {
        Config::default()
    }
    pub fn processing_guarantee(self, g: ProcessingGuarantee) -> Config {
        let v = match g {
            ProcessingGuarantee::AtLeastOnce => "at_least_once",
            ProcessingGuarantee::ExactlyOnceV2 => "exactly_once_v2",
        };
        self.set("processing.guarantee", v)
    }
    pub fn commit_interval_ms(self, ms: u64) -> Config {
        self.set("commit.interval.ms", ms.to_string())
    }
    pub fn statestore_cache_max_bytes(self, bytes: u64) -> Config {
        self.set("statestore.cache.max.bytes", bytes.to_string())
    }
    /// `num.standby.replicas`: warm copies of each task's stores kept on
    /// that many other instances, so that a task moving there restores
    /// little (docs/scale-out.md).
    pub fn num_standby_replicas(self, n: u32) -> Config {
        self.set("num.standby.replicas", n.to_string())
    }
    /// `max.task.idle.ms` (default 0): a task reading several partitions (a
    /// join's, a merge's) waits for the records already on the broker of
    /// each before it picks the next record by timestamp; -1 never waits; a
    /// positive value also waits that long for new records
    /// (docs/design/joins.md).
    pub fn max_task_idle_ms(self, ms: i64) -> Config {
        self.set("max.task.idle.ms", ms.to_string())
    }
    pub fn state_dir(self, dir: impl Into<String>) -> Config {
        self.set("state.dir", dir)
    }
    /// `auto.offset.reset` (default earliest, Kafka Streams'): where a
    /// source partition with no committed offset starts; a source's
    /// [`Options::offset_reset`] overrides it.
    pub fn auto_offset_reset(self, policy: OffsetReset) -> Config {
        self.set("auto.offset.reset", policy.as_str())
    }
    /// `default.key.serde` (default bytes): the key serde of a source that
    /// names none. A Rust source always names its serde (its key type's,
    /// or [`Options::key_serde`]), so this is for other SDKs' sessions of
    /// the same application and for parity with their configs.
    pub fn default_key_serde(self, serde: impl Into<String>) -> Config {
        self.set("default.key.serde", serde)
    }
    /// `default.value.serde`: as [`default_key_serde`](Self::default_key_serde), for values.
    pub fn default_value_serde(self, serde: impl Into<String>) -> Config {
        self.set("default.value.serde", serde)
    }
    /// `default.production.exception.handler` (default
    /// [`ProductionExceptionHandler::Fail`]): what a record the broker
    /// refuses for good (too large, invalid) does.
    pub fn default_production_exception_handler(self, h: ProductionExceptionHandler) -> Config {
        let v = match h {
            ProductionExceptionHandler::Fail => "fail",
            ProductionExceptionHandler::Continue => "continue",
        };
        self.set("default.production.exception.handler", v)
    }
    /// `num.stream.threads` (default: no bound): how many of the engine's
    /// tasks process a batch at once for this application.
    pub fn num_stream_threads(self, n: u32) -> Config {
        self.set("num.stream.threads", n.to_string())
    }
    /// Any setting, by its Kafka Streams (or `polystreams.*`) name, e.g.
    /// what a failed record does: `default.deserialization.exception.handler`
    /// and `processing.exception.handler` (`fail`, `log_and_continue` or
    /// `dead_letter`), `errors.deadletterqueue.topic.name` (docs/errors.md).
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Config {
        self.props.insert(key.into(), value.into());
        self
    }
    /// The settings as the engine takes them.
    pub fn properties(&self) -> &BTreeMap<String, String> {
        &self.props
    }
}

/// Whether a configuration key holds a credential, whose value is never
/// printed (the engine applies the same rule).
pub fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("password") || k.contains("secret") || k.contains("jaas") || k.contains("token") || k.ends_with(".key")
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.props.iter().map(|(k, v)| (k, if is_secret(k) { "[hidden]" } else { v.as_str() })))
            .finish()
    }
}

/// Builds an [`App`]: `App::builder("x").engine("http://127.0.0.1:8086").build()?`.
#[derive(Debug, Clone)]
pub struct AppBuilder {
    application_id: String,
    config: Config,
    engine: Option<String>,
    brokers: Option<String>,
    timeout: Duration,
    workers: usize,
    token: Option<String>,
    ca_file: Option<std::path::PathBuf>,
}

impl AppBuilder {
    /// The application's configuration.
    pub fn config(mut self, c: Config) -> AppBuilder {
        self.config = c;
        self
    }
    /// A running engine's URL (`http://host:port` or `https://host:port`);
    /// else `$POLYSTREAMS_URL`,
    /// else the App spawns one.
    pub fn engine(mut self, url: impl Into<String>) -> AppBuilder {
        self.engine = Some(url.into());
        self
    }
    /// Kafka's bootstrap servers (a spawned engine runs `serve --brokers`
    /// instead of `dev` with its embedded broker).
    pub fn brokers(mut self, brokers: impl Into<String>) -> AppBuilder {
        self.brokers = Some(brokers.into());
        self
    }
    /// The bearer token of an engine started with one, sent on every call
    /// (default `$POLYSTREAMS_TOKEN`).
    pub fn token(mut self, token: impl Into<String>) -> AppBuilder {
        self.token = Some(token.into());
        self
    }
    /// PEM CA certificates to verify an `https://` engine with (default
    /// `$POLYSTREAMS_CA_FILE`, else the system's CA bundle).
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> AppBuilder {
        self.ca_file = Some(path.into());
        self
    }
    /// Bounds each call to the engine (default 120 s).
    pub fn timeout(mut self, t: Duration) -> AppBuilder {
        self.timeout = t;
        self
    }
    /// Threads that serve bundles in [`App::run`], each an engine worker of
    /// its own (default: the machine's available parallelism). Bundles of
    /// different partitions run on them at once.
    pub fn workers(mut self, n: usize) -> AppBuilder {
        self.workers = n.max(1);
        self
    }

    /// Opens the application's session (spawning an engine if none was given).
    pub fn build(self) -> Result<App> {
        let mut props = self.config.props.clone();
        if let Some(b) = &self.brokers {
            props.insert("bootstrap.servers".into(), b.clone());
        }
        let mut engine = None;
        let url = match self.engine.clone().or_else(|| std::env::var("POLYSTREAMS_URL").ok().filter(|u| !u.is_empty()))
        {
            Some(u) => u,
            None => {
                let e = EngineProcess::spawn(&find_engine()?, self.brokers.as_deref(), Duration::from_secs(30))?;
                let u = e.url.clone();
                engine = Some(e);
                u
            }
        };
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let token = self.token.clone().or_else(|| env("POLYSTREAMS_TOKEN"));
        let ca_file = self.ca_file.clone().or_else(|| env("POLYSTREAMS_CA_FILE").map(Into::into));
        let client = Client::with_auth(&url, self.timeout, token.as_deref(), ca_file.as_deref())?;
        let resp = client.open_session(&pb::OpenSessionRequest {
            application_id: self.application_id.clone(),
            config: props.into_iter().collect(),
            host_features: HOST_FEATURES.iter().map(|f| (*f).to_owned()).collect(),
        })?;
        check_engine_version(&resp.version, env!("CARGO_PKG_VERSION"))?;
        let brokers = engine
            .as_ref()
            .and_then(|e| e.broker.clone())
            .or_else(|| resp.config.get("bootstrap.servers").cloned())
            .or(self.brokers.clone());
        let config = resp
            .config
            .into_iter()
            .map(|(k, v)| if is_secret(&k) { (k, "[hidden]".to_owned()) } else { (k, v) })
            .collect();
        Ok(App {
            inner: Arc::new(Inner {
                session: Arc::new(Session::new(self.application_id, resp.session_id, client)),
                config,
                brokers,
                workers: self.workers,
                listeners: Mutex::new(Vec::new()),
                restore_listeners: Mutex::new(Vec::new()),
                last_restore: Mutex::new(None),
                life: Mutex::new(Life { last_state: State::Created, ..Life::default() }),
                idle: Condvar::new(),
                stop_requested: AtomicBool::new(false),
                engine: Mutex::new(engine),
            }),
        })
    }
}

/// A polystreams application: a Kafka Streams topology whose closures run in
/// this process.
///
/// `App::new("wordcount")` spawns an engine with an embedded Kafka broker
/// (`polystreams dev`); [`App::builder`] takes brokers, a running engine's
/// URL (or `$POLYSTREAMS_URL`), a config. The engine binary is
/// `$POLYSTREAMS_ENGINE`, else `polystreams` on PATH, else `bin/polystreams`
/// of the repository this crate sits in.
///
/// Build the topology with [`App::stream`] / [`App::table`] and the
/// operators of what they return, then [`App::run`] serves it until
/// stopped. An `App` is a cheap handle (clone it to stop it from another
/// thread); dropping the last one closes the session and the spawned engine.
#[derive(Clone)]
pub struct App {
    pub(crate) inner: Arc<Inner>,
}

type Listener = Arc<dyn Fn(State, State) + Send + Sync>;
type RestoreListener = Arc<dyn Fn(RestoreProgress) + Send + Sync>;

#[derive(Default)]
struct Life {
    started: bool,
    running: bool,
    stop_sent: bool,
    closed: bool,
    last_state: State,
}

pub(crate) struct Inner {
    /// The engine session: what the builder and the stores use.
    pub(crate) session: Arc<Session>,
    config: BTreeMap<String, String>,
    brokers: Option<String>,
    workers: usize,
    listeners: Mutex<Vec<Listener>>,
    restore_listeners: Mutex<Vec<RestoreListener>>,
    /// The restore progress run() last reported.
    last_restore: Mutex<Option<RestoreProgress>>,
    life: Mutex<Life>,
    /// Signalled when run() returns.
    idle: Condvar,
    stop_requested: AtomicBool,
    engine: Mutex<Option<EngineProcess>>,
}

/// Something a topic list can be made of: `"t"`, `["a", "b"]`, a `Vec<String>`,
/// or a [`Pattern`].
pub trait Topics {
    fn topics(self) -> Vec<String>;

    /// The source's topics, or its pattern (`StreamsBuilder.stream(Pattern)`)
    /// and no topics.
    fn source(self) -> (Vec<String>, String)
    where
        Self: Sized,
    {
        (self.topics(), String::new())
    }
}

/// A topic pattern (`StreamsBuilder.stream(Pattern)`): the source reads every
/// topic whose whole name the regular expression matches, those that exist
/// at the start and those created later, found at the next metadata
/// refresh (`metadata.max.age.ms`, 5 minutes by default). The engine
/// matches it with Go's RE2 (no lookaround or backreferences; flags
/// inline, `(?i)`); a pattern RE2 cannot read is refused by the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern(pub String);

impl Pattern {
    /// A pattern of `regex`, in RE2's syntax.
    pub fn new(regex: impl Into<String>) -> Self {
        Pattern(regex.into())
    }
}

impl Topics for Pattern {
    fn topics(self) -> Vec<String> {
        Vec::new()
    }

    fn source(self) -> (Vec<String>, String) {
        (Vec::new(), self.0)
    }
}

impl Topics for &str {
    fn topics(self) -> Vec<String> {
        vec![self.to_owned()]
    }
}
impl Topics for String {
    fn topics(self) -> Vec<String> {
        vec![self]
    }
}
impl Topics for &[&str] {
    fn topics(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}
impl<const N: usize> Topics for [&str; N] {
    fn topics(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}
impl Topics for Vec<String> {
    fn topics(self) -> Vec<String> {
        self
    }
}

impl Inner {
    fn set_state(&self, new: State) {
        let (old, listeners) = {
            let mut life = lock(&self.life);
            let old = life.last_state;
            if old == new {
                return;
            }
            life.last_state = new;
            (old, lock(&self.listeners).clone())
        };
        for l in listeners {
            // A listener that panics is ignored, as the other SDKs log and ignore.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(new, old)));
        }
    }

    fn set_restore(&self, p: Option<pb::RestoreProgress>) {
        let Some(p) = p.map(RestoreProgress::from_proto) else { return };
        {
            let mut last = lock(&self.last_restore);
            if *last == Some(p) {
                return;
            }
            *last = Some(p);
        }
        for l in lock(&self.restore_listeners).clone() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(p)));
        }
    }

    pub(crate) fn send_stop(&self) {
        {
            let mut life = lock(&self.life);
            if life.stop_sent || life.closed {
                return;
            }
            life.stop_sent = true;
        }
        match self.session.client.stop(&pb::StopRequest { session_id: self.session.id.clone() }) {
            Ok(_) | Err(Error::NotFound { .. }) => {}
            Err(e) => eprintln!("polystreams: stopping app {:?}: {e}", self.session.application_id),
        }
    }

    /// One worker's Exchange loop.
    fn serve(&self, worker: String, exec: &Executor, reports_state: bool, done: &AtomicBool) -> Result<()> {
        let mut results: Vec<pb::BundleResult> = Vec::new();
        loop {
            let stopping = self.stop_requested.load(Ordering::SeqCst) || done.load(Ordering::SeqCst);
            let req = pb::ExchangeRequest {
                session_id: self.session.id.clone(),
                worker_id: worker.clone(),
                results: std::mem::take(&mut results),
                max_bundles: if stopping { 0 } else { MAX_BUNDLES },
                wait_ms: if stopping { 0 } else { WAIT_MS },
            };
            let resp = match self.session.client.exchange(&req) {
                Ok(r) => r,
                Err(Error::NotFound { .. })
                    if self.stop_requested.load(Ordering::SeqCst) || lock(&self.life).stop_sent =>
                {
                    return Ok(()); // the session ended as asked
                }
                Err(e) => return Err(e),
            };
            let state = State::from_proto(resp.state);
            if reports_state {
                if let Some(s) = state {
                    self.set_state(s);
                }
                self.set_restore(resp.restore);
            }
            match state {
                Some(State::Error) => {
                    done.store(true, Ordering::SeqCst);
                    self.set_state(State::Error);
                    self.send_stop();
                    let message = if resp.error.is_empty() {
                        format!("app {:?} failed (the engine gave no reason)", self.session.application_id)
                    } else {
                        resp.error
                    };
                    return Err(processing_error(message, resp.failed_record));
                }
                Some(State::Stopped) => {
                    done.store(true, Ordering::SeqCst);
                    return Ok(());
                }
                _ if stopping => return Ok(()),
                _ => {}
            }
            let mut last_call = Instant::now();
            for b in &resp.bundles {
                results.push(exec.process(b));
                if last_call.elapsed() > DELIVER_AFTER {
                    // Slow functions: hand over what is done, so the engine's
                    // tasks go on and it does not take this worker for dead.
                    let req = pb::ExchangeRequest {
                        session_id: self.session.id.clone(),
                        worker_id: worker.clone(),
                        results: std::mem::take(&mut results),
                        max_bundles: 0,
                        wait_ms: 0,
                    };
                    self.session.client.exchange(&req)?;
                    last_call = Instant::now();
                }
            }
        }
    }
}

fn processing_error(message: String, r: Option<pb::RecordContext>) -> Error {
    match r {
        Some(r) => Error::Processing {
            message,
            topic: Some(r.topic),
            partition: Some(r.partition),
            offset: Some(r.offset),
            node: Some(r.node),
        },
        None => match record_context(&message) {
            Some((t, p, o, n)) => {
                Error::Processing { message, topic: Some(t), partition: Some(p), offset: Some(o), node: Some(n) }
            }
            None => Error::Processing { message, topic: None, partition: None, offset: None, node: None },
        },
    }
}

impl App {
    /// An application with an engine of its own (`polystreams dev`, with an
    /// embedded broker), or the one at `$POLYSTREAMS_URL`.
    pub fn new(application_id: impl Into<String>) -> Result<App> {
        App::builder(application_id).build()
    }

    /// An [`AppBuilder`] for an application.
    pub fn builder(application_id: impl Into<String>) -> AppBuilder {
        AppBuilder {
            application_id: application_id.into(),
            config: Config::new(),
            engine: None,
            brokers: None,
            timeout: Duration::from_secs(120),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            token: None,
            ca_file: None,
        }
    }

    pub fn application_id(&self) -> &str {
        &self.inner.session.application_id
    }

    /// The engine's URL.
    pub fn engine_url(&self) -> &str {
        self.inner.session.client.url()
    }

    /// The Kafka bootstrap servers the application uses (the embedded
    /// broker's address under `dev`).
    pub fn brokers(&self) -> Option<&str> {
        self.inner.brokers.as_deref()
    }

    /// The effective configuration the engine reports (credentials hidden).
    pub fn config(&self) -> &BTreeMap<String, String> {
        &self.inner.config
    }

    // The builder.

    /// A stream of the records of one or more topics (`StreamsBuilder.stream`),
    /// with K's and V's serdes.
    pub fn stream<K: Serde, V: Serde>(&self, topics: impl Topics) -> Result<KStream<K, V>> {
        self.stream_with(topics, Options::new())
    }

    /// [`stream`](Self::stream) with `name` (`Consumed.as`), `key_serde`,
    /// `value_serde`, `offset_reset` (`Consumed.withOffsetResetPolicy`) and
    /// `timestamp_extractor` (a built-in `Consumed.withTimestampExtractor`).
    pub fn stream_with<K: Serde, V: Serde>(&self, topics: impl Topics, o: Options) -> Result<KStream<K, V>> {
        o.check("stream", NAME | KEY | VALUE | OFFSET_RESET | TIMESTAMP_EXTRACTOR)?;
        self.stream_op(topics, &o, o.extractor_proto())
    }

    /// [`stream_with`](Self::stream_with) whose records' timestamps are
    /// `f(key, value, metadata, partition_time)` (`Consumed.withTimestampExtractor`),
    /// in epoch ms: windows, stream time and the outputs' timestamps follow
    /// them. `partition_time` is the largest timestamp extracted from the
    /// record's partition so far (-1 before any). A negative answer drops
    /// the record; a panic stops the application naming the record.
    pub fn stream_with_extractor<K: Serde, V: Serde, F>(
        &self,
        topics: impl Topics,
        o: Options,
        f: F,
    ) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata, i64) -> i64 + Send + Sync + 'static,
    {
        o.check("stream", NAME | KEY | VALUE | OFFSET_RESET)?;
        let token = self.register_extractor::<K, V, F>(f)?;
        self.stream_op(topics, &o, Some(pb::TimestampExtractor { token, builtin: String::new() }))
    }

    /// [`stream_with_extractor`](Self::stream_with_extractor) with an async
    /// extractor: `f(key, value, metadata, partition_time)` resolves to the
    /// record's timestamp (the metadata by value, for the future to move
    /// in). Each record's future is awaited before the next record's call,
    /// as its partition time depends on the timestamps before it; one that
    /// panics or is still pending at [`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT)
    /// fails its record.
    pub fn stream_with_extractor_async<K: Serde, V: Serde, F, Fut>(
        &self,
        topics: impl Topics,
        o: Options,
        f: F,
    ) -> Result<KStream<K, V>>
    where
        F: Fn(&K, &V, RecordMetadata, i64) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = i64> + 'static,
    {
        o.check("stream", NAME | KEY | VALUE | OFFSET_RESET)?;
        let token = self.register_extractor_async::<K, V, F, Fut>(f)?;
        self.stream_op(topics, &o, Some(pb::TimestampExtractor { token, builtin: String::new() }))
    }

    /// [`table_with_extractor`](Self::table_with_extractor) with an async
    /// extractor, as [`stream_with_extractor_async`](Self::stream_with_extractor_async).
    pub fn table_with_extractor_async<K: Serde, V: Serde, F, Fut>(
        &self,
        topic: &str,
        o: Options,
        f: F,
    ) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V, RecordMetadata, i64) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = i64> + 'static,
    {
        o.check("table", NAME | KEY | VALUE | MATERIALIZED | OFFSET_RESET)?;
        let token = self.register_extractor_async::<K, V, F, Fut>(f)?;
        self.table_op(topic, &o, Some(pb::TimestampExtractor { token, builtin: String::new() }))
    }

    fn register_extractor_async<K: Serde, V: Serde, F, Fut>(&self, f: F) -> Result<u32>
    where
        F: Fn(&K, &V, RecordMetadata, i64) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = i64> + 'static,
    {
        let f = Func::Extract(crate::extract::extract_fn_async::<K, V, F, Fut>(f));
        self.inner.session.register(std::any::type_name::<F>(), f)
    }

    fn register_extractor<K: Serde, V: Serde, F>(&self, f: F) -> Result<u32>
    where
        F: Fn(&K, &V, &RecordMetadata, i64) -> i64 + Send + Sync + 'static,
    {
        self.inner.session.register(std::any::type_name::<F>(), Func::Extract(crate::extract::extract_fn::<K, V, F>(f)))
    }

    fn stream_op<K: Serde, V: Serde>(
        &self,
        topics: impl Topics,
        o: &Options,
        timestamp_extractor: Option<pb::TimestampExtractor>,
    ) -> Result<KStream<K, V>> {
        let token = timestamp_extractor.as_ref().map(|e| e.token).filter(|&t| t != 0);
        let (topics, topic_pattern) = topics.source();
        let op = Op::Stream(pb::StreamOp {
            topics,
            topic_pattern,
            key_serde: o.key_or(K::NAME),
            value_serde: o.value_or(V::NAME),
            name: o.name_or_empty(),
            offset_reset: o.offset_reset_or_empty(),
            timestamp_extractor,
        });
        let h = self
            .inner
            .session
            .build(op, token.as_slice())?
            .ok_or_else(|| Error::internal("Build(stream): the engine answered no handle"))?;
        KStream::wrap(self.inner.session.clone(), h)
    }

    /// A table of the latest value per key of `topic` (`StreamsBuilder.table`):
    /// each record upserts its key, a null value deletes it.
    pub fn table<K: Serde, V: Serde>(&self, topic: &str) -> Result<KTable<K, V>> {
        self.table_with(topic, Options::new())
    }

    /// [`table`](Self::table) with `name` (`Consumed.as`), `key_serde`,
    /// `value_serde`, `materialized` (a named store makes it queryable),
    /// `offset_reset` (`Consumed.withOffsetResetPolicy`) and
    /// `timestamp_extractor` (a built-in `Consumed.withTimestampExtractor`).
    pub fn table_with<K: Serde, V: Serde>(&self, topic: &str, o: Options) -> Result<KTable<K, V>> {
        o.check("table", NAME | KEY | VALUE | MATERIALIZED | OFFSET_RESET | TIMESTAMP_EXTRACTOR)?;
        self.table_op(topic, &o, o.extractor_proto())
    }

    /// [`table_with`](Self::table_with) with a Rust timestamp extractor, as
    /// [`stream_with_extractor`](Self::stream_with_extractor).
    pub fn table_with_extractor<K: Serde, V: Serde, F>(&self, topic: &str, o: Options, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V, &RecordMetadata, i64) -> i64 + Send + Sync + 'static,
    {
        o.check("table", NAME | KEY | VALUE | MATERIALIZED | OFFSET_RESET)?;
        let token = self.register_extractor::<K, V, F>(f)?;
        self.table_op(topic, &o, Some(pb::TimestampExtractor { token, builtin: String::new() }))
    }

    fn table_op<K: Serde, V: Serde>(
        &self,
        topic: &str,
        o: &Options,
        timestamp_extractor: Option<pb::TimestampExtractor>,
    ) -> Result<KTable<K, V>> {
        let token = timestamp_extractor.as_ref().map(|e| e.token).filter(|&t| t != 0);
        let op = Op::Table(pb::TableOp {
            topic: topic.to_owned(),
            key_serde: o.key_or(K::NAME),
            value_serde: o.value_or(V::NAME),
            name: o.name_or_empty(),
            materialized: o.materialized_proto(),
            offset_reset: o.offset_reset_or_empty(),
            timestamp_extractor,
        });
        let h = self
            .inner
            .session
            .build(op, token.as_slice())?
            .ok_or_else(|| Error::internal("Build(table): the engine answered no handle"))?;
        KTable::wrap(self.inner.session.clone(), h)
    }

    /// The topology as Kafka Streams' `Topology.describe().toString()` prints it.
    pub fn describe(&self) -> Result<String> {
        Ok(self
            .inner
            .session
            .client
            .describe(&pb::DescribeRequest { session_id: self.inner.session.id.clone(), format: String::new() })?
            .text)
    }

    /// The key-value store `name` (e.g. a table's [`KTable::store`]), for
    /// interactive queries while [`App::run`] serves the topology.
    pub fn store<K: Serde, V: Serde>(&self, name: &str) -> KeyValueStore<K, V> {
        KeyValueStore::new(self.inner.session.clone(), name)
    }

    /// The versioned store `name` (a table materialized with
    /// [`Materialized::versioned`](crate::Materialized::versioned)), for
    /// interactive queries as of a time while [`App::run`] serves the
    /// topology.
    pub fn versioned_store<K: Serde, V: Serde>(&self, name: &str) -> crate::store::VersionedKeyValueStore<K, V> {
        crate::store::VersionedKeyValueStore::new(self.inner.session.clone(), name)
    }

    /// The window or session store `name` (a windowed aggregation's), for
    /// interactive queries while [`App::run`] serves the topology.
    pub fn window_store<K: Serde, V: Serde>(&self, name: &str) -> crate::store::WindowStore<K, V> {
        crate::store::WindowStore::new(self.inner.session.clone(), name)
    }

    /// Which instance of the application holds `key` of `store` (Kafka
    /// Streams' `queryMetadataForKey`); needs `application.server` on the
    /// instances. A window or session store's key is the inner key.
    pub fn query_metadata_for_key<K: Serde>(&self, store: &str, key: &K) -> Result<crate::store::KeyQueryMetadata> {
        let serde = KeyValueStore::<K, Vec<u8>>::new(self.inner.session.clone(), store).key_serde();
        let inner = crate::serdes::inner_serde(&serde).unwrap_or(&serde).to_owned();
        let k = match crate::serdes::to_bytes(&inner, key) {
            Ok(Some(b)) => b,
            Ok(None) => {
                return Err(Error::invalid(format!("query_metadata_for_key: store {store:?}: a key must not be null")))
            }
            Err(e) => {
                return Err(Error::invalid(format!(
                    "query_metadata_for_key: store {store:?}: cannot encode the key with key serde {inner:?}: {e}"
                )))
            }
        };
        let s = &self.inner.session;
        let r = s.client.query_metadata_for_key(&pb::QueryMetadataForKeyRequest {
            session_id: s.id.clone(),
            store: store.to_owned(),
            key: k,
        })?;
        Ok(crate::store::KeyQueryMetadata {
            active_host: r.active_host.as_ref().map(crate::store::HostInfo::from),
            standby_hosts: r.standby_hosts.iter().map(crate::store::HostInfo::from).collect(),
            partition: r.partition,
        })
    }

    /// The instances holding `store`, active or standby (Kafka Streams'
    /// `streamsMetadataForStore`).
    pub fn streams_metadata_for_store(&self, store: &str) -> Result<Vec<crate::store::StreamsMetadata>> {
        self.streams_metadata(store)
    }

    /// Every instance with an `application.server` (Kafka Streams'
    /// `metadataForAllStreamsClients`).
    pub fn metadata_for_all_streams_clients(&self) -> Result<Vec<crate::store::StreamsMetadata>> {
        self.streams_metadata("")
    }

    fn streams_metadata(&self, store: &str) -> Result<Vec<crate::store::StreamsMetadata>> {
        let s = &self.inner.session;
        let r = s
            .client
            .streams_metadata(&pb::StreamsMetadataRequest { session_id: s.id.clone(), store: store.to_owned() })?;
        Ok(r.metadata.iter().map(crate::store::StreamsMetadata::from).collect())
    }

    // Running.

    /// The application's state, as the engine reports it now.
    pub fn state(&self) -> Result<State> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(State::from_proto(r.state).unwrap_or(State::Created))
    }

    /// Pauses processing (`KafkaStreams.pause`, KIP-834): the engine fetches
    /// nothing more and its tasks take no new records, while the
    /// application stays in the group with its tasks. Before
    /// [`run`](Self::run) it starts paused. From any thread.
    pub fn pause(&self) -> Result<()> {
        self.inner
            .session
            .client
            .pause_processing(&pb::PauseProcessingRequest { session_id: self.inner.session.id.clone() })?;
        Ok(())
    }

    /// Resumes processing where [`pause`](Self::pause) left it (`KafkaStreams.resume`).
    pub fn resume(&self) -> Result<()> {
        self.inner
            .session
            .client
            .resume_processing(&pb::ResumeProcessingRequest { session_id: self.inner.session.id.clone() })?;
        Ok(())
    }

    /// Whether [`pause`](Self::pause) was called and [`resume`](Self::resume)
    /// not since (`KafkaStreams.isPaused`).
    pub fn is_paused(&self) -> Result<bool> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(r.paused)
    }

    /// Deletes the application's local state directory,
    /// `<state.dir>/<application.id>` (`KafkaStreams.cleanUp`), so that the
    /// next start restores every store from its changelog; answers the
    /// directory deleted (`None` when there was none). Refused
    /// ([`Error::FailedPrecondition`]) while the application runs: call it
    /// before [`run`](Self::run) or after [`stop`](Self::stop).
    pub fn clean_up(&self) -> Result<Option<String>> {
        let r = self
            .inner
            .session
            .client
            .clean_up_state(&pb::CleanUpStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(if r.deleted.is_empty() { None } else { Some(r.deleted) })
    }

    /// How far the engine's restore of this application's stores has come
    /// (all zeros before start).
    pub fn restore_progress(&self) -> Result<RestoreProgress> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(RestoreProgress::from_proto(r.restore.unwrap_or_default()))
    }

    /// The outage that makes the application [`State::Degraded`] now: which
    /// brokers do not answer, and since when; `None` in any other state.
    pub fn broker_outage(&self) -> Result<Option<BrokerOutage>> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        if r.state != pb::State::Degraded as i32 {
            return Ok(None);
        }
        Ok(r.broker_outage.map(BrokerOutage::from_proto))
    }

    /// Calls `f(new_state, old_state)` whenever the application's state
    /// changes (Kafka Streams' `setStateListener`): typically created ->
    /// rebalancing -> restoring -> running (and back through rebalancing and
    /// restoring when the group rebalances, and through degraded while no
    /// broker answers) -> stopped or error. Listeners
    /// run in a thread of [`App::run`]; the engine tells it every change
    /// once, in order, so none is missed. A listener that panics is ignored.
    pub fn on_state_change(&self, f: impl Fn(State, State) + Send + Sync + 'static) {
        lock(&self.inner.listeners).push(Arc::new(f));
    }

    /// Calls `f(progress)` whenever the restore progress the engine reports
    /// to [`App::run`] changes (Kafka Streams' `StateRestoreListener`, in one
    /// callback): while the app is restoring, as records are restored, and
    /// once more with the final figures. A listener that panics is ignored.
    pub fn on_restore_progress(&self, f: impl Fn(RestoreProgress) + Send + Sync + 'static) {
        lock(&self.inner.restore_listeners).push(Arc::new(f));
    }

    /// Records the engine's tasks dropped since the topology started (Kafka
    /// Streams' dropped-records-total): a null key or value an aggregation
    /// skips, a record too late for every window it falls in.
    pub fn dropped_records(&self) -> Result<i64> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(r.dropped_records)
    }

    /// Whether this session's host takes its bundles, as the engine reports
    /// it now, from any thread; e.g. a health check that fails while
    /// `app.host_health()?.stalled`. See [`HostHealth`].
    pub fn host_health(&self) -> Result<HostHealth> {
        let r =
            self.inner.session.client.get_state(&pb::GetStateRequest { session_id: self.inner.session.id.clone() })?;
        Ok(HostHealth::from_proto(&r))
    }

    /// The engine session this app runs in (the conformance runner's test
    /// driver mode pipes into it).
    #[doc(hidden)]
    pub fn session_id(&self) -> &str {
        &self.inner.session.id
    }

    /// Starts processing (creates internal topics, joins the group). Called
    /// by [`App::run`]; builder calls are refused after it.
    pub fn start(&self) -> Result<()> {
        {
            let life = lock(&self.inner.life);
            if life.closed || life.stop_sent {
                return Err(Error::FailedPrecondition {
                    message: format!("start: app {:?} is stopped", self.inner.session.application_id),
                });
            }
            if life.started {
                return Ok(());
            }
        }
        self.inner.session.client.start(&pb::StartRequest { session_id: self.inner.session.id.clone() })?;
        lock(&self.inner.life).started = true;
        if let Some(broker) = lock(&self.inner.engine).as_ref().and_then(|e| e.broker.clone()) {
            let commit = self.inner.config.get("commit.interval.ms").map_or("?", String::as_str);
            eprintln!("{}", feed_hint(&broker, &lock(&self.inner.session.sources), commit));
        }
        Ok(())
    }

    /// Starts the topology and serves its bundles until it stops, on the
    /// builder's number of worker threads.
    ///
    /// Returns when [`App::stop`] is called (from another thread; at once if
    /// it was called before) or the engine stops the session; returns
    /// [`Error::Processing`] when the topology fails (e.g. a closure
    /// panicked for a record; the error names node, topic, partition and
    /// offset).
    pub fn run(&self) -> Result<()> {
        let inner = &self.inner;
        {
            let mut life = lock(&inner.life);
            if life.running {
                return Err(Error::FailedPrecondition { message: "run: the app is already running".into() });
            }
            if life.closed {
                return Err(Error::FailedPrecondition {
                    message: format!("run: app {:?} is closed", inner.session.application_id),
                });
            }
            if life.stop_sent {
                return Ok(()); // stop() came first
            }
            life.running = true;
        }
        let result = (|| {
            if !inner.stop_requested.load(Ordering::SeqCst) {
                self.start()?;
                let mut exec = Executor::new(lock(&inner.session.functions).clone());
                exec.processors = crate::processor::host::Host::new(
                    inner.session.application_id.clone(),
                    lock(&inner.session.window_sizes).clone(),
                );
                let session = inner.session.clone();
                exec.read = Some(Arc::new(move |mut req: pb::ReadRequest| {
                    req.session_id = session.id.clone();
                    session.client.read(&req)
                }));
                let done = AtomicBool::new(false);
                let nanos =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                let prefix = format!("rust-{}-{nanos:x}", std::process::id());
                let results: Vec<Result<()>> = std::thread::scope(|s| {
                    let handles: Vec<_> = (1..inner.workers)
                        .map(|i| {
                            let (exec, done, worker) = (&exec, &done, format!("{prefix}-{i}"));
                            s.spawn(move || {
                                let r = inner.serve(worker, exec, false, done);
                                done.store(true, Ordering::SeqCst);
                                r
                            })
                        })
                        .collect();
                    let first = inner.serve(format!("{prefix}-0"), &exec, true, &done);
                    done.store(true, Ordering::SeqCst);
                    std::iter::once(first)
                        .chain(
                            handles
                                .into_iter()
                                .map(|h| h.join().unwrap_or_else(|_| Err(Error::internal("a worker thread panicked")))),
                        )
                        .collect()
                });
                // A processing error first: it says why the others stopped.
                if let Some(e) =
                    results.iter().find_map(|r| r.as_ref().err().filter(|e| matches!(e, Error::Processing { .. })))
                {
                    return Err(e.clone());
                }
                results.into_iter().collect::<Result<Vec<()>>>()?;
            }
            inner.send_stop();
            Ok(())
        })();
        if result.is_err() {
            inner.send_stop(); // best effort: the session must not outlive the host
        }
        let started = lock(&inner.life).started;
        if started && result.is_ok() {
            inner.set_state(State::Stopped);
        }
        lock(&inner.life).running = false;
        inner.idle.notify_all();
        result
    }

    /// Stops the application: [`App::run`] delivers what it has processed,
    /// the engine commits it and leaves the group, and run() returns. Safe
    /// to call from any thread, and more than once.
    pub fn stop(&self) {
        self.inner.stop_requested.store(true, Ordering::SeqCst);
        if lock(&self.inner.life).running {
            return; // run() sends Stop itself
        }
        self.inner.send_stop();
    }

    /// Stops the application, waits up to `timeout` for [`App::run`] to
    /// return, and stops the engine this App spawned.
    pub fn close(&self, timeout: Duration) {
        self.stop();
        {
            let life = lock(&self.inner.life);
            let (life, _) =
                self.inner.idle.wait_timeout_while(life, timeout, |l| l.running).unwrap_or_else(|e| e.into_inner());
            drop(life);
        }
        self.inner.send_stop();
        lock(&self.inner.life).closed = true;
        self.inner.session.client.close();
        if let Some(mut e) = lock(&self.inner.engine).take() {
            e.close(Duration::from_secs(15));
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone: the session must not outlive it.
        if !lock(&self.life).closed {
            self.send_stop();
        }
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "App({:?}, engine={:?})", self.inner.session.application_id, self.inner.session.client.url())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_standby_replicas_is_kafka_streams_num_standby_replicas() {
        let c = Config::new().num_standby_replicas(1).commit_interval_ms(100);
        let want: BTreeMap<String, String> = [("commit.interval.ms", "100"), ("num.standby.replicas", "1")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        assert_eq!(c.properties(), &want);
        // Unset: the engine's default, 0.
        assert!(!Config::new().properties().contains_key("num.standby.replicas"));
    }

    #[test]
    fn max_task_idle_ms_is_kafka_streams_max_task_idle_ms() {
        let c = Config::new().max_task_idle_ms(-1);
        assert_eq!(c.properties().get("max.task.idle.ms").map(String::as_str), Some("-1"));
        // Unset: the engine's default, 0.
        assert!(!Config::new().properties().contains_key("max.task.idle.ms"));
    }

    #[test]
    fn operations_settings_have_kafka_streams_names() {
        let c = Config::new()
            .auto_offset_reset(OffsetReset::None)
            .default_key_serde("string")
            .default_value_serde("long")
            .default_production_exception_handler(ProductionExceptionHandler::Continue)
            .num_stream_threads(3);
        let p = c.properties();
        for (k, v) in [
            ("auto.offset.reset", "none"),
            ("default.key.serde", "string"),
            ("default.value.serde", "long"),
            ("default.production.exception.handler", "continue"),
            ("num.stream.threads", "3"),
        ] {
            assert_eq!(p.get(k).map(String::as_str), Some(v), "{k}");
        }
    }

    #[test]
    fn host_health_reads_get_state() {
        let r =
            pb::GetStateResponse { bundles_waiting: 3, host_idle_ms: 7250, host_stalled: true, ..Default::default() };
        assert_eq!(HostHealth::from_proto(&r), HostHealth { bundles_waiting: 3, idle_ms: 7250, stalled: true });
    }
}
