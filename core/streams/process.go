package streams

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// The Processor API (Kafka Streams' api.Processor; docs/design/processor.md):
// custom logic with state stores, punctuators and forwards to any child.
// Go processors run inside the engine, reading and writing the store
// transaction directly: no crossing.

// Processor is one processor instance: the engine makes one per task
// (ProcessorSupplier.get()), calls Init before the task's first record,
// Process per record in order, and Close when the task closes. An error
// from Process fails that record under processing.exception.handler; what
// the record did before the error (puts, forwards) is kept, as in Kafka
// Streams.
type Processor interface {
	Init(ctx ProcessorContext) error
	Process(ctx ProcessorContext, r Record) error
	Close() error
}

// Record is a record a processor gets or forwards: serialized key and value
// (nil: null), timestamp in epoch ms, headers in order.
type Record struct {
	Key, Value []byte
	Timestamp  int64
	Headers    []Header
}

// WithValue returns r with value v (Record.withValue).
func (r Record) WithValue(v []byte) Record { r.Value = v; return r }

// WithTimestamp returns r with timestamp ts.
func (r Record) WithTimestamp(ts int64) Record { r.Timestamp = ts; return r }

// RecordMetadata is the input record's topic, partition and offset.
type RecordMetadata = topology.RecordMetadata

// PunctuationType is what a punctuator's interval is measured in.
type PunctuationType = topology.PunctuationType

const (
	// StreamTime: the task's stream time (the largest timestamp seen); a
	// punctuator runs after the records that made it due.
	StreamTime = topology.StreamTime
	// WallClockTime: the system clock (a TestDriver's virtual clock,
	// moved by AdvanceWallClock).
	WallClockTime = topology.WallClockTime
)

// Cancellable cancels a punctuator's schedule.
type Cancellable = topology.Cancellable

// ProcessorContext is what a processor reaches the engine through
// (api.ProcessorContext).
type ProcessorContext interface {
	// Forward sends r to every child.
	Forward(r Record) error
	// ForwardTo sends r to the named child only (To.child).
	ForwardTo(child string, r Record) error
	// StateStore returns a store connected to the processor
	// (getStateStore); another store is an error naming node and store.
	StateStore(name string) (*ProcessorStore, error)
	// Schedule calls fn every interval (at least 1 ms) of stream or
	// wall-clock time, with the current time in epoch ms.
	Schedule(interval time.Duration, t PunctuationType, fn func(ts int64) error) (Cancellable, error)
	// RecordMetadata is the input record's; false in a punctuator.
	RecordMetadata() (RecordMetadata, bool)
}

// ProcessorStore is a store as a processor sees it: reads see the task's
// own writes, iteration is in serialized key order. A key-value store is
// read with Get, Range and All; a window store with WindowPut, WindowFetch
// and WindowFetchAll; a versioned store with VersionedPut, VersionedGet,
// VersionedGetAsOf and VersionedDelete.
type ProcessorStore struct {
	ctx  topology.NativeContext
	name string
}

// Get returns key's value, nil when absent.
func (s *ProcessorStore) Get(key []byte) ([]byte, error) { return s.ctx.Get(s.name, key) }

// Put sets key's value; a nil value deletes it.
func (s *ProcessorStore) Put(key, value []byte) error { return s.ctx.Put(s.name, key, value) }

// Delete removes key and returns its old value.
func (s *ProcessorStore) Delete(key []byte) ([]byte, error) { return s.ctx.Delete(s.name, key) }

// Range calls fn for each entry with from <= key <= to (nil: open), in
// key order, until fn returns false (KeyValueStore.range: both bounds
// inclusive).
func (s *ProcessorStore) Range(from, to []byte, fn func(key, value []byte) bool) error {
	return s.ctx.Range(s.name, from, to, fn)
}

// All calls fn for every entry in key order, until fn returns false.
func (s *ProcessorStore) All(fn func(key, value []byte) bool) error {
	return s.ctx.Range(s.name, nil, nil, fn)
}

