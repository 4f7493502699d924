//! Unit-testing topologies: [`TopologyTestDriver`], as Kafka Streams'.
//!
//! The driver runs the topology on an engine session in test driver mode
//! (`polystreams.test.driver=true`, docs/design/test-driver.md): the session
//! has its own in-process broker (topics of one partition) and state, and
//! [`TopologyTestDriver::pipe_input`] returns once the record is processed
//! completely, through repartition topics, and committed (the record cache
//! flushed), as TopologyTestDriver does.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::app::{App, Config};
use crate::errors::{Error, Result};
use crate::pb;
use crate::serdes::Serde;
use crate::store::{KeyValueStore, WindowStore};

/// A record the topology wrote (Kafka Streams' `TestRecord`): key and value
/// decoded with the sink's serdes, the timestamp in epoch ms, the headers
/// in order.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRecord<K, V> {
    pub key: K,
    pub value: V,
    pub timestamp: i64,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Kafka Streams' TopologyTestDriver over an [`App`] (which it derefs to):
/// build the topology with `stream` / `table` and the operators of what they
/// return, then pipe records in and read what the topology wrote. The first
/// of [`pipe_input`](Self::pipe_input), [`read_output`](Self::read_output),
/// [`get_store`](Self::get_store) or
/// [`advance_wall_clock`](Self::advance_wall_clock) starts it.
///
/// Dropping the driver (or [`close`](Self::close)) stops the session, its
/// broker and state, and the engine it spawned: nothing is left running.
///
/// ```no_run
/// use polystreams::TopologyTestDriver;
/// # fn main() -> polystreams::Result<()> {
/// let driver = TopologyTestDriver::new("upper")?;
/// driver.stream::<String, String>("in")?.map_values(|v: String| v.to_uppercase())?.to("out")?;
/// driver.pipe_input("in", "k".to_owned(), "v".to_owned())?;
/// let out = driver.read_output::<String, String>("out")?;
/// assert_eq!(out[0].value, "V");
/// # Ok(())
/// # }
/// ```
pub struct TopologyTestDriver {
    app: App,
    /// The thread serving the topology's bundles (App::run), once started.
    host: Mutex<Option<JoinHandle<Result<()>>>>,
}

impl std::fmt::Debug for TopologyTestDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TopologyTestDriver({:?})", self.app)
    }
}

impl Deref for TopologyTestDriver {
    type Target = App;
    fn deref(&self) -> &App {
        &self.app
    }
}

fn session_error(resp: &pb::PipeInputResponse) -> Error {
    let f = resp.failed_record.as_ref();
    Error::Processing {
        message: resp.error.clone(),
        topic: f.map(|f| f.topic.clone()),
        partition: f.map(|f| f.partition),
        offset: f.map(|f| f.offset),
        node: f.map(|f| f.node.clone()),
    }
}

impl TopologyTestDriver {
    /// A driver with the default configuration (the record cache on, as in
    /// Kafka Streams, flushed after each piped record), on an engine it
    /// spawns (or `$POLYSTREAMS_URL`'s).
    pub fn new(application_id: impl Into<String>) -> Result<TopologyTestDriver> {
        TopologyTestDriver::with_config(application_id, Config::new())
    }

    /// A driver with `config` (e.g. `Config::new().statestore_cache_max_bytes(0)`
    /// turns the record cache off).
    pub fn with_config(application_id: impl Into<String>, config: Config) -> Result<TopologyTestDriver> {
        let app = App::builder(application_id).config(config.set("polystreams.test.driver", "true")).build()?;
        Ok(TopologyTestDriver { app, host: Mutex::new(None) })
    }

    fn session(&self) -> String {
        self.app.inner.session.id.clone()
    }

    fn ensure_started(&self) -> Result<()> {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        if host.is_some() {
            return Ok(());
        }
        self.app.start()?;
        let app = self.app.clone();
        *host = Some(std::thread::spawn(move || app.run()));
        // Returns once the tasks are assigned (the session waits for them).
        self.app
            .inner
            .session
            .client
            .advance_wall_clock(&pb::AdvanceWallClockRequest { session_id: self.session(), millis: 0 })?;
        Ok(())
    }

    /// Writes one record to `topic` at the wall clock's time and returns
    /// once the topology has processed it completely (TestInputTopic.pipeInput).
    /// See [`pipe_record`](Self::pipe_record).
    pub fn pipe_input<K: Serde, V: Serde>(&self, topic: &str, key: K, value: V) -> Result<()> {
        self.pipe_record(topic, key, value, None, &[])
    }

