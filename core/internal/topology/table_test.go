package topology

import (
	"errors"
	"strings"
	"testing"
)

var mapFn = Function{Token: 2, Name: "kv"}

func (c check) table(b *Builder, topic string, m *Materialized) uint64 {
	c.t.Helper()
	return c.id(b.Table(TableOptions{Topic: topic, Materialized: m}))
}

// TestDescribeTableGoldens pins the table operators' names and describe()
// text against Kafka's TopologyTest goldens (each case names its test).
func TestDescribeTableGoldens(t *testing.T) {
	const tableGroupByCount = "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n" +
		"      --> KTABLE-SOURCE-0000000002\n" +
		"    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n" +
		"      --> KTABLE-SELECT-0000000003\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n" +
		"    Processor: KTABLE-SELECT-0000000003 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000005\n" +
		"      <-- KTABLE-SOURCE-0000000002\n" +
		"    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)\n" +
		"      <-- KTABLE-SELECT-0000000003\n" +
		"\n" +
		"  Sub-topology: 1\n" +
		"    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])\n" +
		"      --> KTABLE-AGGREGATE-0000000007\n" +
		"    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-SOURCE-0000000006\n" +
		"\n"
	tableOnly := func(op, store string) string {
		return "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n" +
			"      --> KTABLE-SOURCE-0000000002\n" +
			"    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n" +
			"      --> " + op + "\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Processor: " + op + " (stores: [" + store + "])\n" +
			"      --> none\n" +
			"      <-- KTABLE-SOURCE-0000000002\n\n"
	}
	tests := []struct {
		name  string
		build func(c check, b *Builder)
		want  string
	}{{
		// TopologyTest#tableZeroArgCountShouldPreserveTopologyStructure: the
		// source's store is materialized because groupBy needs old values.
		name: "table groupBy count",
		build: func(c check, b *Builder) {
			g := c.id(b.TableGroupBy(c.table(b, "input-topic", nil), mapFn, "", "", ""))
			c.id(b.TableCount(g, nil, ""))
		},
		want: tableGroupByCount,
	}, {
		// TopologyTest#tableAnonymousMaterializedCountShouldPreserveTopologyStructure:
		// unlike KGroupedStream.count, no extra number is burnt.
		name: "table groupBy count Materialized.with",
		build: func(c check, b *Builder) {
			g := c.id(b.TableGroupBy(c.table(b, "input-topic", nil), mapFn, "", "", ""))
			c.id(b.TableCount(g, &Materialized{ValueSerde: "long"}, ""))
		},
		want: tableGroupByCount,
	}, {
		// TopologyTest#tableNamedMaterializedCountShouldPreserveTopologyStructure.
		name: "table groupBy count Materialized.as",
		build: func(c check, b *Builder) {
			g := c.id(b.TableGroupBy(c.table(b, "input-topic", nil), mapFn, "", "", ""))
			c.id(b.TableCount(g, &Materialized{StoreName: "count-store"}, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n" +
			"      --> KTABLE-SOURCE-0000000002\n" +
			"    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n" +
			"      --> KTABLE-SELECT-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Processor: KTABLE-SELECT-0000000003 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000004\n" +
			"      <-- KTABLE-SOURCE-0000000002\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: count-store-repartition)\n" +
			"      <-- KTABLE-SELECT-0000000003\n" +
			"\n" +
			"  Sub-topology: 1\n" +
			"    Source: KSTREAM-SOURCE-0000000005 (topics: [count-store-repartition])\n" +
			"      --> KTABLE-AGGREGATE-0000000006\n" +
			"    Processor: KTABLE-AGGREGATE-0000000006 (stores: [count-store])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000005\n" +
			"\n",
	}, {
		// TopologyTest#kTableNonMaterializedMapValuesShouldPreserveTopologyStructure:
		// the source's store is not materialized, its number is taken.
		name: "table mapValues",
		build: func(c check, b *Builder) {
			c.id(b.TableMapValues(c.table(b, "input-topic", nil), fn, "", nil, ""))
		},
		want: tableOnly("KTABLE-MAPVALUES-0000000003", ""),
	}, {
		// TopologyTest#kTableAnonymousMaterializedMapValuesShouldPreserveTopologyStructure:
		// a number is taken for a store that is not made.
		name: "table mapValues Materialized.with",
		build: func(c check, b *Builder) {
			c.id(b.TableMapValues(c.table(b, "input-topic", nil), fn, "", &Materialized{}, ""))
		},
		want: tableOnly("KTABLE-MAPVALUES-0000000004", ""),
	}, {
		// TopologyTest#kTableNamedMaterializedMapValuesShouldPreserveTopologyStructure.
		name: "table mapValues Materialized.as",
		build: func(c check, b *Builder) {
			c.id(b.TableMapValues(c.table(b, "input-topic", nil), fn, "", &Materialized{StoreName: "store-name"}, ""))
		},
		want: tableOnly("KTABLE-MAPVALUES-0000000003", "store-name"),
	}, {
		// TopologyTest#kTableNonMaterializedFilterShouldPreserveTopologyStructure.
		name: "table filter",
		build: func(c check, b *Builder) {
			c.id(b.TableFilter(c.table(b, "input-topic", nil), fn, nil, ""))
		},
		want: tableOnly("KTABLE-FILTER-0000000003", ""),
	}, {
		// TopologyTest#kTableAnonymousMaterializedFilterShouldPreserveTopologyStructure.
		name: "table filter Materialized.with",
		build: func(c check, b *Builder) {
			c.id(b.TableFilter(c.table(b, "input-topic", nil), fn, &Materialized{}, ""))
		},
		want: tableOnly("KTABLE-FILTER-0000000004", ""),
	}, {
		// TopologyTest#kTableNamedMaterializedFilterShouldPreserveTopologyStructure.
		name: "table filter Materialized.as",
		build: func(c check, b *Builder) {
			c.id(b.TableFilter(c.table(b, "input-topic", nil), fn, &Materialized{StoreName: "store-name"}, ""))
		},
		want: tableOnly("KTABLE-FILTER-0000000003", "store-name"),
	}, {
		// StreamsBuilder.table with Materialized.as: the named store takes no
		// number; with Consumed.as, the source is "<name>-source" and the
		// table source "<name>" (InternalStreamsBuilder#table,
		// InternalStreamsBuilderTest#shouldUseSpecifiedNameForTableSourceProcessor
		// as of Kafka 3.x) and numbers are still taken.
		name: "table Materialized.as Consumed.as toStream to",
		build: func(c check, b *Builder) {
			h := c.id(b.Table(TableOptions{Topic: "users", Name: "users-in", Materialized: &Materialized{StoreName: "users-store"}}))
			s := c.id(b.ToStream(h, ""))
			c.ok(b.To(s, "out", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: users-in-source (topics: [users])\n" +
			"      --> users-in\n" +
			"    Processor: users-in (stores: [users-store])\n" +
			"      --> KTABLE-TOSTREAM-0000000002\n" +
			"      <-- users-in-source\n" +
			"    Processor: KTABLE-TOSTREAM-0000000002 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000003\n" +
			"      <-- users-in\n" +
			"    Sink: KSTREAM-SINK-0000000003 (topic: out)\n" +
			"      <-- KTABLE-TOSTREAM-0000000002\n\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder()
			tt.build(check{t}, b)
			if got := describe(t, b); got != tt.want {
				t.Errorf("describe() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestTableSendOldValues: groupBy makes the nodes above it send old values
// up to the source, which is then materialized; a toStream alone does not.
func TestTableSendOldValues(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	tbl := c.table(b, "t", nil)
	f := c.id(b.TableFilter(tbl, fn, nil, ""))
	s := c.id(b.ToStream(f, ""))
	c.ok(b.To(s, "out", "", "", ""))
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Stores) != 0 {
		t.Fatalf("stores before groupBy: %v, want none", topo.Stores)
	}
	g := c.id(b.TableGroupBy(f, mapFn, "", "", "by-x"))
	c.id(b.TableReduce(g, fn, Function{Token: 3}, nil, ""))
	topo, err = b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if topo.Stores["t-STATE-STORE-0000000000"] == nil {
		t.Fatalf("stores after groupBy: %v, want the source's t-STATE-STORE-0000000000", topo.Stores)
	}
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			want := n.Op == OpTableSource || n.Op == OpTableFilter
			if n.SendOld != want {
				t.Errorf("%s: SendOld = %v, want %v", n.Name, n.SendOld, want)
			}
			if n.Type == Source && n.Topics[0] == "by-x-repartition" && !n.Change {
				t.Errorf("repartition source %s does not carry changes", n.Name)
			}
		}
	}
}

// TestTableRefusals: table operators refuse bad input with named errors and
// change nothing.
func TestTableRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	tbl := c.table(b, "t", nil)
	st := c.stream(b, "s")
	g := c.id(b.TableGroupBy(tbl, mapFn, "", "long", ""))
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"table twice", func() error { _, err := b.Table(TableOptions{Topic: "t"}); return err }, []string{"table", `"t"`, "KSTREAM-SOURCE-0000000001"}},
		{"table filter on a stream", func() error { _, err := b.TableFilter(st, fn, nil, ""); return err }, []string{"filter", "needs a table", "stream"}},
		{"aggregate without subtractor", func() error {
			_, err := b.TableAggregate(g, Function{Token: 5}, fn, Function{}, nil, "")
			return err
		}, []string{"aggregate", "subtractor"}},
		{"built-in max on a grouped table", func() error {
			_, err := b.TableReduce(g, Function{Builtin: BuiltinMax}, Function{}, nil, "")
			return err
		}, []string{"reduce", "max", "cannot remove"}},
		{"stream count on a grouped table", func() error { _, err := b.Count(g, nil, ""); return err }, []string{"count", "grouped stream", "grouped table"}},
	}
	before := describe(t, b)
	for _, tt := range tests {
		err := tt.call()
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tt.name, err, w)
			}
		}
	}
	if after := describe(t, b); after != before {
		t.Errorf("refused calls changed the topology:\n%s\nwas\n%s", after, before)
	}
	// The built-in sum brings its own subtractor.
	c.id(b.TableReduce(g, Function{Builtin: BuiltinSum}, Function{}, nil, ""))
}
