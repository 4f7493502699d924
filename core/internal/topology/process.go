package topology

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// The Processor API (docs/design/processor.md): state stores a topology
// declares for its processors (StreamsBuilder.addStateStore,
// Topology.addStateStore), KStream.process / processValues, and the
// Topology calls that build a graph without the DSL (addSource,
// addProcessor, addSink).

const (
	prefixProcessor     = "KSTREAM-PROCESSOR-"
	prefixProcessValues = "KSTREAM-PROCESSVALUES-"
)

// StoreType is the kind of a declared store (Stores.*StoreBuilder).
type StoreType int

const (
	// StoreTypeKeyValue is Stores.keyValueStoreBuilder.
	StoreTypeKeyValue StoreType = iota + 1
	// StoreTypeTimestampedKeyValue is Stores.timestampedKeyValueStoreBuilder.
	StoreTypeTimestampedKeyValue
	// StoreTypeWindow is Stores.windowStoreBuilder.
	StoreTypeWindow
	// StoreTypeTimestampedWindow is Stores.timestampedWindowStoreBuilder.
	StoreTypeTimestampedWindow
	// StoreTypeVersioned is Stores.versionedKeyValueStoreBuilder over
	// Stores.persistentVersionedKeyValueStore (KIP-889): every version of a
	// key's value for the history retention.
	StoreTypeVersioned
)

func (t StoreType) String() string {
	switch t {
	case StoreTypeKeyValue:
		return "key-value store"
	case StoreTypeTimestampedKeyValue:
		return "timestamped key-value store"
	case StoreTypeWindow:
		return "window store"
	case StoreTypeTimestampedWindow:
		return "timestamped window store"
	case StoreTypeVersioned:
		return "versioned key-value store"
	}
	return "unknown store type"
}

// Windowed reports whether stores of this type hold rows per window.
func (t StoreType) Windowed() bool { return t == StoreTypeWindow || t == StoreTypeTimestampedWindow }

// Timestamped reports whether stores of this type keep a timestamp per value.
func (t StoreType) Timestamped() bool {
	return t == StoreTypeTimestampedKeyValue || t == StoreTypeTimestampedWindow
}

// StoreBuilder is a store a topology declares for its processors: Kafka
// Streams' StoreBuilder (Stores.keyValueStoreBuilder and the others), with
// withLoggingDisabled / withLoggingEnabled(config) and withCachingEnabled.
type StoreBuilder struct {
	Name                 string
	Type                 StoreType
	KeySerde, ValueSerde string // empty: bytes
	// Window stores: how long (ms) rows are kept, the windows' size, and
	// whether a key may hold several values per window.
	Retention, WindowSize int64
	RetainDuplicates      bool
	// Versioned stores: how long (ms) versions stay readable behind the
	// store's stream time, and the segment interval (0: Kafka Streams'
	// default; kept for fidelity, the layout has no segments).
	HistoryRetention, SegmentInterval int64
	// LoggingDisabled: no changelog (the store starts empty after a
	// restart). ChangelogConfig: the changelog topic's configs.
	LoggingDisabled bool
	ChangelogConfig map[string]string
	// Caching changes nothing the engine does (the store transaction keeps
	// one write per key per batch already); it is kept for describe-level
	// fidelity and the SDKs' round trip.
	Caching bool
}

// ProcessorStore is what a Store declared by AddStateStore adds to it.
type ProcessorStore struct {
	Type             StoreType
	WindowSize       int64
	RetainDuplicates bool
	LoggingDisabled  bool
	Caching          bool
}

// NewProcessorFunc is the native form of a processor supplier: it makes
// one processor per task (ProcessorSupplier.get()). core/streams makes it
// from a typed processor.
type NewProcessorFunc func() NativeProcessor

// NativeProcessor is a Go processor over serialized records (nil is
// null), run by the engine in the task with no crossing. The engine calls
// Init once per task before the first record (and again after a revival:
// an aborted transaction), Process per record in order, and Close when
// the task closes or revives.
type NativeProcessor interface {
	Init(ctx NativeContext) error
	Process(ctx NativeContext, r NativeRecord) error
	Close() error
}

// NativeRecord is a record a processor gets or forwards.
type NativeRecord struct {
	Key, Value []byte
	Timestamp  int64
	Headers    []Header
}

