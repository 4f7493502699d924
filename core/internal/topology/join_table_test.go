package topology

import (
	"errors"
	"strings"
	"testing"
)

// A table-table join as Kafka Streams prints it: the text of a trade
// matching demo run on Kafka Streams (two streams re-keyed, aggregated,
// the aggregates joined with Materialized.with(serdes), the result
// re-keyed and printed), with its print() node (KSTREAM-PRINTER-) replaced
// by foreach (KSTREAM-FOREACH-, the same number and place). It pins
// KTableImpl.doJoin's numbering (MaterializedInternal's store 14 before the
// merge 15, KTABLE-JOINTHIS-16 and KTABLE-JOINOTHER-17), the stores each
// join processor reads (the other table's), an unnamed Materialized that
// still materializes the merge, and the merge's predecessor order.
func TestTableTableJoinDescribe(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s1 := c.stream(b, "source1")
	s2 := c.stream(b, "source2")
	agg := func(s uint64) uint64 {
		k := c.id(b.SelectKey(s, fn, "", ""))
		g := c.id(b.GroupByKey(k, "", "", ""))
		return c.id(b.Aggregate(g, fn, fn, nil, ""))
	}
	t2 := agg(s2)
	t1 := agg(s1)
	j := c.id(b.TableJoin(t1, t2, fn, TableJoinOptions{Materialized: &Materialized{}}))
	out := c.id(b.SelectKey(c.id(b.ToStream(j, "")), fn, "", ""))
	c.ok(b.Foreach(out, fn, ""))
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [source1])\n" +
		"      --> KSTREAM-KEY-SELECT-0000000008\n" +
		"    Processor: KSTREAM-KEY-SELECT-0000000008 (stores: [])\n" +
		"      --> KSTREAM-FILTER-0000000012\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Processor: KSTREAM-FILTER-0000000012 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000011\n" +
		"      <-- KSTREAM-KEY-SELECT-0000000008\n" +
		"    Sink: KSTREAM-SINK-0000000011 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000009-repartition)\n" +
		"      <-- KSTREAM-FILTER-0000000012\n" +
		"\n" +
		"  Sub-topology: 1\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [source2])\n" +
		"      --> KSTREAM-KEY-SELECT-0000000002\n" +
		"    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])\n" +
		"      --> KSTREAM-FILTER-0000000006\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n" +
		"    Processor: KSTREAM-FILTER-0000000006 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000005\n" +
		"      <-- KSTREAM-KEY-SELECT-0000000002\n" +
		"    Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)\n" +
		"      <-- KSTREAM-FILTER-0000000006\n" +
		"\n" +
		"  Sub-topology: 2\n" +
		"    Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])\n" +
		"      --> KSTREAM-AGGREGATE-0000000004\n" +
		"    Source: KSTREAM-SOURCE-0000000013 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000009-repartition])\n" +
		"      --> KSTREAM-AGGREGATE-0000000010\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])\n" +
		"      --> KTABLE-JOINOTHER-0000000017\n" +
		"      <-- KSTREAM-SOURCE-0000000007\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000010 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000009])\n" +
		"      --> KTABLE-JOINTHIS-0000000016\n" +
		"      <-- KSTREAM-SOURCE-0000000013\n" +
		"    Processor: KTABLE-JOINOTHER-0000000017 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000009])\n" +
		"      --> KTABLE-MERGE-0000000015\n" +
		"      <-- KSTREAM-AGGREGATE-0000000004\n" +
		"    Processor: KTABLE-JOINTHIS-0000000016 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])\n" +
		"      --> KTABLE-MERGE-0000000015\n" +
		"      <-- KSTREAM-AGGREGATE-0000000010\n" +
		"    Processor: KTABLE-MERGE-0000000015 (stores: [KTABLE-MERGE-STATE-STORE-0000000014])\n" +
		"      --> KTABLE-TOSTREAM-0000000018\n" +
		"      <-- KTABLE-JOINTHIS-0000000016, KTABLE-JOINOTHER-0000000017\n" +
		"    Processor: KTABLE-TOSTREAM-0000000018 (stores: [])\n" +
		"      --> KSTREAM-KEY-SELECT-0000000019\n" +
		"      <-- KTABLE-MERGE-0000000015\n" +
		"    Processor: KSTREAM-KEY-SELECT-0000000019 (stores: [])\n" +
		"      --> KSTREAM-FOREACH-0000000020\n" +
		"      <-- KTABLE-TOSTREAM-0000000018\n" +
		"    Processor: KSTREAM-FOREACH-0000000020 (stores: [])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-KEY-SELECT-0000000019\n" +
		"\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// Two table sources joined: both sources are materialized for the join
