package topology

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Name prefixes, spelled as Kafka Streams' KStreamImpl, KGroupedStreamImpl
// and KTableImpl spell them. Users know these names from describe() output,
// metrics and internal topic names, so they must match to the byte.
const (
	prefixSource        = "KSTREAM-SOURCE-"
	prefixSink          = "KSTREAM-SINK-"
	prefixFilter        = "KSTREAM-FILTER-" // filter, filterNot and the repartition filter
	prefixMap           = "KSTREAM-MAP-"
	prefixMapValues     = "KSTREAM-MAPVALUES-"
	prefixFlatMapValues = "KSTREAM-FLATMAPVALUES-"
	prefixFlatMap       = "KSTREAM-FLATMAP-"
	prefixPrinter       = "KSTREAM-PRINTER-"
	prefixKeySelect     = "KSTREAM-KEY-SELECT-" // selectKey and groupBy's key selector
	prefixPeek          = "KSTREAM-PEEK-"
	prefixForeach       = "KSTREAM-FOREACH-"
	prefixAggregate     = "KSTREAM-AGGREGATE-" // count's and aggregate's processor and, with STATE-STORE-, store
	prefixReduce        = "KSTREAM-REDUCE-"
	prefixToStream      = "KTABLE-TOSTREAM-"
	prefixMerge         = "KSTREAM-MERGE-"
	prefixBranch        = "KSTREAM-BRANCH-"
	prefixRepartition   = "KSTREAM-REPARTITION-"

	repartitionSuffix = "-repartition"
	changelogSuffix   = "-changelog"
)

// generatedName is KStreamImpl.createRepartitionedSource's test of whether a
// repartition topic's prefix is a generated name (Java's String.matches, so
// anchored at both ends). If it is, the repartition nodes keep generated
// names; otherwise they are named after the topic.
var generatedName = regexp.MustCompile(`^KSTREAM.*-[0-9]{10}$`)

// Builder assembles a topology from builder calls, one per DSL operator,
// naming nodes and stores as Kafka Streams' InternalStreamsBuilder does. As
// there, an operator takes a number from the shared counter even when it is
// given a name (so naming one operator renames no other); only a named store
// takes none. A refused call changes nothing: it neither adds nodes nor
// takes a number nor mints a handle.
//
// A Builder is not safe for concurrent use; the server serialises the calls
// of a session.
type Builder struct {
	// counter is InternalStreamsBuilder's index: one number per generated
	// (or burnt) processor or store name, shared by both.
	counter int
	// prio is InternalStreamsBuilder's buildPriorityIndex, taken each time a
	// graph node is added under a parent.
	prio int

	lastID  uint64
	handles map[uint64]*entry
	roots   []*gnode // the children of Kafka's root graph node: the sources

	nodes  map[string]*Node  // every node by name: names are unique, as in InternalTopologyBuilder
	topics map[string]string // source topic -> the source node reading it
	// patterns are the sources reading a topic pattern, in the order added.
	patterns []*Node
	stores   map[string]*Store
	// gnodes: the graph node each node was added in, for the Topology
	// calls that name parents (process.go).
	gnodes map[*Node]*gnode

	// FoldPrograms: the host runs fold programs (its SDK declared the
	// "fold_programs" host feature), so host functions may fold over
	// session and sliding windows. Without it they are refused.
	FoldPrograms bool
	// HostProcessors: the host runs processors (host feature
	// "processors"), so Process and AddProcessor take host suppliers.
	// Without it they take native ones only.
	HostProcessors bool
	// DefaultKeySerde and DefaultValueSerde are default.key.serde and
	// default.value.serde: the serdes of a source that names none (empty:
	// bytes). Set before the first source is added.
	DefaultKeySerde, DefaultValueSerde string
	// DefaultExtractor is default.timestamp.extractor: the built-in
	// extractor of a stream or table source that gives none.
	DefaultExtractor string
}

// entry is the builder's side of a handle.
type entry struct {
	handle *Handle
	// g is the graph node whose output the handle stands for; for a grouped
	// stream, the graph node that was grouped.
	g *gnode
	// repartition is Kafka's repartitionRequired: a key-changing operator is
	// upstream, so an aggregation must repartition first.
	repartition bool
	// groupName is the grouped stream's Grouped.as name ("" when none).
	groupName string
	// repartitionNode is the repartition a named grouped stream made for its
	// first aggregation; later aggregations of the same grouped stream share
	// it (GroupedStreamAggregateBuilder reuses it when the name is given).
	repartitionNode *gnode
	// grouped and windows are set for a windowed stream: the grouped
	// stream it windows (its aggregations repartition as the grouped
	// stream's would) and the windows.
	grouped *entry
	windows *Windows
	// cogroup is set for a cogrouped stream and its windowed forms.
	cogroup *cogroup
}

// pad is a name number as Kafka Streams prints it.
func pad(n int) string { return fmt.Sprintf("%010d", n) }