// NativeVersion is a version a versioned store read finds (Kafka
// Streams' VersionedRecord): valid from Timestamp until ValidTo
// (exclusive) when HasValidTo, else the key's latest.
type NativeVersion struct {
	Value              []byte
	Timestamp, ValidTo int64
	HasValidTo         bool
}

// VersionedKeyValueStore.put's special answers.
const (
	// PutValidToUndefined: the version put is the key's latest
	// (PUT_RETURN_CODE_VALID_TO_UNDEFINED).
	PutValidToUndefined int64 = -1
	// PutNotPut: the put was older than the history retention behind the
	// store's stream time and was dropped (PUT_RETURN_CODE_NOT_PUT).
	PutNotPut int64 = math.MinInt64
)

// Header is a record header (a nil value is null).
type Header struct {
	Key   string
	Value []byte
}

// RecordMetadata is the input record's topic, partition and offset.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
}

// PunctuationType is what a punctuator's interval is measured in.
type PunctuationType int

const (
	// StreamTime: the task's stream time (the largest record timestamp
	// seen); due schedules run after the records that advanced it.
	StreamTime PunctuationType = iota + 1
	// WallClockTime: the system's clock (the test driver's virtual one).
	WallClockTime
)

// Cancellable cancels a schedule.
type Cancellable interface{ Cancel() }

// NativeContext is a processor's ProcessorContext, over serialized keys
// and values. Its errors name the node, store or child at fault.
type NativeContext interface {
	// Forward sends r to every child (child "") or to the named one.
	Forward(r NativeRecord, child string) error
	// Get, Put and Delete read and write a key-value store the processor
	// was connected to; reads see the task's own writes.
	Get(store string, key []byte) ([]byte, error)
	Put(store string, key, value []byte) error
	Delete(store string, key []byte) ([]byte, error)
	// Range calls f for each entry with lo <= key <= hi (nil: open), in key
	// byte order, until f returns false.
	Range(store string, lo, hi []byte, f func(key, value []byte) bool) error
	// WindowPut writes key's row of the window starting at windowStart
	// in a window store (a nil value deletes it; WindowStore.put).
	WindowPut(store string, key, value []byte, windowStart int64) error
	// WindowFetch calls f for the rows of key (nil: every key, fetchAll)
	// whose windows start from from to to, both inclusive, that retention
	// keeps, in (key, window start) order, until f returns false
	// (WindowStore.fetch).
	WindowFetch(store string, key []byte, from, to int64, f func(key []byte, windowStart int64, value []byte) bool) error
	// VersionedPut, VersionedGet and VersionedDelete are a versioned
	// store's VersionedKeyValueStore.put(key, value, ts) (its validTo,
	// PutValidToUndefined or PutNotPut; a nil value is a tombstone),
	// get(key) (latest) / get(key, asOf), and delete(key, ts) (the
	// version valid at ts before the delete); ok false: null.
	VersionedPut(store string, key, value []byte, ts int64) (int64, error)
	VersionedGet(store string, key []byte, latest bool, asOf int64) (v NativeVersion, ok bool, err error)
	VersionedDelete(store string, key []byte, ts int64) (v NativeVersion, ok bool, err error)
	// Schedule calls fn every interval (ms, at least 1) of stream time or
	// wall-clock time, with the current time (ProcessorContext.schedule).
	Schedule(interval int64, typ PunctuationType, fn func(ts int64) error) (Cancellable, error)
	// RecordMetadata is the input record's; false in a punctuator.
	RecordMetadata() (RecordMetadata, bool)
	// Node is the processor's node name; Stores the stores connected to
	// it.
	Node() string
	Stores() []string
}

var newProcessorNative = reflect.TypeFor[NewProcessorFunc]()

