package topology

import (
	"fmt"
	"reflect"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Table operators: StreamsBuilder.table, KTable.filter / filterNot /
// mapValues / groupBy and KGroupedTable.count / reduce / aggregate, named as
// KTableImpl and KGroupedTableImpl name them (pinned by Kafka's TopologyTest
// "table*ShouldPreserveTopologyStructure" and "kTable*ShouldPreserve-
// TopologyStructure" goldens in describe_test.go).
//
// A table's records are changes: a new value (nil deletes the key) and,
// where a downstream operator needs it, the old one. Kafka Streams sends old
// values only to operators that ask (KTable.enableSendingOldValues, which
// KTable.groupBy calls); SendOld marks the nodes that send them, and a table
// source that must send them is materialized, as in Kafka.
const (
	prefixTableSource    = "KTABLE-SOURCE-"
	prefixTableFilter    = "KTABLE-FILTER-"
	prefixTableMapValues = "KTABLE-MAPVALUES-"
	prefixTableSelect    = "KTABLE-SELECT-"
	prefixTableAggregate = "KTABLE-AGGREGATE-"
	prefixTableReduce    = "KTABLE-REDUCE-"
)

// TableOptions are the arguments of Builder.Table.
type TableOptions struct {
	Topic                string
	KeySerde, ValueSerde string
	// OffsetReset is Consumed.withOffsetResetPolicy: earliest, latest or
	// none; empty follows auto.offset.reset.
	OffsetReset string
	// Extractor is Consumed.withTimestampExtractor (StreamOptions.Extractor).
	Extractor *Function
	// Name is Consumed.as: it names the table source processor, and the
	// source node "<Name>-source" (InternalStreamsBuilder#table since Kafka
	// 3.x; 2.x named them the other way round, "<Name>" and
	// "<Name>-table-source").
	Name string
	// Materialized: a StoreName makes the table's store exist and be
	// queryable; otherwise the store is named "<topic>-STATE-STORE-<n>" and
	// exists only when a downstream operator needs old values.
	Materialized *Materialized
}

// Table adds StreamsBuilder.table: a source node and a KTABLE-SOURCE
// processor. Numbers are taken as InternalStreamsBuilder.table takes them:
// the store's (unless named), then the source's, then the table source's.
func (b *Builder) Table(o TableOptions) (*Handle, error) {
	c := b.begin("table")
	if c.validName("topic", o.Topic) {
		if src, ok := b.topics[o.Topic]; ok {
			c.invalid("table reads topic %q, which source %s reads already", o.Topic, src)
		}
		c.notMatched(o.Topic)
	}
	c.topicSerde("key", o.KeySerde)
	c.topicSerde("value", o.ValueSerde)
	var mat Materialized
	if o.Materialized != nil {
		mat = *o.Materialized
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if v := mat.Versioned; v != nil {
			if mat.StoreName == "" {
				c.invalid("a versioned materialization needs a store name (Stores.persistentVersionedKeyValueStore(name, ...))")
			}
			if v.HistoryRetention < 0 {
				c.invalid("versioned store %q: history retention %d ms is negative", mat.StoreName, v.HistoryRetention)
			}
			if v.SegmentInterval < 0 {
				c.invalid("versioned store %q: segment interval %d ms is negative; it must be positive, or 0 for the default", mat.StoreName, v.SegmentInterval)
			}
		}
	}
	store := mat.StoreName
	if store != "" {
		if c.validName("store", store) && b.stores[store] != nil {
			c.invalid("table names store %q, which exists already", store)
		}
	} else {
		store = fmt.Sprintf("%s-STATE-STORE-%010d", o.Topic, c.burn())
	}
	c.offsetReset(o.OffsetReset)
	extractor := c.extractor(o.Extractor)
	sourceName := c.suffixedName(o.Name, "-source", prefixSource)
	tableName := c.processorName(o.Name, prefixTableSource)
	if err := c.done(); err != nil {
		return nil, err
	}
	k, v := serde.Carried(b.keySerde(o.KeySerde)), serde.Carried(b.valueSerde(o.ValueSerde))
	src := &Node{Name: sourceName, Type: Source, Topics: []string{o.Topic}, KeySerde: k, ValueSerde: v, KeyWire: wire(o.KeySerde), ValueWire: wire(o.ValueSerde), OffsetReset: o.OffsetReset, Extractor: extractor}
	tbl := &Node{
		Name: tableName, Type: Processor, Op: OpTableSource,
		KeySerde: serde.Or(mat.KeySerde, k), ValueSerde: serde.Or(mat.ValueSerde, v),
		pendingStore: store, pendingConfig: mat.ChangelogConfig,
	}
	b.nodes[src.Name], b.nodes[tbl.Name] = src, tbl
	b.topics[o.Topic] = src.Name
	link(src, tbl)
	g := b.add(nil, &gnode{nodes: []*Node{src, tbl}, out: tbl})
	if mat.StoreName != "" {
		b.materialize(tbl)
		if v := mat.Versioned; v != nil {
			st := b.stores[store]
			st.Kind, st.Versioned = StoreVersioned, &Versioned{HistoryRetention: v.HistoryRetention, SegmentInterval: v.SegmentInterval}
		}
	}
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: tbl.KeySerde, ValueSerde: tbl.ValueSerde, Node: tbl}, g: g}), nil
}

