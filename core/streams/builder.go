package streams

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Option is an optional argument of a builder method: a node name, serdes,
// a store. A method refuses an option it does not take (ErrInvalid), so a
// misplaced option is never ignored silently.
type Option struct {
	kind      optKind
	value     string
	key       string // StoreSerdes: the key serde (value holds the value serde)
	cfg       map[string]string
	ms        int64              // Retention
	names     []string           // Stores
	fn        *topology.Function // TimestampExtractor
	partition any                // StreamPartitioner
}

type optKind int

const (
	optName optKind = iota + 1
	optKeySerde
	optValueSerde
	optStore
	optStoreSerdes
	optChangelogConfig
	optRetention
	optStores
	optOffsetReset
	optVersioned
	optSegmentInterval
	optExtractor
	optPartitioner
)

var optNames = map[optKind]string{
	optName: "Name", optKeySerde: "KeySerde", optValueSerde: "ValueSerde",
	optStore: "Store", optStoreSerdes: "StoreSerdes", optChangelogConfig: "ChangelogConfig",
	optRetention: "Retention", optStores: "Stores", optOffsetReset: "OffsetReset",
	optVersioned: "Versioned", optSegmentInterval: "SegmentInterval",
	optExtractor:   "TimestampExtractor",
	optPartitioner: "Partitioner",
}

// Name names the operator's processor node (Kafka Streams' Named.as,
// Consumed.as, Produced.as); for GroupBy and GroupByKey it is Grouped.as,
// which also names the repartition topic.
func Name(name string) Option { return Option{kind: optName, value: name} }

// KeySerde is the serde of the keys the operator outputs (of the topics, for
// Stream and To). Absent, an operator keeps its input's; a source's is bytes.
func KeySerde(serde string) Option { return Option{kind: optKeySerde, value: serde} }

// ValueSerde is KeySerde for values.
func ValueSerde(serde string) Option { return Option{kind: optValueSerde, value: serde} }

// OffsetReset is Consumed.withOffsetResetPolicy for Stream and Table:
// where a partition of the source's topics with no committed offset
// starts, OffsetEarliest, OffsetLatest or OffsetNone (the application
// fails naming the partition). Absent, auto.offset.reset decides (default
// earliest). A GlobalTable is always read from the earliest offset.
func OffsetReset(policy string) Option { return Option{kind: optOffsetReset, value: policy} }

// auto.offset.reset's values, and OffsetReset's.
const (
	OffsetEarliest = "earliest"
	OffsetLatest   = "latest"
	OffsetNone     = "none"
)

// Store names the state store of an aggregation or a table (Materialized.as);
// its changelog topic is "<application.id>-<name>-changelog", and a named
// table store is queryable. Absent, an aggregation's store name is generated
// as Kafka Streams generates it, and a table operator keeps no store of its
// own.
func Store(name string) Option { return Option{kind: optStore, value: name} }

// StoreSerdes gives the store serdes of an aggregation or a table
// (Materialized.with); an empty one keeps the default (the input's key
// serde; for values, long for Count, else the values' serde). On a table
// operator, StoreSerdes without Store is Materialized.with naming no store:
// Kafka Streams takes a number for a store it then does not make.
func StoreSerdes(key, value string) Option {
	return Option{kind: optStoreSerdes, key: key, value: value}
}

// ChangelogConfig gives topic configs for the store's changelog, applied
// when the engine creates it (Materialized.withLoggingEnabled). The
// changelog of a key-value store stays compacted: a cleanup.policy without
// "compact" is refused.
func ChangelogConfig(config map[string]string) Option {
	return Option{kind: optChangelogConfig, cfg: config}
}

// Versioned makes a table's store a versioned key-value store
// (Materialized.as(Stores.persistentVersionedKeyValueStore(name,
// historyRetention)), KIP-889), with Store naming it: it keeps every
// version of a key's value for historyRetention behind the newest
// timestamp it saw, and a stream-table join reads the version valid at
// each stream record's timestamp (KIP-914). A record older than that is
// dropped, as Kafka Streams drops it. Query it with App.GetVersioned or
// TestDriver.GetVersionedStore. Only Table takes it.
func Versioned(historyRetention time.Duration) Option {
	return Option{kind: optVersioned, ms: historyRetention.Milliseconds()}
}

// SegmentInterval is the segment interval of a Versioned store
// (persistentVersionedKeyValueStore's third argument): checked (it must
// be positive), kept for compatibility; the engine's layout has no
// segments.
func SegmentInterval(d time.Duration) Option {
	return Option{kind: optSegmentInterval, ms: d.Milliseconds()}
}

type options struct {
	name, keySerde, valueSerde string
	stores                     []string
	mat                        *topology.Materialized
	offsetReset                string
	extractor                  *topology.Function
	partitioner                *topology.Function
}