// AddStateStore adds a store processors may use (StreamsBuilder.addStateStore
// with no processors; Topology.addStateStore(store, processors...) with
// them, which must exist already). It adds no node and takes no name
// number.
func (b *Builder) AddStateStore(s StoreBuilder, processors ...string) error {
	c := b.begin("add_state_store")
	if c.validName("store", s.Name) && b.stores[s.Name] != nil {
		c.invalid("add_state_store names store %q, which exists already", s.Name)
	}
	switch s.Type {
	case StoreTypeKeyValue, StoreTypeTimestampedKeyValue:
		if s.Retention != 0 || s.WindowSize != 0 || s.RetainDuplicates {
			c.invalid("add_state_store: store %q is a %s; retention, window size and retain_duplicates are for window stores", s.Name, s.Type)
		}
	case StoreTypeWindow, StoreTypeTimestampedWindow:
		switch {
		case s.WindowSize <= 0:
			c.invalid("add_state_store: window store %q has window size %d ms; it must be positive", s.Name, s.WindowSize)
		case s.Retention < s.WindowSize:
			// Stores.persistentWindowStore: "The retention period of the
			// window store ... must be no smaller than its window size."
			c.invalid("add_state_store: window store %q keeps rows %d ms, less than its window size %d ms", s.Name, s.Retention, s.WindowSize)
		}
	case StoreTypeVersioned:
		switch {
		case s.Retention != 0 || s.WindowSize != 0 || s.RetainDuplicates:
			c.invalid("add_state_store: store %q is a %s; retention, window size and retain_duplicates are for window stores", s.Name, s.Type)
		case s.HistoryRetention < 0:
			// Stores.persistentVersionedKeyValueStore: "historyRetention
			// cannot be negative".
			c.invalid("add_state_store: versioned store %q has history retention %d ms; it cannot be negative", s.Name, s.HistoryRetention)
		case s.SegmentInterval < 0:
			c.invalid("add_state_store: versioned store %q has segment interval %d ms; it must be positive, or 0 for the default", s.Name, s.SegmentInterval)
		case s.LoggingDisabled:
			// The layout restores its stream time from the changelog; a
			// versioned store without one is not built.
			c.invalid("add_state_store: versioned store %q has logging disabled; versioned stores are logged here", s.Name)
		}
	default:
		c.invalid("add_state_store: store %q has no type (key-value, timestamped key-value, window, timestamped window or versioned)", s.Name)
	}
	if s.Type != StoreTypeVersioned && (s.HistoryRetention != 0 || s.SegmentInterval != 0) {
		c.invalid("add_state_store: store %q is a %s; history retention and segment interval are for versioned stores", s.Name, s.Type)
	}
	c.serde("key", s.KeySerde)
	c.serde("value", s.ValueSerde)
	if s.LoggingDisabled && len(s.ChangelogConfig) > 0 {
		c.invalid("add_state_store: store %q has logging disabled and changelog configs; give one", s.Name)
	}
	if !s.Type.Windowed() {
		c.changelogConfig(Materialized{ChangelogConfig: s.ChangelogConfig})
	}
	var nodes []*Node
	for _, p := range processors {
		n := b.nodes[p]
		switch {
		case n == nil:
			c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("add_state_store: store %q names processor %q, which does not exist", s.Name, p)})
		case n.Type != Processor:
			// InternalTopologyBuilder.connectProcessorAndStateStore.
			c.invalid("add_state_store: store %q names %q, which is a %s, not a processor", s.Name, p, nodeTypeName(n.Type))
		default:
			nodes = append(nodes, n)
		}
	}
	if err := c.done(); err != nil {
		return err
	}
	st := &Store{
		Name: s.Name, KeySerde: serde.Or(s.KeySerde, serde.Bytes), ValueSerde: serde.Or(s.ValueSerde, serde.Bytes),
		ChangelogTopic: s.Name + changelogSuffix, ChangelogConfig: s.ChangelogConfig,
		Processor: &ProcessorStore{Type: s.Type, WindowSize: s.WindowSize, RetainDuplicates: s.RetainDuplicates, LoggingDisabled: s.LoggingDisabled, Caching: s.Caching},
	}
	if s.LoggingDisabled {
		st.ChangelogTopic = ""
	}
	if s.Type.Windowed() {
		st.Kind, st.Retention = StoreWindow, s.Retention
		st.Windows = &Windows{Kind: TimeWindows, Size: s.WindowSize, Advance: s.WindowSize}
	}
	if s.Type == StoreTypeVersioned {
		st.Kind, st.Versioned = StoreVersioned, &Versioned{HistoryRetention: s.HistoryRetention, SegmentInterval: s.SegmentInterval}
	}
	b.stores[s.Name] = st
	for _, n := range nodes {
		if !slices.Contains(n.Stores, s.Name) {
			n.Stores = append(n.Stores, s.Name)
		}
	}
	return nil
}

func nodeTypeName(t NodeType) string {
	switch t {
	case Source:
		return "source"
	case Sink:
		return "sink"
	}
	return "processor"
}