// gnode is one of Kafka Streams' graph nodes (GraphNode): what one DSL
// operator adds, written to the topology as one or more nodes. Kafka writes
// graph nodes in the order of their build priority, and that order decides
// sub-topology ids, the order of a node's children and, through Java's
// HashMap, details of describe(); so the builder keeps it.
type gnode struct {
	prio     int
	nodes    []*Node // in the order Kafka writes them
	out      *Node   // the node the graph node's children hang off
	children []*gnode
	// relaxedNullKeyJoin is Kafka's NULL_KEY_RELAXED_JOIN label: a left
	// stream-table or stream-global join, or a left or outer stream-stream
	// join, which joins a null-key record with null (KIP-962). A
	// repartition upstream of one keeps null keys (relaxNullKeyFilters).
	relaxedNullKeyJoin bool
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		handles: map[uint64]*entry{},
		nodes:   map[string]*Node{},
		topics:  map[string]string{},
		stores:  map[string]*Store{},
		gnodes:  map[*Node]*gnode{},
	}
}

// StreamOptions are the arguments of Builder.Stream: the topics one source
// node reads, their serdes (empty means bytes) and the source's name (empty
// means generated; Consumed.as in Kafka Streams).
type StreamOptions struct {
	Topics []string
	// Pattern is StreamsBuilder.stream(Pattern): the source reads every
	// topic whose whole name the regular expression (Go's RE2 syntax)
	// matches, instead of Topics (docs/design/operators.md, "Pattern
	// sources").
	Pattern              string
	KeySerde, ValueSerde string
	Name                 string
	// OffsetReset is Consumed.withOffsetResetPolicy: earliest, latest or
	// none; empty follows auto.offset.reset.
	OffsetReset string
	// Extractor is Consumed.withTimestampExtractor: a function (token or
	// TimestampExtractorFunc) or a built-in extractor's name (Builtin);
	// nil keeps the records' own timestamps.
	Extractor *Function
}

// Materialized names and types count's store. An empty StoreName means
// "materialized, name generated" (Kafka Streams' Materialized.with), which
// consumes one more name number than count with no Materialized at all.
// Empty serdes keep the grouped stream's key serde and long values.
type Materialized struct {
	StoreName, KeySerde, ValueSerde string
	// ChangelogConfig is Materialized.withLoggingEnabled's topic configs
	// for the store's changelog.
	ChangelogConfig map[string]string
	// Retention is Materialized.withRetention (ms), for window and session
	// stores; 0 is the default.
	Retention int64
	// Versioned, when set, makes a table source's store a versioned
	// key-value store (Stores.persistentVersionedKeyValueStore).
	Versioned *Versioned
}

// Versioned is a versioned key-value store's settings (KIP-889): versions
// stay readable for HistoryRetention ms behind the store's stream time
// (the latest version of a key always); SegmentInterval (ms, 0: not
// given) is Kafka Streams' RocksDB segment size, checked but not used.
type Versioned struct {
	HistoryRetention, SegmentInterval int64
}

// changelogConfig checks a Materialized's changelog topic configs: a
// key-value store's changelog must stay compacted, or the broker deletes
// rows the store still holds and a restore loses them.
func (c *call) changelogConfig(m Materialized) {
	if m.Versioned != nil && c.op != "table" {
		c.invalid("materialized as a versioned store (%q): only a table source (StreamsBuilder.table) is materialized as versioned here, not %s", m.StoreName, c.op)
	}
	for _, k := range slices.Sorted(maps.Keys(m.ChangelogConfig)) {
		v := m.ChangelogConfig[k]
		if k == "" {
			c.invalid("materialized changelog config has an empty name (value %q)", v)
			continue
		}
		if k == "cleanup.policy" && !slices.Contains(strings.Split(strings.ReplaceAll(v, " ", ""), ","), "compact") {
			c.invalid("materialized changelog config cleanup.policy=%q: a key-value store's changelog must be compacted (cleanup.policy=compact), or restoring it loses rows the store holds", v)
		}
	}
}

// newStore records a key-value store and its changelog.
func (b *Builder) newStore(name, keySerde, valueSerde string, changelogConfig map[string]string) {
	b.stores[name] = &Store{Name: name, KeySerde: keySerde, ValueSerde: valueSerde, ChangelogTopic: name + changelogSuffix, ChangelogConfig: changelogConfig}
}

// Stream adds a source node reading o.Topics (StreamsBuilder.stream).
func (b *Builder) Stream(o StreamOptions) (*Handle, error) {
	c := b.begin("stream")
	var re *regexp.Regexp
	switch {
	case o.Pattern != "" && len(o.Topics) > 0:
		c.invalid("stream names topics %q and pattern %q; a source reads either topics or a pattern", o.Topics, o.Pattern)
	case o.Pattern != "":
		re = c.topicPattern(o.Pattern, o.Name)
	case len(o.Topics) == 0:
		c.invalid("stream names no topic; a source reads at least one")
	}
	seen := map[string]bool{}
	for _, t := range o.Topics {
		if !c.validName("topic", t) {
			continue
		}
		if seen[t] {
			c.invalid("stream names topic %q twice", t)
			continue
		}
		seen[t] = true
		if src, ok := b.topics[t]; ok {
			c.invalid("stream reads topic %q, which source %s reads already", t, src)
		}
		c.notMatched(t)
	}
	c.topicSerde("key", o.KeySerde)
	c.topicSerde("value", o.ValueSerde)
	c.offsetReset(o.OffsetReset)
	extractor := c.extractor(o.Extractor)
	name := c.processorName(o.Name, prefixSource)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: name, Type: Source, Topics: slices.Clone(o.Topics), Pattern: o.Pattern, pattern: re,
		KeySerde: serde.Carried(b.keySerde(o.KeySerde)), ValueSerde: serde.Carried(b.valueSerde(o.ValueSerde)),
		KeyWire: wire(o.KeySerde), ValueWire: wire(o.ValueSerde),
		OffsetReset: o.OffsetReset, Extractor: extractor,
	}
	b.nodes[n.Name] = n
	if re != nil {
		b.patterns = append(b.patterns, n)
	}
	g := b.add(nil, &gnode{nodes: []*Node{n}, out: n})
	for _, t := range o.Topics {
		b.topics[t] = name
	}
	return b.mint(&entry{handle: &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: g}), nil
}

