// Package topology assembles a processing graph from builder calls, one call
// per operator, naming nodes and stores exactly as Kafka Streams'
// InternalStreamsBuilder does, and describes it exactly as Kafka Streams'
// Topology.describe().toString() does.
//
// This file is the contract the runtime and the server build on: the graph
// types (Node, Store, Subtopology, Topology) and the errors. builder.go has
// the operators, assemble.go Builder.Topology, describe.go the description.
package topology

import (
	"errors"
	"regexp"
)

// Kind is what a handle stands for.
type Kind int

const (
	KindStream Kind = iota + 1
	KindGroupedStream
	KindTable
	KindGroupedTable
	KindWindowedStream
	KindSessionWindowedStream
	// KindGlobalTable is a GlobalKTable (global.go).
	KindGlobalTable
	// KindCogroupedStream is a CogroupedKStream (cogroup.go), and the
	// windowed kinds its windowedBy makes: TimeWindowedCogroupedKStream
	// (time and sliding windows) and SessionWindowedCogroupedKStream.
	KindCogroupedStream
	KindWindowedCogroupedStream
	KindSessionWindowedCogroupedStream
)

func (k Kind) String() string {
	switch k {
	case KindStream:
		return "stream"
	case KindGroupedStream:
		return "grouped stream"
	case KindTable:
		return "table"
	case KindGroupedTable:
		return "grouped table"
	case KindWindowedStream:
		return "windowed stream"
	case KindSessionWindowedStream:
		return "session-windowed stream"
	case KindGlobalTable:
		return "global table"
	case KindCogroupedStream:
		return "cogrouped stream"
	case KindWindowedCogroupedStream:
		return "windowed cogrouped stream"
	case KindSessionWindowedCogroupedStream:
		return "session-windowed cogrouped stream"
	}
	return "unknown kind"
}

// Handle names what one builder call made. IDs are minted by the Builder,
// unique within it, never 0.
type Handle struct {
	ID         uint64
	Kind       Kind
	KeySerde   string
	ValueSerde string
	// Node is the node whose output this handle stands for.
	Node *Node
}

// NodeType is source, processor or sink, as describe() prints them.
type NodeType int

const (
	Source NodeType = iota + 1
	Processor
	Sink
)

// Op is what a processor node does.
type Op int

