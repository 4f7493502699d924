//! The one error type of polystreams.

use std::fmt;

/// What can go wrong, one variant per family of Connect error code, as the
/// other SDKs have one exception class each.
///
/// Every variant keeps the engine's `message` (which names the offending
/// method, handle, kind, token, node, or topic/partition/offset) and its
/// Connect `code` (snake case, e.g. `"invalid_argument"`), as
/// [`Error::code`] and [`Error::message`] return them.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The engine (or this SDK) refused a call's arguments: a wrong kind of
    /// handle, a missing topic, an unknown serde, bad configuration. The
    /// session stays usable. Codes `invalid_argument` and `out_of_range`.
    InvalidArgument { code: String, message: String },
    /// A call named something that does not exist: a session, handle, token
    /// or store.
    NotFound { message: String },
    /// A call came at the wrong time, e.g. a builder call after start, or a
    /// query before it.
    FailedPrecondition { message: String },
    /// The engine could not be reached, or stopped answering. Codes
    /// `unavailable` and `deadline_exceeded`.
    Unavailable { code: String, message: String },
    /// The engine binary could not be found or did not start; the message
    /// carries the tail of its standard error.
    EngineStart { message: String },
    /// The running topology failed (state `ERROR`), e.g. because a function
    /// panicked for a record. `topic`, `partition`, `offset` and `node` name
    /// the failed record when the failure was a record's.
    Processing {
        message: String,
        topic: Option<String>,
        partition: Option<i32>,
        offset: Option<i64>,
        node: Option<String>,
    },
    /// Any other Connect error (`internal`, `unknown`, `aborted`, ...).
    Engine { code: String, message: String },
}

/// `Result<T, polystreams::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error for a Connect error code and message.
    pub fn from_code(code: &str, message: impl Into<String>) -> Error {
        let message = message.into();
        match code {
            "invalid_argument" | "out_of_range" => Error::InvalidArgument { code: code.to_owned(), message },
            "not_found" => Error::NotFound { message },
            "failed_precondition" => Error::FailedPrecondition { message },
            "unavailable" | "deadline_exceeded" => Error::Unavailable { code: code.to_owned(), message },
            _ => Error::Engine { code: code.to_owned(), message },
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::from_code("invalid_argument", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Error {
        Error::from_code("internal", message)
    }

    /// The Connect code, snake case (`invalid_argument`, `not_found`, ...);
    /// `aborted` for [`Error::Processing`], `unavailable` for
    /// [`Error::EngineStart`].
    pub fn code(&self) -> &str {
        match self {
            Error::InvalidArgument { code, .. } | Error::Unavailable { code, .. } | Error::Engine { code, .. } => code,
            Error::NotFound { .. } => "not_found",
            Error::FailedPrecondition { .. } => "failed_precondition",
            Error::EngineStart { .. } => "unavailable",
            Error::Processing { .. } => "aborted",
        }
    }

    /// The engine's (or the SDK's) description of what failed.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument { message, .. }
            | Error::NotFound { message }
            | Error::FailedPrecondition { message }
            | Error::Unavailable { message, .. }
            | Error::EngineStart { message }
            | Error::Processing { message, .. }
            | Error::Engine { message, .. } => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message(), self.code())
    }
}

impl std::error::Error for Error {}

/// Parses "record at <topic>/<partition>@<offset> failed in node <node>:"
/// out of an engine message, for engines that send no failed_record.
pub(crate) fn record_context(message: &str) -> Option<(String, i32, i64, String)> {
    let rest = &message[message.find("record at ")? + "record at ".len()..];
    let (place, rest) = rest.split_once(" failed in node ")?;
    let (node, _) = rest.split_once(':')?;
    let (topic, po) = place.rsplit_once('/')?;
    let (partition, offset) = po.split_once('@')?;
    Some((topic.to_owned(), partition.parse().ok()?, offset.parse().ok()?, node.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_variants() {
        assert!(matches!(Error::from_code("invalid_argument", "x"), Error::InvalidArgument { .. }));
        assert!(matches!(Error::from_code("not_found", "x"), Error::NotFound { .. }));
        assert!(matches!(Error::from_code("failed_precondition", "x"), Error::FailedPrecondition { .. }));
        assert!(matches!(Error::from_code("deadline_exceeded", "x"), Error::Unavailable { .. }));
        let e = Error::from_code("internal", "boom");
        assert_eq!(e.code(), "internal");
        assert_eq!(e.to_string(), "boom [internal]");
    }

    #[test]
    fn record_context_parses_the_engine_text() {
        let m = "engine: record at orders/3@1842 failed in node KSTREAM-MAPVALUES-0000000001: panic: no";
        assert_eq!(record_context(m), Some(("orders".into(), 3, 1842, "KSTREAM-MAPVALUES-0000000001".into())));
        assert_eq!(record_context("something else"), None);
    }
}
