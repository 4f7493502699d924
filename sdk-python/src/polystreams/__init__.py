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
from polystreams.app import App, BrokerOutage, HostHealth, RestoreProgress, State, StateListener
from polystreams.config import Config, OffsetReset, ProcessingGuarantee, ProductionExceptionHandler
from polystreams.dsl import (
    BranchedKStream,
    BuiltinJoiner,
    BuiltinReducer,
    GlobalKTable,
    Handle,
    KGroupedStream,
    KGroupedTable,
    Kind,
    KStream,
    KTable,
    Materialized,
    SessionWindowedKStream,
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
)
from polystreams.serde import SerdeName, TopicSerde, avro, json_schema
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
from polystreams.windows import EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, Windowed


__all__ = [
    "App",
    "BranchedKStream",
    "BrokerOutage",
    "BuiltinJoiner",
    "BuiltinReducer",
    "Cancellable",
    "Config",
    "DescribeFormat",
    "EmitStrategy",
    "EngineStartError",
    "FailedPreconditionError",
    "FixedKeyProcessor",
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
    "WindowStore",
    "Windowed",
    "with_metadata",
]