// (KTableImpl.valueGetterSupplier), and without Materialized the merge
// keeps no store. Numbers: store 0, source 1, table source 2 (A); 3, 4, 5
// (B); merge 6, this 7, other 8.
func TestTableTableJoinOfSources(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	a := c.id(b.Table(TableOptions{Topic: "A"}))
	bt := c.id(b.Table(TableOptions{Topic: "B"}))
	j := c.id(b.TableJoin(a, bt, fn, TableJoinOptions{}))
	c.ok(b.To(c.id(b.ToStream(j, "")), "out", "", "", ""))
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [A])\n" +
		"      --> KTABLE-SOURCE-0000000002\n" +
		"    Source: KSTREAM-SOURCE-0000000004 (topics: [B])\n" +
		"      --> KTABLE-SOURCE-0000000005\n" +
		"    Processor: KTABLE-SOURCE-0000000002 (stores: [A-STATE-STORE-0000000000])\n" +
		"      --> KTABLE-JOINTHIS-0000000007\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n" +
		"    Processor: KTABLE-SOURCE-0000000005 (stores: [B-STATE-STORE-0000000003])\n" +
		"      --> KTABLE-JOINOTHER-0000000008\n" +
		"      <-- KSTREAM-SOURCE-0000000004\n" +
		"    Processor: KTABLE-JOINOTHER-0000000008 (stores: [A-STATE-STORE-0000000000])\n" +
		"      --> KTABLE-MERGE-0000000006\n" +
		"      <-- KTABLE-SOURCE-0000000005\n" +
		"    Processor: KTABLE-JOINTHIS-0000000007 (stores: [B-STATE-STORE-0000000003])\n" +
		"      --> KTABLE-MERGE-0000000006\n" +
		"      <-- KTABLE-SOURCE-0000000002\n" +
		"    Processor: KTABLE-MERGE-0000000006 (stores: [])\n" +
		"      --> KTABLE-TOSTREAM-0000000009\n" +
		"      <-- KTABLE-JOINTHIS-0000000007, KTABLE-JOINOTHER-0000000008\n" +
		"    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000010\n" +
		"      <-- KTABLE-MERGE-0000000006\n" +
		"    Sink: KSTREAM-SINK-0000000010 (topic: out)\n" +
		"      <-- KTABLE-TOSTREAM-0000000009\n" +
		"\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
	// Every rendering takes a merge node with two predecessors, and the
	// text parsed back is the same text.
	topo, err := b.Topology()
	c.ok(err)
	d := topo.Description()
	for _, f := range []string{"text", "json", "mermaid", "dot", "svg"} {
		if out, err := d.Render(f); err != nil || !strings.Contains(out, "KTABLE-MERGE-0000000006") {
			t.Errorf("render %s: %v\n%s", f, err, out)
		}
	}
	if p, err := ParseDescription([]byte(want)); err != nil || p.Text() != want {
		t.Errorf("parsing the text back: %v", err)
	}
}

// Named (NamedInternal.suffixWithOrElseGet) names the merge n and the
// processors n-join-this / n-join-other, numbers still taken; a named store
// takes none. Left and outer joins use the same JOINTHIS / JOINOTHER
// prefixes and make the tables send old values.
func TestTableTableJoinNamesAndKinds(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	a := c.id(b.Table(TableOptions{Topic: "A", Materialized: &Materialized{StoreName: "a"}}))
	bt := c.id(b.Table(TableOptions{Topic: "B", Materialized: &Materialized{StoreName: "b"}}))
	h, err := b.TableJoin(a, bt, fn, TableJoinOptions{Left: true, Name: "j", Materialized: &Materialized{StoreName: "joined"}})
	c.ok(err)
	if h.Node.Name != "j" || h.Kind != KindTable || len(h.Node.Stores) != 1 || h.Node.Stores[0] != "joined" {
		t.Errorf("left join handle: %+v", h.Node)
	}
	p := h.Node.Predecessors
	if len(p) != 2 || p[0].Name != "j-join-this" || p[0].Op != OpTableLeftJoin || p[1].Name != "j-join-other" || p[1].Op != OpTableRightJoin {
		t.Fatalf("left join processors: %v", p)
	}
	if !p[0].Predecessors[0].SendOld || p[1].Predecessors[0].SendOld {
		t.Errorf("a left join makes this table (only) send old values")
	}
	o, err := b.TableJoin(a, bt, fn, TableJoinOptions{Outer: true})
	c.ok(err)
	// a: 0, 1; b: 2, 3; j: 4, 5, 6; this one: 7, 8, 9.
	p = o.Node.Predecessors
	if o.Node.Name != "KTABLE-MERGE-0000000007" || p[0].Name != "KTABLE-JOINTHIS-0000000008" || p[1].Name != "KTABLE-JOINOTHER-0000000009" || p[0].Op != OpTableOuterJoin || p[1].Op != OpTableOuterJoinOther {
		t.Errorf("outer join: %s %v", o.Node.Name, p)
	}
	if !p[1].Predecessors[0].SendOld {
		t.Errorf("an outer join makes the other table send old values")
	}
	// groupBy of a join result: the merge and both join processors send
	// old values (KTableKTableJoinMerger.enableSendingOldValues).
	c.id(b.TableGroupBy(o.ID, fn, "", "", ""))
	if !o.Node.SendOld || !p[0].SendOld || !p[1].SendOld {
		t.Errorf("group_by of a join: merge %v, this %v, other %v send old values", o.Node.SendOld, p[0].SendOld, p[1].SendOld)
	}
}

func TestTableTableJoinRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.id(b.Stream(StreamOptions{Topics: []string{"s"}, KeySerde: "string"}))
	strs := c.id(b.Table(TableOptions{Topic: "u", KeySerde: "string"}))
	longs := c.id(b.Table(TableOptions{Topic: "t", KeySerde: "long"}))
	grouped := c.id(b.TableGroupBy(strs, fn, "", "", ""))
	other := c.id(b.Table(TableOptions{Topic: "v", KeySerde: "string", Materialized: &Materialized{StoreName: "v"}}))
	// A filter reads through its value getter (joined below); one over an
	// unmaterialized join result reaches no store.
	filtered := c.id(b.TableFilter(c.id(b.TableJoin(strs, other, fn, TableJoinOptions{})), fn, nil, ""))
	before := b.counter
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"key serdes differ", func() error { _, err := b.TableJoin(strs, longs, fn, TableJoinOptions{}); return err }(), "table handle 2 has string keys and table handle 3 long keys"},
		{"table keeps no store", func() error { _, err := b.TableJoin(filtered, other, fn, TableJoinOptions{}); return err }(), "this table handle 7 (KTABLE-FILTER-0000000013) keeps no store"},
		{"grouped table", func() error { _, err := b.TableJoin(strs, grouped, fn, TableJoinOptions{}); return err }(), "join needs a table, but handle 4 is a grouped table"},
		{"stream", func() error { _, err := b.TableJoin(s, strs, fn, TableJoinOptions{Left: true}); return err }(), "left_join needs a table, but handle 1 is a stream"},
		{"left and outer", func() error {
			_, err := b.TableJoin(strs, other, fn, TableJoinOptions{Left: true, Outer: true})
			return err
		}(), "left and outer are exclusive"},
		{"no joiner", func() error {
			_, err := b.TableJoin(strs, other, Function{}, TableJoinOptions{Outer: true})
			return err
		}(), "outer_join names no function"},
		{"store exists", func() error {
			_, err := b.TableJoin(strs, other, fn, TableJoinOptions{Materialized: &Materialized{StoreName: "v"}})
			return err
		}(), `join names store "v", which exists already`},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, tt.err, tt.want)
		}
		if !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: %v is not ErrInvalid", tt.name, tt.err)
		}
	}
	if b.counter != before {
		t.Errorf("refused joins took numbers: counter %d, was %d", b.counter, before)
	}
}

// A join's table goes on like any table: filtered, mapped and, once
// materialized, joined again (its store is what the next join reads). An
// unmaterialized result keeps no store, so joining it is refused.
func TestTableTableJoinResultDownstream(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	a := c.id(b.Table(TableOptions{Topic: "A"}))
	bt := c.id(b.Table(TableOptions{Topic: "B"}))
	ct := c.id(b.Table(TableOptions{Topic: "C"}))
	j := c.id(b.TableJoin(a, bt, fn, TableJoinOptions{}))
	if _, err := b.TableJoin(j, ct, fn, TableJoinOptions{}); err == nil || !strings.Contains(err.Error(), "this table handle 4 (KTABLE-MERGE-0000000009) keeps no store") {
		t.Errorf("joining an unmaterialized join: %v", err)
	}
	f := c.id(b.TableFilter(j, fn, nil, ""))
	m, err := b.TableMapValues(f, fn, "", &Materialized{StoreName: "mapped"}, "")
	c.ok(err)
	j2, err := b.TableJoin(m.ID, ct, fn, TableJoinOptions{Left: true})
	c.ok(err)
	this := j2.Node.Predecessors[0]
	if this.Predecessors[0] != m.Node || this.Stores[0] != "C-STATE-STORE-0000000006" || j2.Node.Predecessors[1].Stores[0] != "mapped" {
		t.Errorf("second join: this side under %s reading %v, other side reading %v", this.Predecessors[0].Name, this.Stores, j2.Node.Predecessors[1].Stores)
	}
	topo, err := b.Topology()
	c.ok(err)
	if len(topo.Subtopologies) != 1 {
		t.Errorf("the joins' tables are one sub-topology, got %d", len(topo.Subtopologies))
	}
}
