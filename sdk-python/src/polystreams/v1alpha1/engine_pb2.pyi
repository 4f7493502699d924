from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BUFFER_FULL_EMIT_EARLY: BufferFull
BUFFER_FULL_SHUT_DOWN: BufferFull
BUFFER_FULL_UNSPECIFIED: BufferFull
DESCRIPTOR: _descriptor.FileDescriptor
EMIT_STRATEGY_ON_WINDOW_CLOSE: EmitStrategy
EMIT_STRATEGY_ON_WINDOW_UPDATE: EmitStrategy
EMIT_STRATEGY_UNSPECIFIED: EmitStrategy
JOINER_OTHER: Joiner
JOINER_PAIR: Joiner
JOINER_THIS: Joiner
JOINER_UNSPECIFIED: Joiner
KIND_COGROUPED_STREAM: Kind
KIND_GLOBAL_TABLE: Kind
KIND_GROUPED_STREAM: Kind
KIND_GROUPED_TABLE: Kind
KIND_SESSION_WINDOWED_COGROUPED_STREAM: Kind
KIND_SESSION_WINDOWED_STREAM: Kind
KIND_STREAM: Kind
KIND_TABLE: Kind
KIND_UNSPECIFIED: Kind
KIND_WINDOWED_COGROUPED_STREAM: Kind
KIND_WINDOWED_STREAM: Kind
METADATA_READ: Metadata
METADATA_UNSPECIFIED: Metadata
METADATA_WRITE: Metadata
OPERATION_AGGREGATE: Operation
OPERATION_EXTRACT_TIMESTAMP: Operation
OPERATION_FILTER: Operation
OPERATION_FILTER_NOT: Operation
OPERATION_FLAT_MAP: Operation
OPERATION_FLAT_MAP_VALUES: Operation
OPERATION_FLAT_MAP_VALUES_WITH_KEY: Operation
OPERATION_FOREACH: Operation
OPERATION_MAP: Operation
OPERATION_MAP_VALUES: Operation
OPERATION_MAP_VALUES_WITH_KEY: Operation
OPERATION_PEEK: Operation
OPERATION_PROCESS: Operation
OPERATION_PROCESS_VALUES: Operation
OPERATION_REDUCE: Operation
OPERATION_SELECT_KEY: Operation
OPERATION_STREAM_PARTITION: Operation
OPERATION_TOPIC_NAME: Operation
OPERATION_UNSPECIFIED: Operation
OPERATION_VALUE_JOIN: Operation
OP_KIND_CANCEL: OpKind
OP_KIND_DELETE: OpKind
OP_KIND_FORWARD: OpKind
OP_KIND_PUT: OpKind
OP_KIND_SCHEDULE: OpKind
OP_KIND_UNSPECIFIED: OpKind
REDUCER_LATEST: Reducer
REDUCER_MAX: Reducer
REDUCER_MIN: Reducer
REDUCER_SUM: Reducer
REDUCER_UNSPECIFIED: Reducer
STATE_CREATED: State
STATE_DEGRADED: State
STATE_ERROR: State
STATE_REBALANCING: State
STATE_RESTORING: State
STATE_RUNNING: State
STATE_STOPPED: State
STATE_UNSPECIFIED: State
STORE_TYPE_KEY_VALUE: StoreType
STORE_TYPE_TIMESTAMPED_KEY_VALUE: StoreType
STORE_TYPE_TIMESTAMPED_WINDOW: StoreType
STORE_TYPE_UNSPECIFIED: StoreType
STORE_TYPE_VERSIONED_KEY_VALUE: StoreType
STORE_TYPE_WINDOW: StoreType