// WindowPut writes key's value for the window starting at windowStart
// (epoch ms) in a window store (WindowStore.put); a nil value deletes it.
// A window past the store's retention is dropped, as in Kafka Streams.
func (s *ProcessorStore) WindowPut(key, value []byte, windowStart int64) error {
	return s.ctx.WindowPut(s.name, key, value, windowStart)
}

// WindowFetch calls fn for key's windows starting from from to to (epoch
// ms, both inclusive) that the window store still keeps, in window start
// order, until fn returns false (WindowStore.fetch(key, from, to)).
func (s *ProcessorStore) WindowFetch(key []byte, from, to int64, fn func(windowStart int64, value []byte) bool) error {
	if key == nil {
		return fmt.Errorf("window fetch: store %q: a nil key; use WindowFetchAll for every key", s.name)
	}
	return s.ctx.WindowFetch(s.name, key, from, to, func(_ []byte, start int64, value []byte) bool { return fn(start, value) })
}

// WindowFetchAll calls fn for every key's windows starting from from to
// to, in (key, window start) order, until fn returns false
// (WindowStore.fetchAll(from, to)).
func (s *ProcessorStore) WindowFetchAll(from, to int64, fn func(key []byte, windowStart int64, value []byte) bool) error {
	return s.ctx.WindowFetch(s.name, nil, from, to, fn)
}

// VersionedKeyValueStore.put's special answers.
const (
	// PutReturnCodeValidToUndefined: the version put is its key's latest
	// (VersionedKeyValueStore.PUT_RETURN_CODE_VALID_TO_UNDEFINED, -1).
	PutReturnCodeValidToUndefined = topology.PutValidToUndefined
	// PutReturnCodeNotPut: the put was older than the history retention
	// behind the store's stream time, so it was dropped
	// (PUT_RETURN_CODE_NOT_PUT, math.MinInt64).
	PutReturnCodeNotPut = topology.PutNotPut
)

// VersionedPut adds a version of key's value valid from timestamp ts in a
// versioned store (VersionedKeyValueStore.put); a nil value is a
// tombstone. It returns the version's validTo (the next version's
// timestamp), PutReturnCodeValidToUndefined when it is the key's latest,
// or PutReturnCodeNotPut when ts is older than the history retention
// behind the store's stream time (the largest timestamp put).
func (s *ProcessorStore) VersionedPut(key, value []byte, ts int64) (int64, error) {
	return s.ctx.VersionedPut(s.name, key, value, ts)
}

// VersionedGet returns key's latest version in a versioned store
// (VersionedKeyValueStore.get(key)); found is false when there is none or
// it is a tombstone.
func (s *ProcessorStore) VersionedGet(key []byte) (r VersionedRecord, found bool, err error) {
	return versionOf(s.ctx.VersionedGet(s.name, key, true, 0))
}

// VersionedGetAsOf returns the version of key valid at asOf (inclusive;
// get(key, asOfTimestamp)): nothing when asOf is older than the history
// retention behind the store's stream time, unless the latest version is
// valid then.
func (s *ProcessorStore) VersionedGetAsOf(key []byte, asOf int64) (r VersionedRecord, found bool, err error) {
	return versionOf(s.ctx.VersionedGet(s.name, key, false, asOf))
}

// VersionedDelete puts a tombstone for key valid from ts and returns the
// version valid at ts before it (VersionedKeyValueStore.delete); a delete
// older than the history retention does nothing and finds nothing.
func (s *ProcessorStore) VersionedDelete(key []byte, ts int64) (r VersionedRecord, found bool, err error) {
	return versionOf(s.ctx.VersionedDelete(s.name, key, ts))
}

func versionOf(v topology.NativeVersion, ok bool, err error) (VersionedRecord, bool, error) {
	if err != nil || !ok {
		return VersionedRecord{}, false, err
	}
	return VersionedRecord{Value: v.Value, Timestamp: v.Timestamp, ValidTo: v.ValidTo, HasValidTo: v.HasValidTo}, true, nil
}

// processorContext adapts the engine's context to ProcessorContext.
type processorContext struct{ topology.NativeContext }

