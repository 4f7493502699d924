package topology

import (
	"fmt"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Table-table joins (KTable.join / leftJoin / outerJoin(KTable)), as
// KTableImpl.doJoin and KTableKTableJoinNode build them: a KTABLE-JOINTHIS
// processor under this table that looks keys up in the other table's store,
// a KTABLE-JOINOTHER processor under the other table that looks them up in
// this table's store, and a KTABLE-MERGE processor fed by both (keeping the
// result in a store when Materialized is given). Modern Kafka Streams names
// all three kinds JOINTHIS / JOINOTHER (the LEFTTHIS / OUTERTHIS prefixes
// of 0.10 are gone).
const (
	prefixTableJoinThis  = "KTABLE-JOINTHIS-"
	prefixTableJoinOther = "KTABLE-JOINOTHER-"
	prefixTableMerge     = "KTABLE-MERGE-"
)

// Table-table join processors. The "this" side's processor gets this
// table's changes and looks the other table up; the "other" side's gets the
// other table's changes and looks this table up, and calls the joiner with
// the arguments swapped back (Kafka's reverseJoiner), so a joiner always
// sees (this table's value, other table's value).
const (
	// OpTableInnerJoin is KTableKTableInnerJoin on the this side.
	OpTableInnerJoin Op = iota + 200
	// OpTableInnerJoinOther is KTableKTableInnerJoin on the other side.
	OpTableInnerJoinOther
	// OpTableLeftJoin is KTableKTableLeftJoin (this side of a left join).
	OpTableLeftJoin
	// OpTableRightJoin is KTableKTableRightJoin (other side of a left join).
	OpTableRightJoin
	// OpTableOuterJoin and OpTableOuterJoinOther are KTableKTableOuterJoin.
	OpTableOuterJoin
	OpTableOuterJoinOther
	// OpTableMerge is KTableKTableJoinMerger: forwards both processors'
	// changes, keeping them in its store when it has one.
	OpTableMerge
)

// TableJoinKind is what kind of table-table join an op is.
type TableJoinKind int

const (
	TableJoinInner TableJoinKind = iota + 1
	TableJoinLeft                // this side of a left join
	TableJoinRight               // other side of a left join
	TableJoinOuter
)

// TableJoin reports whether op is a table-table join processor, which kind,
// and whether it is the other side's (its record is the joiner's second
// argument).
func TableJoin(op Op) (kind TableJoinKind, other, ok bool) {
	switch op {
	case OpTableInnerJoin:
		return TableJoinInner, false, true
	case OpTableInnerJoinOther:
		return TableJoinInner, true, true
	case OpTableLeftJoin:
		return TableJoinLeft, false, true
	case OpTableRightJoin:
		return TableJoinRight, true, true
	case OpTableOuterJoin:
		return TableJoinOuter, false, true
	case OpTableOuterJoinOther:
		return TableJoinOuter, true, true
	}
	return 0, false, false
}

// TableJoinOptions are the arguments of Builder.TableJoin besides the
// tables and the joiner.
type TableJoinOptions struct {
	// Left and Outer: a left or outer join (exclusive); neither: inner.
	Left, Outer bool
	// ValueSerde is the joined values' (default: this table's; a
	// Materialized value serde wins).
	ValueSerde string
	// Name is Named: it names the merge node, and the join processors
	// "<Name>-join-this" and "<Name>-join-other".
	Name string
	// Materialized keeps the result in a store (named, or
	// "KTABLE-MERGE-STATE-STORE-<n>"); a named store is queryable.
	Materialized *Materialized
}

// TableJoin adds KTable.join / leftJoin / outerJoin(KTable). Numbers are
// taken as KTableImpl takes them: the store's for a Materialized that names
// none (MaterializedInternal), then the merge node's, then the two join
// processors'. Both tables must keep a store for the other side to look
// keys up in (a table source is materialized for it; another table
// operator must be materialized), and have one key serde. A left join makes
// this table send old values, an outer join both (doJoin's
// enableSendingOldValues(true)).
func (b *Builder) TableJoin(input, other uint64, joiner Function, o TableJoinOptions) (*Handle, error) {
	op, thisOp, otherOp := "join", OpTableInnerJoin, OpTableInnerJoinOther
	switch {
	case o.Left:
		op, thisOp, otherOp = "left_join", OpTableLeftJoin, OpTableRightJoin
	case o.Outer:
		op, thisOp, otherOp = "outer_join", OpTableOuterJoin, OpTableOuterJoinOther
	}
	c := b.begin(op)
	if o.Left && o.Outer {
		c.invalid("%s: left and outer are exclusive; give one (neither is an inner join)", op)
	}
	in := c.input(input, KindTable)
	ot := c.input(other, KindTable)
	c.serde("value", o.ValueSerde)
	thisStore, thisGetter := c.joinStore(in, input, "this")
	otherStore, otherGetter := c.joinStore(ot, other, "other")
	if in != nil && ot != nil && in.handle.KeySerde != ot.handle.KeySerde {
		c.invalid("%s: table handle %d has %s keys and table handle %d %s keys; join tables of one key serde", op, input, in.handle.KeySerde, other, ot.handle.KeySerde)
	}
	var mat Materialized
	store := ""
	if o.Materialized != nil {
		mat = *o.Materialized
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.Retention != 0 {
			c.invalid("%s: materialized retention_ms %d is for window and session stores; a join's result is a key-value table", op, mat.Retention)
		}
		store = mat.StoreName
		if store != "" {
			if c.validName("store", store) && b.stores[store] != nil {
				c.invalid("%s names store %q, which exists already", op, store)
			}
		} else {
			store = fmt.Sprintf("%sSTATE-STORE-%010d", prefixTableMerge, c.burn())
		}
	}
	c.joiner(&joiner, in, ot, &o.ValueSerde, mat.ValueSerde)
	mergeName := c.processorName(o.Name, prefixTableMerge)
	thisName := c.suffixedName(o.Name, "-join-this", prefixTableJoinThis)
	otherName := c.suffixedName(o.Name, "-join-other", prefixTableJoinOther)
	if err := c.done(); err != nil {
		return nil, err
	}
	b.materialize(getterRoot(in.handle.Node))
	b.materialize(getterRoot(ot.handle.Node))
	if o.Left || o.Outer {
		b.sendOldValues(in.handle.Node)
	}
	if o.Outer {
		b.sendOldValues(ot.handle.Node)
	}
	keySerde := serde.Or(mat.KeySerde, in.handle.KeySerde)
	valueSerde := serde.Or(mat.ValueSerde, serde.Or(o.ValueSerde, in.handle.ValueSerde))
	thisN := &Node{Name: thisName, Type: Processor, Op: thisOp, Stores: []string{otherStore}, Getter: otherGetter, Fn: &joiner, KeySerde: keySerde, ValueSerde: valueSerde}
	otherN := &Node{Name: otherName, Type: Processor, Op: otherOp, Stores: []string{thisStore}, Getter: thisGetter, Fn: &joiner, KeySerde: keySerde, ValueSerde: valueSerde}
	merge := &Node{Name: mergeName, Type: Processor, Op: OpTableMerge, KeySerde: keySerde, ValueSerde: valueSerde}
	for _, n := range []*Node{thisN, otherN, merge} {
		b.nodes[n.Name] = n
	}
	link(in.handle.Node, thisN)
	link(ot.handle.Node, otherN)
	link(thisN, merge)
	link(otherN, merge)
	if store != "" {
		b.newStore(store, keySerde, valueSerde, mat.ChangelogConfig)
		merge.Stores = []string{store}
	}
	// KTableKTableJoinNode is one graph node under both tables' (added to
	// each in turn), written as this, other, merge.
	g := &gnode{nodes: []*Node{thisN, otherN, merge}, out: merge}
	b.add(in.g, g)
	b.add(ot.g, g)
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: keySerde, ValueSerde: valueSerde, Node: merge}, g: g}), nil
}