class AddProcessorOp(_message.Message):
    __slots__ = ["key_serde", "name", "parents", "stores", "token", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    name: str
    parents: _containers.RepeatedScalarFieldContainer[str]
    stores: _containers.RepeatedScalarFieldContainer[str]
    token: int
    value_serde: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., parents: _Optional[_Iterable[str]] = ..., stores: _Optional[_Iterable[str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ...) -> None: ...

class AddSinkOp(_message.Message):
    __slots__ = ["key_serde", "name", "parents", "topic", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    name: str
    parents: _containers.RepeatedScalarFieldContainer[str]
    topic: str
    value_serde: str
    def __init__(self, name: _Optional[str] = ..., topic: _Optional[str] = ..., parents: _Optional[_Iterable[str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ...) -> None: ...

class AddSourceOp(_message.Message):
    __slots__ = ["key_serde", "name", "topics", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    name: str
    topics: _containers.RepeatedScalarFieldContainer[str]
    value_serde: str
    def __init__(self, name: _Optional[str] = ..., topics: _Optional[_Iterable[str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ...) -> None: ...

class AddStateStoreOp(_message.Message):
    __slots__ = ["caching", "changelog_config", "key_serde", "logging_disabled", "name", "processors", "retain_duplicates", "retention_ms", "type", "value_serde", "versioned", "window_size_ms"]
    class ChangelogConfigEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CACHING_FIELD_NUMBER: _ClassVar[int]
    CHANGELOG_CONFIG_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    LOGGING_DISABLED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROCESSORS_FIELD_NUMBER: _ClassVar[int]
    RETAIN_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    VERSIONED_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SIZE_MS_FIELD_NUMBER: _ClassVar[int]
    caching: bool
    changelog_config: _containers.ScalarMap[str, str]
    key_serde: str
    logging_disabled: bool
    name: str
    processors: _containers.RepeatedScalarFieldContainer[str]
    retain_duplicates: bool
    retention_ms: int
    type: StoreType
    value_serde: str
    versioned: VersionedStore
    window_size_ms: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[StoreType, str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., retention_ms: _Optional[int] = ..., window_size_ms: _Optional[int] = ..., retain_duplicates: bool = ..., logging_disabled: bool = ..., caching: bool = ..., processors: _Optional[_Iterable[str]] = ..., changelog_config: _Optional[_Mapping[str, str]] = ..., versioned: _Optional[_Union[VersionedStore, _Mapping]] = ...) -> None: ...

class AdvanceWallClockRequest(_message.Message):
    __slots__ = ["millis", "session_id"]
    MILLIS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    millis: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., millis: _Optional[int] = ...) -> None: ...

class AdvanceWallClockResponse(_message.Message):
    __slots__ = ["wall_clock_ms"]
    WALL_CLOCK_MS_FIELD_NUMBER: _ClassVar[int]
    wall_clock_ms: int
    def __init__(self, wall_clock_ms: _Optional[int] = ...) -> None: ...

class AggregateOp(_message.Message):
    __slots__ = ["aggregator_token", "initializer_token", "input", "materialized", "merger_token", "name", "subtractor_token"]
    AGGREGATOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INITIALIZER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    MERGER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBTRACTOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    aggregator_token: int
    initializer_token: int
    input: int
    materialized: Materialized
    merger_token: int
    name: str
    subtractor_token: int
    def __init__(self, input: _Optional[int] = ..., initializer_token: _Optional[int] = ..., aggregator_token: _Optional[int] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., name: _Optional[str] = ..., subtractor_token: _Optional[int] = ..., merger_token: _Optional[int] = ...) -> None: ...

class Branch(_message.Message):
    __slots__ = ["name", "predicate_token"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    predicate_token: int
    def __init__(self, predicate_token: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class BrokerOutage(_message.Message):
    __slots__ = ["brokers", "last_error", "outages", "since_ms"]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTAGES_FIELD_NUMBER: _ClassVar[int]
    SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedScalarFieldContainer[str]
    last_error: str
    outages: int
    since_ms: int
    def __init__(self, brokers: _Optional[_Iterable[str]] = ..., since_ms: _Optional[int] = ..., last_error: _Optional[str] = ..., outages: _Optional[int] = ...) -> None: ...

class BuildRequest(_message.Message):
    __slots__ = ["add_processor", "add_sink", "add_source", "add_state_store", "aggregate", "cogroup", "count", "emit_strategy", "filter", "filter_not", "flat_map", "flat_map_values", "foreach", "global_table", "group_by", "group_by_key", "join", "map", "map_values", "merge", "peek", "print", "process", "reduce", "repartition", "select_key", "session_id", "split", "stream", "suppress", "table", "to", "to_stream", "to_table", "transform_values", "windowed_by"]
    ADD_PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    ADD_SINK_FIELD_NUMBER: _ClassVar[int]
    ADD_SOURCE_FIELD_NUMBER: _ClassVar[int]
    ADD_STATE_STORE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    COGROUP_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    EMIT_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    FILTER_NOT_FIELD_NUMBER: _ClassVar[int]
    FLAT_MAP_FIELD_NUMBER: _ClassVar[int]
    FLAT_MAP_VALUES_FIELD_NUMBER: _ClassVar[int]
    FOREACH_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_TABLE_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOIN_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    MAP_VALUES_FIELD_NUMBER: _ClassVar[int]
    MERGE_FIELD_NUMBER: _ClassVar[int]
    PEEK_FIELD_NUMBER: _ClassVar[int]
    PRINT_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    REDUCE_FIELD_NUMBER: _ClassVar[int]
    REPARTITION_FIELD_NUMBER: _ClassVar[int]
    SELECT_KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    TO_STREAM_FIELD_NUMBER: _ClassVar[int]
    TO_TABLE_FIELD_NUMBER: _ClassVar[int]
    TRANSFORM_VALUES_FIELD_NUMBER: _ClassVar[int]
    WINDOWED_BY_FIELD_NUMBER: _ClassVar[int]
    add_processor: AddProcessorOp
    add_sink: AddSinkOp
    add_source: AddSourceOp
    add_state_store: AddStateStoreOp
    aggregate: AggregateOp
    cogroup: CogroupOp
    count: CountOp
    emit_strategy: EmitStrategyOp
    filter: FilterOp
    filter_not: FilterNotOp
    flat_map: FlatMapOp
    flat_map_values: FlatMapValuesOp
    foreach: ForeachOp
    global_table: GlobalTableOp
    group_by: GroupByOp
    group_by_key: GroupByKeyOp
    join: JoinOp
    map: MapOp
    map_values: MapValuesOp
    merge: MergeOp
    peek: PeekOp
    print: PrintOp
    process: ProcessOp
    reduce: ReduceOp
    repartition: RepartitionOp
    select_key: SelectKeyOp
    session_id: str
    split: SplitOp
    stream: StreamOp
    suppress: SuppressOp
    table: TableOp
    to: ToOp
    to_stream: ToStreamOp
    to_table: ToTableOp
    transform_values: TransformValuesOp
    windowed_by: WindowedByOp
    def __init__(self, session_id: _Optional[str] = ..., stream: _Optional[_Union[StreamOp, _Mapping]] = ..., map_values: _Optional[_Union[MapValuesOp, _Mapping]] = ..., filter: _Optional[_Union[FilterOp, _Mapping]] = ..., filter_not: _Optional[_Union[FilterNotOp, _Mapping]] = ..., flat_map_values: _Optional[_Union[FlatMapValuesOp, _Mapping]] = ..., map: _Optional[_Union[MapOp, _Mapping]] = ..., select_key: _Optional[_Union[SelectKeyOp, _Mapping]] = ..., peek: _Optional[_Union[PeekOp, _Mapping]] = ..., foreach: _Optional[_Union[ForeachOp, _Mapping]] = ..., group_by_key: _Optional[_Union[GroupByKeyOp, _Mapping]] = ..., group_by: _Optional[_Union[GroupByOp, _Mapping]] = ..., count: _Optional[_Union[CountOp, _Mapping]] = ..., to_stream: _Optional[_Union[ToStreamOp, _Mapping]] = ..., to: _Optional[_Union[ToOp, _Mapping]] = ..., reduce: _Optional[_Union[ReduceOp, _Mapping]] = ..., aggregate: _Optional[_Union[AggregateOp, _Mapping]] = ..., table: _Optional[_Union[TableOp, _Mapping]] = ..., windowed_by: _Optional[_Union[WindowedByOp, _Mapping]] = ..., suppress: _Optional[_Union[SuppressOp, _Mapping]] = ..., merge: _Optional[_Union[MergeOp, _Mapping]] = ..., split: _Optional[_Union[SplitOp, _Mapping]] = ..., repartition: _Optional[_Union[RepartitionOp, _Mapping]] = ..., join: _Optional[_Union[JoinOp, _Mapping]] = ..., global_table: _Optional[_Union[GlobalTableOp, _Mapping]] = ..., emit_strategy: _Optional[_Union[EmitStrategyOp, _Mapping]] = ..., to_table: _Optional[_Union[ToTableOp, _Mapping]] = ..., flat_map: _Optional[_Union[FlatMapOp, _Mapping]] = ..., print: _Optional[_Union[PrintOp, _Mapping]] = ..., add_state_store: _Optional[_Union[AddStateStoreOp, _Mapping]] = ..., process: _Optional[_Union[ProcessOp, _Mapping]] = ..., add_source: _Optional[_Union[AddSourceOp, _Mapping]] = ..., add_processor: _Optional[_Union[AddProcessorOp, _Mapping]] = ..., add_sink: _Optional[_Union[AddSinkOp, _Mapping]] = ..., transform_values: _Optional[_Union[TransformValuesOp, _Mapping]] = ..., cogroup: _Optional[_Union[CogroupOp, _Mapping]] = ...) -> None: ...

class BuildResponse(_message.Message):
    __slots__ = ["branches", "handle"]
    BRANCHES_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    branches: _containers.RepeatedCompositeFieldContainer[Handle]
    handle: Handle
    def __init__(self, handle: _Optional[_Union[Handle, _Mapping]] = ..., branches: _Optional[_Iterable[_Union[Handle, _Mapping]]] = ...) -> None: ...

class Bundle(_message.Message):
    __slots__ = ["after", "aggregate_lengths", "aggregate_serde", "aggregates", "final_only", "fold_bases", "group_sizes", "header_counts", "header_key_lengths", "header_keys", "header_value_lengths", "header_values", "id", "inits", "key_lengths", "key_serde", "keys", "merge_counts", "merge_refs", "offsets", "old_value_lengths", "old_values", "other_value_lengths", "other_value_serde", "other_values", "output_key_serde", "output_value_serde", "partition", "partition_time", "sink_partitions", "sink_topic", "steps", "stores", "task", "timestamps", "topic", "value_lengths", "value_refs", "value_serde", "values"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    AGGREGATES_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_SERDE_FIELD_NUMBER: _ClassVar[int]
    FINAL_ONLY_FIELD_NUMBER: _ClassVar[int]
    FOLD_BASES_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZES_FIELD_NUMBER: _ClassVar[int]
    HEADER_COUNTS_FIELD_NUMBER: _ClassVar[int]
    HEADER_KEYS_FIELD_NUMBER: _ClassVar[int]
    HEADER_KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    HEADER_VALUES_FIELD_NUMBER: _ClassVar[int]
    HEADER_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INITS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    MERGE_COUNTS_FIELD_NUMBER: _ClassVar[int]
    MERGE_REFS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    OLD_VALUES_FIELD_NUMBER: _ClassVar[int]
    OLD_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OTHER_VALUES_FIELD_NUMBER: _ClassVar[int]
    OTHER_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OTHER_VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PARTITION_TIME_FIELD_NUMBER: _ClassVar[int]
    SINK_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    SINK_TOPIC_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    VALUE_REFS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedCompositeFieldContainer[BundleEntry]
    aggregate_lengths: _containers.RepeatedScalarFieldContainer[int]
    aggregate_serde: str
    aggregates: bytes
    final_only: bool
    fold_bases: _containers.RepeatedScalarFieldContainer[int]
    group_sizes: _containers.RepeatedScalarFieldContainer[int]
    header_counts: _containers.RepeatedScalarFieldContainer[int]
    header_key_lengths: _containers.RepeatedScalarFieldContainer[int]
    header_keys: bytes
    header_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    header_values: bytes
    id: int
    inits: _containers.RepeatedCompositeFieldContainer[BundleEntry]
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    key_serde: str
    keys: bytes
    merge_counts: _containers.RepeatedScalarFieldContainer[int]
    merge_refs: _containers.RepeatedScalarFieldContainer[int]
    offsets: _containers.RepeatedScalarFieldContainer[int]
    old_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    old_values: bytes
    other_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    other_value_serde: str
    other_values: bytes
    output_key_serde: str
    output_value_serde: str
    partition: int
    partition_time: int
    sink_partitions: int
    sink_topic: str
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    stores: _containers.RepeatedCompositeFieldContainer[StoreView]
    task: str
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    topic: str
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    value_refs: _containers.RepeatedScalarFieldContainer[int]
    value_serde: str
    values: bytes
    def __init__(self, id: _Optional[int] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., output_key_serde: _Optional[str] = ..., output_value_serde: _Optional[str] = ..., key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., topic: _Optional[str] = ..., partition: _Optional[int] = ..., offsets: _Optional[_Iterable[int]] = ..., timestamps: _Optional[_Iterable[int]] = ..., group_sizes: _Optional[_Iterable[int]] = ..., aggregate_lengths: _Optional[_Iterable[int]] = ..., aggregates: _Optional[bytes] = ..., aggregate_serde: _Optional[str] = ..., old_value_lengths: _Optional[_Iterable[int]] = ..., old_values: _Optional[bytes] = ..., value_refs: _Optional[_Iterable[int]] = ..., final_only: bool = ..., fold_bases: _Optional[_Iterable[int]] = ..., merge_counts: _Optional[_Iterable[int]] = ..., merge_refs: _Optional[_Iterable[int]] = ..., other_value_lengths: _Optional[_Iterable[int]] = ..., other_values: _Optional[bytes] = ..., other_value_serde: _Optional[str] = ..., task: _Optional[str] = ..., stores: _Optional[_Iterable[_Union[StoreView, _Mapping]]] = ..., inits: _Optional[_Iterable[_Union[BundleEntry, _Mapping]]] = ..., after: _Optional[_Iterable[_Union[BundleEntry, _Mapping]]] = ..., header_counts: _Optional[_Iterable[int]] = ..., header_key_lengths: _Optional[_Iterable[int]] = ..., header_keys: _Optional[bytes] = ..., header_value_lengths: _Optional[_Iterable[int]] = ..., header_values: _Optional[bytes] = ..., partition_time: _Optional[int] = ..., sink_topic: _Optional[str] = ..., sink_partitions: _Optional[int] = ...) -> None: ...

class BundleEntry(_message.Message):
    __slots__ = ["kind", "schedule", "step", "time_ms"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    KIND_CLOSE: BundleEntry.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_INIT: BundleEntry.Kind
    KIND_PUNCTUATE_STREAM_TIME: BundleEntry.Kind
    KIND_PUNCTUATE_WALL_CLOCK: BundleEntry.Kind
    KIND_UNSPECIFIED: BundleEntry.Kind
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    kind: BundleEntry.Kind
    schedule: int
    step: int
    time_ms: int
    def __init__(self, kind: _Optional[_Union[BundleEntry.Kind, str]] = ..., step: _Optional[int] = ..., schedule: _Optional[int] = ..., time_ms: _Optional[int] = ...) -> None: ...

class BundleResult(_message.Message):
    __slots__ = ["bundle_id", "failures", "key_lengths", "keys", "op_counts", "op_header_counts", "op_header_key_lengths", "op_header_keys", "op_header_value_lengths", "op_header_values", "op_key_lengths", "op_keys", "op_kinds", "op_schedules", "op_steps", "op_targets", "op_timestamps", "op_value_lengths", "op_values", "output_counts", "output_header_counts", "output_header_key_lengths", "output_header_keys", "output_header_value_lengths", "output_header_values", "output_timestamps", "prefetch_hits", "value_lengths", "values"]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OP_COUNTS_FIELD_NUMBER: _ClassVar[int]
    OP_HEADER_COUNTS_FIELD_NUMBER: _ClassVar[int]
    OP_HEADER_KEYS_FIELD_NUMBER: _ClassVar[int]
    OP_HEADER_KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OP_HEADER_VALUES_FIELD_NUMBER: _ClassVar[int]
    OP_HEADER_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OP_KEYS_FIELD_NUMBER: _ClassVar[int]
    OP_KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OP_KINDS_FIELD_NUMBER: _ClassVar[int]
    OP_SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    OP_STEPS_FIELD_NUMBER: _ClassVar[int]
    OP_TARGETS_FIELD_NUMBER: _ClassVar[int]
    OP_TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    OP_VALUES_FIELD_NUMBER: _ClassVar[int]
    OP_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_COUNTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_HEADER_COUNTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_HEADER_KEYS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_HEADER_KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_HEADER_VALUES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_HEADER_VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    PREFETCH_HITS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    bundle_id: int
    failures: _containers.RepeatedCompositeFieldContainer[RecordFailure]
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    keys: bytes
    op_counts: _containers.RepeatedScalarFieldContainer[int]
    op_header_counts: _containers.RepeatedScalarFieldContainer[int]
    op_header_key_lengths: _containers.RepeatedScalarFieldContainer[int]
    op_header_keys: bytes
    op_header_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    op_header_values: bytes
    op_key_lengths: _containers.RepeatedScalarFieldContainer[int]
    op_keys: bytes
    op_kinds: _containers.RepeatedScalarFieldContainer[OpKind]
    op_schedules: _containers.RepeatedScalarFieldContainer[int]
    op_steps: _containers.RepeatedScalarFieldContainer[int]
    op_targets: _containers.RepeatedScalarFieldContainer[int]
    op_timestamps: _containers.RepeatedScalarFieldContainer[int]
    op_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    op_values: bytes
    output_counts: _containers.RepeatedScalarFieldContainer[int]
    output_header_counts: _containers.RepeatedScalarFieldContainer[int]
    output_header_key_lengths: _containers.RepeatedScalarFieldContainer[int]
    output_header_keys: bytes
    output_header_value_lengths: _containers.RepeatedScalarFieldContainer[int]
    output_header_values: bytes
    output_timestamps: _containers.RepeatedScalarFieldContainer[int]
    prefetch_hits: _containers.RepeatedScalarFieldContainer[int]
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    values: bytes
    def __init__(self, bundle_id: _Optional[int] = ..., output_counts: _Optional[_Iterable[int]] = ..., key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., failures: _Optional[_Iterable[_Union[RecordFailure, _Mapping]]] = ..., op_counts: _Optional[_Iterable[int]] = ..., op_kinds: _Optional[_Iterable[_Union[OpKind, str]]] = ..., op_steps: _Optional[_Iterable[int]] = ..., op_targets: _Optional[_Iterable[int]] = ..., op_key_lengths: _Optional[_Iterable[int]] = ..., op_keys: _Optional[bytes] = ..., op_value_lengths: _Optional[_Iterable[int]] = ..., op_values: _Optional[bytes] = ..., op_timestamps: _Optional[_Iterable[int]] = ..., op_schedules: _Optional[_Iterable[int]] = ..., op_header_counts: _Optional[_Iterable[int]] = ..., op_header_key_lengths: _Optional[_Iterable[int]] = ..., op_header_keys: _Optional[bytes] = ..., op_header_value_lengths: _Optional[_Iterable[int]] = ..., op_header_values: _Optional[bytes] = ..., prefetch_hits: _Optional[_Iterable[int]] = ..., output_timestamps: _Optional[_Iterable[int]] = ..., output_header_counts: _Optional[_Iterable[int]] = ..., output_header_key_lengths: _Optional[_Iterable[int]] = ..., output_header_keys: _Optional[bytes] = ..., output_header_value_lengths: _Optional[_Iterable[int]] = ..., output_header_values: _Optional[bytes] = ...) -> None: ...

class CleanUpStateRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CleanUpStateResponse(_message.Message):
    __slots__ = ["deleted"]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: str
    def __init__(self, deleted: _Optional[str] = ...) -> None: ...

class CogroupOp(_message.Message):
    __slots__ = ["aggregator_token", "grouped", "input"]
    AGGREGATOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    GROUPED_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    aggregator_token: int
    grouped: int
    input: int
    def __init__(self, input: _Optional[int] = ..., grouped: _Optional[int] = ..., aggregator_token: _Optional[int] = ...) -> None: ...

class CountOp(_message.Message):
    __slots__ = ["input", "materialized", "name"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    def __init__(self, input: _Optional[int] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ["format", "session_id"]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    format: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., format: _Optional[str] = ...) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ["output", "text", "topology"]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    output: str
    text: str
    topology: TopologyDescription
    def __init__(self, text: _Optional[str] = ..., topology: _Optional[_Union[TopologyDescription, _Mapping]] = ..., output: _Optional[str] = ...) -> None: ...

class EmitStrategyOp(_message.Message):
    __slots__ = ["input", "strategy"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    input: int
    strategy: EmitStrategy
    def __init__(self, input: _Optional[int] = ..., strategy: _Optional[_Union[EmitStrategy, str]] = ...) -> None: ...

class ExchangeRequest(_message.Message):
    __slots__ = ["max_bundles", "results", "session_id", "wait_ms", "worker_id"]
    MAX_BUNDLES_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    max_bundles: int
    results: _containers.RepeatedCompositeFieldContainer[BundleResult]
    session_id: str
    wait_ms: int
    worker_id: str
    def __init__(self, session_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., results: _Optional[_Iterable[_Union[BundleResult, _Mapping]]] = ..., max_bundles: _Optional[int] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class ExchangeResponse(_message.Message):
    __slots__ = ["bundles", "error", "failed_record", "restore", "state"]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILED_RECORD_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    bundles: _containers.RepeatedCompositeFieldContainer[Bundle]
    error: str
    failed_record: RecordContext
    restore: RestoreProgress
    state: State
    def __init__(self, bundles: _Optional[_Iterable[_Union[Bundle, _Mapping]]] = ..., state: _Optional[_Union[State, str]] = ..., error: _Optional[str] = ..., failed_record: _Optional[_Union[RecordContext, _Mapping]] = ..., restore: _Optional[_Union[RestoreProgress, _Mapping]] = ...) -> None: ...

class FilterNotOp(_message.Message):
    __slots__ = ["input", "materialized", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ...) -> None: ...

class FilterOp(_message.Message):
    __slots__ = ["input", "materialized", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ...) -> None: ...

class FlatMapOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "token", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    token: int
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class FlatMapValuesOp(_message.Message):
    __slots__ = ["input", "name", "token", "value_serde", "with_key"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    WITH_KEY_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    token: int
    value_serde: str
    with_key: bool
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., with_key: bool = ...) -> None: ...

class ForeachOp(_message.Message):
    __slots__ = ["input", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class GetMetricsRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetMetricsResponse(_message.Message):
    __slots__ = ["dropped_records", "failed_records", "metrics_enabled", "nodes", "restore", "state", "tasks"]
    DROPPED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    FAILED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    METRICS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    dropped_records: int
    failed_records: int
    metrics_enabled: bool
    nodes: _containers.RepeatedCompositeFieldContainer[NodeMetrics]
    restore: RestoreProgress
    state: State
    tasks: _containers.RepeatedCompositeFieldContainer[TaskMetrics]
    def __init__(self, state: _Optional[_Union[State, str]] = ..., restore: _Optional[_Union[RestoreProgress, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[NodeMetrics, _Mapping]]] = ..., tasks: _Optional[_Iterable[_Union[TaskMetrics, _Mapping]]] = ..., dropped_records: _Optional[int] = ..., failed_records: _Optional[int] = ..., metrics_enabled: bool = ...) -> None: ...

class GetStateRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetStateResponse(_message.Message):
    __slots__ = ["broker_outage", "bundles_waiting", "dropped_records", "error", "failed_record", "host_idle_ms", "host_stalled", "paused", "restore", "state"]
    BROKER_OUTAGE_FIELD_NUMBER: _ClassVar[int]
    BUNDLES_WAITING_FIELD_NUMBER: _ClassVar[int]
    DROPPED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILED_RECORD_FIELD_NUMBER: _ClassVar[int]
    HOST_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_STALLED_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    broker_outage: BrokerOutage
    bundles_waiting: int
    dropped_records: int
    error: str
    failed_record: RecordContext
    host_idle_ms: int
    host_stalled: bool
    paused: bool
    restore: RestoreProgress
    state: State
    def __init__(self, state: _Optional[_Union[State, str]] = ..., error: _Optional[str] = ..., failed_record: _Optional[_Union[RecordContext, _Mapping]] = ..., restore: _Optional[_Union[RestoreProgress, _Mapping]] = ..., dropped_records: _Optional[int] = ..., bundles_waiting: _Optional[int] = ..., host_idle_ms: _Optional[int] = ..., host_stalled: bool = ..., broker_outage: _Optional[_Union[BrokerOutage, _Mapping]] = ..., paused: bool = ...) -> None: ...

class GlobalTableOp(_message.Message):
    __slots__ = ["key_serde", "materialized", "name", "offset_reset", "topic", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_RESET_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    materialized: Materialized
    name: str
    offset_reset: str
    topic: str
    value_serde: str
    def __init__(self, topic: _Optional[str] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., offset_reset: _Optional[str] = ...) -> None: ...

class GroupByKeyOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GroupByOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "token", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    token: int
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Handle(_message.Message):
    __slots__ = ["id", "key_serde", "kind", "node", "store", "value_serde"]
    ID_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    id: int
    key_serde: str
    kind: Kind
    node: str
    store: str
    value_serde: str
    def __init__(self, id: _Optional[int] = ..., kind: _Optional[_Union[Kind, str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., node: _Optional[str] = ..., store: _Optional[str] = ...) -> None: ...

class HostInfo(_message.Message):
    __slots__ = ["host", "port"]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class JoinOp(_message.Message):
    __slots__ = ["builtin_joiner", "foreign_key_token", "input", "joiner_token", "key_mapper_token", "left", "materialized", "name", "outer", "store_name", "table", "value_serde", "windows"]
    BUILTIN_JOINER_FIELD_NUMBER: _ClassVar[int]
    FOREIGN_KEY_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    JOINER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    KEY_MAPPER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTER_FIELD_NUMBER: _ClassVar[int]
    STORE_NAME_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    builtin_joiner: Joiner
    foreign_key_token: int
    input: int
    joiner_token: int
    key_mapper_token: int
    left: bool
    materialized: Materialized
    name: str
    outer: bool
    store_name: str
    table: int
    value_serde: str
    windows: JoinWindows
    def __init__(self, input: _Optional[int] = ..., table: _Optional[int] = ..., joiner_token: _Optional[int] = ..., left: bool = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., outer: bool = ..., windows: _Optional[_Union[JoinWindows, _Mapping]] = ..., key_mapper_token: _Optional[int] = ..., store_name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., foreign_key_token: _Optional[int] = ..., builtin_joiner: _Optional[_Union[Joiner, str]] = ...) -> None: ...

class JoinWindows(_message.Message):
    __slots__ = ["after_ms", "before_ms", "grace_ms"]
    AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    after_ms: int
    before_ms: int
    grace_ms: int
    def __init__(self, before_ms: _Optional[int] = ..., after_ms: _Optional[int] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class KeyRange(_message.Message):
    __slots__ = ["to"]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    to: bytes
    def __init__(self, to: _Optional[bytes] = ..., **kwargs) -> None: ...

class MapOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "token", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    token: int
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class MapValuesOp(_message.Message):
    __slots__ = ["input", "materialized", "name", "token", "value_serde", "with_key"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    WITH_KEY_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    token: int
    value_serde: str
    with_key: bool
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., with_key: bool = ...) -> None: ...

class Materialized(_message.Message):
    __slots__ = ["changelog_config", "key_serde", "retention_ms", "store_name", "value_serde", "versioned"]
    class ChangelogConfigEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHANGELOG_CONFIG_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    STORE_NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    VERSIONED_FIELD_NUMBER: _ClassVar[int]
    changelog_config: _containers.ScalarMap[str, str]
    key_serde: str
    retention_ms: int
    store_name: str
    value_serde: str
    versioned: VersionedStore
    def __init__(self, store_name: _Optional[str] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., changelog_config: _Optional[_Mapping[str, str]] = ..., retention_ms: _Optional[int] = ..., versioned: _Optional[_Union[VersionedStore, _Mapping]] = ...) -> None: ...

class MergeOp(_message.Message):
    __slots__ = ["input", "name", "other"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    other: int
    def __init__(self, input: _Optional[int] = ..., other: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ["name", "predecessors", "stores", "successors", "topic", "topics", "type"]
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREDECESSORS_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_PROCESSOR: Node.Type
    TYPE_SINK: Node.Type
    TYPE_SOURCE: Node.Type
    TYPE_UNSPECIFIED: Node.Type
    name: str
    predecessors: _containers.RepeatedScalarFieldContainer[str]
    stores: _containers.RepeatedScalarFieldContainer[str]
    successors: _containers.RepeatedScalarFieldContainer[str]
    topic: str
    topics: _containers.RepeatedScalarFieldContainer[str]
    type: Node.Type
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[Node.Type, str]] = ..., topics: _Optional[_Iterable[str]] = ..., topic: _Optional[str] = ..., stores: _Optional[_Iterable[str]] = ..., successors: _Optional[_Iterable[str]] = ..., predecessors: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeMetrics(_message.Message):
    __slots__ = ["bundles", "fused_into", "mean_crossing_seconds", "name", "records", "subtopology"]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    FUSED_INTO_FIELD_NUMBER: _ClassVar[int]
    MEAN_CROSSING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SUBTOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    bundles: int
    fused_into: str
    mean_crossing_seconds: float
    name: str
    records: int
    subtopology: int
    def __init__(self, name: _Optional[str] = ..., subtopology: _Optional[int] = ..., records: _Optional[int] = ..., fused_into: _Optional[str] = ..., bundles: _Optional[int] = ..., mean_crossing_seconds: _Optional[float] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ["application_id", "config", "host_features"]
    class ConfigEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    HOST_FEATURES_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    config: _containers.ScalarMap[str, str]
    host_features: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, application_id: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., host_features: _Optional[_Iterable[str]] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ["config", "session_id", "version"]
    class ConfigEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    session_id: str
    version: str
    def __init__(self, session_id: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., version: _Optional[str] = ...) -> None: ...

class PartitionLag(_message.Message):
    __slots__ = ["end", "lag", "partition", "position", "topic"]
    END_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    end: int
    lag: int
    partition: int
    position: int
    topic: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., position: _Optional[int] = ..., end: _Optional[int] = ..., lag: _Optional[int] = ...) -> None: ...

class PauseProcessingRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class PauseProcessingResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PeekOp(_message.Message):
    __slots__ = ["input", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class PipeInputRequest(_message.Message):
    __slots__ = ["records", "session_id"]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[TestRecord]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., records: _Optional[_Iterable[_Union[TestRecord, _Mapping]]] = ...) -> None: ...

class PipeInputResponse(_message.Message):
    __slots__ = ["error", "failed_record", "processed"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILED_RECORD_FIELD_NUMBER: _ClassVar[int]
    PROCESSED_FIELD_NUMBER: _ClassVar[int]
    error: str
    failed_record: RecordContext
    processed: int
    def __init__(self, processed: _Optional[int] = ..., error: _Optional[str] = ..., failed_record: _Optional[_Union[RecordContext, _Mapping]] = ...) -> None: ...

class PrintOp(_message.Message):
    __slots__ = ["input", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class ProcessOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "stores", "token", "value_serde", "values_only"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUES_ONLY_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    stores: _containers.RepeatedScalarFieldContainer[str]
    token: int
    value_serde: str
    values_only: bool
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ..., stores: _Optional[_Iterable[str]] = ..., values_only: bool = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ...) -> None: ...

class QueryMetadataForKeyRequest(_message.Message):
    __slots__ = ["key", "session_id", "store"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    session_id: str
    store: str
    def __init__(self, session_id: _Optional[str] = ..., store: _Optional[str] = ..., key: _Optional[bytes] = ...) -> None: ...

class QueryMetadataForKeyResponse(_message.Message):
    __slots__ = ["active_host", "partition", "standby_hosts"]
    ACTIVE_HOST_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    STANDBY_HOSTS_FIELD_NUMBER: _ClassVar[int]
    active_host: HostInfo
    partition: int
    standby_hosts: _containers.RepeatedCompositeFieldContainer[HostInfo]
    def __init__(self, active_host: _Optional[_Union[HostInfo, _Mapping]] = ..., standby_hosts: _Optional[_Iterable[_Union[HostInfo, _Mapping]]] = ..., partition: _Optional[int] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ["all", "application_id", "application_server", "enable_stale_stores", "get", "limit", "local_only", "prefix", "range", "session_id", "store", "versioned_get", "window_fetch"]
    ALL_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_SERVER_FIELD_NUMBER: _ClassVar[int]
    ENABLE_STALE_STORES_FIELD_NUMBER: _ClassVar[int]
    GET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_ONLY_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    VERSIONED_GET_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FETCH_FIELD_NUMBER: _ClassVar[int]
    all: bool
    application_id: str
    application_server: str
    enable_stale_stores: bool
    get: bytes
    limit: int
    local_only: bool
    prefix: bytes
    range: KeyRange
    session_id: str
    store: str
    versioned_get: VersionedGet
    window_fetch: WindowFetch
    def __init__(self, session_id: _Optional[str] = ..., store: _Optional[str] = ..., get: _Optional[bytes] = ..., range: _Optional[_Union[KeyRange, _Mapping]] = ..., prefix: _Optional[bytes] = ..., all: bool = ..., window_fetch: _Optional[_Union[WindowFetch, _Mapping]] = ..., versioned_get: _Optional[_Union[VersionedGet, _Mapping]] = ..., limit: _Optional[int] = ..., enable_stale_stores: bool = ..., local_only: bool = ..., application_id: _Optional[str] = ..., application_server: _Optional[str] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ["from_standby", "key_lengths", "key_serde", "keys", "partition", "partitions", "served_by", "timestamps", "truncated", "valid_to_ms", "value_lengths", "value_serde", "values"]
    FROM_STANDBY_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SERVED_BY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_MS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    from_standby: bool
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    key_serde: str
    keys: bytes
    partition: int
    partitions: _containers.RepeatedScalarFieldContainer[int]
    served_by: _containers.RepeatedScalarFieldContainer[str]
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    truncated: bool
    valid_to_ms: int
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    value_serde: str
    values: bytes
    def __init__(self, key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., truncated: bool = ..., timestamps: _Optional[_Iterable[int]] = ..., from_standby: bool = ..., served_by: _Optional[_Iterable[str]] = ..., partition: _Optional[int] = ..., partitions: _Optional[_Iterable[int]] = ..., valid_to_ms: _Optional[int] = ...) -> None: ...

class ReadOutputRequest(_message.Message):
    __slots__ = ["session_id", "topic"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    topic: str
    def __init__(self, session_id: _Optional[str] = ..., topic: _Optional[str] = ...) -> None: ...

class ReadOutputResponse(_message.Message):
    __slots__ = ["key_serde", "records", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    records: _containers.RepeatedCompositeFieldContainer[TestRecord]
    value_serde: str
    def __init__(self, records: _Optional[_Iterable[_Union[TestRecord, _Mapping]]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ...) -> None: ...

class ReadRequest(_message.Message):
    __slots__ = ["all", "bundle_id", "continuation", "get", "prefix", "range", "reverse", "session_id", "store", "versions", "window_fetch"]
    ALL_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    GET_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FETCH_FIELD_NUMBER: _ClassVar[int]
    all: bool
    bundle_id: int
    continuation: bytes
    get: bytes
    prefix: bytes
    range: KeyRange
    reverse: bool
    session_id: str
    store: str
    versions: bytes
    window_fetch: WindowFetch
    def __init__(self, session_id: _Optional[str] = ..., bundle_id: _Optional[int] = ..., store: _Optional[str] = ..., get: _Optional[bytes] = ..., range: _Optional[_Union[KeyRange, _Mapping]] = ..., prefix: _Optional[bytes] = ..., all: bool = ..., window_fetch: _Optional[_Union[WindowFetch, _Mapping]] = ..., versions: _Optional[bytes] = ..., reverse: bool = ..., continuation: _Optional[bytes] = ...) -> None: ...

class ReadResponse(_message.Message):
    __slots__ = ["continuation", "key_lengths", "keys", "timestamps", "value_lengths", "values", "windows"]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    continuation: bytes
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    keys: bytes
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    values: bytes
    windows: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., timestamps: _Optional[_Iterable[int]] = ..., windows: _Optional[_Iterable[int]] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class RecordContext(_message.Message):
    __slots__ = ["node", "offset", "partition", "topic"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    node: str
    offset: int
    partition: int
    topic: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ..., node: _Optional[str] = ...) -> None: ...

class RecordFailure(_message.Message):
    __slots__ = ["index", "kind", "message", "step"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KIND_DESERIALIZATION: RecordFailure.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_PROCESSING: RecordFailure.Kind
    KIND_UNSPECIFIED: RecordFailure.Kind
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    index: int
    kind: RecordFailure.Kind
    message: str
    step: int
    def __init__(self, index: _Optional[int] = ..., step: _Optional[int] = ..., message: _Optional[str] = ..., kind: _Optional[_Union[RecordFailure.Kind, str]] = ...) -> None: ...

class ReduceOp(_message.Message):
    __slots__ = ["builtin", "input", "materialized", "name", "subtractor_token", "token"]
    BUILTIN_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBTRACTOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    builtin: Reducer
    input: int
    materialized: Materialized
    name: str
    subtractor_token: int
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., builtin: _Optional[_Union[Reducer, str]] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., name: _Optional[str] = ..., subtractor_token: _Optional[int] = ...) -> None: ...

class RegisterFunctionRequest(_message.Message):
    __slots__ = ["metadata", "name", "session_id"]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    metadata: Metadata
    name: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., metadata: _Optional[_Union[Metadata, str]] = ...) -> None: ...

class RegisterFunctionResponse(_message.Message):
    __slots__ = ["token"]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: int
    def __init__(self, token: _Optional[int] = ...) -> None: ...

class RepartitionOp(_message.Message):
    __slots__ = ["input", "name", "partitioner_token", "partitions"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    partitioner_token: int
    partitions: int
    def __init__(self, input: _Optional[int] = ..., name: _Optional[str] = ..., partitions: _Optional[int] = ..., partitioner_token: _Optional[int] = ...) -> None: ...

class RestoreProgress(_message.Message):
    __slots__ = ["restored_records", "restoring_partitions", "total_partitions", "total_records"]
    RESTORED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    RESTORING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RECORDS_FIELD_NUMBER: _ClassVar[int]
    restored_records: int
    restoring_partitions: int
    total_partitions: int
    total_records: int
    def __init__(self, restored_records: _Optional[int] = ..., total_records: _Optional[int] = ..., restoring_partitions: _Optional[int] = ..., total_partitions: _Optional[int] = ...) -> None: ...

class ResumeProcessingRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ResumeProcessingResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class SelectKeyOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "token"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    token: int
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., key_serde: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class SessionWindows(_message.Message):
    __slots__ = ["grace_ms", "inactivity_gap_ms"]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    INACTIVITY_GAP_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    inactivity_gap_ms: int
    def __init__(self, inactivity_gap_ms: _Optional[int] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class SlidingWindows(_message.Message):
    __slots__ = ["grace_ms", "time_difference_ms"]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_DIFFERENCE_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    time_difference_ms: int
    def __init__(self, time_difference_ms: _Optional[int] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class SplitOp(_message.Message):
    __slots__ = ["branches", "default_branch", "default_name", "input", "name"]
    BRANCHES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_BRANCH_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    branches: _containers.RepeatedCompositeFieldContainer[Branch]
    default_branch: bool
    default_name: str
    input: int
    name: str
    def __init__(self, input: _Optional[int] = ..., name: _Optional[str] = ..., branches: _Optional[_Iterable[_Union[Branch, _Mapping]]] = ..., default_branch: bool = ..., default_name: _Optional[str] = ...) -> None: ...

class StartRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class StartResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Step(_message.Message):
    __slots__ = ["children", "initializer_token", "merger_token", "metadata", "node", "operation", "stores", "subtractor_token", "token"]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    INITIALIZER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MERGER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    SUBTRACTOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedScalarFieldContainer[str]
    initializer_token: int
    merger_token: int
    metadata: Metadata
    node: str
    operation: Operation
    stores: _containers.RepeatedScalarFieldContainer[str]
    subtractor_token: int
    token: int
    def __init__(self, token: _Optional[int] = ..., operation: _Optional[_Union[Operation, str]] = ..., node: _Optional[str] = ..., initializer_token: _Optional[int] = ..., subtractor_token: _Optional[int] = ..., merger_token: _Optional[int] = ..., stores: _Optional[_Iterable[str]] = ..., children: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Union[Metadata, str]] = ...) -> None: ...

class StopRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class StopResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StoreMetrics(_message.Message):
    __slots__ = ["entries", "name"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    entries: int
    name: str
    def __init__(self, name: _Optional[str] = ..., entries: _Optional[int] = ...) -> None: ...

class StoreView(_message.Message):
    __slots__ = ["history_retention_ms", "key_lengths", "key_serde", "keys", "store", "stream_time_ms", "timestamps", "type", "uncovered", "uncovered_lengths", "value_lengths", "value_serde", "values", "version_counts", "windows"]
    HISTORY_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    STREAM_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    UNCOVERED_FIELD_NUMBER: _ClassVar[int]
    UNCOVERED_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    VERSION_COUNTS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    history_retention_ms: int
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    key_serde: str
    keys: bytes
    store: str
    stream_time_ms: int
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    type: StoreType
    uncovered: bytes
    uncovered_lengths: _containers.RepeatedScalarFieldContainer[int]
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    value_serde: str
    values: bytes
    version_counts: _containers.RepeatedScalarFieldContainer[int]
    windows: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, store: _Optional[str] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., type: _Optional[_Union[StoreType, str]] = ..., key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., timestamps: _Optional[_Iterable[int]] = ..., windows: _Optional[_Iterable[int]] = ..., uncovered_lengths: _Optional[_Iterable[int]] = ..., uncovered: _Optional[bytes] = ..., stream_time_ms: _Optional[int] = ..., version_counts: _Optional[_Iterable[int]] = ..., history_retention_ms: _Optional[int] = ...) -> None: ...

class StreamOp(_message.Message):
    __slots__ = ["key_serde", "name", "offset_reset", "timestamp_extractor", "topics", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_RESET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    name: str
    offset_reset: str
    timestamp_extractor: TimestampExtractor
    topics: _containers.RepeatedScalarFieldContainer[str]
    value_serde: str
    def __init__(self, topics: _Optional[_Iterable[str]] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., offset_reset: _Optional[str] = ..., timestamp_extractor: _Optional[_Union[TimestampExtractor, _Mapping]] = ...) -> None: ...

class StreamsMetadata(_message.Message):
    __slots__ = ["host_info", "standby_state_store_names", "standby_topic_partitions", "state_store_names", "topic_partitions"]
    HOST_INFO_FIELD_NUMBER: _ClassVar[int]
    STANDBY_STATE_STORE_NAMES_FIELD_NUMBER: _ClassVar[int]
    STANDBY_TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    STATE_STORE_NAMES_FIELD_NUMBER: _ClassVar[int]
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    host_info: HostInfo
    standby_state_store_names: _containers.RepeatedScalarFieldContainer[str]
    standby_topic_partitions: _containers.RepeatedCompositeFieldContainer[TopicPartition]
    state_store_names: _containers.RepeatedScalarFieldContainer[str]
    topic_partitions: _containers.RepeatedCompositeFieldContainer[TopicPartition]
    def __init__(self, host_info: _Optional[_Union[HostInfo, _Mapping]] = ..., state_store_names: _Optional[_Iterable[str]] = ..., topic_partitions: _Optional[_Iterable[_Union[TopicPartition, _Mapping]]] = ..., standby_state_store_names: _Optional[_Iterable[str]] = ..., standby_topic_partitions: _Optional[_Iterable[_Union[TopicPartition, _Mapping]]] = ...) -> None: ...

class StreamsMetadataRequest(_message.Message):
    __slots__ = ["session_id", "store"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    store: str
    def __init__(self, session_id: _Optional[str] = ..., store: _Optional[str] = ...) -> None: ...

class StreamsMetadataResponse(_message.Message):
    __slots__ = ["local_host", "metadata"]
    LOCAL_HOST_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    local_host: str
    metadata: _containers.RepeatedCompositeFieldContainer[StreamsMetadata]
    def __init__(self, metadata: _Optional[_Iterable[_Union[StreamsMetadata, _Mapping]]] = ..., local_host: _Optional[str] = ...) -> None: ...

class Subtopology(_message.Message):
    __slots__ = ["id", "nodes"]
    ID_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    id: int
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    def __init__(self, id: _Optional[int] = ..., nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ...) -> None: ...

class SuppressBuffer(_message.Message):
    __slots__ = ["max_bytes", "max_records", "when_full"]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    WHEN_FULL_FIELD_NUMBER: _ClassVar[int]
    max_bytes: int
    max_records: int
    when_full: BufferFull
    def __init__(self, max_records: _Optional[int] = ..., max_bytes: _Optional[int] = ..., when_full: _Optional[_Union[BufferFull, str]] = ...) -> None: ...

class SuppressOp(_message.Message):
    __slots__ = ["buffer", "input", "name", "time_limit_ms"]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_MS_FIELD_NUMBER: _ClassVar[int]
    buffer: SuppressBuffer
    input: int
    name: str
    time_limit_ms: int
    def __init__(self, input: _Optional[int] = ..., name: _Optional[str] = ..., time_limit_ms: _Optional[int] = ..., buffer: _Optional[_Union[SuppressBuffer, _Mapping]] = ...) -> None: ...

class TableOp(_message.Message):
    __slots__ = ["key_serde", "materialized", "name", "offset_reset", "timestamp_extractor", "topic", "value_serde"]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_RESET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    key_serde: str
    materialized: Materialized
    name: str
    offset_reset: str
    timestamp_extractor: TimestampExtractor
    topic: str
    value_serde: str
    def __init__(self, topic: _Optional[str] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., offset_reset: _Optional[str] = ..., timestamp_extractor: _Optional[_Union[TimestampExtractor, _Mapping]] = ...) -> None: ...

class TaskMetrics(_message.Message):
    __slots__ = ["id", "inputs", "restored", "stores"]
    ID_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    id: str
    inputs: _containers.RepeatedCompositeFieldContainer[PartitionLag]
    restored: bool
    stores: _containers.RepeatedCompositeFieldContainer[StoreMetrics]
    def __init__(self, id: _Optional[str] = ..., restored: bool = ..., inputs: _Optional[_Iterable[_Union[PartitionLag, _Mapping]]] = ..., stores: _Optional[_Iterable[_Union[StoreMetrics, _Mapping]]] = ...) -> None: ...

class TestHeader(_message.Message):
    __slots__ = ["key", "value"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class TestRecord(_message.Message):
    __slots__ = ["headers", "key", "timestamp_ms", "topic", "value"]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    headers: _containers.RepeatedCompositeFieldContainer[TestHeader]
    key: bytes
    timestamp_ms: int
    topic: str
    value: bytes
    def __init__(self, topic: _Optional[str] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., timestamp_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[TestHeader, _Mapping]]] = ...) -> None: ...

class TimeWindows(_message.Message):
    __slots__ = ["advance_ms", "grace_ms", "size_ms"]
    ADVANCE_MS_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    SIZE_MS_FIELD_NUMBER: _ClassVar[int]
    advance_ms: int
    grace_ms: int
    size_ms: int
    def __init__(self, size_ms: _Optional[int] = ..., advance_ms: _Optional[int] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class TimestampExtractor(_message.Message):
    __slots__ = ["builtin", "token"]
    BUILTIN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    builtin: str
    token: int
    def __init__(self, token: _Optional[int] = ..., builtin: _Optional[str] = ...) -> None: ...

class ToOp(_message.Message):
    __slots__ = ["input", "key_serde", "name", "partitioner_token", "topic", "topic_extractor_token", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    KEY_SERDE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOPIC_EXTRACTOR_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    key_serde: str
    name: str
    partitioner_token: int
    topic: str
    topic_extractor_token: int
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., topic: _Optional[str] = ..., key_serde: _Optional[str] = ..., value_serde: _Optional[str] = ..., name: _Optional[str] = ..., partitioner_token: _Optional[int] = ..., topic_extractor_token: _Optional[int] = ...) -> None: ...

class ToStreamOp(_message.Message):
    __slots__ = ["input", "name"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    input: int
    name: str
    def __init__(self, input: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class ToTableOp(_message.Message):
    __slots__ = ["input", "materialized", "name"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    def __init__(self, input: _Optional[int] = ..., name: _Optional[str] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ...) -> None: ...

class TopicPartition(_message.Message):
    __slots__ = ["partition", "topic"]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    partition: int
    topic: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class TopologyDescription(_message.Message):
    __slots__ = ["subtopologies"]
    SUBTOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    subtopologies: _containers.RepeatedCompositeFieldContainer[Subtopology]
    def __init__(self, subtopologies: _Optional[_Iterable[_Union[Subtopology, _Mapping]]] = ...) -> None: ...

class TransformValuesOp(_message.Message):
    __slots__ = ["input", "materialized", "name", "stores", "token", "value_serde"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STORES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_SERDE_FIELD_NUMBER: _ClassVar[int]
    input: int
    materialized: Materialized
    name: str
    stores: _containers.RepeatedScalarFieldContainer[str]
    token: int
    value_serde: str
    def __init__(self, input: _Optional[int] = ..., token: _Optional[int] = ..., name: _Optional[str] = ..., stores: _Optional[_Iterable[str]] = ..., materialized: _Optional[_Union[Materialized, _Mapping]] = ..., value_serde: _Optional[str] = ...) -> None: ...

class VersionedGet(_message.Message):
    __slots__ = ["as_of_ms", "key"]
    AS_OF_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    as_of_ms: int
    key: bytes
    def __init__(self, key: _Optional[bytes] = ..., as_of_ms: _Optional[int] = ...) -> None: ...

class VersionedStore(_message.Message):
    __slots__ = ["history_retention_ms", "segment_interval_ms"]
    HISTORY_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    history_retention_ms: int
    segment_interval_ms: int
    def __init__(self, history_retention_ms: _Optional[int] = ..., segment_interval_ms: _Optional[int] = ...) -> None: ...

class WindowFetch(_message.Message):
    __slots__ = ["from_ms", "key", "to_ms"]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TO_MS_FIELD_NUMBER: _ClassVar[int]
    from_ms: int
    key: bytes
    to_ms: int
    def __init__(self, key: _Optional[bytes] = ..., from_ms: _Optional[int] = ..., to_ms: _Optional[int] = ...) -> None: ...

class WindowedByOp(_message.Message):
    __slots__ = ["input", "session", "sliding", "time"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SLIDING_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    input: int
    session: SessionWindows
    sliding: SlidingWindows
    time: TimeWindows
    def __init__(self, input: _Optional[int] = ..., time: _Optional[_Union[TimeWindows, _Mapping]] = ..., sliding: _Optional[_Union[SlidingWindows, _Mapping]] = ..., session: _Optional[_Union[SessionWindows, _Mapping]] = ...) -> None: ...

class Metadata(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EmitStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BufferFull(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class StoreType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Reducer(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Joiner(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Operation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OpKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