func (c processorContext) Forward(r Record) error {
	return c.NativeContext.Forward(nativeRecord(r), "")
}

func (c processorContext) ForwardTo(child string, r Record) error {
	if child == "" {
		return fmt.Errorf("forward: node %s: an empty child name; use Forward for every child", c.Node())
	}
	return c.NativeContext.Forward(nativeRecord(r), child)
}

func (c processorContext) StateStore(name string) (*ProcessorStore, error) {
	if !slices.Contains(c.Stores(), name) {
		return nil, fmt.Errorf("get_state_store: node %s has no access to store %q (its stores: [%s])", c.Node(), name, strings.Join(c.Stores(), ", "))
	}
	return &ProcessorStore{ctx: c.NativeContext, name: name}, nil
}

func (c processorContext) Schedule(interval time.Duration, t PunctuationType, fn func(ts int64) error) (Cancellable, error) {
	return c.NativeContext.Schedule(interval.Milliseconds(), t, fn)
}

func nativeRecord(r Record) topology.NativeRecord {
	n := topology.NativeRecord{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		n.Headers = append(n.Headers, topology.Header{Key: h.Key, Value: h.Value})
	}
	return n
}

// nativeProcessor runs a Processor for the engine.
type nativeProcessor struct{ p Processor }

func (n nativeProcessor) Init(ctx topology.NativeContext) error {
	return n.p.Init(processorContext{ctx})
}

func (n nativeProcessor) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	rec := Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return n.p.Process(processorContext{ctx}, rec)
}

func (n nativeProcessor) Close() error { return n.p.Close() }

// supplier wraps newP as the engine's processor supplier.
func supplier(name string, newP func() Processor) topology.Function {
	if newP == nil {
		return topology.Function{Name: name, Native: topology.NewProcessorFunc(nil)}
	}
	return topology.Function{Name: name, Native: topology.NewProcessorFunc(func() topology.NativeProcessor {
		p := newP()
		if p == nil {
			return nil
		}
		return nativeProcessor{p}
	})}
}

// StoreBuilder declares a state store for processors (Kafka Streams'
// StoreBuilder); add it with Builder.AddStateStore or
// Topology.AddStateStore.
type StoreBuilder struct{ b topology.StoreBuilder }

// KeyValueStoreBuilder is Stores.keyValueStoreBuilder: a key-value store
// named name with the given serdes (empty: bytes), logged to
// "<application.id>-<name>-changelog".
func KeyValueStoreBuilder(name, keySerde, valueSerde string) StoreBuilder {
	return StoreBuilder{topology.StoreBuilder{Name: name, Type: topology.StoreTypeKeyValue, KeySerde: keySerde, ValueSerde: valueSerde}}
}

// WindowStoreBuilder is Stores.windowStoreBuilder over a persistent
// window store: values per key and window start, kept retention after the
// window's start (at least windowSize). Duplicates are not retained.
func WindowStoreBuilder(name string, retention, windowSize time.Duration, keySerde, valueSerde string) StoreBuilder {
	return StoreBuilder{topology.StoreBuilder{Name: name, Type: topology.StoreTypeWindow, KeySerde: keySerde, ValueSerde: valueSerde,
		Retention: retention.Milliseconds(), WindowSize: windowSize.Milliseconds()}}
}

// VersionedKeyValueStoreBuilder is Stores.versionedKeyValueStoreBuilder
// over Stores.persistentVersionedKeyValueStore(name, historyRetention):
// every version of a key's value, readable for historyRetention behind
// the store's stream time (the latest version of a key always). Processors
// use it with VersionedPut, VersionedGet, VersionedGetAsOf and
// VersionedDelete.
func VersionedKeyValueStoreBuilder(name string, historyRetention time.Duration, keySerde, valueSerde string) StoreBuilder {
	return StoreBuilder{topology.StoreBuilder{Name: name, Type: topology.StoreTypeVersioned, KeySerde: keySerde, ValueSerde: valueSerde,
		HistoryRetention: historyRetention.Milliseconds()}}
}

