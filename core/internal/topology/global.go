package topology

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Global tables: StreamsBuilder.globalTable and KStream.join / leftJoin of
// a GlobalKTable, named as InternalStreamsBuilder.globalTable and
// KStreamImpl.doGlobalTableJoin name them.
//
// A global table is a source and a KTABLE-SOURCE processor writing every
// partition of its topic into one store, on every instance; its topic is
// the store's changelog (no "-changelog" topic). Its nodes form a
// sub-topology of their own, numbered with the others (makeNodeGroups) and
// described as "Sub-topology: N for global store (will not generate
// tasks)". A stream joins it through a key mapper, so the stream needs no
// co-partitioning with it and is never repartitioned for it.

// globalTableSourceSuffix is InternalStreamsBuilder.TABLE_SOURCE_SUFFIX:
// with Consumed.as(name), globalTable's source node is "<name>-source"
// and its KTABLE-SOURCE processor is name.
const globalTableSourceSuffix = "-source"

// GlobalStore is the sub-topology of one global table
// (TopologyDescription.GlobalStore): its source, the processor writing the
// store, and the store.
type GlobalStore struct {
	ID        int
	Source    *Node
	Processor *Node
	Store     *Store
}

// Topic is the topic the global table reads: its store's changelog.
func (g *GlobalStore) Topic() string { return g.Source.Topics[0] }

// add places n, a node of g's global table, in g.
func (g *GlobalStore) add(n *Node, stores map[string]*Store) {
	if n.Type == Source {
		g.Source = n
		return
	}
	g.Processor = n
	if len(n.Stores) == 1 {
		cp := *stores[n.Stores[0]]
		g.Store = &cp
	}
}

// globalSuffix follows a global store's sub-topology id in describe().
const globalSuffix = " for global store (will not generate tasks)"

// described is g as a Description shows it.
func (g *GlobalStore) described() DescribedSubtopology {
	return DescribedSubtopology{ID: g.ID, Global: true, Nodes: []DescribedNode{
		{Name: g.Source.Name, Type: TypeSource, Topics: []string{g.Topic()}, Successors: []string{g.Processor.Name}},
		{Name: g.Processor.Name, Type: TypeProcessor, Stores: g.Processor.Stores, Predecessors: []string{g.Source.Name}},
	}}
}

// describe writes GlobalStore.toString: the source and the processor, and,
// unlike a Subtopology, no blank line after them.
func (g *GlobalStore) describe(sb *strings.Builder) {
	sb.WriteString("  Sub-topology: " + strconv.Itoa(g.ID) + globalSuffix + "\n")
	sb.WriteString("    Source: " + g.Source.Name + " (topics: [" + g.Topic() + "])\n      --> " + g.Processor.Name + "\n")
	sb.WriteString("    Processor: " + g.Processor.Name + " (stores: [" + strings.Join(g.Processor.Stores, ", ") + "])\n")
	sb.WriteString("      --> none\n      <-- " + g.Source.Name + "\n")
}

// GlobalTableOptions are the arguments of Builder.GlobalTable.
type GlobalTableOptions struct {
	Topic                string
	KeySerde, ValueSerde string
	// OffsetReset is Consumed.withOffsetResetPolicy: a global table is
	// always read from the earliest offset (as Kafka Streams' GlobalKTable,
	// whatever Consumed or auto.offset.reset say), so only earliest or
	// empty is taken.
	OffsetReset string
	// Name is Consumed.as: the source is "<Name>-source", the processor
	// Name.
	Name string
	// Materialized names the store ("<topic>-STATE-STORE-<n>" when it
	// names none) and its serdes. A global store is always materialized
	// and queryable, and has no changelog of its own: changelog configs
	// are refused.
	Materialized *Materialized
}