const (
	OpNone Op = iota // sources and sinks
	// Stateless operators that run a Function (host token or native Go).
	OpMapValues
	OpFilter
	OpFilterNot
	OpFlatMapValues
	OpMap
	OpSelectKey
	OpPeek
	OpForeach
	// OpRepartitionFilter drops records with a null key before a repartition
	// sink (Kafka Streams' "-repartition-filter" / KSTREAM-FILTER node),
	// unless Node.KeepNullKeys.
	OpRepartitionFilter
	// OpCount is KStreamAggregate counting: the store holds a long per key,
	// and each update is forwarded as a table change (key, long).
	OpCount
	// OpToStream is KTable.toStream: forwards each change's new value.
	OpToStream
	// OpReduce is KStreamReduce: the first value of a key becomes its
	// aggregate, later ones are folded in with Fn (a ReduceFunc or a host
	// reducer). Each update is forwarded as a table change.
	OpReduce
	// OpAggregate is KStreamAggregate: Init gives a key's first aggregate,
	// Fn folds each value into it (an AggregateFunc or a host aggregator).
	OpAggregate

	// Table operators: their records are changes (Node.SendOld).
	//
	// OpTableSource is KTableSource: upserts the topic's records into the
	// table (a null value deletes), forwarding each change.
	OpTableSource
	// OpTableFilter, OpTableFilterNot: KTableFilter; a record that does not
	// pass becomes a tombstone.
	OpTableFilter
	OpTableFilterNot
	// OpTableMapValues is KTableMapValues.
	OpTableMapValues
	// OpTableSelect is KTableRepartitionMap (KTable.groupBy): maps the old
	// and the new value of each change to the grouped table's key and value.
	OpTableSelect
	// OpTableCount, OpTableReduce, OpTableAggregate are KTableAggregate and
	// KTableReduce: the subtractor (Sub) removes old values, the adder (Fn)
	// adds new ones.
	OpTableCount
	OpTableReduce
	OpTableAggregate
	// OpSuppress is KTableSuppressProcessor: it buffers a table's updates
	// and forwards each key's last one once stream time passes its window's
	// end plus grace (untilWindowCloses) or its first buffered update's time
	// plus a limit (untilTimeLimit), or early when the buffer is full.
	OpSuppress
	// OpMerge is KStream.merge (KStreamPassThrough with two predecessors).
	OpMerge
	// OpBranch is KStreamBranch (KStream.split): each record goes to the
	// first successor whose predicate (Node.Branches[i]) it passes, else to
	// the default branch (a last successor beyond the predicates), else
	// nowhere.
	OpBranch
	// OpBranchChild is a branch of a split: a pass-through named
	// <split name><branch name or number>.
	OpBranchChild
	// OpJoin and OpLeftJoin are KStreamKTableJoin: each stream record is
	// joined (Fn, a ValueJoinerFunc or host joiner) with the value the
	// table's store (Stores[0]) holds for its key; an inner join drops a
	// record the table holds nothing for, a left join joins it with null.
	OpJoin
	OpLeftJoin
	// OpJoinWindow is KStreamJoinWindow: it keeps a stream-stream join
	// side's records in its window store (Stores[0]) and forwards them to
	// the side's join processor.
	OpJoinWindow
	// OpStreamJoin is KStreamKStreamJoin, one per side (Node.Join).
	OpStreamJoin

	// Foreign-key table-table join (KIP-213; join_fk.go): the nodes
	// KTableImpl.doJoinOnForeignKey writes, sharing Node.FK.
	//
	// OpFKSend is SubscriptionSendProcessorSupplier: each change of the
	// left table becomes subscriptions keyed by foreign key (Fn extracts
	// it).
	OpFKSend
	// OpFKReceive is SubscriptionReceiveProcessorSupplier: it keeps the
	// subscriptions in their store (Stores[0]).
	OpFKReceive
	// OpFKSubscriptionJoin is SubscriptionJoinProcessorSupplier: it answers
	// a subscription with the right table's value (Stores[0]: its store).
	OpFKSubscriptionJoin
	// OpFKForeignJoin is ForeignTableJoinProcessorSupplier: it answers each
	// subscription of a right table key that changed.
	OpFKForeignJoin
	// OpFKResolve is ResponseJoinProcessorSupplier: it drops stale answers
	// and joins (Fn) the rest with the left table's value (Stores[0]).
	OpFKResolve
	// OpFKOutput is the join's result table (a KTableSource), stored when
	// materialized with a store name.
	OpFKOutput
	// OpGlobalJoin and OpGlobalLeftJoin are KStreamGlobalKTableJoin
	// (global.go): KeyMapper maps each stream record to a key of the global
	// table's store (GlobalStore), whose value Fn joins with the record's.
	OpGlobalJoin
	OpGlobalLeftJoin

	// OpFlatMap is KStreamFlatMap (KStream.flatMap): zero or more records
	// with new keys and values per record. It changes keys.
	OpFlatMap
	// OpMapValuesWithKey and OpFlatMapValuesWithKey are KStream.mapValues
	// and flatMapValues with a ValueMapperWithKey: the function reads the
	// key too, but cannot change it.
	OpMapValuesWithKey
	OpFlatMapValuesWithKey
	// OpPrint is KStreamPrint (KStream.print): a terminal foreach whose
	// function prints each record where it runs.
	OpPrint

	// OpProcess is a Processor API processor (KStream.process,
	// Topology.addProcessor): Fn is its supplier (a host token or a
	// NewProcessorFunc), Stores the stores connected to it, and its
	// Successors its children (process.go).
	OpProcess
	// OpProcessValues is KStream.processValues: as OpProcess, but forwards
	// keep the input's key.
	OpProcessValues
	// OpCogroupMerge is a cogroup's KTablePassThrough (cogroup.go): it
	// forwards the changes of the cogroup's aggregation nodes, which share
	// one store (its predecessors' Stores[0], the table's value getter).
	OpCogroupMerge
	// OpTableTransformValues is KTableTransformValues (KTable.transformValues,
	// table_transform.go): Fn is the transformer supplier in processor
	// form, Stores its own store (TableStore, when materialized) and the
	// transformer's.
	OpTableTransformValues
)

