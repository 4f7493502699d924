#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct OpenSessionRequest {
    /// application.id: names the consumer group, internal topics and state.
    #[prost(string, tag="1")]
    pub application_id: ::prost::alloc::string::String,
    /// Kafka Streams style configuration: bootstrap.servers,
    /// processing.guarantee (at_least_once | exactly_once_v2),
    /// commit.interval.ms, and polystreams.* settings. Absent keys take their
    /// documented defaults; bootstrap.servers defaults to the engine's --brokers.
    /// Values of credential keys (sasl.password, ...) are never echoed back.
    #[prost(map="string, string", tag="2")]
    pub config: ::std::collections::HashMap<::prost::alloc::string::String, ::prost::alloc::string::String>,
    /// What the SDK's host understands beyond this protocol's base, so that
    /// the engine may use it: "fold_value_refs" (Bundle.value_refs) and
    /// "fold_programs" (Bundle.fold_bases). Unknown features are ignored.
    #[prost(string, repeated, tag="3")]
    pub host_features: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct OpenSessionResponse {
    /// Opaque; names the session in every later call.
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// The effective configuration, credentials replaced by "\[hidden\]".
    #[prost(map="string, string", tag="2")]
    pub config: ::std::collections::HashMap<::prost::alloc::string::String, ::prost::alloc::string::String>,
    /// The engine's version, which is also its protocol's: engine, protocol
    /// and SDKs share one version (the repository's VERSION file). An SDK
    /// refuses an engine whose major version (minor, before 1.0) differs from
    /// its own. "dev" from an unstamped build (go build without make), which
    /// SDKs accept; empty from engines older than this field.
    #[prost(string, tag="3")]
    pub version: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RegisterFunctionRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// A human-readable name (e.g. a Python qualname), used in describe output
    /// and error messages only. May be empty.
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RegisterFunctionResponse {
    /// The token that Build operators name; unique within the session, never 0.
    #[prost(uint32, tag="1")]
    pub token: u32,
}
/// Handle names a stream, grouped stream or table the engine built. Handles are
/// opaque and valid only within their session.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Handle {
    #[prost(uint64, tag="1")]
    pub id: u64,
    #[prost(enumeration="Kind", tag="2")]
    pub kind: i32,
    /// Serde names of the records this handle carries: bytes, string, json,
    /// long, integer, double; a windowed table's keys (and those of the
    /// stream it turns into) are "windowed(<serde>,<size ms>)" or
    /// "session-windowed(<serde>)" (see WindowedByOp).
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub value_serde: ::prost::alloc::string::String,
    /// The processor node the handle's records come out of.
    #[prost(string, tag="5")]
    pub node: ::prost::alloc::string::String,
    /// For a table materialized in a store: the store's name (for Query).
    #[prost(string, tag="6")]
    pub store: ::prost::alloc::string::String,
}
/// Materialized names and types a state store. Present with an empty
/// store_name means "materialized, name generated" (Kafka Streams burns a
/// name-counter number in that case; see docs/design/protocol.md).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Materialized {
    #[prost(string, tag="1")]
    pub store_name: ::prost::alloc::string::String,
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    /// Materialized.withLoggingEnabled(config): topic configs of the store's
    /// changelog (e.g. "min.compaction.lag.ms"), applied when the engine
    /// creates it. A key-value store's changelog stays compacted: a
    /// cleanup.policy without "compact" is refused.
    #[prost(map="string, string", tag="4")]
    pub changelog_config: ::std::collections::HashMap<::prost::alloc::string::String, ::prost::alloc::string::String>,
    /// Materialized.withRetention, for window and session stores: how long
    /// (ms) a window is kept after its start (0: window size + grace, Kafka
    /// Streams' default); at least size + grace.
    #[prost(int64, tag="5")]
    pub retention_ms: i64,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StreamOp {
    /// One or more topics; all are read by one source node.
    #[prost(string, repeated, tag="1")]
    pub topics: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
    /// Serdes of the topic's records; empty means bytes.
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    /// Consumed.as / Named: the source node's name; empty means generated.
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
}
/// WindowedByOp is KGroupedStream.windowedBy: count, reduce and aggregate on
/// the result keep one aggregate per key and window, and make a KTable whose
/// keys are windowed (serde "windowed(<key serde>,<size ms>)" for time and
/// sliding windows, "session-windowed(<key serde>)" for session windows;
/// encoded as Kafka Streams' TimeWindowedSerializer and
/// SessionWindowedSerializer encode them).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct WindowedByOp {
    /// A grouped stream.
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(oneof="windowed_by_op::Windows", tags="2, 3, 4")]
    pub windows: ::core::option::Option<windowed_by_op::Windows>,
}
/// Nested message and enum types in `WindowedByOp`.
pub mod windowed_by_op {
    #[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Windows {
        #[prost(message, tag="2")]
        Time(super::TimeWindows),
        #[prost(message, tag="3")]
        Sliding(super::SlidingWindows),
        #[prost(message, tag="4")]
        Session(super::SessionWindows),
    }
}
/// TimeWindows: fixed-size windows aligned to the epoch; tumbling when
/// advance is 0 or equals size, hopping otherwise.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TimeWindows {
    /// > 0.
    #[prost(int64, tag="1")]
    pub size_ms: i64,
    /// 0 < advance <= size; 0 means size (tumbling).
    #[prost(int64, tag="2")]
    pub advance_ms: i64,
    /// >= 0: how long after a window's end records are still accepted
    /// (ofSizeWithNoGrace: 0).
    #[prost(int64, tag="3")]
    pub grace_ms: i64,
}
/// SlidingWindows: windows of time_difference, both ends inclusive, made
/// as records arrive (KStreamSlidingWindowAggregate).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SlidingWindows {
    /// > 0.
    #[prost(int64, tag="1")]
    pub time_difference_ms: i64,
    /// >= 0.
    #[prost(int64, tag="2")]
    pub grace_ms: i64,
}
/// SessionWindows: a key's records at most inactivity_gap apart share a
/// session; a record between two sessions merges them.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SessionWindows {
    /// > 0.
    #[prost(int64, tag="1")]
    pub inactivity_gap_ms: i64,
    /// >= 0.
    #[prost(int64, tag="2")]
    pub grace_ms: i64,
}
/// EmitStrategyOp is TimeWindowedKStream.emitStrategy /
/// SessionWindowedKStream.emitStrategy: the windowed stream's count, reduce
/// and aggregate emit as strategy says. It adds no node and takes no name
/// number; the handle made is a windowed stream of the same kind.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct EmitStrategyOp {
    /// A windowed stream (time, sliding or session windows).
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// Unspecified means onWindowUpdate.
    #[prost(enumeration="EmitStrategy", tag="2")]
    pub strategy: i32,
}
/// ToTableOp is KStream.toTable: a table of the stream's records, as upserts
/// (a null value deletes its key; a record with a null key is dropped and
/// counted). Node KSTREAM-TOTABLE-<n> (a KTableSource), or name. A stream
/// whose key an upstream operator changed is repartitioned first (topic
/// "<node name>-repartition").
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ToTableOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// Named: the processor's name; empty means generated.
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
    /// Materialized: a store_name makes the table's store exist and be
    /// queryable; absent or with an empty store_name, the store is named
    /// "KSTREAM-TOTABLE-STATE-STORE-<n>" and exists only if a downstream
    /// operator needs it (as in Kafka Streams). Its serdes, when given,
    /// replace the stream's.
    #[prost(message, optional, tag="3")]
    pub materialized: ::core::option::Option<Materialized>,
}
/// SuppressOp is KTable.suppress(Suppressed.untilWindowCloses(unbounded())):
/// on a windowed aggregation's table, exactly one result per window, once
/// stream time passes the window's end plus grace.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SuppressOp {
    /// A windowed table (a windowed count, reduce or aggregate).
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// Suppressed.withName: the node's name (and its store's, "<name>-store");
    /// empty means generated.
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
}
/// TableOp is StreamsBuilder.table: a KTable over a topic, whose records are
/// upserts (a null value deletes its key).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TableOp {
    #[prost(string, tag="1")]
    pub topic: ::prost::alloc::string::String,
    /// Serdes of the topic's records; empty means bytes.
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    /// Consumed.as: names the table source node, and the source node
    /// "<name>-source" (Kafka 3.x); empty means generated.
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
    /// Materialized.as: a named store makes the table queryable. Absent or with
    /// an empty store_name, the store is named "<topic>-STATE-STORE-<n>" and
    /// exists only if a downstream operator needs it (as in Kafka Streams).
    #[prost(message, optional, tag="5")]
    pub materialized: ::core::option::Option<Materialized>,
}
/// MapValuesOp is KStream.mapValues, or KTable.mapValues when input is a table.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct MapValuesOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    /// The serde of the new values; empty keeps the input's value serde.
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
    /// Tables only: materialize the result in a store (queryable when named).
    #[prost(message, optional, tag="5")]
    pub materialized: ::core::option::Option<Materialized>,
}
/// FilterOp is KStream.filter, or KTable.filter when input is a table (a
/// table forwards a tombstone for a record that does not pass).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FilterOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
    /// Tables only, as in MapValuesOp.
    #[prost(message, optional, tag="4")]
    pub materialized: ::core::option::Option<Materialized>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FilterNotOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
    /// Tables only, as in MapValuesOp.
    #[prost(message, optional, tag="4")]
    pub materialized: ::core::option::Option<Materialized>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FlatMapValuesOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct MapOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    /// Serdes of the new keys and values; empty keeps the input's.
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub value_serde: ::prost::alloc::string::String,
    #[prost(string, tag="5")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SelectKeyOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PeekOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ForeachOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GroupByKeyOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// Grouped.with serdes; empty keeps the input's.
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    /// Grouped.as: names the repartition topic if one is needed.
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
}
/// GroupByOp is KStream.groupBy (token selects the new key from (key,
/// value): OPERATION_SELECT_KEY) or KTable.groupBy (token maps (key, value)
/// to the new (key, value): OPERATION_MAP), which makes a grouped table.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GroupByOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub value_serde: ::prost::alloc::string::String,
    #[prost(string, tag="5")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct CountOp {
    /// A grouped stream or a grouped table.
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// Absent: count() with no Materialized.
    #[prost(message, optional, tag="2")]
    pub materialized: ::core::option::Option<Materialized>,
    /// Named: the aggregate processor's name; empty means generated.
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ReduceOp {
    /// A grouped stream or a grouped table.
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// The reducer (for a grouped table: the adder): a host function
    /// fn(aggregate, value) -> aggregate, or a built-in. Exactly one of the two
    /// is set.
    #[prost(uint32, tag="2")]
    pub token: u32,
    #[prost(enumeration="Reducer", tag="3")]
    pub builtin: i32,
    /// Absent: the store is named for you and keeps the values' serde.
    #[prost(message, optional, tag="4")]
    pub materialized: ::core::option::Option<Materialized>,
    #[prost(string, tag="5")]
    pub name: ::prost::alloc::string::String,
    /// Grouped tables only: fn(aggregate, old value) -> aggregate, removing a
    /// value the table replaced or deleted. Required with a host adder; with
    /// REDUCER_SUM the engine subtracts (the other built-ins cannot be undone
    /// and are refused on a grouped table).
    #[prost(uint32, tag="6")]
    pub subtractor_token: u32,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AggregateOp {
    /// A grouped stream or a grouped table.
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// fn() -> the initial aggregate of a key.
    #[prost(uint32, tag="2")]
    pub initializer_token: u32,
    /// fn(key, value, aggregate) -> aggregate (for a grouped table: the adder).
    #[prost(uint32, tag="3")]
    pub aggregator_token: u32,
    /// materialized.value_serde is the aggregate's serde (default: the values').
    #[prost(message, optional, tag="4")]
    pub materialized: ::core::option::Option<Materialized>,
    #[prost(string, tag="5")]
    pub name: ::prost::alloc::string::String,
    /// Grouped tables only (and required there): fn(key, old value, aggregate)
    /// -> aggregate, removing a value the table replaced or deleted.
    #[prost(uint32, tag="6")]
    pub subtractor_token: u32,
    /// Session-windowed streams only (and required there): fn(key, aggregate1,
    /// aggregate2) -> aggregate, merging two sessions a record bridges.
    #[prost(uint32, tag="7")]
    pub merger_token: u32,
}
/// MergeOp is KStream.merge: one stream of both streams' records (node
/// KSTREAM-MERGE-<n>, or name). Both streams must carry the same key and
/// value serdes.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct MergeOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(uint64, tag="2")]
    pub other: u64,
    #[prost(string, tag="3")]
    pub name: ::prost::alloc::string::String,
}
/// SplitOp is KStream.split(Named) with its branches and, optionally, its
/// default branch (BranchedKStream.defaultBranch / noDefaultBranch). Each
/// record goes to the first branch whose predicate passes it
/// (OPERATION_FILTER functions; a predicate sees only the records no earlier
/// one took), else to the default branch, else nowhere. The splitter is
/// KSTREAM-BRANCH-<n> or name; each branch is named the splitter's name
/// followed by the branch's name, or its number (1, 2, ...; the default
/// branch's is 0), as Kafka Streams names them.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SplitOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
    #[prost(message, repeated, tag="3")]
    pub branches: ::prost::alloc::vec::Vec<Branch>,
    #[prost(bool, tag="4")]
    pub default_branch: bool,
    /// Branched.as of the default branch.
    #[prost(string, tag="5")]
    pub default_name: ::prost::alloc::string::String,
}
/// Branch is one branch of a split: fn(key, value) -> bool, and its
/// Branched.as name (empty: its number).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Branch {
    #[prost(uint32, tag="1")]
    pub predicate_token: u32,
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
}
/// RepartitionOp is KStream.repartition(Repartitioned): the stream goes
/// through the topic <application.id>-<name>-repartition (generated name:
/// KSTREAM-REPARTITION-<n>) and on from a new sub-topology; records with a
/// null key are dropped.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RepartitionOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
    /// Repartitioned.withNumberOfPartitions; 0: as many as the sub-topology
    /// writing it has.
    #[prost(int32, tag="3")]
    pub partitions: i32,
}
/// JoinOp is KStream.join(KTable) / KStream.leftJoin(KTable): each stream
/// record is joined with the table's current value for its key (processor
/// KSTREAM-JOIN-<n> / KSTREAM-LEFTJOIN-<n>, or name, which uses the table's
/// store). An inner join drops a record whose key the table does not hold;
/// a left join calls the joiner with a null table value. The stream and the
/// table must be co-partitioned: a stream whose key changed upstream is
/// repartitioned first, as Kafka Streams does; source topics of different
/// partition counts are refused when the application starts.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct JoinOp {
    /// A stream (stream-stream, stream-table, stream-global-table joins) or a
    /// table (table-table and foreign-key joins).
    #[prost(uint64, tag="1")]
    pub input: u64,
    /// The other side: a table (stream-table, table-table, foreign-key), a
    /// stream (stream-stream: windows required) or a global table
    /// (stream-global-table: key_mapper_token required).
    #[prost(uint64, tag="2")]
    pub table: u64,
    /// fn(this value, other value) -> value: OPERATION_VALUE_JOIN (either
    /// value may be absent in left and outer joins).
    #[prost(uint32, tag="3")]
    pub joiner_token: u32,
    /// left and outer are exclusive; neither is an inner join.
    #[prost(bool, tag="4")]
    pub left: bool,
    /// The joined values' serde (default: the input's values').
    #[prost(string, tag="5")]
    pub value_serde: ::prost::alloc::string::String,
    /// Joined.as / StreamJoined.withName / Named: names the processors and any
    /// repartition topic.
    #[prost(string, tag="6")]
    pub name: ::prost::alloc::string::String,
    /// An outer join: stream-stream and table-table only.
    #[prost(bool, tag="7")]
    pub outer: bool,
    /// Stream-stream joins: JoinWindows. Refused for any other join.
    #[prost(message, optional, tag="8")]
    pub windows: ::core::option::Option<JoinWindows>,
    /// Stream-global-table joins: fn(key, value) -> the global table's key,
    /// run as OPERATION_SELECT_KEY with the result in the global table's key
    /// serde. Refused for any other join.
    #[prost(uint32, tag="9")]
    pub key_mapper_token: u32,
    /// Stream-stream joins: StreamJoined.withStoreName, the prefix of both
    /// window stores' names; empty means generated.
    #[prost(string, tag="10")]
    pub store_name: ::prost::alloc::string::String,
    /// Table-table and foreign-key joins: Materialized for the result table.
    #[prost(message, optional, tag="11")]
    pub materialized: ::core::option::Option<Materialized>,
    /// Foreign-key joins (input and table both tables): fn(value) -> the
    /// other table's key, run as OPERATION_MAP_VALUES with the result in the
    /// other table's key serde; a null result joins nothing.
    #[prost(uint32, tag="12")]
    pub foreign_key_token: u32,
    /// A built-in joiner instead of joiner_token (give one of the two): runs in
    /// the engine, no host crossing.
    #[prost(enumeration="Joiner", tag="13")]
    pub builtin_joiner: i32,
}
/// JoinWindows: a record joins the other side's records whose timestamps lie
/// in [ts - before_ms, ts + after_ms]; records later than the window's end
/// plus grace_ms (stream time) are dropped (KIP-633). JoinWindows.of(d) in
/// the SDKs sets before_ms = after_ms = d.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct JoinWindows {
    #[prost(int64, tag="1")]
    pub before_ms: i64,
    #[prost(int64, tag="2")]
    pub after_ms: i64,
    /// ofTimeDifferenceAndGrace; 0 is ofTimeDifferenceWithNoGrace. Negative is
    /// refused.
    #[prost(int64, tag="3")]
    pub grace_ms: i64,
}
/// GlobalTableOp is StreamsBuilder.globalTable: a table of every partition of
/// topic, replicated to every instance and restored before processing.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GlobalTableOp {
    #[prost(string, tag="1")]
    pub topic: ::prost::alloc::string::String,
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
    /// Consumed.as: names the source node; empty means generated.
    #[prost(string, tag="4")]
    pub name: ::prost::alloc::string::String,
    /// Materialized.as: names the store (queryable); empty means
    /// "<topic>-STATE-STORE-<n>".
    #[prost(message, optional, tag="5")]
    pub materialized: ::core::option::Option<Materialized>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ToStreamOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(string, tag="2")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ToOp {
    #[prost(uint64, tag="1")]
    pub input: u64,
    #[prost(string, tag="2")]
    pub topic: ::prost::alloc::string::String,
    /// Produced.with serdes; empty keeps the input's.
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub value_serde: ::prost::alloc::string::String,
    #[prost(string, tag="5")]
    pub name: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct BuildRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// One builder operator. New operators are added as new members.
    #[prost(oneof="build_request::Operation", tags="10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35")]
    pub operation: ::core::option::Option<build_request::Operation>,
}
/// Nested message and enum types in `BuildRequest`.
pub mod build_request {
    /// One builder operator. New operators are added as new members.
    #[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Operation {
        #[prost(message, tag="10")]
        Stream(super::StreamOp),
        #[prost(message, tag="11")]
        MapValues(super::MapValuesOp),
        #[prost(message, tag="12")]
        Filter(super::FilterOp),
        #[prost(message, tag="13")]
        FilterNot(super::FilterNotOp),
        #[prost(message, tag="14")]
        FlatMapValues(super::FlatMapValuesOp),
        #[prost(message, tag="15")]
        Map(super::MapOp),
        #[prost(message, tag="16")]
        SelectKey(super::SelectKeyOp),
        #[prost(message, tag="17")]
        Peek(super::PeekOp),
        #[prost(message, tag="18")]
        Foreach(super::ForeachOp),
        #[prost(message, tag="19")]
        GroupByKey(super::GroupByKeyOp),
        #[prost(message, tag="20")]
        GroupBy(super::GroupByOp),
        #[prost(message, tag="21")]
        Count(super::CountOp),
        #[prost(message, tag="22")]
        ToStream(super::ToStreamOp),
        #[prost(message, tag="23")]
        To(super::ToOp),
        #[prost(message, tag="24")]
        Reduce(super::ReduceOp),
        #[prost(message, tag="25")]
        Aggregate(super::AggregateOp),
        #[prost(message, tag="26")]
        Table(super::TableOp),
        #[prost(message, tag="27")]
        WindowedBy(super::WindowedByOp),
        #[prost(message, tag="28")]
        Suppress(super::SuppressOp),
        #[prost(message, tag="29")]
        Merge(super::MergeOp),
        #[prost(message, tag="30")]
        Split(super::SplitOp),
        #[prost(message, tag="31")]
        Repartition(super::RepartitionOp),
        #[prost(message, tag="32")]
        Join(super::JoinOp),
        #[prost(message, tag="33")]
        GlobalTable(super::GlobalTableOp),
        #[prost(message, tag="34")]
        EmitStrategy(super::EmitStrategyOp),
        #[prost(message, tag="35")]
        ToTable(super::ToTableOp),
    }
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct BuildResponse {
    /// The handle made; absent for terminal operators (to, foreach) and split.
    #[prost(message, optional, tag="1")]
    pub handle: ::core::option::Option<Handle>,
    /// SplitOp: one stream handle per branch, in the order given, the
    /// default branch last; each handle's node is the branch's name.
    #[prost(message, repeated, tag="2")]
    pub branches: ::prost::alloc::vec::Vec<Handle>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DescribeRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// The rendering DescribeResponse.output carries: "text" (as text),
    /// "json", "mermaid", "dot" or "svg". Empty: output is empty.
    #[prost(string, tag="2")]
    pub format: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DescribeResponse {
    /// Identical to Kafka Streams' Topology.describe().toString().
    #[prost(string, tag="1")]
    pub text: ::prost::alloc::string::String,
    /// The same, structured.
    #[prost(message, optional, tag="2")]
    pub topology: ::core::option::Option<TopologyDescription>,
    /// The topology in DescribeRequest.format; empty when no format was asked.
    #[prost(string, tag="3")]
    pub output: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TopologyDescription {
    #[prost(message, repeated, tag="1")]
    pub subtopologies: ::prost::alloc::vec::Vec<Subtopology>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Subtopology {
    #[prost(int32, tag="1")]
    pub id: i32,
    #[prost(message, repeated, tag="2")]
    pub nodes: ::prost::alloc::vec::Vec<Node>,
}
/// Node is one node of a sub-topology, in describe() order.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Node {
    #[prost(string, tag="1")]
    pub name: ::prost::alloc::string::String,
    #[prost(enumeration="node::Type", tag="2")]
    pub r#type: i32,
    /// Sources: the topics read (internal topics without the application.id).
    #[prost(string, repeated, tag="3")]
    pub topics: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
    /// Sinks: the topic written.
    #[prost(string, tag="4")]
    pub topic: ::prost::alloc::string::String,
    /// Processors: the stores used.
    #[prost(string, repeated, tag="5")]
    pub stores: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
    #[prost(string, repeated, tag="6")]
    pub successors: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
    #[prost(string, repeated, tag="7")]
    pub predecessors: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
}
/// Nested message and enum types in `Node`.
pub mod node {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
    #[repr(i32)]
    pub enum Type {
        Unspecified = 0,
        Source = 1,
        Processor = 2,
        Sink = 3,
    }
    impl Type {
        /// String value of the enum field names used in the ProtoBuf definition.
        ///
        /// The values are not transformed in any way and thus are considered stable
        /// (if the ProtoBuf definition does not change) and safe for programmatic use.
        pub fn as_str_name(&self) -> &'static str {
            match self {
                Type::Unspecified => "TYPE_UNSPECIFIED",
                Type::Source => "TYPE_SOURCE",
                Type::Processor => "TYPE_PROCESSOR",
                Type::Sink => "TYPE_SINK",
            }
        }
        /// Creates an enum from field names used in the ProtoBuf definition.
        pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
            match value {
                "TYPE_UNSPECIFIED" => Some(Self::Unspecified),
                "TYPE_SOURCE" => Some(Self::Source),
                "TYPE_PROCESSOR" => Some(Self::Processor),
                "TYPE_SINK" => Some(Self::Sink),
                _ => None,
            }
        }
    }
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StartRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StartResponse {
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ExchangeRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// Names one host worker. Bundles handed to a worker that stops calling are
    /// handed out again to another.
    #[prost(string, tag="2")]
    pub worker_id: ::prost::alloc::string::String,
    /// Results of bundles received earlier, in any order.
    #[prost(message, repeated, tag="3")]
    pub results: ::prost::alloc::vec::Vec<BundleResult>,
    /// How many new bundles the worker takes in this call; 0 only delivers.
    #[prost(int32, tag="4")]
    pub max_bundles: i32,
    /// How long to wait for a bundle when none is ready (capped by the engine).
    #[prost(int32, tag="5")]
    pub wait_ms: i32,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ExchangeResponse {
    #[prost(message, repeated, tag="1")]
    pub bundles: ::prost::alloc::vec::Vec<Bundle>,
    /// The session's state; a host stops its loop when it is STATE_STOPPED or
    /// STATE_ERROR.
    #[prost(enumeration="State", tag="2")]
    pub state: i32,
    /// Set with STATE_ERROR: what failed, naming node, topic, partition, offset.
    #[prost(string, tag="3")]
    pub error: ::prost::alloc::string::String,
    /// Set with STATE_ERROR when a record failed: the same, as fields.
    #[prost(message, optional, tag="4")]
    pub failed_record: ::core::option::Option<RecordContext>,
    /// Restore progress once the topology started (absent before).
    #[prost(message, optional, tag="5")]
    pub restore: ::core::option::Option<RestoreProgress>,
}
/// RecordContext names a record and the node it failed in.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RecordContext {
    #[prost(string, tag="1")]
    pub topic: ::prost::alloc::string::String,
    #[prost(int32, tag="2")]
    pub partition: i32,
    #[prost(int64, tag="3")]
    pub offset: i64,
    #[prost(string, tag="4")]
    pub node: ::prost::alloc::string::String,
}
/// Step is one operator of the chain a bundle runs through.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Step {
    #[prost(uint32, tag="1")]
    pub token: u32,
    #[prost(enumeration="Operation", tag="2")]
    pub operation: i32,
    /// The processor node, for error messages.
    #[prost(string, tag="3")]
    pub node: ::prost::alloc::string::String,
    /// OPERATION_AGGREGATE: the initializer's token.
    #[prost(uint32, tag="4")]
    pub initializer_token: u32,
    /// A table fold (KGroupedTable.reduce / aggregate): the subtractor's token,
    /// with the signature of token's function. 0 for a stream fold.
    #[prost(uint32, tag="5")]
    pub subtractor_token: u32,
    /// An aggregate over session windows: the merger's token, fn(key,
    /// aggregate1, aggregate2) -> aggregate (Merger.apply), which fold
    /// programs call for their merge operands.
    #[prost(uint32, tag="6")]
    pub merger_token: u32,
}
/// Bundle is a run of records of one partition, in offset order, to be passed
/// through a chain of host operators. The layout is columnar: record i's key is
/// keys\[sum(key_lengths[:i\]) : +key_lengths\[i]\], and likewise for values; a
/// length of -1 is a null (no bytes in the column).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Bundle {
    /// Unique within the session; names the bundle in its BundleResult.
    #[prost(uint64, tag="1")]
    pub id: u64,
    /// Applied in order to each record; the outputs of step n feed step n+1.
    #[prost(message, repeated, tag="2")]
    pub steps: ::prost::alloc::vec::Vec<Step>,
    /// Serdes to decode the records with.
    #[prost(string, tag="3")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="4")]
    pub value_serde: ::prost::alloc::string::String,
    /// Serdes to encode the outputs of the last step with.
    #[prost(string, tag="5")]
    pub output_key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="6")]
    pub output_value_serde: ::prost::alloc::string::String,
    #[prost(sint32, repeated, tag="7")]
    pub key_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="8")]
    pub keys: ::prost::alloc::vec::Vec<u8>,
    #[prost(sint32, repeated, tag="9")]
    pub value_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="10")]
    pub values: ::prost::alloc::vec::Vec<u8>,
    /// Where the records came from, for error messages: topic and partition, and
    /// the offset of record i is offsets\[i\].
    #[prost(string, tag="11")]
    pub topic: ::prost::alloc::string::String,
    #[prost(int32, tag="12")]
    pub partition: i32,
    #[prost(int64, repeated, tag="13")]
    pub offsets: ::prost::alloc::vec::Vec<i64>,
    /// Record timestamps, epoch milliseconds.
    #[prost(int64, repeated, tag="14")]
    pub timestamps: ::prost::alloc::vec::Vec<i64>,
    /// Fold bundles (one OPERATION_REDUCE or OPERATION_AGGREGATE step) fold
    /// each key's values into its aggregate on the host: one crossing per
    /// bundle, however hot a key. The records are grouped by key: the keys
    /// column holds one key per group, group g's group_sizes\[g\] values follow
    /// one another in the values column (in offset order; value lengths are
    /// never -1, the engine drops null values as Kafka Streams does), and
    /// aggregate g is the group's current aggregate. An aggregate of length -1
    /// means the key has none yet: the initializer starts it (aggregate), or the
    /// first value becomes it without calling the reducer (reduce). offsets and
    /// timestamps are per value.
    #[prost(sint32, repeated, tag="15")]
    pub group_sizes: ::prost::alloc::vec::Vec<i32>,
    #[prost(sint32, repeated, tag="16")]
    pub aggregate_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="17")]
    pub aggregates: ::prost::alloc::vec::Vec<u8>,
    /// The serde of the aggregates (in and out).
    #[prost(string, tag="18")]
    pub aggregate_serde: ::prost::alloc::string::String,
    /// Table fold bundles (the step has a subtractor_token): each value is a
    /// change of the grouped table. Value i's old value is in old_values
    /// (old_value_lengths\[i\], -1 = none), and value_lengths\[i\] may be -1 (the
    /// key was deleted or moved away). For each change, in order, as Kafka
    /// Streams' KTableAggregate / KTableReduce do: if the old value and the
    /// aggregate exist, the subtractor removes the old value; then, if the new
    /// value exists, the adder adds it (to the initializer's aggregate, or for
    /// reduce becoming the aggregate, when there is none). The output of a
    /// change is the aggregate after it; an output length of -1 means the key
    /// has no aggregate (none existed and the change only removed).
    #[prost(sint32, repeated, tag="19")]
    pub old_value_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="20")]
    pub old_values: ::prost::alloc::vec::Vec<u8>,
    /// A fold bundle over windows, to a host with the "fold_value_refs"
    /// feature: the value, offset and timestamp columns hold each record once
    /// and fold value i (group_sizes count fold values; output counts and
    /// failures index them) is record value_refs\[i\], so that a record falling
    /// into 12 windows is sent and decoded once. Empty: fold value i is record
    /// i.
    #[prost(sint32, repeated, tag="21")]
    pub value_refs: ::prost::alloc::vec::Vec<i32>,
    /// A fold bundle whose intermediate aggregates the engine does not need
    /// (its record cache keeps only each key's last update): the host may
    /// answer one aggregate per group, its last (output count 1 for the
    /// group's last value, 0 for the others), or one per value as usual.
    #[prost(bool, tag="22")]
    pub final_only: bool,
    /// A fold program: a fold bundle over session or sliding windows, to a
    /// host with the "fold_programs" feature. Which aggregate a fold value
    /// starts from is data here, not its group's previous output: the engine
    /// runs Kafka Streams' window algorithm (which windows a record makes,
    /// updates and merges depends only on times) and sends the folds it
    /// needs, in order, one crossing per batch. Groups still hold one key
    /// each; value_refs is always set. Fold value i starts from the aggregate
    /// fold_bases\[i\] names; then its merge_counts\[i\] merge operands (the next
    /// ones in merge_refs) are merged in, each by the step's merger
    /// (merger(key, aggregate so far, operand); for reduce the reducer, a
    /// missing side taking the other); then the value is folded in as usual
    /// (reduce: a missing aggregate becomes the value). Its one output is the
    /// result. A reference r names: -1, the initializer's aggregate
    /// (initializer(); for reduce: none); 0 <= r < len(aggregate_lengths),
    /// aggregate r of the aggregates column (here a pool, not one per group);
    /// r >= len(aggregate_lengths), the output of fold value r -
    /// len(aggregate_lengths), an earlier value of the same group. A value
    /// whose call fails fails alone, and so does every value that refers to
    /// its output. final_only is never set.
    #[prost(sint32, repeated, tag="23")]
    pub fold_bases: ::prost::alloc::vec::Vec<i32>,
    #[prost(sint32, repeated, tag="24")]
    pub merge_counts: ::prost::alloc::vec::Vec<i32>,
    #[prost(sint32, repeated, tag="25")]
    pub merge_refs: ::prost::alloc::vec::Vec<i32>,
    /// OPERATION_VALUE_JOIN: record i's other value (the table's), columnar
    /// like values (-1: none), in other_value_serde.
    #[prost(sint32, repeated, tag="26")]
    pub other_value_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="27")]
    pub other_values: ::prost::alloc::vec::Vec<u8>,
    #[prost(string, tag="28")]
    pub other_value_serde: ::prost::alloc::string::String,
}
/// BundleResult gives one outcome per input record: zero, one or many outputs,
/// or a failure. For a fold bundle the records are its values: each value's
/// outcome is one output, the key's aggregate after folding it in (so the
/// engine can emit every update, as Kafka Streams does without a cache).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct BundleResult {
    #[prost(uint64, tag="1")]
    pub bundle_id: u64,
    /// output_counts\[i\] is how many outputs record i produced (0 for a filtered
    /// or failed record). Outputs are in the columns in record order.
    #[prost(sint32, repeated, tag="2")]
    pub output_counts: ::prost::alloc::vec::Vec<i32>,
    /// Output keys, columnar like Bundle.keys. Empty when no step of the chain
    /// changes keys: output j then keeps its input record's key.
    #[prost(sint32, repeated, tag="3")]
    pub key_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="4")]
    pub keys: ::prost::alloc::vec::Vec<u8>,
    #[prost(sint32, repeated, tag="5")]
    pub value_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="6")]
    pub values: ::prost::alloc::vec::Vec<u8>,
    #[prost(message, repeated, tag="7")]
    pub failures: ::prost::alloc::vec::Vec<RecordFailure>,
}
/// RecordFailure says why one record of a bundle failed.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RecordFailure {
    /// Index of the record in the bundle.
    #[prost(int32, tag="1")]
    pub index: i32,
    /// Index of the step that failed.
    #[prost(int32, tag="2")]
    pub step: i32,
    /// The host's error, e.g. "ValueError: invalid literal for int()".
    #[prost(string, tag="3")]
    pub message: ::prost::alloc::string::String,
    /// What failed: the record's key or value did not decode with its serde
    /// (deserialization), or the user's function raised or its result did
    /// not encode (processing). The engine applies
    /// default.deserialization.exception.handler or processing.exception.handler
    /// accordingly. Unspecified (an older host) counts as processing.
    #[prost(enumeration="record_failure::Kind", tag="4")]
    pub kind: i32,
}
/// Nested message and enum types in `RecordFailure`.
pub mod record_failure {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
    #[repr(i32)]
    pub enum Kind {
        Unspecified = 0,
        Deserialization = 1,
        Processing = 2,
    }
    impl Kind {
        /// String value of the enum field names used in the ProtoBuf definition.
        ///
        /// The values are not transformed in any way and thus are considered stable
        /// (if the ProtoBuf definition does not change) and safe for programmatic use.
        pub fn as_str_name(&self) -> &'static str {
            match self {
                Kind::Unspecified => "KIND_UNSPECIFIED",
                Kind::Deserialization => "KIND_DESERIALIZATION",
                Kind::Processing => "KIND_PROCESSING",
            }
        }
        /// Creates an enum from field names used in the ProtoBuf definition.
        pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
            match value {
                "KIND_UNSPECIFIED" => Some(Self::Unspecified),
                "KIND_DESERIALIZATION" => Some(Self::Deserialization),
                "KIND_PROCESSING" => Some(Self::Processing),
                _ => None,
            }
        }
    }
}
/// RestoreProgress says how far restoring stores from their changelogs has
/// come: over the store partitions this engine restores or restored since its
/// last rebalance. restored_records counts changelog records read so far;
/// total_records is what the restore had to read when it began (the changelog
/// end offset minus the checkpoint), so the restore is done when both are equal
/// (and total 0 means nothing had to be restored).
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RestoreProgress {
    #[prost(int64, tag="1")]
    pub restored_records: i64,
    #[prost(int64, tag="2")]
    pub total_records: i64,
    /// Store partitions still restoring, and in total.
    #[prost(int32, tag="3")]
    pub restoring_partitions: i32,
    #[prost(int32, tag="4")]
    pub total_partitions: i32,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetStateRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetStateResponse {
    #[prost(enumeration="State", tag="1")]
    pub state: i32,
    #[prost(string, tag="2")]
    pub error: ::prost::alloc::string::String,
    /// Set with STATE_ERROR when a record failed.
    #[prost(message, optional, tag="3")]
    pub failed_record: ::core::option::Option<RecordContext>,
    /// Restore progress once the topology started (absent before).
    #[prost(message, optional, tag="4")]
    pub restore: ::core::option::Option<RestoreProgress>,
    /// Records this engine's tasks dropped since the topology started (Kafka
    /// Streams' dropped-records-total): a null key or value an aggregation
    /// skips, a record too late for every window it falls in.
    #[prost(int64, tag="5")]
    pub dropped_records: i64,
    /// The host's health as this engine sees it (docs/scale-out.md), 0 and
    /// false before the topology started.
    /// bundles_waiting: bundles this session's tasks handed to the host and
    /// have no answer for yet, whether queued for a worker or taken by one and
    /// being processed (0: the tasks wait for no host).
    #[prost(int32, tag="6")]
    pub bundles_waiting: i32,
    /// host_idle_ms: milliseconds since a host worker of this session last
    /// called Exchange (since the session opened, before the first call); 0
    /// while a worker is in an Exchange call.
    #[prost(int64, tag="7")]
    pub host_idle_ms: i64,
    /// host_stalled: bundles are waiting and no worker has called Exchange
    /// for 5 s. The tasks make no progress until a host calls Exchange or the
    /// session expires; the state stays STATE_RUNNING meanwhile.
    #[prost(bool, tag="8")]
    pub host_stalled: bool,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StopRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StopResponse {
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// The store's name, as describe() shows it.
    #[prost(string, tag="2")]
    pub store: ::prost::alloc::string::String,
    /// At most this many entries (0: at most 100,000; asking for more than
    /// that is refused).
    #[prost(int32, tag="7")]
    pub limit: i32,
    /// Keys are serialized with the store's key serde; the order of range and
    /// all is the order of serialized keys (as in Kafka Streams' RocksDB).
    #[prost(oneof="query_request::Query", tags="3, 4, 5, 6, 8")]
    pub query: ::core::option::Option<query_request::Query>,
}
/// Nested message and enum types in `QueryRequest`.
pub mod query_request {
    /// Keys are serialized with the store's key serde; the order of range and
    /// all is the order of serialized keys (as in Kafka Streams' RocksDB).
    #[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Query {
        /// The value of one key.
        #[prost(bytes, tag="3")]
        Get(::prost::alloc::vec::Vec<u8>),
        /// Keys from..to, both inclusive; an absent bound is open.
        #[prost(message, tag="4")]
        Range(super::KeyRange),
        /// Keys that start with these bytes.
        #[prost(bytes, tag="5")]
        Prefix(::prost::alloc::vec::Vec<u8>),
        /// Every key.
        #[prost(bool, tag="6")]
        All(bool),
        /// A window or session store: the windows of one key (or of every key
        /// when key is absent) in a time range (WindowStore.fetch / fetchAll,
        /// SessionStore.findSessions).
        #[prost(message, tag="8")]
        WindowFetch(super::WindowFetch),
    }
}
/// WindowFetch: windows starting from from_ms to to_ms, both inclusive (a
/// session store: sessions ending at or after from_ms and starting at or
/// before to_ms). Answered with windowed keys, in the store's windowed key
/// serde.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct WindowFetch {
    #[prost(bytes="vec", optional, tag="1")]
    pub key: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
    #[prost(int64, tag="2")]
    pub from_ms: i64,
    #[prost(int64, tag="3")]
    pub to_ms: i64,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct KeyRange {
    #[prost(bytes="vec", optional, tag="1")]
    pub from: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
    #[prost(bytes="vec", optional, tag="2")]
    pub to: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryResponse {
    /// The entries, columnar like a bundle, in key order; a get answers zero
    /// or one entry.
    #[prost(sint32, repeated, tag="1")]
    pub key_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="2")]
    pub keys: ::prost::alloc::vec::Vec<u8>,
    #[prost(sint32, repeated, tag="3")]
    pub value_lengths: ::prost::alloc::vec::Vec<i32>,
    #[prost(bytes="vec", tag="4")]
    pub values: ::prost::alloc::vec::Vec<u8>,
    /// The store's serdes, to decode with.
    #[prost(string, tag="5")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="6")]
    pub value_serde: ::prost::alloc::string::String,
    /// More entries matched than limit allowed.
    #[prost(bool, tag="7")]
    pub truncated: bool,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetMetricsRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetMetricsResponse {
    #[prost(enumeration="State", tag="1")]
    pub state: i32,
    /// Restore progress once the topology started (absent before).
    #[prost(message, optional, tag="2")]
    pub restore: ::core::option::Option<RestoreProgress>,
    /// The nodes, sub-topology by sub-topology, upstream first (empty before
    /// Start).
    #[prost(message, repeated, tag="3")]
    pub nodes: ::prost::alloc::vec::Vec<NodeMetrics>,
    /// The tasks this engine runs.
    #[prost(message, repeated, tag="4")]
    pub tasks: ::prost::alloc::vec::Vec<TaskMetrics>,
    /// Records skipped (null key or value, late) and records that failed in a
    /// node, since Start.
    #[prost(int64, tag="5")]
    pub dropped_records: i64,
    #[prost(int64, tag="6")]
    pub failed_records: i64,
    /// False when the session's polystreams.metrics.enabled is false: node
    /// records, crossings and drops are then not counted.
    #[prost(bool, tag="7")]
    pub metrics_enabled: bool,
}
/// NodeMetrics are one node's counters since Start.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct NodeMetrics {
    #[prost(string, tag="1")]
    pub name: ::prost::alloc::string::String,
    #[prost(int32, tag="2")]
    pub subtopology: i32,
    /// Records into the node.
    #[prost(int64, tag="3")]
    pub records: i64,
    /// A node fused into a chain of host operators after the chain's first
    /// node has no counters of its own: this names the first. Empty otherwise.
    #[prost(string, tag="5")]
    pub fused_into: ::prost::alloc::string::String,
    /// Bundles that crossed to a host from this node, and their mean round
    /// trip; 0 for nodes that do not cross.
    #[prost(int64, tag="6")]
    pub bundles: i64,
    #[prost(double, tag="7")]
    pub mean_crossing_seconds: f64,
}
/// TaskMetrics are one task's inputs, lag and stores.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TaskMetrics {
    /// Kafka Streams' task id, "<sub-topology>_<partition>".
    #[prost(string, tag="1")]
    pub id: ::prost::alloc::string::String,
    /// Whether its stores are restored.
    #[prost(bool, tag="2")]
    pub restored: bool,
    #[prost(message, repeated, tag="3")]
    pub inputs: ::prost::alloc::vec::Vec<PartitionLag>,
    #[prost(message, repeated, tag="4")]
    pub stores: ::prost::alloc::vec::Vec<StoreMetrics>,
}
/// PartitionLag is one input partition of a task.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PartitionLag {
    #[prost(string, tag="1")]
    pub topic: ::prost::alloc::string::String,
    #[prost(int32, tag="2")]
    pub partition: i32,
    /// The next offset to commit, the high watermark at the last fetch, and
    /// the records between them; -1 when not known yet.
    #[prost(int64, tag="3")]
    pub position: i64,
    #[prost(int64, tag="4")]
    pub end: i64,
    #[prost(int64, tag="5")]
    pub lag: i64,
}
/// StoreMetrics is one store partition of a task.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StoreMetrics {
    #[prost(string, tag="1")]
    pub name: ::prost::alloc::string::String,
    /// Entries, counted up to 100,000 (a bigger store reports 100,000).
    #[prost(int64, tag="2")]
    pub entries: i64,
}
/// TestRecord is a record piped into, or read from, a topic of a test driver
/// session. Keys and values are serialized with the topic's serdes.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TestRecord {
    #[prost(string, tag="1")]
    pub topic: ::prost::alloc::string::String,
    /// Absent: a null key.
    #[prost(bytes="vec", optional, tag="2")]
    pub key: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
    /// Absent: a null value (a tombstone).
    #[prost(bytes="vec", optional, tag="3")]
    pub value: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
    /// The record's timestamp in epoch milliseconds. Absent in PipeInput: the
    /// session's wall clock (see AdvanceWallClock).
    #[prost(int64, optional, tag="4")]
    pub timestamp_ms: ::core::option::Option<i64>,
    #[prost(message, repeated, tag="5")]
    pub headers: ::prost::alloc::vec::Vec<TestHeader>,
}
/// TestHeader is one record header; a header's key may repeat.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TestHeader {
    #[prost(string, tag="1")]
    pub key: ::prost::alloc::string::String,
    /// Absent: a null header value.
    #[prost(bytes="vec", optional, tag="2")]
    pub value: ::core::option::Option<::prost::alloc::vec::Vec<u8>>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PipeInputRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// Written and processed one after another, in this order.
    #[prost(message, repeated, tag="2")]
    pub records: ::prost::alloc::vec::Vec<TestRecord>,
}
/// A record that failed (a function raised, with processing.exception.handler
/// fail) stops the session, as it stops a Kafka Streams application: the
/// response says so and records after it are not written.
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PipeInputResponse {
    /// The records written and processed (all of them unless error is set).
    #[prost(int32, tag="1")]
    pub processed: i32,
    /// Set when the session failed: what failed, naming node, topic,
    /// partition, offset.
    #[prost(string, tag="2")]
    pub error: ::prost::alloc::string::String,
    /// Set with error when a record failed: the same, as fields.
    #[prost(message, optional, tag="3")]
    pub failed_record: ::core::option::Option<RecordContext>,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ReadOutputRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// A sink topic of the topology (to(), a repartition's topic is internal
    /// and not readable).
    #[prost(string, tag="2")]
    pub topic: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ReadOutputResponse {
    /// Oldest first; empty when nothing was written since the last read.
    #[prost(message, repeated, tag="1")]
    pub records: ::prost::alloc::vec::Vec<TestRecord>,
    /// The serdes of what the topology writes to the topic, to decode with;
    /// empty when sinks of different serdes write to it.
    #[prost(string, tag="2")]
    pub key_serde: ::prost::alloc::string::String,
    #[prost(string, tag="3")]
    pub value_serde: ::prost::alloc::string::String,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AdvanceWallClockRequest {
    #[prost(string, tag="1")]
    pub session_id: ::prost::alloc::string::String,
    /// How far to move the wall clock, in milliseconds (not negative).
    #[prost(int64, tag="2")]
    pub millis: i64,
}
#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AdvanceWallClockResponse {
    /// The wall clock after the advance, in epoch milliseconds.
    #[prost(int64, tag="1")]
    pub wall_clock_ms: i64,
}
/// Kind is what a handle stands for; each operator accepts certain kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Kind {
    Unspecified = 0,
    /// A KStream.
    Stream = 1,
    /// A KGroupedStream.
    GroupedStream = 2,
    /// A KTable.
    Table = 3,
    /// A KGroupedTable (KTable.groupBy).
    GroupedTable = 4,
    /// A TimeWindowedKStream (windowedBy with time or sliding windows).
    WindowedStream = 5,
    /// A SessionWindowedKStream (windowedBy with session windows).
    SessionWindowedStream = 6,
    /// A GlobalKTable: every partition of its topic on every instance.
    GlobalTable = 7,
}
impl Kind {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Kind::Unspecified => "KIND_UNSPECIFIED",
            Kind::Stream => "KIND_STREAM",
            Kind::GroupedStream => "KIND_GROUPED_STREAM",
            Kind::Table => "KIND_TABLE",
            Kind::GroupedTable => "KIND_GROUPED_TABLE",
            Kind::WindowedStream => "KIND_WINDOWED_STREAM",
            Kind::SessionWindowedStream => "KIND_SESSION_WINDOWED_STREAM",
            Kind::GlobalTable => "KIND_GLOBAL_TABLE",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "KIND_UNSPECIFIED" => Some(Self::Unspecified),
            "KIND_STREAM" => Some(Self::Stream),
            "KIND_GROUPED_STREAM" => Some(Self::GroupedStream),
            "KIND_TABLE" => Some(Self::Table),
            "KIND_GROUPED_TABLE" => Some(Self::GroupedTable),
            "KIND_WINDOWED_STREAM" => Some(Self::WindowedStream),
            "KIND_SESSION_WINDOWED_STREAM" => Some(Self::SessionWindowedStream),
            "KIND_GLOBAL_TABLE" => Some(Self::GlobalTable),
            _ => None,
        }
    }
}
/// EmitStrategy is when a windowed aggregation forwards its results (KIP-825,
/// EmitStrategy.onWindowUpdate / onWindowClose).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum EmitStrategy {
    /// The default: onWindowUpdate.
    Unspecified = 0,
    /// EmitStrategy.onWindowUpdate: every update of a window is forwarded (as
    /// the record cache lets it through).
    OnWindowUpdate = 1,
    /// EmitStrategy.onWindowClose: only each window's final result, once, when
    /// stream time passes the window's end plus grace (for session windows,
    /// end + inactivity gap + grace); no intermediate updates. The last close
    /// time emitted is kept with the store, so a restart does not emit again.
    OnWindowClose = 2,
}
impl EmitStrategy {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            EmitStrategy::Unspecified => "EMIT_STRATEGY_UNSPECIFIED",
            EmitStrategy::OnWindowUpdate => "EMIT_STRATEGY_ON_WINDOW_UPDATE",
            EmitStrategy::OnWindowClose => "EMIT_STRATEGY_ON_WINDOW_CLOSE",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "EMIT_STRATEGY_UNSPECIFIED" => Some(Self::Unspecified),
            "EMIT_STRATEGY_ON_WINDOW_UPDATE" => Some(Self::OnWindowUpdate),
            "EMIT_STRATEGY_ON_WINDOW_CLOSE" => Some(Self::OnWindowClose),
            _ => None,
        }
    }
}
/// Reducer is a built-in reduce that runs in the engine and never crosses.
/// The grouped stream's values must be long or double.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Reducer {
    Unspecified = 0,
    /// The sum of the values.
    Sum = 1,
    /// The smallest value.
    Min = 2,
    /// The largest value.
    Max = 3,
    /// The latest value (any serde).
    Latest = 4,
}
impl Reducer {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Reducer::Unspecified => "REDUCER_UNSPECIFIED",
            Reducer::Sum => "REDUCER_SUM",
            Reducer::Min => "REDUCER_MIN",
            Reducer::Max => "REDUCER_MAX",
            Reducer::Latest => "REDUCER_LATEST",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "REDUCER_UNSPECIFIED" => Some(Self::Unspecified),
            "REDUCER_SUM" => Some(Self::Sum),
            "REDUCER_MIN" => Some(Self::Min),
            "REDUCER_MAX" => Some(Self::Max),
            "REDUCER_LATEST" => Some(Self::Latest),
            _ => None,
        }
    }
}
/// Joiner names a built-in ValueJoiner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Joiner {
    Unspecified = 0,
    /// A JSON array [this value, other value], each decoded by its serde
    /// (string, json, long, integer, double; null for a missing side); the
    /// result's serde is json. Sides of serde bytes are refused at build.
    Pair = 1,
    /// This side's value (serde: this side's); null when missing.
    This = 2,
    /// The other side's value (serde: the other side's); null when missing.
    Other = 3,
}
impl Joiner {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Joiner::Unspecified => "JOINER_UNSPECIFIED",
            Joiner::Pair => "JOINER_PAIR",
            Joiner::This => "JOINER_THIS",
            Joiner::Other => "JOINER_OTHER",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "JOINER_UNSPECIFIED" => Some(Self::Unspecified),
            "JOINER_PAIR" => Some(Self::Pair),
            "JOINER_THIS" => Some(Self::This),
            "JOINER_OTHER" => Some(Self::Other),
            _ => None,
        }
    }
}
/// Operation is what a step of a bundle does with its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Operation {
    Unspecified = 0,
    /// fn(value) -> value
    MapValues = 1,
    /// fn(key, value) -> bool; keep when true
    Filter = 2,
    /// fn(key, value) -> bool; keep when false
    FilterNot = 3,
    /// fn(value) -> iterable of values
    FlatMapValues = 4,
    /// fn(key, value) -> (key, value)
    Map = 5,
    /// fn(key, value) -> key
    SelectKey = 6,
    /// fn(key, value); the record passes unchanged
    Peek = 7,
    /// fn(key, value); nothing passes
    Foreach = 8,
    /// fn(aggregate, value) -> aggregate; a fold bundle (see Bundle)
    Reduce = 9,
    /// fn(key, value, aggregate) -> aggregate, started by the step's
    /// initializer fn(); a fold bundle (see Bundle)
    Aggregate = 10,
    /// fn(value, other value) -> value: a stream-table join's ValueJoiner;
    /// the bundle's other_values hold each record's table value (length -1:
    /// none, for a left join). One step per bundle.
    ValueJoin = 12,
}
impl Operation {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Operation::Unspecified => "OPERATION_UNSPECIFIED",
            Operation::MapValues => "OPERATION_MAP_VALUES",
            Operation::Filter => "OPERATION_FILTER",
            Operation::FilterNot => "OPERATION_FILTER_NOT",
            Operation::FlatMapValues => "OPERATION_FLAT_MAP_VALUES",
            Operation::Map => "OPERATION_MAP",
            Operation::SelectKey => "OPERATION_SELECT_KEY",
            Operation::Peek => "OPERATION_PEEK",
            Operation::Foreach => "OPERATION_FOREACH",
            Operation::Reduce => "OPERATION_REDUCE",
            Operation::Aggregate => "OPERATION_AGGREGATE",
            Operation::ValueJoin => "OPERATION_VALUE_JOIN",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "OPERATION_UNSPECIFIED" => Some(Self::Unspecified),
            "OPERATION_MAP_VALUES" => Some(Self::MapValues),
            "OPERATION_FILTER" => Some(Self::Filter),
            "OPERATION_FILTER_NOT" => Some(Self::FilterNot),
            "OPERATION_FLAT_MAP_VALUES" => Some(Self::FlatMapValues),
            "OPERATION_MAP" => Some(Self::Map),
            "OPERATION_SELECT_KEY" => Some(Self::SelectKey),
            "OPERATION_PEEK" => Some(Self::Peek),
            "OPERATION_FOREACH" => Some(Self::Foreach),
            "OPERATION_REDUCE" => Some(Self::Reduce),
            "OPERATION_AGGREGATE" => Some(Self::Aggregate),
            "OPERATION_VALUE_JOIN" => Some(Self::ValueJoin),
            _ => None,
        }
    }
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum State {
    Unspecified = 0,
    /// Opened; the topology is being built.
    Created = 1,
    /// Joining the group or restoring state.
    Rebalancing = 2,
    Running = 3,
    /// Stopped by Stop.
    Stopped = 4,
    /// Stopped by a failure; see error.
    Error = 5,
    /// Restoring stores from their changelogs before processing; see restore.
    Restoring = 6,
}
impl State {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            State::Unspecified => "STATE_UNSPECIFIED",
            State::Created => "STATE_CREATED",
            State::Rebalancing => "STATE_REBALANCING",
            State::Running => "STATE_RUNNING",
            State::Stopped => "STATE_STOPPED",
            State::Error => "STATE_ERROR",
            State::Restoring => "STATE_RESTORING",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "STATE_UNSPECIFIED" => Some(Self::Unspecified),
            "STATE_CREATED" => Some(Self::Created),
            "STATE_REBALANCING" => Some(Self::Rebalancing),
            "STATE_RUNNING" => Some(Self::Running),
            "STATE_STOPPED" => Some(Self::Stopped),
            "STATE_ERROR" => Some(Self::Error),
            "STATE_RESTORING" => Some(Self::Restoring),
            _ => None,
        }
    }
}