    /// Writes one record to `topic` with a timestamp (epoch ms; None: the
    /// wall clock's) and headers, and returns once the topology has processed
    /// it completely: through every repartition topic, with the record cache
    /// flushed. Key and value are encoded with `K`'s and `V`'s serdes.
    ///
    /// Fails with [`Error::InvalidArgument`] naming the topic when the
    /// topology does not read it, and with [`Error::Processing`] naming the
    /// record and node when a closure failed for it (the topology is then
    /// stopped, as a Kafka Streams application is).
    pub fn pipe_record<K: Serde, V: Serde>(
        &self,
        topic: &str,
        key: K,
        value: V,
        timestamp: Option<i64>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> Result<()> {
        self.ensure_started()?;
        let encode =
            |what: &str, serde: &str, f: &dyn Fn(&mut Vec<u8>) -> std::result::Result<bool, crate::SerdeError>| {
                let mut out = Vec::new();
                match f(&mut out) {
                    Ok(true) => Ok(Some(out)),
                    Ok(false) => Ok(None),
                    Err(e) => Err(Error::InvalidArgument {
                        code: "invalid_argument".into(),
                        message: format!("pipe_input({topic:?}): the {what} does not encode as {serde}: {e}"),
                    }),
                }
            };
        let k = encode("key", K::NAME, &|out| key.encode(K::NAME, out))?;
        let v = encode("value", V::NAME, &|out| value.encode(V::NAME, out))?;
        let rec = pb::TestRecord {
            topic: topic.to_owned(),
            key: k,
            value: v,
            timestamp_ms: timestamp,
            headers: headers
                .iter()
                .map(|(k, v)| pb::TestHeader { key: (*k).to_owned(), value: v.map(<[u8]>::to_vec) })
                .collect(),
        };
        let resp = self
            .app
            .inner
            .session
            .client
            .pipe_input(&pb::PipeInputRequest { session_id: self.session(), records: vec![rec] })?;
        if !resp.error.is_empty() {
            return Err(session_error(&resp));
        }
        Ok(())
    }

    /// The records the topology wrote to `topic` since the last read of it,
    /// oldest first (TestOutputTopic.readRecordsToList), decoded as `K` and
    /// `V`. Fails with [`Error::InvalidArgument`] naming the topic when the
    /// topology does not write it.
    pub fn read_output<K: Serde, V: Serde>(&self, topic: &str) -> Result<Vec<TestRecord<K, V>>> {
        self.ensure_started()?;
        let resp = self
            .app
            .inner
            .session
            .client
            .read_output(&pb::ReadOutputRequest { session_id: self.session(), topic: topic.to_owned() })?;
        let undecodable = |what: &str, e: crate::SerdeError| {
            Error::internal(format!("read_output({topic:?}): a record's {what} does not decode: {e}"))
        };
        resp.records
            .into_iter()
            .map(|r| {
                Ok(TestRecord {
                    key: K::decode(&resp.key_serde, r.key.as_deref()).map_err(|e| undecodable("key", e))?,
                    value: V::decode(&resp.value_serde, r.value.as_deref()).map_err(|e| undecodable("value", e))?,
                    timestamp: r.timestamp_ms.unwrap_or_default(),
                    headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
                })
            })
            .collect()
    }

    /// The latest value per key the topology wrote to `topic` since the last
    /// read (TestOutputTopic.readKeyValuesToMap). `K` is an `Option` to read
    /// records with null keys; a null value (a tombstone) is kept when `V`
    /// is an `Option`.
    pub fn read_key_values_to_map<K: Serde + Eq + Hash, V: Serde>(&self, topic: &str) -> Result<HashMap<K, V>> {
        Ok(self.read_output::<K, V>(topic)?.into_iter().map(|r| (r.key, r.value)).collect())
    }

    /// The key-value store `name` (TopologyTestDriver.getKeyValueStore).
    /// Fails with [`Error::NotFound`] naming the store (and those that exist)
    /// when there is none of that name, and [`Error::InvalidArgument`] for a
    /// window or session store (see [`get_window_store`](Self::get_window_store)).
    pub fn get_store<K: Serde, V: Serde>(&self, name: &str) -> Result<KeyValueStore<K, V>> {
        self.ensure_started()?;
        let q = pb::QueryRequest {
            session_id: self.session(),
            store: name.to_owned(),
            limit: 1,
            query: Some(pb::query_request::Query::All(true)),
            ..Default::default()
        };
        self.app.inner.session.client.query(&q)?;
        Ok(self.app.store(name))
    }

    /// The versioned store `name` (a table materialized with
    /// [`Materialized::versioned`](crate::Materialized::versioned));
    /// [`Error::NotFound`] when there is none of that name,
    /// [`Error::InvalidArgument`] when it is not versioned.
    pub fn get_versioned_store<K: Serde, V: Serde>(
        &self,
        name: &str,
    ) -> Result<crate::store::VersionedKeyValueStore<K, V>> {
        self.ensure_started()?;
        let q = pb::QueryRequest {
            session_id: self.session(),
            store: name.to_owned(),
            limit: 1,
            query: Some(pb::query_request::Query::VersionedGet(pb::VersionedGet { key: Vec::new(), as_of_ms: None })),
            ..Default::default()
        };
        self.app.inner.session.client.query(&q)?;
        Ok(self.app.versioned_store(name))
    }

    /// The window store `name` of a windowed aggregation
    /// (TopologyTestDriver.getWindowStore); [`Error::NotFound`] when there
    /// is none of that name.
    pub fn get_window_store<K: Serde, V: Serde>(&self, name: &str) -> Result<WindowStore<K, V>> {
        self.ensure_started()?;
        let q = pb::QueryRequest {
            session_id: self.session(),
            store: name.to_owned(),
            limit: 1,
            query: Some(pb::query_request::Query::WindowFetch(pb::WindowFetch { key: None, from_ms: 0, to_ms: 0 })),
            ..Default::default()
        };
        self.app.inner.session.client.query(&q)?;
        Ok(self.app.window_store(name))
    }

    /// Moves the driver's wall clock forward (TopologyTestDriver.advanceWallClockTime)
    /// and commits; returns the new wall clock in epoch ms. Records piped
    /// without a timestamp take the wall clock's.
    pub fn advance_wall_clock(&self, by: Duration) -> Result<i64> {
        self.ensure_started()?;
        let millis = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        Ok(self
            .app
            .inner
            .session
            .client
            .advance_wall_clock(&pb::AdvanceWallClockRequest { session_id: self.session(), millis })?
            .wall_clock_ms)
    }

    /// Stops the session (its broker and state go with it) and the engine
    /// the driver spawned. Dropping the driver does the same.
    pub fn close(&self) {
        // Stop first: the host thread's Exchange then answers at once.
        self.app.inner.send_stop();
        if let Some(h) = self.host.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
        self.app.close(Duration::from_secs(60));
    }
}

impl Drop for TopologyTestDriver {
    fn drop(&mut self) {
        self.close();
    }
}
