package topology

import (
	"github.com/polystreams/polystreams/core/internal/serde"
)

const (
	prefixJoin     = "KSTREAM-JOIN-"
	prefixLeftJoin = "KSTREAM-LEFTJOIN-"
)

// Join adds KStream.join(KTable) (left: KStream.leftJoin), as
// KStreamImpl.doStreamTableJoin builds it: a KSTREAM-JOIN- (or
// KSTREAM-LEFTJOIN-) processor under the stream that reads the table's
// store, so the table's source and the stream land in one sub-topology
// (their partitions are joined task by task). A table derived by
// store-less filter, filter_not or map_values operators is read through
// their value getter (Node.Getter) from the store of the table it derives
// from; a table source is materialized for it; a table whose getter
// reaches no store is refused.
// A stream whose key changed upstream is repartitioned first, through
// "<name or the stream's node name>-repartition" (repartitionForJoin), as
// in Kafka Streams. joiner is a ValueJoinerFunc or a host function;
// valueSerde is the joined values' (default: the stream's).
func (b *Builder) Join(input, table uint64, joiner Function, left bool, valueSerde, name string) (*Handle, error) {
	op, prefix, kind := "join", prefixJoin, OpJoin
	if left {
		op, prefix, kind = "left_join", prefixLeftJoin, OpLeftJoin
	}
	c := b.begin(op)
	in := c.input(input, KindStream)
	tb := c.input(table, KindTable)
	c.joiner(&joiner, in, tb, &valueSerde, "")
	c.serde("value", valueSerde)
	var tn *Node
	var getter []*Node
	store := ""
	if tb != nil {
		tn = tb.handle.Node
		_, _, _, windowed := serde.ParseWindowed(tb.handle.KeySerde)
		// The table's value getter: its store, or the store of the table
		// it is derived from by store-less operators.
		store, getter = valueGetter(tn)
		switch {
		case windowed:
			c.invalid("%s: table handle %d (%s) is windowed; a stream joins a key-value table", op, table, tn.Name)
		case store == "":
			c.invalid("%s: table handle %d (%s) %s", op, table, tn.Name, noStore(tn))
		}
		if in != nil && in.handle.KeySerde != tb.handle.KeySerde {
			c.invalid("%s: stream handle %d has %s keys and table handle %d %s keys; join streams and tables of one key serde", op, input, in.handle.KeySerde, table, tb.handle.KeySerde)
		}
	}
	var rp repartition
	if in != nil && in.repartition {
		prefix := name
		if prefix == "" {
			prefix = in.handle.Node.Name
		}
		rp = c.planRepartition(prefix, false)
	}
	nodeName := c.processorName(name, prefix)
	if err := c.done(); err != nil {
		return nil, err
	}
	g, from := in.g, in.handle.Node
	if in.repartition {
		g = b.repartition(&entry{handle: in.handle, g: in.g}, rp)
		from = g.out
	}
	b.materialize(getterRoot(tn))
	n := &Node{
		Name: nodeName, Type: Processor, Op: kind, Stores: []string{store}, Getter: getter, Fn: &joiner,
		KeySerde: in.handle.KeySerde, ValueSerde: serde.Or(valueSerde, in.handle.ValueSerde),
	}
	b.nodes[n.Name] = n
	link(from, n)
	jg := b.add(g, &gnode{nodes: []*Node{n}, out: n, relaxedNullKeyJoin: left})
	return b.mint(&entry{handle: &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: jg}), nil
}