// materialize gives n the store it reserved, so that it keeps its table.
func (b *Builder) materialize(n *Node) {
	if n.pendingStore == "" || len(n.Stores) > 0 {
		return
	}
	b.newStore(n.pendingStore, n.KeySerde, n.ValueSerde, n.pendingConfig)
	n.Stores = []string{n.pendingStore}
}

// sendOldValues is KTableImpl.enableSendingOldValues: n and the table
// operators above it send old values, up to one that keeps its own table (a
// materialized node or an aggregation, which knows its old values); a table
// source that must send them is materialized.
func (b *Builder) sendOldValues(n *Node) {
	for {
		n.SendOld = true
		switch {
		case n.Op == OpTableMerge:
			b.sendOldValuesJoin(n)
			return
		case n.Op == OpTableSource || n.Op == OpFKOutput:
			b.materialize(n)
			return
		case n.Op == OpTableTransformValues:
			// KTableTransformValues.enableSendingOldValues: a materialized
			// one reads old values from its store; one that is not
			// transforms its parent's.
			if n.TableStore != "" {
				return
			}
		case len(n.Stores) > 0 || n.Op != OpTableFilter && n.Op != OpTableFilterNot && n.Op != OpTableMapValues:
			return
		}
		n = n.Predecessors[0]
	}
}

// tableOp describes KTable.filter, filterNot and mapValues.
type tableOp struct {
	op     string
	kind   Op
	prefix string
	native reflect.Type
}

var (
	opTableFilter    = tableOp{op: "filter", kind: OpTableFilter, prefix: prefixTableFilter, native: reflect.TypeFor[PredicateFunc]()}
	opTableFilterNot = tableOp{op: "filter_not", kind: OpTableFilterNot, prefix: prefixTableFilter, native: reflect.TypeFor[PredicateFunc]()}
	opTableMapValues = tableOp{op: "map_values", kind: OpTableMapValues, prefix: prefixTableMapValues, native: reflect.TypeFor[MapValuesFunc]()}
)

// TableFilter adds KTable.filter: a record that does not pass becomes a
// tombstone. m (may be nil) materializes the result in a store; a store is
// created only when m names it (Kafka does not materialize non-queryable
// stores, but still takes a number for one).
func (b *Builder) TableFilter(input uint64, fn Function, m *Materialized, name string) (*Handle, error) {
	return b.tableOp(opTableFilter, input, fn, "", m, name)
}

// TableFilterNot adds KTable.filterNot.
func (b *Builder) TableFilterNot(input uint64, fn Function, m *Materialized, name string) (*Handle, error) {
	return b.tableOp(opTableFilterNot, input, fn, "", m, name)
}

// TableMapValues adds KTable.mapValues; an empty valueSerde keeps the
// input's (m's value serde, when given, wins).
func (b *Builder) TableMapValues(input uint64, fn Function, valueSerde string, m *Materialized, name string) (*Handle, error) {
	return b.tableOp(opTableMapValues, input, fn, valueSerde, m, name)
}