// topicPattern compiles a source's topic pattern, anchored as Java's
// Pattern.matcher(topic).matches() is (the whole name must match), and
// refuses one that matches a topic another source reads already
// (InternalTopologyBuilder.addSource(Pattern)). Go's RE2 is not Java's
// java.util.regex: lookaround, backreferences and possessive quantifiers
// do not compile, and are refused here rather than read differently.
func (c *call) topicPattern(p, source string) *regexp.Regexp {
	what := c.op
	if source != "" {
		what += " " + source // the source's name, when given
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		c.invalid("%s pattern %q is not a regular expression Go's RE2 reads (%v); polystreams matches topic patterns with RE2, which has no lookaround, backreferences or possessive quantifiers of Java's java.util.regex", what, p, err)
		return nil
	}
	for _, t := range slices.Sorted(maps.Keys(c.b.topics)) {
		if re.MatchString(t) {
			// Kafka Streams: "Pattern <p> will match a topic that has
			// already been registered by another source."
			c.invalid("%s pattern %q matches topic %q, which source %s reads already", what, p, t, c.b.topics[t])
		}
	}
	return re
}

// notMatched refuses a topic a pattern source reads
// (InternalTopologyBuilder.validateTopicNotAlreadyRegistered: "Topic t
// matches a Pattern already registered by another source.").
func (c *call) notMatched(t string) {
	for _, pn := range c.b.patterns {
		if pn.MatchesTopic(t) {
			c.invalid("%s reads topic %q, which matches pattern %q of source %s", c.op, t, pn.Pattern, pn.Name)
		}
	}
}

// stateless describes one stateless stream operator.
type stateless struct {
	op     string // the operator's name in the protocol
	kind   Op
	prefix string
	native reflect.Type // the Function.Native type the operator runs
	// keyChanging marks the result as needing a repartition before an
	// aggregation (Kafka's keyChangingOperation).
	keyChanging bool
	terminal    bool // foreach: no handle
}

var (
	opMapValues     = stateless{op: "map_values", kind: OpMapValues, prefix: prefixMapValues, native: reflect.TypeFor[MapValuesFunc]()}
	opFilter        = stateless{op: "filter", kind: OpFilter, prefix: prefixFilter, native: reflect.TypeFor[PredicateFunc]()}
	opFilterNot     = stateless{op: "filter_not", kind: OpFilterNot, prefix: prefixFilter, native: reflect.TypeFor[PredicateFunc]()}
	opFlatMapValues = stateless{op: "flat_map_values", kind: OpFlatMapValues, prefix: prefixFlatMapValues, native: reflect.TypeFor[FlatMapValuesFunc]()}
	opMap           = stateless{op: "map", kind: OpMap, prefix: prefixMap, native: reflect.TypeFor[MapFunc](), keyChanging: true}
	opSelectKey     = stateless{op: "select_key", kind: OpSelectKey, prefix: prefixKeySelect, native: reflect.TypeFor[SelectKeyFunc](), keyChanging: true}
	opPeek          = stateless{op: "peek", kind: OpPeek, prefix: prefixPeek, native: reflect.TypeFor[ForeachFunc]()}
	opForeach       = stateless{op: "foreach", kind: OpForeach, prefix: prefixForeach, native: reflect.TypeFor[ForeachFunc](), terminal: true}
	opPrint         = stateless{op: "print", kind: OpPrint, prefix: prefixPrinter, native: reflect.TypeFor[ForeachFunc](), terminal: true}
	opFlatMap       = stateless{op: "flat_map", kind: OpFlatMap, prefix: prefixFlatMap, native: reflect.TypeFor[FlatMapFunc](), keyChanging: true}
	// The with-key mappers name their nodes as the plain ones do (Kafka
	// Streams wraps a ValueMapper into a ValueMapperWithKey: one processor).
	opMapValuesWithKey     = stateless{op: "map_values", kind: OpMapValuesWithKey, prefix: prefixMapValues, native: reflect.TypeFor[MapValuesWithKeyFunc]()}
	opFlatMapValuesWithKey = stateless{op: "flat_map_values", kind: OpFlatMapValuesWithKey, prefix: prefixFlatMapValues, native: reflect.TypeFor[FlatMapValuesWithKeyFunc]()}
)

// MapValues adds KStream.mapValues; an empty valueSerde keeps the input's.
func (b *Builder) MapValues(input uint64, fn Function, valueSerde, name string) (*Handle, error) {
	return b.stateless(opMapValues, input, fn, "", valueSerde, name)
}