// parse applies opts for operator op, which takes the option kinds allowed.
func parse(op string, opts []Option, allowed ...optKind) (options, error) {
	var o options
	var bad []string
	versioned := false
	for _, opt := range opts {
		ok := false
		for _, a := range allowed {
			ok = ok || a == opt.kind
		}
		if !ok {
			bad = append(bad, optNames[opt.kind])
			continue
		}
		switch opt.kind {
		case optName:
			o.name = opt.value
		case optKeySerde:
			o.keySerde = opt.value
		case optValueSerde:
			o.valueSerde = opt.value
		case optStore:
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			o.mat.StoreName = opt.value
		case optStoreSerdes:
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			o.mat.KeySerde, o.mat.ValueSerde = opt.key, opt.value
		case optChangelogConfig:
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			o.mat.ChangelogConfig = opt.cfg
		case optStores:
			o.stores = append(o.stores, opt.names...)
		case optOffsetReset:
			o.offsetReset = opt.value
		case optExtractor:
			o.extractor = opt.fn
		case optPartitioner:
			f := native("stream_partitioner", opt.partition)
			o.partitioner = &f
		case optVersioned, optSegmentInterval:
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			if o.mat.Versioned == nil {
				o.mat.Versioned = &topology.Versioned{}
			}
			if opt.kind == optVersioned {
				o.mat.Versioned.HistoryRetention, versioned = opt.ms, true
			} else {
				o.mat.Versioned.SegmentInterval = opt.ms
			}
		case optRetention:
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			o.mat.Retention = opt.ms
		}
	}
	if len(bad) > 0 {
		return o, fmt.Errorf("streams: %s does not take option %s: %w", op, strings.Join(bad, ", "), ErrInvalid)
	}
	if o.mat != nil && o.mat.Versioned != nil && !versioned {
		return o, fmt.Errorf("streams: %s: SegmentInterval is an option of a versioned store: give Versioned too: %w", op, ErrInvalid)
	}
	return o, nil
}

// Builder builds a topology (Kafka Streams' StreamsBuilder). Node and store
// names are numbered in call order, as Kafka Streams numbers them. A
// Builder and the streams it returns are not safe for concurrent use.
type Builder struct {
	b *topology.Builder
}

// NewBuilder returns an empty Builder. KeySerde and ValueSerde options
// are default.key.serde and default.value.serde: the serdes of a source
// (Stream, Table, GlobalTable) that names none (absent: bytes). A bad
// name fails the first source. A BuiltinTimestampExtractor option is
// default.timestamp.extractor: the extractor of a Stream or Table that
// gives none.
func NewBuilder(defaults ...Option) *Builder {
	b := topology.NewBuilder()
	for _, o := range defaults {
		switch o.kind {
		case optKeySerde:
			b.DefaultKeySerde = o.value
		case optValueSerde:
			b.DefaultValueSerde = o.value
		case optExtractor:
			if o.fn != nil {
				b.DefaultExtractor = o.fn.Builtin
			}
		}
	}
	return &Builder{b: b}
}

// Stream is a stream of records (KStream).
type Stream struct {
	b *Builder
	h *topology.Handle
}

// GroupedStream is a stream grouped by key, ready to aggregate
// (KGroupedStream).
type GroupedStream struct {
	b *Builder
	h *topology.Handle
}

// KeySerde is the serde of the stream's keys.
func (s *Stream) KeySerde() string { return s.h.KeySerde }

// ValueSerde is the serde of the stream's values.
func (s *Stream) ValueSerde() string { return s.h.ValueSerde }

// Node is the name of the processor node the stream's records come out of.
func (s *Stream) Node() string { return s.h.Node.Name }

// KeySerde is the serde of the grouped records' keys.
func (g *GroupedStream) KeySerde() string { return g.h.KeySerde }

// ValueSerde is the serde of the grouped records' values.
func (g *GroupedStream) ValueSerde() string { return g.h.ValueSerde }

// Stream reads topics (StreamsBuilder.stream). Options: KeySerde,
// ValueSerde (default bytes), Name.
func (b *Builder) Stream(topics []string, opts ...Option) (*Stream, error) {
	o, err := parse("Stream", opts, optName, optKeySerde, optValueSerde, optOffsetReset, optExtractor)
	if err != nil {
		return nil, err
	}
	h, err := b.b.Stream(topology.StreamOptions{Topics: topics, KeySerde: o.keySerde, ValueSerde: o.valueSerde, Name: o.name, OffsetReset: o.offsetReset, Extractor: o.extractor})
	return b.stream(h, err)
}