func (b *Builder) tableOp(t tableOp, input uint64, fn Function, valueSerde string, m *Materialized, name string) (*Handle, error) {
	c := b.begin(t.op)
	in := c.input(input, KindTable)
	c.function(fn, t.native)
	c.serde("value", valueSerde)
	var mat Materialized
	store := ""
	if m != nil {
		mat = *m
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.StoreName != "" {
			if c.validName("store", mat.StoreName) && b.stores[mat.StoreName] != nil {
				c.invalid("%s names store %q, which exists already", t.op, mat.StoreName)
			}
			store = mat.StoreName
		} else {
			c.burn() // the store name Kafka generates and then does not use
		}
	}
	nodeName := c.processorName(name, t.prefix)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: t.kind, Fn: &fn,
		KeySerde:     serde.Or(mat.KeySerde, in.handle.KeySerde),
		ValueSerde:   serde.Or(mat.ValueSerde, serde.Or(valueSerde, in.handle.ValueSerde)),
		pendingStore: store, pendingConfig: mat.ChangelogConfig,
	}
	g := b.hang(in, n)
	b.materialize(n)
	if t.kind == OpTableFilter || t.kind == OpTableFilterNot {
		// KTableFilter's constructor: "If upstream is already
		// materialized, enable sending old values to avoid sending
		// unnecessary tombstones" (enableSendingOldValues(false)).
		if b.sendOldValuesIfKept(in.handle.Node) {
			n.SendOld = true
		}
	}
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: g}), nil
}

// sendOldValuesIfKept is KTableImpl.enableSendingOldValues(false): n and
// the table operators above it send old values when that needs no new
// store (a table source only when materialized; a filter or mapValues when
// it keeps a table, or its input can; an aggregation always), and it
// reports whether they do. For other operators it changes nothing and
// reports false.
func (b *Builder) sendOldValuesIfKept(n *Node) bool {
	switch {
	case n.Op == OpTableSource:
		if len(n.Stores) == 0 {
			return false
		}
	case n.Op == OpTableFilter || n.Op == OpTableFilterNot || n.Op == OpTableMapValues:
		if len(n.Stores) == 0 && !b.sendOldValuesIfKept(n.Predecessors[0]) {
			return false
		}
	case n.Op == OpTableTransformValues:
		if n.TableStore == "" && !b.sendOldValuesIfKept(n.Predecessors[0]) {
			return false
		}
	case n.Op == OpCount || n.Op == OpReduce || n.Op == OpAggregate ||
		n.Op == OpTableCount || n.Op == OpTableReduce || n.Op == OpTableAggregate:
	default:
		return false
	}
	n.SendOld = true
	return true
}

// TableGroupBy adds KTable.groupBy: a KTABLE-SELECT processor mapping each
// change's (key, value) to the grouped table's (key, value) (a MapFunc or a
// host map). name is Grouped.as: it names the select node and the
// repartition topic. The serdes are the grouped records' (empty keeps the
// input's).
func (b *Builder) TableGroupBy(input uint64, fn Function, keySerde, valueSerde, name string) (*Handle, error) {
	c := b.begin("group_by")
	in := c.input(input, KindTable)
	c.function(fn, opMap.native)
	c.serde("key", keySerde)
	c.serde("value", valueSerde)
	if name != "" {
		c.validName("grouped name", name)
	}
	nodeName := c.processorName(name, prefixTableSelect)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: OpTableSelect, Fn: &fn,
		KeySerde:   serde.Or(keySerde, in.handle.KeySerde),
		ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
	}
	b.sendOldValues(in.handle.Node)
	g := b.hang(in, n)
	return b.mint(&entry{
		handle: &Handle{Kind: KindGroupedTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:      g, groupName: name,
	}), nil
}

// TableCount adds KGroupedTable.count: adds one per new value, takes one
// away per old value (Kafka's countAdder / countSubtractor).
func (b *Builder) TableCount(input uint64, m *Materialized, name string) (*Handle, error) {
	return b.tableAggregation(fold{op: "count", kind: OpTableCount, prefix: prefixTableAggregate, valueSerde: serde.Long}, input, m, name)
}

// TableReduce adds KGroupedTable.reduce(adder, subtractor). A built-in adder
// (sum) brings its own subtractor; sub is then empty.
func (b *Builder) TableReduce(input uint64, adder, sub Function, m *Materialized, name string) (*Handle, error) {
	return b.tableAggregation(fold{op: "reduce", kind: OpTableReduce, prefix: prefixTableReduce, fn: &adder, sub: &sub}, input, m, name)
}