// GlobalTable adds StreamsBuilder.globalTable. Numbers are taken as
// InternalStreamsBuilder.globalTable takes them: the store's (unless
// named), the source's, the processor's (a given name takes them too).
func (b *Builder) GlobalTable(o GlobalTableOptions) (*Handle, error) {
	c := b.begin("global_table")
	if c.validName("topic", o.Topic) {
		if src, ok := b.topics[o.Topic]; ok {
			c.invalid("global_table reads topic %q, which source %s reads already", o.Topic, src)
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
		if len(mat.ChangelogConfig) > 0 {
			// InternalStreamsBuilder.globalTable: "explicitly disable
			// logging for global stores"; the topic is the changelog.
			c.invalid("global_table: a global store has no changelog topic (its topic %q is its changelog), so materialized changelog configs do not apply", o.Topic)
		}
		if mat.Retention != 0 {
			c.invalid("global_table: materialized retention_ms %d is for window and session stores", mat.Retention)
		}
	}
	store := mat.StoreName
	if store != "" {
		if c.validName("store", store) && b.stores[store] != nil {
			c.invalid("global_table names store %q, which exists already", store)
		}
	} else {
		store = fmt.Sprintf("%s-STATE-STORE-%010d", o.Topic, c.burn())
	}
	c.serde("default.key.serde", b.DefaultKeySerde)
	c.serde("default.value.serde", b.DefaultValueSerde)
	if o.OffsetReset != "" && o.OffsetReset != "earliest" {
		c.invalid("global_table: offset_reset %.40q: a global table is always read from the earliest offset (as Kafka Streams' GlobalKTable); only earliest is taken", o.OffsetReset)
	}
	sourceName := c.suffixedName(o.Name, globalTableSourceSuffix, prefixSource)
	procName := c.processorName(o.Name, prefixTableSource)
	if err := c.done(); err != nil {
		return nil, err
	}
	k, v := serde.Carried(b.keySerde(o.KeySerde)), serde.Carried(b.valueSerde(o.ValueSerde))
	src := &Node{Name: sourceName, Type: Source, Topics: []string{o.Topic}, KeySerde: k, ValueSerde: v, KeyWire: wire(o.KeySerde), ValueWire: wire(o.ValueSerde), global: true}
	proc := &Node{
		Name: procName, Type: Processor, Op: OpTableSource, Stores: []string{store},
		KeySerde: serde.Or(mat.KeySerde, k), ValueSerde: serde.Or(mat.ValueSerde, v), global: true,
	}
	b.nodes[src.Name], b.nodes[proc.Name] = src, proc
	b.topics[o.Topic] = src.Name
	b.stores[store] = &Store{Name: store, KeySerde: proc.KeySerde, ValueSerde: proc.ValueSerde, ChangelogTopic: o.Topic, Global: true}
	link(src, proc)
	g := b.add(nil, &gnode{nodes: []*Node{src, proc}, out: proc})
	return b.mint(&entry{handle: &Handle{Kind: KindGlobalTable, KeySerde: proc.KeySerde, ValueSerde: proc.ValueSerde, Node: proc}, g: g}), nil
}

// GlobalJoin adds KStream.join(GlobalKTable, keyMapper, joiner) (left:
// leftJoin), as KStreamImpl.doGlobalTableJoin builds it: one processor
// under the stream, named KSTREAM-LEFTJOIN-<n> for the inner join too
// (Kafka generates both names with LEFTJOIN_NAME), connected to no store
// (it reads the global store through a value getter). The stream keeps its
// key, and whether a later aggregation must repartition it. keyMapper maps
// (key, value) to the global table's key (a SelectKeyFunc or a host
// function; its result is in the global table's key serde); joiner is a
// ValueJoinerFunc or a host function; valueSerde is the joined values'
// (default: the stream's).
func (b *Builder) GlobalJoin(input, global uint64, keyMapper, joiner Function, left bool, valueSerde, name string) (*Handle, error) {
	op, kind := "join", OpGlobalJoin
	if left {
		op, kind = "left_join", OpGlobalLeftJoin
	}
	c := b.begin(op)
	in := c.input(input, KindStream)
	gt := c.input(global, KindGlobalTable)
	km := *c
	km.op, km.problems = op+" (key mapper)", nil
	km.function(keyMapper, reflect.TypeFor[SelectKeyFunc]())
	c.problems = append(c.problems, km.problems...)
	c.joiner(&joiner, in, gt, &valueSerde, "")
	c.serde("value", valueSerde)
	nodeName := c.processorName(name, prefixLeftJoin)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: nodeName, Type: Processor, Op: kind, Fn: &joiner, KeyMapper: &keyMapper,
		GlobalStore: gt.handle.Node.Stores[0],
		KeySerde:    in.handle.KeySerde, ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
	}
	g := b.hang(in, n)
	g.relaxedNullKeyJoin = left
	return b.mint(&entry{
		handle: &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:      g, repartition: in.repartition,
	}), nil
}
