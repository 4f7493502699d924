"""polystreams: Kafka Streams' programming model for Python, on one Go engine.

    from polystreams import App

    app = App("wordcount")
    (app.stream("lines", value="string")
        .flat_map_values(str.split)
        .group_by(lambda key, word: word, key="string")
        .count()
        .to_stream()
        .to("word-counts"))
    app.run()
"""

from polystreams._version import __version__
from polystreams.app import App, BrokerOutage, BuiltinTimestampExtractor, TimestampExtractor, HostHealth, RestoreProgress, State, StateListener
from polystreams.config import Config, OffsetReset, ProcessingGuarantee, ProductionExceptionHandler
from polystreams.dsl import (
    BranchedKStream,
    BuiltinJoiner,
    BuiltinReducer,
    CogroupedKStream,
    GlobalKTable,
    Handle,
    KGroupedStream,
    KGroupedTable,
    Kind,
    KStream,
    KTable,
    Materialized,
    SessionWindowedCogroupedKStream,
    SessionWindowedKStream,
    TimeWindowedCogroupedKStream,
    TimeWindowedKStream,
)
from polystreams.errors import (
    EngineStartError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PolystreamsError,
    ProcessingError,
    UnavailableError,
)
from polystreams.metrics import DescribeFormat, Metrics, NodeMetrics, PartitionLag, StoreMetrics, TaskMetrics
from polystreams.processor import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    Cancellable,
    FixedKeyProcessor,
    FixedKeyRecord,
    Processor,
    ProcessorContext,
    PunctuationType,
    Record,
    RecordMetadata,
    StoreBuilder,
    Stores,
    Topology,
    ValueAndTimestamp,
    with_metadata,
    ValueTransformerWithKey,
)
from polystreams.serde import SerdeName, TopicSerde, avro, json_schema, protobuf
from polystreams.store import (
    HostInfo,
    KeyQueryMetadata,
    KeyQueryResult,
    KeyValueStore,
    StreamsMetadata,
    VersionedKeyValueStore,
    VersionedRecord,
    WindowStore,
)
from polystreams.windows import BufferConfig, EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, Windowed


__all__ = [
    "App",
    "BranchedKStream",
    "BrokerOutage",
    "BufferConfig",
    "BuiltinJoiner",
    "BuiltinReducer",
    "Cancellable",
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "CogroupedKStream",
    "Config",
    "DescribeFormat",
    "EmitStrategy",
    "EngineStartError",
    "FailedPreconditionError",
    "FixedKeyProcessor",
    "ValueTransformerWithKey",
    "FixedKeyRecord",
    "GlobalKTable",
    "Handle",
    "HostHealth",
    "HostInfo",
    "InvalidArgumentError",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "KeyQueryMetadata",
    "KeyQueryResult",
    "KeyValueStore",
    "Kind",
    "Materialized",
    "Metrics",
    "NodeMetrics",
    "NotFoundError",
    "OffsetReset",
    "TimestampExtractor",
    "BuiltinTimestampExtractor",
    "PartitionLag",
    "PolystreamsError",
    "ProcessingError",
    "ProcessingGuarantee",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "RecordMetadata",
    "ProductionExceptionHandler",
    "RestoreProgress",
    "SerdeName",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindows",
    "State",
    "StateListener",
    "StoreBuilder",
    "StoreMetrics",
    "Stores",
    "StreamsMetadata",
    "Suppressed",
    "TaskMetrics",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
    "TimeWindows",
    "TopicSerde",
    "Topology",
    "UnavailableError",
    "ValueAndTimestamp",
    "avro",
    "json_schema",
    "VersionedKeyValueStore",
    "VersionedRecord",
    "protobuf",
    "WindowStore",
    "Windowed",
    "with_metadata",
]