// TableAggregate adds KGroupedTable.aggregate(initializer, adder,
// subtractor).
func (b *Builder) TableAggregate(input uint64, init, adder, sub Function, m *Materialized, name string) (*Handle, error) {
	return b.tableAggregation(fold{op: "aggregate", kind: OpTableAggregate, prefix: prefixTableAggregate, fn: &adder, init: &init, sub: &sub}, input, m, name)
}

// tableAggregation is KGroupedTableImpl.doAggregate: the store's number
// (unless named), then the repartition sink's and source's, then the
// processor's; a given name n names them "<n>-sink", "<n>-source" and n.
// The repartition topic is the Grouped name's, else the store's, plus
// "-repartition"; it carries changes (new and old value).
func (b *Builder) tableAggregation(f fold, input uint64, m *Materialized, name string) (*Handle, error) {
	c := b.begin(f.op)
	in := c.input(input, KindGroupedTable)
	switch f.kind {
	case OpTableReduce:
		if f.fn.Builtin != "" && f.fn.Token == 0 && f.fn.Native == nil {
			if in == nil {
				break
			}
			sub, err := builtinSubtractor(f.fn.Builtin, in.handle.ValueSerde)
			var add ReduceFunc
			if err == nil {
				add, err = builtinReducer(f.fn.Builtin, in.handle.ValueSerde)
			}
			switch {
			case err != nil:
				c.invalid("reduce: %v", err)
			case f.sub.Token != 0 || f.sub.Native != nil:
				c.invalid("reduce: built-in %s brings its own subtractor; give none", f.fn.Builtin)
			default:
				f.fn = &Function{Name: f.fn.Builtin, Native: add, Builtin: f.fn.Builtin}
				f.sub = &Function{Name: f.fn.Builtin, Native: sub, Builtin: f.fn.Builtin}
			}
			break
		}
		c.function(*f.fn, reduceNative)
		c.subtractor(*f.sub, reduceNative)
	case OpTableAggregate:
		c.function(*f.init, initNative)
		c.function(*f.fn, aggregateNative)
		c.subtractor(*f.sub, aggregateNative)
	}
	var mat Materialized
	if m != nil {
		mat = *m
		c.serde("materialized key", mat.KeySerde)
		if c.serde("materialized value", mat.ValueSerde) && f.valueSerde != "" && mat.ValueSerde != "" && mat.ValueSerde != f.valueSerde {
			c.invalid("%s stores %ss, but materialized names value serde %q", f.op, f.valueSerde, mat.ValueSerde)
		}
		c.changelogConfig(mat)
		if mat.StoreName != "" {
			c.validName("store", mat.StoreName)
		}
	}
	store := mat.StoreName
	if store == "" {
		// Every KGroupedTable aggregation names its store
		// KTABLE-AGGREGATE-STATE-STORE-, reduce's too (KGroupedTableImpl
		// builds each MaterializedInternal with AGGREGATE_NAME); only the
		// processor is KTABLE-REDUCE-.
		store = fmt.Sprintf("%sSTATE-STORE-%010d", prefixTableAggregate, c.burn())
	}
	if b.stores[store] != nil {
		c.invalid("%s names store %q, which exists already", f.op, store)
	}
	sinkName := c.suffixedName(name, "-sink", prefixSink)
	sourceName := c.suffixedName(name, "-source", prefixSource)
	aggName := c.processorName(name, f.prefix)
	topic := store + repartitionSuffix
	if in != nil && in.groupName != "" {
		topic = in.groupName + repartitionSuffix
	}
	if src, ok := b.topics[topic]; ok {
		c.invalid("%s's repartition topic %q is read by source %s already", f.op, topic, src)
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	k, v := in.handle.KeySerde, in.handle.ValueSerde
	sink := &Node{Name: sinkName, Type: Sink, Topic: topic, Internal: true, Change: true, KeySerde: k, ValueSerde: v}
	source := &Node{Name: sourceName, Type: Source, Topics: []string{topic}, Internal: true, Change: true, KeySerde: k, ValueSerde: v}
	valueSerde := serde.Or(mat.ValueSerde, serde.Or(f.valueSerde, v))
	n := &Node{
		Name: aggName, Type: Processor, Op: f.kind, Stores: []string{store}, Fn: f.fn, Init: f.init, Sub: f.sub,
		KeySerde: serde.Or(mat.KeySerde, k), ValueSerde: valueSerde,
	}
	if f.kind == OpTableCount {
		n.Fn, n.Sub = nil, nil
	}
	for _, x := range []*Node{sink, source, n} {
		b.nodes[x.Name] = x
	}
	b.topics[topic] = source.Name
	b.newStore(store, n.KeySerde, valueSerde, mat.ChangelogConfig)
	link(in.handle.Node, sink)
	link(source, n)
	// KGroupedTableImpl adds a GroupedTableOperationRepartitionNode (sink
	// and source) under the select node, and the aggregate's
	// StatefulProcessorNode under it.
	rg := b.add(in.g, &gnode{nodes: []*Node{sink, source}, out: source})
	ag := b.add(rg, &gnode{nodes: []*Node{n}, out: n})
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: ag}), nil
}