// StreamPattern reads every topic whose whole name pattern matches
// (StreamsBuilder.stream(Pattern)): the topics that exist when the
// application starts and those created later, found at the next metadata
// refresh (metadata.max.age.ms, overriding the default 5 minutes). Topics
// of the application's own (its repartition and changelog topics) and the
// broker's (__consumer_offsets, ...) are never read. The partitions of the
// matched topics make one task per partition number, as Kafka Streams'
// do. Options as Stream's.
func (b *Builder) StreamPattern(pattern *regexp.Regexp, opts ...Option) (*Stream, error) {
	o, err := parse("StreamPattern", opts, optName, optKeySerde, optValueSerde, optOffsetReset, optExtractor)
	if err != nil {
		return nil, err
	}
	if pattern == nil {
		return nil, errors.New("streams: StreamPattern: pattern is nil")
	}
	h, err := b.b.Stream(topology.StreamOptions{Pattern: pattern.String(), KeySerde: o.keySerde, ValueSerde: o.valueSerde, Name: o.name, OffsetReset: o.offsetReset, Extractor: o.extractor})
	return b.stream(h, err)
}

// Describe returns the topology as Kafka Streams' Topology.describe()
// prints it.
func (b *Builder) Describe() (string, error) {
	t, err := b.b.Topology()
	if err != nil {
		return "", err
	}
	return t.Describe(), nil
}

func (b *Builder) stream(h *topology.Handle, err error) (*Stream, error) {
	if err != nil {
		return nil, err
	}
	return &Stream{b: b, h: h}, nil
}

// MapValues maps each value (KStream.mapValues). Options: ValueSerde, Name.
func (s *Stream) MapValues(fn MapValuesFunc, opts ...Option) (*Stream, error) {
	o, err := parse("MapValues", opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.MapValues(s.h.ID, native("map_values", fn), o.valueSerde, o.name))
}

// Filter keeps the records fn accepts (KStream.filter). Options: Name.
func (s *Stream) Filter(fn PredicateFunc, opts ...Option) (*Stream, error) {
	o, err := parse("Filter", opts, optName)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.Filter(s.h.ID, native("filter", fn), o.name))
}

// FilterNot drops the records fn accepts (KStream.filterNot). Options: Name.
func (s *Stream) FilterNot(fn PredicateFunc, opts ...Option) (*Stream, error) {
	o, err := parse("FilterNot", opts, optName)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.FilterNot(s.h.ID, native("filter_not", fn), o.name))
}

// FlatMapValues maps each value to zero or more values, each with the
// record's key (KStream.flatMapValues). Options: ValueSerde, Name.
func (s *Stream) FlatMapValues(fn FlatMapValuesFunc, opts ...Option) (*Stream, error) {
	o, err := parse("FlatMapValues", opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.FlatMapValues(s.h.ID, native("flat_map_values", fn), o.valueSerde, o.name))
}

// MapValuesWithKey maps each value, reading its key (KStream.mapValues
// with a ValueMapperWithKey); keys are unchanged. Options: ValueSerde,
// Name.
func (s *Stream) MapValuesWithKey(fn MapValuesWithKeyFunc, opts ...Option) (*Stream, error) {
	o, err := parse("MapValuesWithKey", opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.MapValuesWithKey(s.h.ID, native("map_values", fn), o.valueSerde, o.name))
}

// FlatMapValuesWithKey maps each value to zero or more values, reading its
// key (KStream.flatMapValues with a ValueMapperWithKey); each keeps the
// record's key and timestamp. Options: ValueSerde, Name.
func (s *Stream) FlatMapValuesWithKey(fn FlatMapValuesWithKeyFunc, opts ...Option) (*Stream, error) {
	o, err := parse("FlatMapValuesWithKey", opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.FlatMapValuesWithKey(s.h.ID, native("flat_map_values", fn), o.valueSerde, o.name))
}

// FlatMap maps each record to zero or more records with new keys and
// values (KStream.flatMap), each with the record's timestamp and headers;
// as Map, it marks the stream for repartitioning before a grouping or
// join. Options: KeySerde, ValueSerde, Name.
func (s *Stream) FlatMap(fn FlatMapFunc, opts ...Option) (*Stream, error) {
	o, err := parse("FlatMap", opts, optName, optKeySerde, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.FlatMap(s.h.ID, native("flat_map", fn), o.keySerde, o.valueSerde, o.name))
}

// Map maps each record to a new key and value (KStream.map); a later
// grouping repartitions. Options: KeySerde, ValueSerde, Name.
func (s *Stream) Map(fn MapFunc, opts ...Option) (*Stream, error) {
	o, err := parse("Map", opts, optName, optKeySerde, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.Map(s.h.ID, native("map", fn), o.keySerde, o.valueSerde, o.name))
}

// SelectKey gives each record a new key (KStream.selectKey); a later
// grouping repartitions. Options: KeySerde, Name.
func (s *Stream) SelectKey(fn KeyValueMapper, opts ...Option) (*Stream, error) {
	o, err := parse("SelectKey", opts, optName, optKeySerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.SelectKey(s.h.ID, native("select_key", fn), o.keySerde, o.name))
}

