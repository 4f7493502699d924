package topology

import (
	"errors"
	"strings"
	"testing"
)

// StreamsBuilder.globalTable alone, as Kafka Streams prints it
// (InternalStreamsBuilder.globalTable: the store's number 0, then the
// source's 1 and the KTABLE-SOURCE's 2; TopologyDescription.GlobalStore's
// toString ends after the processor, with no blank line).
func TestGlobalTableDescribe(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	g, err := b.GlobalTable(GlobalTableOptions{Topic: "demo-global-table"})
	c.ok(err)
	if g.Kind != KindGlobalTable {
		t.Errorf("kind %v", g.Kind)
	}
	want := "Topologies:\n" +
		"   Sub-topology: 0 for global store (will not generate tasks)\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [demo-global-table])\n" +
		"      --> KTABLE-SOURCE-0000000002\n" +
		"    Processor: KTABLE-SOURCE-0000000002 (stores: [demo-global-table-STATE-STORE-0000000000])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%q\nwant:\n%q", got, want)
	}
}

// stream.leftJoin(globalTable, keyMapper, joiner).to(out): the global
// store is sub-topology 0 (its nodes are written first), the stream's
// sub-topology 1; the join (KStreamImpl.doGlobalTableJoin) is connected to
// no store, so it prints "stores: []" and unites nothing: no
// co-partitioning.
func TestGlobalJoinDescribe(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	g := c.id(b.GlobalTable(GlobalTableOptions{Topic: "weather-stations"}))
	s := c.stream(b, "temperature.values")
	j := c.id(b.GlobalJoin(s, g, fn, fn, true, "", ""))
	c.ok(b.To(j, "out", "", "", ""))
	want := "Topologies:\n" +
		"   Sub-topology: 0 for global store (will not generate tasks)\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [weather-stations])\n" +
		"      --> KTABLE-SOURCE-0000000002\n" +
		"    Processor: KTABLE-SOURCE-0000000002 (stores: [weather-stations-STATE-STORE-0000000000])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n" +
		"  Sub-topology: 1\n" +
		"    Source: KSTREAM-SOURCE-0000000003 (topics: [temperature.values])\n" +
		"      --> KSTREAM-LEFTJOIN-0000000004\n" +
		"    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000005\n" +
		"      <-- KSTREAM-SOURCE-0000000003\n" +
		"    Sink: KSTREAM-SINK-0000000005 (topic: out)\n" +
		"      <-- KSTREAM-LEFTJOIN-0000000004\n\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// The inner join is named KSTREAM-LEFTJOIN- too: doGlobalTableJoin
// generates its name with LEFTJOIN_NAME whatever leftJoin is. A global
// store written between two streams takes the id between theirs, and is
// printed in its place (TopologyDescription.toString's interleaving), with
// the next sub-topology right after it. Consumed.as names the source
// "<name>-source" and the processor name (InternalStreamsBuilder's
// TABLE_SOURCE_SUFFIX), Materialized.as the store, which takes no number.
func TestGlobalJoinInnerNameAndInterleaving(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "orders")
	c.ok(b.To(s, "orders-out", "", "", ""))
	g := c.id(b.GlobalTable(GlobalTableOptions{Topic: "products", Name: "prod", Materialized: &Materialized{StoreName: "products-store"}}))
	s2 := c.stream(b, "clicks")
	j, err := b.GlobalJoin(s2, g, fn, fn, false, "", "")
	c.ok(err)
	if j.Node.Name != "KSTREAM-LEFTJOIN-0000000005" || j.Node.Op != OpGlobalJoin {
		t.Errorf("inner global join node %s (op %d)", j.Node.Name, j.Node.Op)
	}
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n" +
		"      --> KSTREAM-SINK-0000000001\n" +
		"    Sink: KSTREAM-SINK-0000000001 (topic: orders-out)\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n\n" +
		"  Sub-topology: 1 for global store (will not generate tasks)\n" +
		"    Source: prod-source (topics: [products])\n" +
		"      --> prod\n" +
		"    Processor: prod (stores: [products-store])\n" +
		"      --> none\n" +
		"      <-- prod-source\n" +
		"  Sub-topology: 2\n" +
		"    Source: KSTREAM-SOURCE-0000000004 (topics: [clicks])\n" +
		"      --> KSTREAM-LEFTJOIN-0000000005\n" +
		"    Processor: KSTREAM-LEFTJOIN-0000000005 (stores: [])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-SOURCE-0000000004\n\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
	topo, err := b.Topology()
	c.ok(err)
	// The structured description (json, mermaid, svg and the topology
	// file) has the global store in its place, and prints the same text;
	// parsed back from the text, it is the same.
	d := topo.Description()
	if len(d.Subtopologies) != 3 || !d.Subtopologies[1].Global || d.Subtopologies[1].ID != 1 {
		t.Errorf("description %+v", d.Subtopologies)
	}
	if got := d.Text(); got != want {
		t.Errorf("Description().Text():\n%s\nwant:\n%s", got, want)
	}
	if p, err := ParseDescription([]byte(want)); err != nil || p.JSON() != d.JSON() {
		t.Errorf("parsed back: %v\n%s\nwant\n%s", err, p.JSON(), d.JSON())
	}
	if len(topo.Subtopologies) != 2 || len(topo.Globals) != 1 || topo.Globals[0].ID != 1 || topo.Globals[0].Topic() != "products" {
		t.Fatalf("subtopologies %d, globals %+v", len(topo.Subtopologies), topo.Globals)
	}
	if st := topo.Stores["products-store"]; st == nil || !st.Global || st.ChangelogTopic != "products" {
		t.Errorf("global store %+v: want Global, changelog = its topic", st)
	}
}