// Filter adds KStream.filter.
func (b *Builder) Filter(input uint64, fn Function, name string) (*Handle, error) {
	return b.stateless(opFilter, input, fn, "", "", name)
}

// FilterNot adds KStream.filterNot (named KSTREAM-FILTER-, as in Kafka).
func (b *Builder) FilterNot(input uint64, fn Function, name string) (*Handle, error) {
	return b.stateless(opFilterNot, input, fn, "", "", name)
}

// FlatMapValues adds KStream.flatMapValues.
func (b *Builder) FlatMapValues(input uint64, fn Function, valueSerde, name string) (*Handle, error) {
	return b.stateless(opFlatMapValues, input, fn, "", valueSerde, name)
}

// MapValuesWithKey adds KStream.mapValues with a ValueMapperWithKey:
// fn(key, value) -> value; an empty valueSerde keeps the input's.
func (b *Builder) MapValuesWithKey(input uint64, fn Function, valueSerde, name string) (*Handle, error) {
	return b.stateless(opMapValuesWithKey, input, fn, "", valueSerde, name)
}

// FlatMapValuesWithKey adds KStream.flatMapValues with a
// ValueMapperWithKey: fn(key, value) -> values.
func (b *Builder) FlatMapValuesWithKey(input uint64, fn Function, valueSerde, name string) (*Handle, error) {
	return b.stateless(opFlatMapValuesWithKey, input, fn, "", valueSerde, name)
}

// FlatMap adds KStream.flatMap (KSTREAM-FLATMAP-<n>): fn(key, value) ->
// (key, value) pairs. As KStream.map, it changes keys: the result needs a
// repartition before an aggregation or a join. Empty serdes keep the
// input's.
func (b *Builder) FlatMap(input uint64, fn Function, keySerde, valueSerde, name string) (*Handle, error) {
	return b.stateless(opFlatMap, input, fn, keySerde, valueSerde, name)
}

// Print adds KStream.print (KSTREAM-PRINTER-<n>), a terminal operator: fn
// prints each record (a ForeachAction made from Printed).
func (b *Builder) Print(input uint64, fn Function, name string) error {
	_, err := b.stateless(opPrint, input, fn, "", "", name)
	return err
}

// Map adds KStream.map; the result needs a repartition before an
// aggregation.
func (b *Builder) Map(input uint64, fn Function, keySerde, valueSerde, name string) (*Handle, error) {
	return b.stateless(opMap, input, fn, keySerde, valueSerde, name)
}

// SelectKey adds KStream.selectKey; the result needs a repartition before an
// aggregation.
func (b *Builder) SelectKey(input uint64, fn Function, keySerde, name string) (*Handle, error) {
	return b.stateless(opSelectKey, input, fn, keySerde, "", name)
}

// Peek adds KStream.peek.
func (b *Builder) Peek(input uint64, fn Function, name string) (*Handle, error) {
	return b.stateless(opPeek, input, fn, "", "", name)
}

// Foreach adds KStream.foreach, a terminal operator.
func (b *Builder) Foreach(input uint64, fn Function, name string) error {
	_, err := b.stateless(opForeach, input, fn, "", "", name)
	return err
}

func (b *Builder) stateless(s stateless, input uint64, fn Function, keySerde, valueSerde, name string) (*Handle, error) {
	c := b.begin(s.op)
	in := c.input(input, KindStream)
	c.function(fn, s.native)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	nodeName := c.processorName(name, s.prefix)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: s.kind, Fn: &fn,
		KeySerde:   serde.Or(keySerde, in.handle.KeySerde),
		ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
	}
	g := b.hang(in, n)
	if s.terminal {
		return nil, nil
	}
	return b.mint(&entry{
		handle:      &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:           g,
		repartition: in.repartition || s.keyChanging,
	}), nil
}