// Peek calls fn for each record and passes it on (KStream.peek). Options:
// Name.
func (s *Stream) Peek(fn ForeachFunc, opts ...Option) (*Stream, error) {
	o, err := parse("Peek", opts, optName)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.Peek(s.h.ID, native("peek", fn), o.name))
}

// Foreach calls fn for each record; terminal (KStream.foreach). Options:
// Name.
func (s *Stream) Foreach(fn ForeachFunc, opts ...Option) error {
	o, err := parse("Foreach", opts, optName)
	if err != nil {
		return err
	}
	return s.b.b.Foreach(s.h.ID, native("foreach", fn), o.name)
}

// To writes the records to topic (KStream.to); terminal. Options: KeySerde,
// ValueSerde (Produced.with; absent keeps the stream's), Name, Partitioner
// (Produced.streamPartitioner).
func (s *Stream) To(topic string, opts ...Option) error {
	o, err := parse("To", opts, optName, optKeySerde, optValueSerde, optPartitioner)
	if err != nil {
		return err
	}
	return s.b.b.ToRouted(s.h.ID, topic, o.keySerde, o.valueSerde, o.name, topology.Routing{Partitioner: o.partitioner})
}

// GroupByKey groups by the current key (KStream.groupByKey). Options:
// KeySerde, ValueSerde (Grouped.with), Name (Grouped.as: names the
// repartition topic when one is needed).
func (s *Stream) GroupByKey(opts ...Option) (*GroupedStream, error) {
	o, err := parse("GroupByKey", opts, optName, optKeySerde, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.grouped(s.b.b.GroupByKey(s.h.ID, o.keySerde, o.valueSerde, o.name))
}

// GroupBy groups by the key fn selects (KStream.groupBy); an aggregation
// repartitions through "<application.id>-<name>-repartition". Options:
// KeySerde (of the selected keys), ValueSerde, Name.
func (s *Stream) GroupBy(fn KeyValueMapper, opts ...Option) (*GroupedStream, error) {
	o, err := parse("GroupBy", opts, optName, optKeySerde, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.grouped(s.b.b.GroupBy(s.h.ID, native("group_by", fn), o.keySerde, o.valueSerde, o.name))
}

func (b *Builder) grouped(h *topology.Handle, err error) (*GroupedStream, error) {
	if err != nil {
		return nil, err
	}
	return &GroupedStream{b: b, h: h}, nil
}

// Count counts the records of each key into a table of longs
// (KGroupedStream.count); records with a null key or value are skipped.
// Options: Store, StoreSerdes, Name.
func (g *GroupedStream) Count(opts ...Option) (*Table, error) {
	o, err := parse("Count", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.Count(g.h.ID, o.mat, o.name))
}

// Reduce folds each key's values with fn; a key's first value becomes its
// aggregate without a call (KGroupedStream.reduce). Options: Store,
// StoreSerdes, Name.
func (g *GroupedStream) Reduce(fn ReducerFunc, opts ...Option) (*Table, error) {
	o, err := parse("Reduce", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.Reduce(g.h.ID, native("reduce", fn), o.mat, o.name))
}

// ReduceBuiltin is Reduce with a built-in reducer that runs in the engine.
// Options: Store, StoreSerdes, Name.
func (g *GroupedStream) ReduceBuiltin(r Builtin, opts ...Option) (*Table, error) {
	o, err := parse("ReduceBuiltin", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.Reduce(g.h.ID, topology.Function{Builtin: string(r), Name: string(r)}, o.mat, o.name))
}

// Aggregate folds each key's values into an aggregate that init starts
// (KGroupedStream.aggregate). The aggregate's serde is StoreSerdes' value
// serde, else the values'. Options: Store, StoreSerdes, Name.
func (g *GroupedStream) Aggregate(init InitializerFunc, fn AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := parse("Aggregate", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.Aggregate(g.h.ID, native("initializer", init), native("aggregate", fn), o.mat, o.name))
}

// joinerFunction is native for a joiner, which may be one of the built-in
// joiners (PairJoiner, ThisJoiner, OtherJoiner): the builder resolves
// those for the serdes of the values joined.
func joinerFunction(name string, joiner ValueJoinerFunc) topology.Function {
	if joiner != nil {
		p := reflect.ValueOf(joiner).Pointer()
		for b, f := range builtinJoiners {
			if reflect.ValueOf(f).Pointer() == p {
				return topology.Function{Name: b, Builtin: b}
			}
		}
	}
	return native(name, joiner)
}

// native wraps a Go function; the builder refuses a nil one, naming the
// operator.
func native(name string, fn any) topology.Function {
	return topology.Function{Name: name, Native: fn}
}