// ProcessOptions are KStream.process's arguments besides the supplier.
type ProcessOptions struct {
	// Stores the processor uses (added by AddStateStore).
	Stores []string
	// ValuesOnly is processValues (a FixedKeyProcessor: forwards keep the
	// input's key).
	ValuesOnly bool
	// Serdes of the forwarded records; empty keeps the input's.
	KeySerde, ValueSerde string
	// Name is Named.as; empty: KSTREAM-PROCESSOR-<n> (KSTREAM-PROCESSVALUES-<n>).
	Name string
}

// Process adds KStream.process or, with o.ValuesOnly, processValues: a
// processor node (a StatefulProcessorNode) connected to o.Stores. process
// may change keys, so an aggregation after it repartitions; processValues
// keeps the input's need.
func (b *Builder) Process(input uint64, fn Function, o ProcessOptions) (*Handle, error) {
	op, prefix, kind := "process", prefixProcessor, OpProcess
	if o.ValuesOnly {
		op, prefix, kind = "process_values", prefixProcessValues, OpProcessValues
	}
	c := b.begin(op)
	in := c.input(input, KindStream)
	c.function(fn, newProcessorNative)
	keySerde := o.KeySerde
	if o.ValuesOnly && keySerde != "" {
		c.invalid("process_values keeps the input's keys, so it takes no key serde (got %q)", keySerde)
		keySerde = ""
	}
	c.serde("key", keySerde)
	c.serde("value", o.ValueSerde)
	// KStreamImpl.process(supplier, Named, stores...) takes no name number
	// for a given name (unlike most operators); only the overload without
	// Named calls newProcessorName.
	name := o.Name
	if name == "" {
		name = c.processorName("", prefix)
	} else if c.validName("node", name) {
		c.claim(name)
	}
	c.storesOf(name, o.Stores)
	c.hostProcessor(name, fn)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: name, Type: Processor, Op: kind, Fn: &fn, Stores: slices.Clone(o.Stores),
		KeySerde:   serde.Or(keySerde, in.handle.KeySerde),
		ValueSerde: serde.Or(o.ValueSerde, in.handle.ValueSerde),
	}
	g := b.hang(in, n)
	return b.mint(&entry{
		handle:      &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:           g,
		repartition: in.repartition || !o.ValuesOnly,
	}), nil
}

// hostProcessor refuses a host supplier when the session's host cannot run
// processors.
func (c *call) hostProcessor(node string, fn Function) {
	if fn.Token != 0 && !c.b.HostProcessors {
		c.invalid("%s: node %s runs host processor (token %d), and this session's host did not declare the host feature %q: upgrade its SDK", c.op, node, fn.Token, "processors")
	}
}

// storesOf checks the stores a processor names: each added by
// AddStateStore (not a DSL operator's own store), named once.
func (c *call) storesOf(node string, stores []string) {
	seen := map[string]bool{}
	for _, s := range stores {
		st := c.b.stores[s]
		switch {
		case seen[s]:
			c.invalid("%s: node %s names store %q twice", c.op, node, s)
		case st == nil:
			c.invalid("%s: node %s names store %q, which no add_state_store added", c.op, node, s)
		case st.Processor == nil:
			c.invalid("%s: node %s names store %q, which is a DSL operator's own store; a processor uses stores add_state_store added", c.op, node, s)
		}
		seen[s] = true
	}
}

// AddSource is Topology.addSource(name, topics...), or with a pattern
// (and no topics) Topology.addSource(name, Pattern): a source node for a
// topology built without the DSL. Empty serdes mean bytes.
func (b *Builder) AddSource(name string, topics []string, pattern, keySerde, valueSerde string) error {
	c := b.begin("add_source")
	if c.validName("node", name) {
		c.claim(name)
	}
	var re *regexp.Regexp
	switch {
	case pattern != "" && len(topics) > 0:
		c.invalid("add_source: source %q names topics %q and pattern %q; a source reads either topics or a pattern", name, topics, pattern)
	case pattern != "":
		re = c.topicPattern(pattern, name)
	case len(topics) == 0:
		c.invalid("add_source: source %q names no topic; a source reads at least one", name)
	}
	seen := map[string]bool{}
	for _, t := range topics {
		if !c.validName("topic", t) {
			continue
		}
		if seen[t] {
			c.invalid("add_source: source %q names topic %q twice", name, t)
			continue
		}
		seen[t] = true
		if src, ok := b.topics[t]; ok {
			c.invalid("add_source: source %q reads topic %q, which source %s reads already", name, t, src)
		}
		c.notMatched(t)
	}
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	if err := c.done(); err != nil {
		return err
	}
	n := &Node{
		Name: name, Type: Source, Topics: slices.Clone(topics), Pattern: pattern, pattern: re,
		KeySerde: serde.Or(keySerde, serde.Bytes), ValueSerde: serde.Or(valueSerde, serde.Bytes),
	}
	b.nodes[name] = n
	if re != nil {
		b.patterns = append(b.patterns, n)
	}
	b.add(nil, &gnode{nodes: []*Node{n}, out: n})
	for _, t := range topics {
		b.topics[t] = name
	}
	return nil
}