// GroupByKey adds KStream.groupByKey. It adds no node and consumes no name
// number; name is Grouped.as: it names the repartition topic when the
// aggregation needs one. Empty serdes keep the input's.
func (b *Builder) GroupByKey(input uint64, keySerde, valueSerde, name string) (*Handle, error) {
	c := b.begin("group_by_key")
	in := c.input(input, KindStream)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	if name != "" {
		c.validName("grouped name", name)
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	return b.mint(&entry{
		handle: &Handle{
			Kind:     KindGroupedStream,
			KeySerde: serde.Or(keySerde, in.handle.KeySerde), ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
			Node: in.handle.Node,
		},
		g: in.g, repartition: in.repartition, groupName: name,
	}), nil
}

// GroupBy adds KStream.groupBy: a key selector node, after which an
// aggregation always repartitions. As in Kafka Streams, a given name
// (Grouped.as) names both the key selector node and the repartition topic.
// The serdes are those of the grouped records (empty keeps the input's); the
// key selector's output is encoded with them.
func (b *Builder) GroupBy(input uint64, fn Function, keySerde, valueSerde, name string) (*Handle, error) {
	c := b.begin("group_by")
	in := c.input(input, KindStream)
	c.function(fn, opSelectKey.native)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	nodeName := c.processorName(name, prefixKeySelect)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: OpSelectKey, Fn: &fn,
		KeySerde:   serde.Or(keySerde, in.handle.KeySerde),
		ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
	}
	g := b.hang(in, n)
	return b.mint(&entry{
		handle: &Handle{Kind: KindGroupedStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:      g, repartition: true, groupName: name,
	}), nil
}

// Count adds KGroupedStream.count: a KSTREAM-AGGREGATE- processor with a
// key-value store of longs, preceded by a repartition when the grouped
// stream's key was changed. m == nil is count() with no Materialized.
//
// Numbers are taken as KGroupedStreamImpl and GroupedStreamAggregateBuilder
// take them: one burnt for a Materialized that names no store, then the
// store's, then the processor's, then sink, filter and source of the
// repartition.
func (b *Builder) Count(input uint64, m *Materialized, name string) (*Handle, error) {
	return b.aggregation(fold{op: "count", kind: OpCount, prefix: prefixAggregate, valueSerde: serde.Long}, input, m, name)
}

// Reduce adds KGroupedStream.reduce: the first value of a key becomes its
// aggregate and fn folds in the rest (a host reducer or a ReduceFunc). The
// store keeps the grouped stream's value serde unless m names another.
func (b *Builder) Reduce(input uint64, fn Function, m *Materialized, name string) (*Handle, error) {
	return b.aggregation(fold{op: "reduce", kind: OpReduce, prefix: prefixReduce, fn: &fn}, input, m, name)
}

// Aggregate adds KGroupedStream.aggregate: init gives a key's first
// aggregate, fn folds each value into it. The aggregate's serde is m's value
// serde, else the grouped stream's value serde.
func (b *Builder) Aggregate(input uint64, init, fn Function, m *Materialized, name string) (*Handle, error) {
	return b.aggregation(fold{op: "aggregate", kind: OpAggregate, prefix: prefixAggregate, fn: &fn, init: &init}, input, m, name)
}

// AggregateSessions adds SessionWindowedKStream.aggregate: Aggregate, plus
// the merger that combines two sessions a record bridges.
func (b *Builder) AggregateSessions(input uint64, init, fn, merger Function, m *Materialized, name string) (*Handle, error) {
	return b.aggregation(fold{op: "aggregate", kind: OpAggregate, prefix: prefixAggregate, fn: &fn, init: &init, merger: &merger}, input, m, name)
}

// fold describes one aggregation operator of a grouped stream.
type fold struct {
	op     string
	kind   Op
	prefix string
	// valueSerde, when set, is the only value serde the store can hold.
	valueSerde            string
	fn, init, sub, merger *Function
}

var (
	reduceNative    = reflect.TypeFor[ReduceFunc]()
	aggregateNative = reflect.TypeFor[AggregateFunc]()
	initNative      = reflect.TypeFor[InitializerFunc]()
)

func (b *Builder) aggregation(f fold, input uint64, m *Materialized, name string) (*Handle, error) {
	c := b.begin(f.op)
	in, w := c.groupedInput(input)
	switch f.kind {
	case OpReduce:
		if f.fn.Builtin != "" && f.fn.Token == 0 && f.fn.Native == nil && in != nil {
			fn, err := builtinReducer(f.fn.Builtin, in.handle.ValueSerde)
			if err != nil {
				c.invalid("reduce: %v", err)
			} else {
				resolved := Function{Name: f.fn.Builtin, Native: fn, Builtin: f.fn.Builtin}
				f.fn = &resolved
			}
		}
		c.function(*f.fn, reduceNative)
	case OpAggregate:
		c.function(*f.init, initNative)
		c.function(*f.fn, aggregateNative)
		switch {
		case w != nil && w.Kind == SessionWindows && f.merger == nil:
			c.invalid("aggregate on a session-windowed stream needs a merger, to combine two sessions a record bridges")
		case f.merger != nil && (w == nil || w.Kind != SessionWindows):
			c.invalid("aggregate takes a merger only on a session-windowed stream")
		case f.merger != nil:
			c.function(*f.merger, aggregateNative)
		}
	}
	if w != nil {
		host := f.fn != nil && f.fn.Token != 0 || f.init != nil && f.init.Token != 0 || f.merger != nil && f.merger.Token != 0
		if w.Kind != TimeWindows && host && !b.FoldPrograms {
			c.invalid("%s over %s with host functions needs a host that runs fold programs (host feature %q), and this session's host did not declare it: upgrade its SDK", f.op, w.Kind, "fold_programs")
		}
	}
	var mat Materialized
	if m != nil {
		mat = *m
		if mat.Retention != 0 && w == nil {
			c.invalid("%s: materialized retention_ms %d is for window and session stores; this aggregation has no windows", f.op, mat.Retention)
		}
		c.serde("materialized key", mat.KeySerde)
		if c.serde("materialized value", mat.ValueSerde) && f.valueSerde != "" && mat.ValueSerde != "" && mat.ValueSerde != f.valueSerde {
			c.invalid("%s stores %ss, but materialized names value serde %q", f.op, f.valueSerde, mat.ValueSerde)
		}
		c.changelogConfig(mat)
		if mat.StoreName != "" {
			c.validName("store", mat.StoreName)
		} else if f.kind == OpCount {
			// KGroupedStreamImpl.count(Materialized): "we used to burn a
			// topology name here, so we have to keep doing it".
			c.burn()
		}
	}
	store := mat.StoreName
	if store == "" {
		store = fmt.Sprintf("%sSTATE-STORE-%010d", f.prefix, c.burn())
	}
	if b.stores[store] != nil {
		c.invalid("%s names store %q, which exists already", f.op, store)
	}
	var retention int64
	if w != nil {
		retention = c.windowRetention(w, mat.Retention)
	}
	aggName := c.processorName(name, f.prefix)

	var rp repartition
	if in != nil && in.repartition {
		rp = c.repartition(in, store)
	}
	if err := c.done(); err != nil {
		return nil, err
	}

	g, from := in.g, in.handle.Node
	if in.repartition {
		g = b.repartition(in, rp)
		from = g.out
	}
	valueSerde := serde.Or(mat.ValueSerde, serde.Or(f.valueSerde, in.handle.ValueSerde))
	n := &Node{
		Name: aggName, Type: Processor, Op: f.kind, Stores: []string{store}, Fn: f.fn, Init: f.init, Merger: f.merger,
		KeySerde: serde.Or(mat.KeySerde, in.handle.KeySerde), ValueSerde: valueSerde, Windows: w,
	}
	b.newStore(store, n.KeySerde, valueSerde, mat.ChangelogConfig)
	if w != nil {
		st := b.stores[store]
		st.Kind, st.Windows, st.Retention = StoreWindow, w, retention
		if w.Kind == SessionWindows {
			st.Kind = StoreSession
		}
		n.KeySerde = w.KeySerde(n.KeySerde)
	}
	b.nodes[n.Name] = n
	link(from, n)
	ag := b.add(g, &gnode{nodes: []*Node{n}, out: n})
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: ag}), nil
}