// Function is the user function of a stateless operator: a host token, or a
// native Go function (then Token is 0). Native is one of the func types
// below, matching the node's Op.
type Function struct {
	Token  uint32
	Name   string
	Native any
	// Builtin names a built-in reducer (sum, min, max, latest) for reduce,
	// or a built-in joiner (pair, this, other) for a join; the builder
	// resolves it to Native for the serdes of the values it reads.
	Builtin string
	// Metadata is what the function asked for when registered: the
	// record's metadata as one more argument (MetadataRead), and leave to
	// set its outputs' timestamps and headers (MetadataWrite).
	Metadata Metadata
}

// Metadata is a registered function's access to record metadata
// (RegisterFunctionRequest.metadata).
type Metadata uint8

const (
	MetadataNone Metadata = iota
	MetadataRead
	MetadataWrite
)

// Native function types, over serialized bytes (nil is null).
type (
	MapValuesFunc     func(value []byte) ([]byte, error)
	PredicateFunc     func(key, value []byte) (bool, error)
	FlatMapValuesFunc func(value []byte) ([][]byte, error)
	MapFunc           func(key, value []byte) (newKey, newValue []byte, err error)
	// FlatMapFunc is flatMap's mapper: the new records, in order.
	FlatMapFunc func(key, value []byte) ([]KeyValue, error)
	// MapValuesWithKeyFunc and FlatMapValuesWithKeyFunc are
	// ValueMapperWithKey: mapValues and flatMapValues reading the key.
	MapValuesWithKeyFunc     func(key, value []byte) ([]byte, error)
	FlatMapValuesWithKeyFunc func(key, value []byte) ([][]byte, error)
	SelectKeyFunc            func(key, value []byte) ([]byte, error)
	ForeachFunc              func(key, value []byte) error // peek and foreach
	ReduceFunc               func(aggregate, value []byte) ([]byte, error)
	AggregateFunc            func(key, value, aggregate []byte) ([]byte, error)
	InitializerFunc          func() ([]byte, error)
	// ValueJoinerFunc joins a stream value with a table value (nil: none,
	// in a left join); a nil result is a null value.
	ValueJoinerFunc func(value, other []byte) ([]byte, error)
	// StreamPartitionerFunc is StreamPartitioner.partitions: the
	// partitions of topic (of n) the record goes to; ok false is Kafka's
	// default partitioner, an empty set drops the record.
	StreamPartitionerFunc func(topic string, key, value []byte, n int) (partitions []int, ok bool, err error)
	// TopicNameExtractorFunc is TopicNameExtractor.extract: the topic the
	// record goes to.
	TopicNameExtractorFunc func(key, value []byte, rc RecordContext) (string, error)
)

// KeyValue is one record a FlatMapFunc makes (nil is null).
type KeyValue struct{ Key, Value []byte }

