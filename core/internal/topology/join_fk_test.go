package topology

import (
	"errors"
	"strings"
	"testing"
)

// fkJoinDescribe is what Kafka Streams prints for
//
//	builder.table("t1").join(builder.table("t2"), v -> ..., joiner).toStream().to("output")
//
// built by KTableImpl.doJoinOnForeignKey: tables 0-2 and 3-5, then
// registration topic 6, send processor 7, sink 8, source 9, subscription
// store 10, receive 11, subscription join 12, foreign-table join 13,
// response topic 14, sink 15, source 16, resolver 17, result 18, a
// burnt number for the result's Materialized (19), toStream 20, sink 21.
// Kafka's own tests pin the numbering (KTableKTableForeignKeyJoinScenarioTest
// #shouldUseExpectedTopicsWithSerde and NamedTopologyIntegrationTest list
// KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic,
// KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic and
// KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog for the same
// program); the text follows InternalTopologyBuilder's describe rules. The
// left table's source and the resolver share the left store, so they are
// one sub-topology; the right table and the subscription receiver share
// the subscription store (ForeignTableJoinProcessorSupplier.stores()).
const fkJoinDescribe = "Topologies:\n" +
	"   Sub-topology: 0\n" +
	"    Source: KTABLE-SOURCE-0000000016 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic])\n" +
	"      --> KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n" +
	"    Source: KSTREAM-SOURCE-0000000001 (topics: [t1])\n" +
	"      --> KTABLE-SOURCE-0000000002\n" +
	"    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017 (stores: [t1-STATE-STORE-0000000000])\n" +
	"      --> KTABLE-FK-JOIN-OUTPUT-0000000018\n" +
	"      <-- KTABLE-SOURCE-0000000016\n" +
	"    Processor: KTABLE-FK-JOIN-OUTPUT-0000000018 (stores: [])\n" +
	"      --> KTABLE-TOSTREAM-0000000020\n" +
	"      <-- KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n" +
	"    Processor: KTABLE-SOURCE-0000000002 (stores: [t1-STATE-STORE-0000000000])\n" +
	"      --> KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n" +
	"      <-- KSTREAM-SOURCE-0000000001\n" +
	"    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007 (stores: [])\n" +
	"      --> KTABLE-SINK-0000000008\n" +
	"      <-- KTABLE-SOURCE-0000000002\n" +
	"    Processor: KTABLE-TOSTREAM-0000000020 (stores: [])\n" +
	"      --> KSTREAM-SINK-0000000021\n" +
	"      <-- KTABLE-FK-JOIN-OUTPUT-0000000018\n" +
	"    Sink: KSTREAM-SINK-0000000021 (topic: output)\n" +
	"      <-- KTABLE-TOSTREAM-0000000020\n" +
	"    Sink: KTABLE-SINK-0000000008 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic)\n" +
	"      <-- KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n" +
	"\n" +
	"  Sub-topology: 1\n" +
	"    Source: KSTREAM-SOURCE-0000000004 (topics: [t2])\n" +
	"      --> KTABLE-SOURCE-0000000005\n" +
	"    Source: KTABLE-SOURCE-0000000009 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic])\n" +
	"      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n" +
	"    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n" +
	"      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012\n" +
	"      <-- KTABLE-SOURCE-0000000009\n" +
	"    Processor: KTABLE-SOURCE-0000000005 (stores: [t2-STATE-STORE-0000000003])\n" +
	"      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n" +
	"      <-- KSTREAM-SOURCE-0000000004\n" +
	"    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012 (stores: [t2-STATE-STORE-0000000003])\n" +
	"      --> KTABLE-SINK-0000000015\n" +
	"      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n" +
	"    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n" +
	"      --> KTABLE-SINK-0000000015\n" +
	"      <-- KTABLE-SOURCE-0000000005\n" +
	"    Sink: KTABLE-SINK-0000000015 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic)\n" +
	"      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012, KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n" +
	"\n"

func TestForeignKeyJoinDescribe(t *testing.T) {
	for _, left := range []bool{false, true} {
		c := check{t}
		b := NewBuilder()
		l := c.id(b.Table(TableOptions{Topic: "t1"}))
		r := c.id(b.Table(TableOptions{Topic: "t2"}))
		j := c.id(b.ForeignKeyJoin(l, r, fn, fn, left, nil, "", ""))
		s := c.id(b.ToStream(j, ""))
		c.ok(b.To(s, "output", "", "", ""))
		// leftJoin builds the same nodes (only the processors' behaviour differs).
		if got := describe(t, b); got != fkJoinDescribe {
			t.Errorf("left=%v describe:\n%s\nwant:\n%s", left, got, fkJoinDescribe)
		}
	}
}