// repartition is a planned repartition: names, topic, and whether the
// grouped stream's existing one is reused.
type repartition struct {
	topic, filter, sink, source string
	reuse                       bool
}

// repartition plans the repartition an aggregation of in needs, as
// KStreamImpl.createRepartitionedSource names it. prefix is the Grouped name
// or else the store name.
func (c *call) repartition(in *entry, store string) repartition {
	prefix := in.groupName
	if prefix == "" {
		prefix = store
	}
	// A named grouped stream's aggregations share one repartition.
	return c.planRepartition(prefix, in.groupName != "" && in.repartitionNode != nil)
}

// planRepartition names a repartition whose topic name starts with prefix,
// as KStreamImpl.createRepartitionedSource does; a reused one claims no
// names.
func (c *call) planRepartition(prefix string, reuse bool) repartition {
	rp := repartition{topic: prefix, reuse: reuse}
	if !strings.HasSuffix(prefix, repartitionSuffix) {
		rp.topic += repartitionSuffix
	}
	// The numbers are always taken, in this order, for topology
	// compatibility, even when the names are not generated.
	rp.sink = fmt.Sprintf("%s%010d", prefixSink, c.burn())
	rp.filter = fmt.Sprintf("%s%010d", prefixFilter, c.burn())
	rp.source = fmt.Sprintf("%s%010d", prefixSource, c.burn())
	if !generatedName.MatchString(prefix) {
		rp.sink, rp.filter, rp.source = rp.topic+"-sink", rp.topic+"-filter", rp.topic+"-source"
	}
	if !rp.reuse {
		c.claim(rp.filter)
		c.claim(rp.sink)
		c.claim(rp.source)
		if src, ok := c.b.topics[rp.topic]; ok {
			c.invalid("%s's repartition topic %q is read by source %s already", c.op, rp.topic, src)
		}
	}
	return rp
}

// repartition adds (or, for a named grouped stream, adds again) the
// repartition graph node: filter (drops null keys, unless a join that
// relaxes them is downstream: relaxNullKeyFilters), sink and source, in the
// order OptimizableRepartitionNode writes them. The source starts a new
// sub-topology.
func (b *Builder) repartition(in *entry, rp repartition) *gnode {
	if rp.reuse {
		// Kafka adds the same graph node again, which moves its build
		// priority; keep that, it can change the write order.
		return b.add(in.g, in.repartitionNode)
	}
	g := b.addRepartition(in, rp)
	if in.groupName != "" {
		in.repartitionNode = g
	}
	return g
}

// addRepartition adds a new repartition graph node under in's: filter, sink
// and source, named as rp plans.
func (b *Builder) addRepartition(in *entry, rp repartition) *gnode {
	k, v := in.handle.KeySerde, in.handle.ValueSerde
	filter := &Node{Name: rp.filter, Type: Processor, Op: OpRepartitionFilter, KeySerde: k, ValueSerde: v}
	sink := &Node{Name: rp.sink, Type: Sink, Topic: rp.topic, Internal: true, KeySerde: k, ValueSerde: v}
	source := &Node{Name: rp.source, Type: Source, Topics: []string{rp.topic}, Internal: true, KeySerde: k, ValueSerde: v}
	for _, n := range []*Node{filter, sink, source} {
		b.nodes[n.Name] = n
	}
	link(in.handle.Node, filter)
	link(filter, sink)
	b.topics[rp.topic] = source.Name
	return b.add(in.g, &gnode{nodes: []*Node{filter, sink, source}, out: source})
}