// subtractor checks a grouped table's subtractor: a host token or a native
// function of the adder's type.
func (c *call) subtractor(fn Function, native reflect.Type) {
	if fn.Token == 0 && fn.Native == nil {
		c.invalid("%s on a grouped table needs a subtractor: token 0 and no native function", c.op)
		return
	}
	sub := *c
	sub.op = c.op + " (subtractor)"
	sub.problems = nil
	sub.function(fn, native)
	c.problems = append(c.problems, sub.problems...)
}

// suffixedName is NamedInternal.suffixWithOrElseGet: given+suffix, else
// prefix and the next number; a number is taken either way.
func (c *call) suffixedName(given, suffix, prefix string) string {
	n := c.burn()
	if given != "" {
		name := given + suffix
		if c.validName("node", name) {
			c.claim(name)
		}
		return name
	}
	name := fmt.Sprintf("%s%010d", prefix, n)
	c.claim(name)
	return name
}

const prefixToTable = "KSTREAM-TOTABLE-"

// ToTable adds KStream.toTable: a KTableSource processor (KSTREAM-TOTABLE-<n>,
// or name) that turns the stream's records into upserts, dropping those
// with a null key. Numbers are taken as KStreamImpl.toTable takes them: the
// processor's, then the store's unless m names it (toTable() passes
// Materialized.with, so an unnamed store always takes one), then a
// repartition's when an upstream operator changed the key (topic
// "<processor name>-repartition"). The store exists when m names it, or
// when a downstream operator needs it.
func (b *Builder) ToTable(input uint64, name string, m *Materialized) (*Handle, error) {
	c := b.begin("to_table")
	in := c.input(input, KindStream)
	var mat Materialized
	if m != nil {
		mat = *m
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.Retention != 0 {
			c.invalid("to_table: materialized retention_ms %d is for window and session stores; a table's store is a key-value store", mat.Retention)
		}
	}
	nodeName := c.processorName(name, prefixToTable)
	store := mat.StoreName
	if store != "" {
		if c.validName("store", store) && b.stores[store] != nil {
			c.invalid("to_table names store %q, which exists already", store)
		}
	} else {
		store = fmt.Sprintf("%sSTATE-STORE-%010d", prefixToTable, c.burn())
	}
	var rp repartition
	if in != nil && in.repartition {
		rp = c.planRepartition(nodeName, false)
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	k := serde.Or(mat.KeySerde, in.handle.KeySerde)
	v := serde.Or(mat.ValueSerde, in.handle.ValueSerde)
	g, from := in.g, in.handle.Node
	if in.repartition {
		h := *in.handle
		h.KeySerde, h.ValueSerde = k, v
		g = b.repartition(&entry{handle: &h, g: in.g}, rp)
		from = g.out
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: OpTableSource, KeySerde: k, ValueSerde: v,
		pendingStore: store, pendingConfig: mat.ChangelogConfig,
	}
	b.nodes[n.Name] = n
	link(from, n)
	tg := b.add(g, &gnode{nodes: []*Node{n}, out: n})
	if mat.StoreName != "" {
		b.materialize(n)
	}
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: k, ValueSerde: v, Node: n}, g: tg}), nil
}