// WithSegmentInterval is persistentVersionedKeyValueStore's third
// argument, for a versioned store only (checked, kept for fidelity: the
// store's layout has no segments).
func (s StoreBuilder) WithSegmentInterval(d time.Duration) StoreBuilder {
	s.b.SegmentInterval = d.Milliseconds()
	return s
}

// WithCachingEnabled is StoreBuilder.withCachingEnabled.
func (s StoreBuilder) WithCachingEnabled() StoreBuilder { s.b.Caching = true; return s }

// WithChangelogConfig is withLoggingEnabled(config).
func (s StoreBuilder) WithChangelogConfig(config map[string]string) StoreBuilder {
	s.b.ChangelogConfig = config
	return s
}

// AddStateStore declares a store processors may name (StreamsBuilder.addStateStore).
func (b *Builder) AddStateStore(s StoreBuilder) error {
	return (b.b.AddStateStore(s.b))
}

// Stores is the Process option naming the stores a processor uses.
func Stores(names ...string) Option { return Option{kind: optStores, names: names} }

// Process runs a processor over the stream (KStream.process): newP makes
// one per task. Options: Stores, KeySerde, ValueSerde (of what it
// forwards; default the input's), Name.
func (s *Stream) Process(newP func() Processor, opts ...Option) (*Stream, error) {
	return s.process(newP, false, opts)
}

// ProcessValues is Process for a processor that keeps each record's key
// (KStream.processValues): forwarding another key fails the batch.
// Options: Stores, ValueSerde, Name.
func (s *Stream) ProcessValues(newP func() Processor, opts ...Option) (*Stream, error) {
	return s.process(newP, true, opts)
}

func (s *Stream) process(newP func() Processor, values bool, opts []Option) (*Stream, error) {
	op, allowed := "Process", []optKind{optName, optKeySerde, optValueSerde, optStores}
	if values {
		op, allowed = "ProcessValues", []optKind{optName, optValueSerde, optStores}
	}
	o, err := parse(op, opts, allowed...)
	if err != nil {
		return nil, err
	}
	h, err := s.b.b.Process(s.h.ID, supplier(op, newP), topology.ProcessOptions{
		Stores: o.stores, ValuesOnly: values, KeySerde: o.keySerde, ValueSerde: o.valueSerde, Name: o.name,
	})
	return s.b.stream(h, err)
}

// Topology builds a topology without the DSL (Kafka Streams' Topology:
// addSource, addProcessor, addSink, addStateStore); run it with New or
// NewTestDriver through its Builder.
type Topology struct{ Builder }

// NewTopology returns an empty Topology.
func NewTopology() *Topology { return &Topology{Builder: *NewBuilder()} }

// AddSource adds a source node reading topics, with their serdes (empty:
// bytes).
func (t *Topology) AddSource(name, keySerde, valueSerde string, topics ...string) error {
	return (t.b.AddSource(name, topics, "", keySerde, valueSerde))
}

// AddSourcePattern adds a source node reading every topic whose whole name
// pattern matches (Topology.addSource(name, Pattern)); see
// Builder.StreamPattern.
func (t *Topology) AddSourcePattern(name, keySerde, valueSerde string, pattern *regexp.Regexp) error {
	if pattern == nil {
		return fmt.Errorf("streams: AddSourcePattern: source %q: pattern is nil", name)
	}
	return t.b.AddSource(name, nil, pattern.String(), keySerde, valueSerde)
}

// AddProcessor adds a processor node under parents (added before).
func (t *Topology) AddProcessor(name string, newP func() Processor, parents ...string) error {
	return (t.b.AddProcessor(name, supplier(name, newP), parents, nil, "", ""))
}

// AddSink adds a sink writing topic under parents, with their serdes.
func (t *Topology) AddSink(name, topic string, parents ...string) error {
	return (t.b.AddSink(name, topic, parents, "", ""))
}

// AddStateStore declares a store and connects it to processors (added
// before).
func (t *Topology) AddStateStore(s StoreBuilder, processors ...string) error {
	return (t.b.AddStateStore(s.b, processors...))
}