// ToStream adds KTable.toStream.
func (b *Builder) ToStream(input uint64, name string) (*Handle, error) {
	c := b.begin("to_stream")
	in := c.input(input, KindTable)
	nodeName := c.processorName(name, prefixToStream)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{Name: nodeName, Type: Processor, Op: OpToStream, KeySerde: in.handle.KeySerde, ValueSerde: in.handle.ValueSerde}
	g := b.hang(in, n)
	return b.mint(&entry{handle: &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: g}), nil
}

// To adds KStream.to: a sink writing topic with the given serdes (Produced;
// empty keeps the input's). name is Produced.as.
func (b *Builder) To(input uint64, topic, keySerde, valueSerde, name string) error {
	return b.ToRouted(input, topic, keySerde, valueSerde, name, Routing{})
}

// hang adds n as a one-node graph node under in's, fed by in's node.
func (b *Builder) hang(in *entry, n *Node) *gnode {
	b.nodes[n.Name] = n
	link(in.handle.Node, n)
	return b.add(in.g, &gnode{nodes: []*Node{n}, out: n})
}

// add is InternalStreamsBuilder.addGraphNode: g gets the next build priority
// (again, when it was added before) and becomes a child of parent (nil is
// the root).
func (b *Builder) add(parent, g *gnode) *gnode {
	g.prio = b.prio
	b.prio++
	for _, n := range g.nodes {
		if _, ok := b.gnodes[n]; !ok {
			b.gnodes[n] = g
		}
	}
	if parent == nil {
		b.roots = append(b.roots, g)
	} else if !slices.Contains(parent.children, g) {
		parent.children = append(parent.children, g)
	}
	return g
}

// Kind returns the kind of handle id, and false when there is none.
func (b *Builder) Kind(id uint64) (Kind, bool) {
	e := b.handles[id]
	if e == nil {
		return 0, false
	}
	return e.handle.Kind, true
}

// mint gives e a handle id and returns a copy of its handle, so that a
// caller cannot change the builder's.
func (b *Builder) mint(e *entry) *Handle {
	b.lastID++
	e.handle.ID = b.lastID
	b.handles[e.handle.ID] = e
	h := *e.handle
	return &h
}

func link(from, to *Node) {
	from.Successors = append(from.Successors, to)
	to.Predecessors = append(to.Predecessors, from)
}

// call checks one builder call before it changes anything: it takes name
// numbers from a copy of the counter and collects every problem, so that a
// refused call reports them all and leaves the builder as it was.
type call struct {
	b        *Builder
	op       string
	counter  int
	claimed  map[string]bool
	problems []problem
}

type problem struct {
	kind error // ErrInvalid or ErrNotFound
	text string
}

func (b *Builder) begin(op string) *call {
	return &call{b: b, op: op, counter: b.counter, claimed: map[string]bool{}}
}

func (c *call) invalid(format string, args ...any) {
	c.problems = append(c.problems, problem{ErrInvalid, fmt.Sprintf(format, args...)})
}

// burn takes the next name number.
func (c *call) burn() int {
	c.counter++
	return c.counter - 1
}

// processorName is NamedInternal.orElseGenerateWithPrefix: the given name,
// else prefix and the next number. A number is taken even for a given name
// ("we still need to burn index for the operation to keep topology backward
// compatibility"), so naming one operator does not rename the next ones.
func (c *call) processorName(given, prefix string) string {
	n := c.burn()
	if given != "" {
		if c.validName("node", given) {
			c.claim(given)
		}
		return given
	}
	name := fmt.Sprintf("%s%010d", prefix, n)
	c.claim(name)
	return name
}

// claim reserves a node name; Kafka refuses a topology with two nodes of one
// name ("Processor ... is already added").
func (c *call) claim(name string) {
	if c.b.nodes[name] != nil || c.claimed[name] {
		c.invalid("%s names node %q, which exists already", c.op, name)
		return
	}
	c.claimed[name] = true
}

// groupedInput looks up the input of an aggregation: a grouped stream, or a
// windowed one (then it returns the grouped stream and the windows).
func (c *call) groupedInput(id uint64) (*entry, *Windows) {
	e := c.b.handles[id]
	switch {
	case e == nil:
		c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("%s names handle %d, which does not exist", c.op, id)})
		return nil, nil
	case e.cogroup != nil:
		c.invalid("%s needs a grouped stream or a windowed stream, but handle %d is a %s: a cogrouped stream is aggregated by aggregate with an initializer, its aggregators given to cogroup", c.op, id, e.handle.Kind)
		return nil, nil
	case e.windows != nil:
		return e.grouped, e.windows
	case e.handle.Kind != KindGroupedStream:
		c.invalid("%s needs a grouped stream or a windowed stream, but handle %d is a %s", c.op, id, e.handle.Kind)
		return nil, nil
	}
	return e, nil
}

// input looks up the handle a call operates on; it returns nil (and records
// why) when there is none or it is of the wrong kind.
func (c *call) input(id uint64, want Kind) *entry {
	e := c.b.handles[id]
	switch {
	case e == nil:
		c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("%s names handle %d, which does not exist", c.op, id)})
		return nil
	case e.handle.Kind != want:
		c.invalid("%s needs a %s, but handle %d is a %s", c.op, want, id, e.handle.Kind)
		return nil
	case want == KindTable && c.b.versioned(e.handle.Node) != "" && c.op != "join" && c.op != "left_join" && c.op != "to_stream":
		c.invalid("%s reads table handle %d, whose store %q is versioned: a versioned table is read by a stream-table join (join, left_join) and to_stream here; %s of a versioned table is not supported yet", c.op, id, c.b.versioned(e.handle.Node), c.op)
		return nil
	}
	return e
}

