//! The engine session as the builder sees it: functions registered under
//! tokens, Build calls answered with [`Handle`]s. [`App`](crate::App)
//! holds one, and so does every stream, table and store made from it; the
//! builder modules (dsl, fold, table, window, join*, store) depend on this
//! module, never on app.rs, so the crate's modules import one another
//! without circles (tests/modules.rs).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::bundle::Func;
use crate::client::Client;
use crate::errors::{Error, Result};
use crate::pb::{self, build_request::Operation as Op};

/// What a handle stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    Stream,
    GroupedStream,
    Table,
    GroupedTable,
    /// A TimeWindowedKStream.
    WindowedStream,
    /// A SessionWindowedKStream.
    SessionWindowedStream,
    /// A GlobalKTable.
    GlobalTable,
    /// A CogroupedKStream.
    CogroupedStream,
    /// A TimeWindowedCogroupedKStream.
    WindowedCogroupedStream,
    /// A SessionWindowedCogroupedKStream.
    SessionWindowedCogroupedStream,
}

/// The engine's answer to a builder call: an opaque id, the kind of thing it
/// names, the serdes of its records and the processor node they come out of
/// (e.g. `KSTREAM-MAPVALUES-0000000001`); for a table kept in a store, the
/// store's name (else empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    pub id: u64,
    pub kind: Kind,
    pub key_serde: String,
    pub value_serde: String,
    pub node: String,
    pub store: String,
}

impl Handle {
    pub(crate) fn from_proto(h: pb::Handle) -> Result<Handle> {
        let kind = match pb::Kind::try_from(h.kind).ok() {
            Some(pb::Kind::Stream) => Kind::Stream,
            Some(pb::Kind::GroupedStream) => Kind::GroupedStream,
            Some(pb::Kind::Table) => Kind::Table,
            Some(pb::Kind::GroupedTable) => Kind::GroupedTable,
            Some(pb::Kind::WindowedStream) => Kind::WindowedStream,
            Some(pb::Kind::SessionWindowedStream) => Kind::SessionWindowedStream,
            Some(pb::Kind::GlobalTable) => Kind::GlobalTable,
            Some(pb::Kind::CogroupedStream) => Kind::CogroupedStream,
            Some(pb::Kind::WindowedCogroupedStream) => Kind::WindowedCogroupedStream,
            Some(pb::Kind::SessionWindowedCogroupedStream) => Kind::SessionWindowedCogroupedStream,
            _ => {
                return Err(Error::internal(format!(
                    "handle {} has kind {}, which this SDK does not know",
                    h.id, h.kind
                )))
            }
        };
        Ok(Handle { id: h.id, kind, key_serde: h.key_serde, value_serde: h.value_serde, node: h.node, store: h.store })
    }
}

/// An open session of the engine: its id, the client that calls it, the
/// functions registered under their tokens, and what the builder learnt
/// (store key serdes, source topics). Safe for concurrent use.
pub(crate) struct Session {
    pub(crate) application_id: String,
    /// The engine's session id.
    pub(crate) id: String,
    pub(crate) client: Client,
    pub(crate) functions: Mutex<HashMap<u32, Func>>,
    /// Store name -> key serde, of the tables built.
    pub(crate) store_key_serdes: Mutex<HashMap<String, String>>,
    /// The topics streams and tables read, in builder order (for the
    /// embedded broker's hint).
    pub(crate) sources: Mutex<Vec<String>>,
    /// Window stores added for processors: name -> window size (ms).
    pub(crate) window_sizes: Mutex<HashMap<String, i64>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    pub(crate) fn new(application_id: String, id: String, client: Client) -> Session {
        Session {
            application_id,
            id,
            client,
            functions: Mutex::new(HashMap::new()),
            store_key_serdes: Mutex::new(HashMap::new()),
            sources: Mutex::new(Vec::new()),
            window_sizes: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn register(&self, name: &str, f: Func) -> Result<u32> {
        self.register_with(name, f, pb::Metadata::Unspecified)
    }

    /// Registers a function that asks for the records' metadata (or not).
    pub(crate) fn register_with(&self, name: &str, f: Func, metadata: pb::Metadata) -> Result<u32> {
        let req = pb::RegisterFunctionRequest {
            session_id: self.id.clone(),
            name: name.to_owned(),
            metadata: metadata as i32,
        };
        let token = self.client.register_function(&req)?.token;
        lock(&self.functions).insert(token, f);
        Ok(token)
    }

    /// Forgets functions registered for a call the engine refused.
    pub(crate) fn forget(&self, tokens: &[u32]) {
        let mut f = lock(&self.functions);
        for t in tokens {
            f.remove(t);
        }
    }

    /// One Build call; on refusal the functions registered for it are forgotten.
    fn call_build(&self, op: Op, tokens: &[u32]) -> Result<pb::BuildResponse> {
        let req = pb::BuildRequest { session_id: self.id.clone(), operation: Some(op) };
        let resp = self.client.build(&req);
        if resp.is_err() {
            self.forget(tokens);
        }
        resp
    }

    /// A Build call answered with branch handles (a split), in the order the
    /// engine gives them.
    pub(crate) fn build_branches(&self, op: Op, tokens: &[u32]) -> Result<Vec<Handle>> {
        self.call_build(op, tokens)?.branches.into_iter().map(Handle::from_proto).collect()
    }

    /// One Build call; on refusal the functions registered for it are forgotten.
    pub(crate) fn build(&self, op: Op, tokens: &[u32]) -> Result<Option<Handle>> {
        let topics = match &op {
            Op::Stream(s) => s.topics.clone(),
            Op::Table(t) => vec![t.topic.clone()],
            Op::GlobalTable(g) => vec![g.topic.clone()],
            _ => Vec::new(),
        };
        let resp = self.call_build(op, tokens)?;
        lock(&self.sources).extend(topics);
        let h = resp.handle.map(Handle::from_proto).transpose()?;
        if let Some(h) = &h {
            if !h.store.is_empty() && !h.key_serde.is_empty() {
                lock(&self.store_key_serdes).insert(h.store.clone(), h.key_serde.clone());
            }
        }
        Ok(h)
    }
}

pub(crate) fn fn_name<F>(op: &str) -> String {
    format!("{op} {}", std::any::type_name::<F>())
}

pub(crate) fn expect_handle(h: Option<Handle>, op: &str) -> Result<Handle> {
    h.ok_or_else(|| Error::internal(format!("Build({op}): the engine answered no handle")))
}