// AddProcessor is Topology.addProcessor(name, supplier, parents...), with
// the stores to connect (Topology.connectProcessorAndStateStores). Empty
// serdes keep the parents', which must then agree.
func (b *Builder) AddProcessor(name string, fn Function, parents, stores []string, keySerde, valueSerde string) error {
	c := b.begin("add_processor")
	if c.validName("node", name) {
		c.claim(name)
	}
	c.function(fn, newProcessorNative)
	ps := c.parents(name, parents)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	c.storesOf(name, stores)
	c.hostProcessor(name, fn)
	keySerde, valueSerde = c.parentSerdes(name, ps, keySerde, valueSerde)
	if err := c.done(); err != nil {
		return err
	}
	n := &Node{Name: name, Type: Processor, Op: OpProcess, Fn: &fn, Stores: slices.Clone(stores), KeySerde: keySerde, ValueSerde: valueSerde}
	b.attach(n, ps)
	return nil
}

// AddSink is Topology.addSink(name, topic, parents...). Empty serdes keep
// the parents', which must then agree.
func (b *Builder) AddSink(name, topic string, parents []string, keySerde, valueSerde string) error {
	c := b.begin("add_sink")
	if c.validName("node", name) {
		c.claim(name)
	}
	c.validName("topic", topic)
	ps := c.parents(name, parents)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	keySerde, valueSerde = c.parentSerdes(name, ps, keySerde, valueSerde)
	if err := c.done(); err != nil {
		return err
	}
	b.attach(&Node{Name: name, Type: Sink, Topic: topic, KeySerde: keySerde, ValueSerde: valueSerde}, ps)
	return nil
}

// parents resolves a node's parents (InternalTopologyBuilder.addProcessor:
// at least one; each added before; not a sink; not itself).
func (c *call) parents(name string, parents []string) []*Node {
	if len(parents) == 0 {
		c.invalid("%s: node %q names no parent; it needs at least one", c.op, name)
	}
	var ps []*Node
	seen := map[string]bool{}
	for _, p := range parents {
		n := c.b.nodes[p]
		switch {
		case p == name:
			c.invalid("%s: node %q names itself as its parent", c.op, name)
		case seen[p]:
			c.invalid("%s: node %q names parent %q twice", c.op, name, p)
		case n == nil:
			c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("%s: node %q names parent %q, which does not exist (add it first)", c.op, name, p)})
		case n.Type == Sink:
			c.invalid("%s: node %q names parent %q, which is a sink; a sink has no children", c.op, name, p)
		default:
			ps = append(ps, n)
		}
		seen[p] = true
	}
	return ps
}

// parentSerdes is keySerde and valueSerde, else the parents' (which must
// agree).
func (c *call) parentSerdes(name string, ps []*Node, keySerde, valueSerde string) (string, string) {
	pick := func(which, given string, of func(*Node) string) string {
		if given != "" {
			return given
		}
		var s string
		for i, p := range ps {
			if i == 0 {
				s = of(p)
			} else if of(p) != s {
				c.invalid("%s: node %q has parents with different %s serdes (%s: %q, %s: %q); give its %s serde", c.op, name, which, ps[0].Name, s, p.Name, of(p), which)
				return s
			}
		}
		return serde.Or(s, serde.Bytes)
	}
	return pick("key", keySerde, func(n *Node) string { return n.KeySerde }), pick("value", valueSerde, func(n *Node) string { return n.ValueSerde })
}

// attach adds n under its parents, in the order given (Kafka forwards to a
// node's children in the order they were added).
func (b *Builder) attach(n *Node, ps []*Node) {
	b.nodes[n.Name] = n
	g := &gnode{nodes: []*Node{n}, out: n}
	for i, p := range ps {
		link(p, n)
		if i == 0 {
			b.add(b.gnodes[p], g)
		} else if pg := b.gnodes[p]; pg != nil && !slices.Contains(pg.children, g) {
			pg.children = append(pg.children, g)
		}
	}
}