// versioned is the name of n's store when it is versioned, else "".
func (b *Builder) versioned(n *Node) string {
	if n == nil || n.Op != OpTableSource || len(n.Stores) != 1 {
		return ""
	}
	if st := b.stores[n.Stores[0]]; st != nil && st.Kind == StoreVersioned {
		return st.Name
	}
	return ""
}

// serde reports whether name is a known serde (or empty) that records
// inside the topology may have: a Schema Registry serde (avro) is a topic's
// format, named only where records enter or leave (topicSerde).
func (c *call) serde(which, name string) bool {
	if serde.IsRegistry(name) {
		c.invalid("%s (%s serde): serde %.80q is a topic's format (the Schema Registry's wire format): name it on stream, table, global_table or to; in between, its records are json", c.op, which, name)
		return false
	}
	return c.topicSerde(which, name)
}

// topicSerde reports whether name is a known serde (or empty) for the
// records of a topic: any serde, a Schema Registry one included.
func (c *call) topicSerde(which, name string) bool {
	if err := serde.Check(name); err != nil {
		c.invalid("%s (%s serde): %v", c.op, which, err)
		return false
	}
	return true
}

// encodable checks that a sink of Schema Registry serde name gets json
// records (of serde have) to encode.
func (c *call) encodable(which, name, have string) {
	if serde.IsRegistry(name) && have != serde.JSON {
		c.invalid("%s (%s serde): serde %.80q encodes json records, but the stream's %ss are %s: map them to json first", c.op, which, name, which, have)
	}
}

// wire is a topic's serde name when it is a Schema Registry serde (the
// source decodes it, the sink encodes it), else "".
func wire(name string) string {
	if serde.IsRegistry(name) {
		return name
	}
	return ""
}

// offsetReset checks a source's Consumed.withOffsetResetPolicy, and the
// builder's default serdes, which the source may take.
func (c *call) offsetReset(policy string) {
	c.serde("default.key.serde", c.b.DefaultKeySerde)
	c.serde("default.value.serde", c.b.DefaultValueSerde)
	switch policy {
	case "", "earliest", "latest", "none":
	default:
		c.invalid("%s: offset_reset %.40q: want earliest, latest or none (empty: the application's auto.offset.reset)", c.op, policy)
	}
}

// keySerde is a source's key serde: the one it names, else
// default.key.serde, else bytes.
func (b *Builder) keySerde(name string) string {
	return serde.Or(name, serde.Or(b.DefaultKeySerde, serde.Bytes))
}

// valueSerde is keySerde for values (default.value.serde).
func (b *Builder) valueSerde(name string) string {
	return serde.Or(name, serde.Or(b.DefaultValueSerde, serde.Bytes))
}

// function checks that fn names exactly one function, and that a native one
// has the type the operator runs.
func (c *call) function(fn Function, native reflect.Type) {
	switch {
	case fn.Token == 0 && fn.Native == nil:
		c.invalid("%s names no function: token 0 and no native function", c.op)
	case fn.Token != 0 && fn.Native != nil:
		c.invalid("%s names both token %d and a native function; give one", c.op, fn.Token)
	case fn.Native != nil && reflect.TypeOf(fn.Native) != native:
		c.invalid("%s needs a native function of type %v, got %T", c.op, native, fn.Native)
	case fn.Native != nil && reflect.ValueOf(fn.Native).IsNil():
		c.invalid("%s names a nil native function", c.op)
	}
}

// validName applies Kafka's rules for a name that becomes a node, store or
// topic name (Named.validate; topic names follow the same rules): not empty,
// not "." or "..", at most 249 characters, only ASCII alphanumerics, '.',
// '_' and '-'.
func (c *call) validName(what, name string) bool {
	if why := illegal(name); why != "" {
		c.invalid("%s names %s %q, which is illegal: %s", c.op, what, name, why)
		return false
	}
	return true
}

func illegal(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case name == "." || name == "..":
		return `it cannot be "." or ".."`
	case len(utf16.Encode([]rune(name))) > 249: // Java counts UTF-16 units
		return "it is longer than 249 characters"
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return "it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	return ""
}

// done ends the checking phase: the call's error, or nil after committing
// the name numbers it took.
func (c *call) done() error {
	if len(c.problems) > 0 {
		return &callError{problems: c.problems}
	}
	c.b.counter = c.counter
	return nil
}

// callError is a refused builder call. Its text names every problem found; it
// wraps ErrInvalid and/or ErrNotFound accordingly.
type callError struct {
	problems []problem
}

func (e *callError) Error() string {
	texts := make([]string, len(e.problems))
	for i, p := range e.problems {
		texts[i] = p.text
	}
	return "topology: " + strings.Join(texts, "; ")
}

// Unwrap returns the kinds of the problems, for errors.Is.
func (e *callError) Unwrap() []error {
	kinds := make([]error, 0, 2)
	for _, p := range e.problems {
		if !slices.Contains(kinds, p.kind) {
			kinds = append(kinds, p.kind)
		}
	}
	return kinds
}