// Node is one node of the graph.
type Node struct {
	Name string
	Type NodeType
	Op   Op
	// Source: topics read. Sink: Topic written. Internal topics (repartition)
	// are named without the application.id prefix; Internal says so, and the
	// runtime prefixes "<application.id>-".
	Topics   []string
	Topic    string
	Internal bool
	// Pattern: a source's topic pattern (StreamsBuilder.stream(Pattern)),
	// as given; Topics is then empty. The source reads every user topic
	// whose whole name it matches (MatchesTopic).
	Pattern string
	pattern *regexp.Regexp
	// OffsetReset: a source's Consumed.withOffsetResetPolicy (earliest,
	// latest, none); empty follows auto.offset.reset.
	OffsetReset string
	// Extractor: a source's TimestampExtractor (a built-in one resolved to
	// its Native function); nil keeps the records' timestamps.
	Extractor *Function
	// Stores this processor uses (names of Topology.Stores entries).
	Stores []string
	// Fn is set for OpMapValues .. OpForeach, OpReduce and OpAggregate.
	Fn *Function
	// Init is OpAggregate's and OpTableAggregate's initializer.
	Init *Function
	// Sub is OpTableReduce's and OpTableAggregate's subtractor.
	Sub *Function
	// Join is an OpStreamJoin's side, windows and stores.
	Join *StreamJoin
	// Merger is a session-windowed OpAggregate's merger.
	Merger *Function
	// KeyMapper is an OpGlobalJoin's (or OpGlobalLeftJoin's) key mapper
	// (a SelectKeyFunc or a host function), GlobalStore the global table's
	// store it looks keys up in. The store is not among Stores: Kafka
	// Streams does not connect a global store to the processors reading it,
	// so describe() prints none.
	KeyMapper   *Function
	GlobalStore string
	// Branches are an OpBranch's predicates, one per successor in order
	// (a successor beyond them is the default branch).
	Branches []Function
	// Partitions: a repartition sink's topic partition count
	// (Repartitioned.withNumberOfPartitions); 0: the sub-topology's.
	Partitions int32
	// Partitioner is a sink's StreamPartitioner (Produced.streamPartitioner,
	// Repartitioned.withStreamPartitioner): a StreamPartitionerFunc or a
	// host function. nil: Kafka's default partitioner.
	Partitioner *Function
	// TopicExtractor is a sink's TopicNameExtractor (a
	// TopicNameExtractorFunc or a host function): each record's topic,
	// which Topic then is not.
	TopicExtractor *Function
	// Windows: an aggregation's windows (nil: not windowed); for
	// OpSuppress, the windows of the aggregation it follows.
	Windows *Windows
	// Suppress is an OpSuppress's Suppressed.
	Suppress *Suppression
	// FK is set on the processors and the response sink of a
	// foreign-key join (join_fk.go).
	FK *FKJoin
	// Copartitioned marks a foreign-key join's internal source: its topic
	// takes the partition count of the other sources of its sub-topology
	// (InternalTopologyBuilder.copartitionSources), not of its writer's.
	Copartitioned bool
	// Getter, on a join that looks a table up (stream-table, table-table),
	// is the chain of table operators without a store of their own
	// (filter, filter_not, map_values), upstream first, that the looked-up
	// value passes through: the table joined is derived from the one whose
	// store Stores[0] is, and is read through its value getter (Kafka's
	// KTableValueGetterSupplier: a filtered-out value reads as null, a
	// mapper applies on lookup). Empty: the value is read as stored.
	Getter []*Node
	// TableStore is an OpTableTransformValues node's own store, when
	// materialized (also in Stores, first); empty: none.
	TableStore string
	// SendOld: this table node forwards old values with new ones (Kafka's
	// sendOldValues), because an operator downstream needs them.
	SendOld bool
	// KeepNullKeys: this OpRepartitionFilter passes null-key records too,
	// because a join downstream joins them with null (KIP-962; Kafka's
	// InternalStreamsBuilder.rewriteRepartitionNodes).
	KeepNullKeys bool
	// Change marks a repartition sink and source of a grouped table: their
	// records carry a change (new and old value), encoded as Kafka Streams'
	// ChangedSerializer does.
	Change bool
	// Serdes of the records this node outputs (for a source: of its topics;
	// for a sink: of what it writes).
	KeySerde, ValueSerde string
	// KeyWire, ValueWire: a source's or sink's Schema Registry serde
	// (serde.IsRegistry), when its topic has one: the source decodes its
	// records to json (KeySerde, ValueSerde), the sink encodes json to it.
	KeyWire, ValueWire string
	// Edges, in the order they were made.
	Predecessors, Successors []*Node
	// Subtopology is the id of the sub-topology holding the node, set by
	// Builder.Topology.
	Subtopology int

	// pendingStore is the store a table node reserved a name for and gets
	// only when materialized (Builder.materialize).
	pendingStore string
	// pendingConfig is that store's changelog topic configs.
	pendingConfig map[string]string

	// global marks the nodes of a global table (global.go): their
	// sub-topology is a GlobalStore, not a Subtopology.
	global bool

	// seq is the node's place in the order Kafka Streams writes nodes into
	// its InternalTopologyBuilder; describe() needs it to reproduce Java's
	// HashMap iteration order (see describe.go). Set by Builder.Topology.
	seq int
}