// TableJoined.as("fk") names every node, store and topic with a suffix
// (NamedInternal.suffixWithOrElseGet, which still burns each number), and
// Materialized.as names the result's store (which then burns none).
func TestForeignKeyJoinNamed(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	l := c.id(b.Table(TableOptions{Topic: "orders"}))
	r := c.id(b.Table(TableOptions{Topic: "customers"}))
	h, err := b.ForeignKeyJoin(l, r, fn, fn, true, &Materialized{StoreName: "enriched"}, "", "fk")
	c.ok(err)
	if h.Node.Name != "fk-result" || h.Node.Stores[0] != "enriched" {
		t.Errorf("result node %s stores %v", h.Node.Name, h.Node.Stores)
	}
	c.id(b.ToStream(h.ID, ""))
	d := describe(t, b)
	for _, w := range []string{
		"Processor: fk-subscription-registration-processor (stores: [])",
		"Sink: fk-subscription-registration-sink (topic: fk-subscription-registration-topic)",
		"Source: fk-subscription-registration-source (topics: [fk-subscription-registration-topic])",
		"Processor: fk-subscription-receive (stores: [fk-subscription-store])",
		"Processor: fk-subscription-join-foreign (stores: [customers-STATE-STORE-0000000003])",
		"Processor: fk-foreign-join-subscription (stores: [fk-subscription-store])",
		"Sink: fk-subscription-response-sink (topic: fk-subscription-response-topic)",
		"Source: fk-subscription-response-source (topics: [fk-subscription-response-topic])",
		"Processor: fk-subscription-response-resolver (stores: [orders-STATE-STORE-0000000000])",
		"Processor: fk-result (stores: [enriched])",
		// 6..18 burnt by the join, none for the named store.
		"KTABLE-TOSTREAM-0000000019",
	} {
		if !strings.Contains(d, w) {
			t.Errorf("describe lacks %q:\n%s", w, d)
		}
	}
	topo, err := b.Topology()
	c.ok(err)
	if topo.Stores["fk-subscription-store"] == nil || topo.Stores["enriched"] == nil {
		t.Errorf("stores %v", topo.Stores)
	}
}

func TestForeignKeyJoinRefused(t *testing.T) {
	b := NewBuilder()
	c := check{t}
	st := c.stream(b, "s")
	tb := c.id(b.Table(TableOptions{Topic: "t"}))
	// A filter reads through its value getter; over an unmaterialized
	// table-table join result it reaches no store.
	filtered := c.id(b.TableFilter(c.id(b.TableJoin(tb, tb, fn, TableJoinOptions{})), fn, nil, ""))
	counter := b.counter
	for _, tc := range []struct {
		name        string
		left, right uint64
		extractor   Function
		want        string
		kind        error
	}{
		{"stream input", st, tb, fn, "join with a foreign key joins a table with a table, but the left handle 1 is a stream", ErrInvalid},
		{"stream other", tb, st, fn, "the right handle 1 is a stream", ErrInvalid},
		{"missing handle", tb, 99, fn, "join names handle 99, which does not exist", ErrNotFound},
		{"no store", filtered, tb, fn, "left table handle 4 (KTABLE-FILTER-0000000007) keeps no store", ErrInvalid},
		{"no extractor", tb, tb, Function{}, "join names no function", ErrInvalid},
	} {
		_, err := b.ForeignKeyJoin(tc.left, tc.right, tc.extractor, fn, false, nil, "", "")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.kind) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if b.counter != counter {
		t.Errorf("refused calls took numbers: counter %d, was %d", b.counter, counter)
	}
}

// The result is a KTableSource whose Materialized named no store: an
// operator that needs old values (groupBy) materializes it under the name
// MaterializedInternal generated, KTABLE-FK-JOIN-OUTPUT-STATE-STORE-<n>.
func TestForeignKeyJoinResultMaterializedForOldValues(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	l := c.id(b.Table(TableOptions{Topic: "t1"}))
	r := c.id(b.Table(TableOptions{Topic: "t2"}))
	j, err := b.ForeignKeyJoin(l, r, fn, fn, false, nil, "", "")
	c.ok(err)
	if len(j.Node.Stores) != 0 {
		t.Fatalf("result stores %v before a groupBy", j.Node.Stores)
	}
	g := c.id(b.TableGroupBy(j.ID, fn, "", "", ""))
	c.id(b.TableCount(g, nil, ""))
	topo, err := b.Topology()
	c.ok(err)
	if st := topo.Stores["KTABLE-FK-JOIN-OUTPUT-STATE-STORE-0000000019"]; st == nil {
		t.Errorf("no result store; stores %v", topo.Stores)
	}
	if d := describe(t, b); !strings.Contains(d, "Processor: KTABLE-FK-JOIN-OUTPUT-0000000018 (stores: [KTABLE-FK-JOIN-OUTPUT-STATE-STORE-0000000019])") {
		t.Errorf("describe:\n%s", d)
	}
}