// joinStore is the store a table-table join looks e's keys up in (its
// valueGetterSupplier's) and the getter chain that derives e's values from
// it (valueGetter): the table's own store, or the one of the table it is
// derived from by store-less filter, filter_not and map_values operators
// (a table source reserves one). A windowed table, or one whose getter
// reaches no store, is refused.
func (c *call) joinStore(e *entry, id uint64, side string) (string, []*Node) {
	if e == nil {
		return "", nil
	}
	n := e.handle.Node
	if _, _, _, windowed := serde.ParseWindowed(e.handle.KeySerde); windowed {
		c.invalid("%s: %s table handle %d (%s) is windowed; table-table joins join key-value tables", c.op, side, id, n.Name)
		return "", nil
	}
	store, getter := valueGetter(n)
	if store == "" {
		c.invalid("%s: %s table handle %d (%s) %s", c.op, side, id, n.Name, noStore(n))
	}
	return store, getter
}

// valueGetter is Kafka's KTableImpl.valueGetterSupplier for table node n:
// the store its values are read from (empty: none) and the store-less
// filter, filter_not and map_values operators between that store's node
// and n, upstream first, that apply to a value read (KTableFilter#view,
// KTableMapValues#view). A table source's store is the one it reserved;
// the caller materializes it (getterRoot).
func valueGetter(n *Node) (string, []*Node) {
	var getter []*Node
	for {
		switch {
		case n.Op == OpSuppress:
			// Its store is the suppression buffer, keyed by buffer time:
			// no getter (Kafka's view of a suppressed table, the buffered
			// keys' prior values over the parent's getter, is not built).
			return "", nil
		case n.Op == OpTableTransformValues:
			// Materialized: its store; else no getter (see
			// TableTransformValues).
			return n.TableStore, getter
		case len(n.Stores) > 0:
			return n.Stores[0], getter
		case n.Op == OpTableSource:
			return n.pendingStore, getter
		case n.Op == OpCogroupMerge:
			return n.Predecessors[0].Stores[0], getter
		case n.Op == OpTableFilter || n.Op == OpTableFilterNot || n.Op == OpTableMapValues:
			getter = append([]*Node{n}, getter...)
			n = n.Predecessors[0]
		default:
			return "", nil
		}
	}
}