// A global join after a key change does not repartition (the key mapper
// decides the lookup key), but the result still needs one before an
// aggregation: doGlobalTableJoin passes repartitionRequired on.
func TestGlobalJoinKeepsRepartitionRequired(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	g := c.id(b.GlobalTable(GlobalTableOptions{Topic: "g"}))
	s := c.id(b.SelectKey(c.stream(b, "in"), fn, "", ""))
	j := c.id(b.GlobalJoin(s, g, fn, fn, false, "", ""))
	c.id(b.Count(c.id(b.GroupByKey(j, "", "", "")), nil, ""))
	d := describe(t, b)
	for _, w := range []string{
		"Processor: KSTREAM-LEFTJOIN-0000000005 (stores: [])\n      --> KSTREAM-FILTER-",
		"(topic: KSTREAM-AGGREGATE-STATE-STORE-0000000006-repartition)",
	} {
		if !strings.Contains(d, w) {
			t.Errorf("describe lacks %q:\n%s", w, d)
		}
	}
	if strings.Contains(d, "KSTREAM-KEY-SELECT-0000000004-repartition") {
		t.Errorf("the join repartitioned its stream:\n%s", d)
	}
}

// Bad input names the handle, kind and topic at fault, and a refused call
// takes no number.
func TestGlobalTableErrors(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "in")
	tb := c.id(b.Table(TableOptions{Topic: "t"}))
	g := c.id(b.GlobalTable(GlobalTableOptions{Topic: "g"}))
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"topic read twice", errOf(b.GlobalTable(GlobalTableOptions{Topic: "in"})), `global_table reads topic "in", which source KSTREAM-SOURCE-0000000000 reads already`},
		{"changelog config", errOf(b.GlobalTable(GlobalTableOptions{Topic: "x", Materialized: &Materialized{ChangelogConfig: map[string]string{"a": "b"}}})), "global store has no changelog topic"},
		{"join a table as global", errOf(b.GlobalJoin(s, tb, fn, fn, false, "", "")), "join needs a global table, but handle 2 is a table"},
		{"global table as stream", errOf(b.GlobalJoin(g, g, fn, fn, false, "", "")), "join needs a stream, but handle 3 is a global table"},
		{"no key mapper", errOf(b.GlobalJoin(s, g, Function{}, fn, true, "", "")), "left_join (key mapper) names no function"},
		{"missing handle", errOf(b.GlobalJoin(s, 99, fn, fn, false, "", "")), "join names handle 99, which does not exist"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, tc.err, tc.want)
		}
	}
	if k, _ := b.Kind(g); k != KindGlobalTable {
		t.Errorf("kind %v", k)
	}
	j, err := b.GlobalJoin(s, g, fn, fn, false, "", "")
	c.ok(err)
	if j.Node.Name != "KSTREAM-LEFTJOIN-0000000007" {
		t.Errorf("after refused calls the join is %s; refused calls take no number", j.Node.Name)
	}
	if _, err := b.MapValues(g, fn, "", ""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "handle 3 is a global table") {
		t.Errorf("map_values of a global table: %v", err)
	}
}

func errOf(_ *Handle, err error) error { return err }