// Store is a state store.
type Store struct {
	Name                 string
	KeySerde, ValueSerde string
	// ChangelogTopic is "<storeName>-changelog" without the application.id
	// prefix; the runtime prefixes it.
	ChangelogTopic string
	// ChangelogConfig are topic configs for the changelog beside the
	// engine's (cleanup.policy=compact), applied when it creates it.
	ChangelogConfig map[string]string
	// Kind is the store's layout; Windows and Retention (ms) are set for
	// window and session stores, Windows for a suppression buffer.
	Kind      StoreKind
	Windows   *Windows
	Retention int64
	// Suppress: a suppression buffer's Suppressed (StoreSuppress).
	Suppress *Suppression
	// Versioned: a versioned key-value store's settings (StoreVersioned).
	Versioned *Versioned
	// JoinWindows: a stream-stream join's stores (StoreJoinWindow,
	// StoreJoinOuter).
	JoinWindows *JoinWindows
	// Global: a global table's store (global.go), holding every partition
	// of ChangelogTopic, a user topic (not prefixed), on every instance.
	Global bool
	// Processor is set for a store declared for processors
	// (AddStateStore): its type and builder options. A store with logging
	// disabled has no ChangelogTopic.
	Processor *ProcessorStore
}

// StoreKind is what a store holds.
type StoreKind int

const (
	// StoreKeyValue: a value per key (a KTable, a key-value aggregation).
	StoreKeyValue StoreKind = iota
	// StoreWindow: a value per key and window (time and sliding windows).
	StoreWindow
	// StoreSession: a value per key and session.
	StoreSession
	// StoreSuppress: the updates a suppression holds until their windows
	// close.
	StoreSuppress
	// StoreJoinWindow: a stream-stream join side's records by key and
	// timestamp, duplicates kept (Kafka Streams' join window store).
	StoreJoinWindow
	// StoreJoinOuter: a left/outer stream-stream join's records that
	// joined nothing yet, by timestamp and side.
	StoreJoinOuter
	// StoreVersioned: every version of a key's value, by the timestamp it
	// became valid at, for a history retention (KIP-889).
	StoreVersioned
)

// Subtopology is a connected part of the graph; its tasks are its source
// topics' partitions.
type Subtopology struct {
	ID int
	// Nodes in describe() order.
	Nodes []*Node
	// Sources are the source nodes.
	Sources []*Node

	// layout is how describe() orders the nodes and their edges, computed
	// once by Builder.Topology (nil for a hand-made Subtopology: then it is
	// computed on each call).
	layout *layout
}

// Topology is a finished graph, as Builder.Topology returns it.
type Topology struct {
	Subtopologies []*Subtopology
	// Globals are the global tables' sub-topologies, which make no tasks:
	// every instance reads every partition of their topics (global.go).
	Globals []*GlobalStore
	Stores  map[string]*Store
}

// Errors a builder call may fail with; the returned error wraps one of these
// and its text names the operator, handle, kind and token at fault.
var (
	// ErrNotFound: a handle that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: a wrong kind, a missing topic, an unknown serde, a bad name.
	ErrInvalid = errors.New("invalid argument")
)

// MatchesTopic reports whether a pattern source reads topic: whether its
// pattern matches the whole name (Java's Pattern.matcher(t).matches()).
// False for a source without a pattern.
func (n *Node) MatchesTopic(topic string) bool {
	return n.pattern != nil && n.pattern.MatchString(topic)
}