// noStore says why table node n, whose value getter reaches no store,
// cannot be joined, and what to do instead.
func noStore(n *Node) string {
	if s := suppressedBy(n); s != nil {
		return fmt.Sprintf("is suppressed by %s, whose buffer keeps no store to look keys up in (Kafka Streams' view of the buffered keys' prior values is not built); join the table before its suppress", s.Name)
	}
	if n.Op == OpTableTransformValues {
		return fmt.Sprintf("is transform_values node %s without a store: Kafka Streams' value getter would run the transformer on each lookup, which this engine does not; materialize it (Materialized with a store name)", n.Name)
	}
	return "keeps no store to look keys up in; materialize it (Materialized with a store name)"
}

// suppressedBy is the suppress node n's value getter stops at: n, or the
// one n is derived from by store-less table operators; nil when none.
func suppressedBy(n *Node) *Node {
	for n.Op == OpTableFilter || n.Op == OpTableFilterNot || n.Op == OpTableMapValues {
		if len(n.Stores) > 0 {
			return nil
		}
		n = n.Predecessors[0]
	}
	if n.Op == OpSuppress {
		return n
	}
	return nil
}

// getterRoot is the node whose store a value getter for n reads: n, or
// the table n is derived from by store-less table operators.
func getterRoot(n *Node) *Node {
	_, getter := valueGetter(n)
	if len(getter) > 0 {
		return getter[0].Predecessors[0]
	}
	return n
}

// sendOldValuesJoin is KTableKTableJoinMerger.enableSendingOldValues: both
// join processors send old values, and so do the tables they join (a join
// processor computes its old value from its input's).
func (b *Builder) sendOldValuesJoin(merge *Node) {
	merge.SendOld = true
	for _, j := range merge.Predecessors {
		j.SendOld = true
		b.sendOldValues(j.Predecessors[0])
	}
}
