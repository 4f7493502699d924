/**
 * polystreams: Kafka Streams' programming model for Node.js, on one Go engine.
 *
 * ```ts
 * import { App } from "polystreams";
 *
 * const app = await App.create("wordcount");
 * app.stream("lines", { value: "string" })
 *   .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
 *   .groupBy((_key, word) => word, { key: "string" })
 *   .count()
 *   .toStream()
 *   .to("word-counts");
 * await app.run();
 * ```
 */

export { App } from "./app.js";
export { TopologyTestDriver } from "./test_driver.js";
export type { Headers, PipeOptions, TestDriverOptions, TestRecord } from "./test_driver.js";
export type { AppOptions, BrokerOutage, CloseOptions, HostHealth, RestoreListener, RestoreProgress, RunOptions, State, StateListener, StreamOptions } from "./app.js";
export type { Config, OffsetReset, ProcessingGuarantee, ProductionExceptionHandler } from "./config.js";
export type { DescribeFormat, Metrics, NodeMetrics, PartitionLag, TaskMetrics } from "./metrics.js";
export {
  BranchedKStream,
  CogroupedKStream,
  GlobalKTable,
  KGroupedStream,
  KGroupedTable,
  KStream,
  KTable,
  SessionWindowedCogroupedKStream,
  SessionWindowedKStream,
  TimeWindowedCogroupedKStream,
  TimeWindowedKStream,
} from "./dsl.js";
export type {
  AggregationOptions,
  BuiltinJoiner,
  GlobalTableOptions,
  Handle,
  KeyOptions,
  KeyValueOptions,
  Kind,
  Materialized,
  MaybePromise,
  NamedOptions,
  PrintOptions,
  Reducer,
  RepartitionOptions,
  StreamJoinOptions,
  TableOperatorOptions,
  TableOptions,
  TableValueOptions,
  ToOptions,
  StreamPartitioner,
  TopicNameExtractor,
  ValueOptions,
} from "./dsl.js";
export type { EngineLogger, LogLevel } from "./engine.js";
export {
  EngineStartError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PolystreamsError,
  ProcessingError,
  UnavailableError,
} from "./errors.js";
export type { RecordContext } from "./errors.js";
export { SERDE_NAMES, avro, decode, encode, jsonSchema, protobuf } from "./serde.js";
export { Entries, KeyValueStore, VersionedKeyValueStore, type VersionedRecord, WindowStore } from "./store.js";
export type { HostInfo, KeyQueryMetadata, KeyQueryResult, RangeOptions, StoreOptions, StreamsMetadata, Time } from "./store.js";
export { EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, Windowed } from "./windows.js";
export type { BufferConfig, BufferFull, SuppressedOptions } from "./windows.js";
export type { SerdeName, SerdeType, SerdeTypes, TopicSerde } from "./serde.js";

export { FixedKeyRecord, PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, Record, StoreBuilder, Stores, withMetadata } from "./processor.js";
export type {
  Cancellable,
  FixedKeyProcessor,
  FixedKeyProcessorContext,
  FixedKeyProcessorSupplier,
  Header,
  KeyValueIterator,
  KeyValueStore as ProcessorKeyValueStore,
  Processor,
  ProcessorContext,
  ProcessorSupplier,
  PunctuationType,
  Punctuator,
  RecordMetadata,
  StoreBuilderOptions,
  TimestampedKeyValueStore,
  ValueAndTimestamp,
  ValueTransformerWithKey,
  ValueTransformerWithKeySupplier,
  VersionedKeyValueStore as ProcessorVersionedKeyValueStore,
  VersionedStoreBuilderOptions,
  WindowStore as ProcessorWindowStore,
  WindowStoreBuilderOptions,
} from "./processor.js";
export { Topology } from "./topology.js";
export type { SourceOptions } from "./topology.js";
export type { BuiltinTimestampExtractor, ProcessOptions, TimestampExtractor, TransformValuesOptions } from "./dsl.js";

export { VERSION } from "./version.js";
