package topology

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var keyFn = Function{Token: 3, Name: "key"}

// TestDescribeWindowGoldens pins windowed aggregations' and suppression's
// names and describe() text against Kafka's goldens (each case names its
// test).
func TestDescribeWindowGoldens(t *testing.T) {
	countOnly := func(agg, store string) string {
		return "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n" +
			"      --> " + agg + "\n" +
			"    Processor: " + agg + " (stores: [" + store + "])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n"
	}
	windowedCount := func(w Windows, m *Materialized) func(c check, b *Builder) {
		return func(c check, b *Builder) {
			g := c.id(b.GroupByKey(c.stream(b, "input-topic"), "", "", ""))
			c.id(b.Count(c.id(b.WindowedBy(g, w)), m, ""))
		}
	}
	tumbling := Windows{Kind: TimeWindows, Size: 1}
	session := Windows{Kind: SessionWindows, Size: 1}
	// SuppressTopologyTest#shouldUseNumberingForAnonymousFinalSuppressionNode
	// and #shouldApplyNameToFinalSuppressionNode: an anonymous suppression
	// takes two numbers (node and store), a named one none ("without the
	// name, the suppression node does not increment the topology index";
	// KTableImpl#suppress). next is the number of the node after it. The
	// repartition nodes are named after the topic, as in the current test
	// (older releases numbered them).
	finalSuppression := func(suppress, store string, next int) string {
		n := func(i int) string { return fmt.Sprintf("%010d", next+i) }
		return "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-KEY-SELECT-0000000001\n" +
			"    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n" +
			"      --> counts-repartition-filter\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: counts-repartition-filter (stores: [])\n" +
			"      --> counts-repartition-sink\n" +
			"      <-- KSTREAM-KEY-SELECT-0000000001\n" +
			"    Sink: counts-repartition-sink (topic: counts-repartition)\n" +
			"      <-- counts-repartition-filter\n" +
			"\n" +
			"  Sub-topology: 1\n" +
			"    Source: counts-repartition-source (topics: [counts-repartition])\n" +
			"      --> KSTREAM-AGGREGATE-0000000002\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])\n" +
			"      --> " + suppress + "\n" +
			"      <-- counts-repartition-source\n" +
			"    Processor: " + suppress + " (stores: [" + store + "])\n" +
			"      --> KTABLE-TOSTREAM-" + n(0) + "\n" +
			"      <-- KSTREAM-AGGREGATE-0000000002\n" +
			"    Processor: KTABLE-TOSTREAM-" + n(0) + " (stores: [])\n" +
			"      --> KSTREAM-MAP-" + n(1) + "\n" +
			"      <-- " + suppress + "\n" +
			"    Processor: KSTREAM-MAP-" + n(1) + " (stores: [])\n" +
			"      --> KSTREAM-SINK-" + n(2) + "\n" +
			"      <-- KTABLE-TOSTREAM-" + n(0) + "\n" +
			"    Sink: KSTREAM-SINK-" + n(2) + " (topic: output-suppressed)\n" +
			"      <-- KSTREAM-MAP-" + n(1) + "\n" +
			"\n"
	}
	suppressed := func(name string) func(c check, b *Builder) {
		return func(c check, b *Builder) {
			s := c.stream(b, "input")
			g := c.id(b.GroupBy(s, keyFn, "string", "string", ""))
			w := c.id(b.WindowedBy(g, Windows{Kind: SessionWindows, Size: 5, Grace: 5}))
			n := c.id(b.Count(w, &Materialized{StoreName: "counts"}, ""))
			sup := c.id(b.Suppress(n, name, UntilWindowCloses))
			ts := c.id(b.ToStream(sup, ""))
			m := c.id(b.Map(ts, mapFn, "string", "long", ""))
			c.ok(b.To(m, "output-suppressed", "", "", ""))
		}
	}
	tests := []struct {
		name  string
		build func(c check, b *Builder)
		want  string
	}{
		// TopologyTest#timeWindowZeroArgCountShouldPreserveTopologyStructure.
		{"time windows count zero-arg", windowedCount(tumbling, nil), countOnly("KSTREAM-AGGREGATE-0000000002", "KSTREAM-AGGREGATE-STATE-STORE-0000000001")},
		// TopologyTest#timeWindowNamedMaterializedCountShouldPreserveTopologyStructure.
		{"time windows count Materialized.as", windowedCount(tumbling, &Materialized{StoreName: "count-store"}), countOnly("KSTREAM-AGGREGATE-0000000001", "count-store")},
		// TopologyTest#timeWindowAnonymousMaterializedCountShouldPreserveTopologyStructure.
		{"time windows count Materialized.with", windowedCount(tumbling, &Materialized{ValueSerde: "long"}), countOnly("KSTREAM-AGGREGATE-0000000003", "KSTREAM-AGGREGATE-STATE-STORE-0000000002")},
		// TopologyTest#sessionWindowZeroArgCountShouldPreserveTopologyStructure.
		{"session windows count zero-arg", windowedCount(session, nil), countOnly("KSTREAM-AGGREGATE-0000000002", "KSTREAM-AGGREGATE-STATE-STORE-0000000001")},
		// TopologyTest#sessionWindowNamedMaterializedCountShouldPreserveTopologyStructure.
		{"session windows count Materialized.as", windowedCount(session, &Materialized{StoreName: "count-store"}), countOnly("KSTREAM-AGGREGATE-0000000001", "count-store")},
		// TopologyTest#sessionWindowAnonymousMaterializedCountShouldPreserveTopologyStructure.
		{"session windows count Materialized.with", windowedCount(session, &Materialized{ValueSerde: "long"}), countOnly("KSTREAM-AGGREGATE-0000000003", "KSTREAM-AGGREGATE-STATE-STORE-0000000002")},
		{"anonymous final suppression", suppressed(""), finalSuppression("KTABLE-SUPPRESS-0000000006", "KTABLE-SUPPRESS-STATE-STORE-0000000007", 8)},
		{"named final suppression", suppressed("myname"), finalSuppression("myname", "myname-store", 6)},
	}
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

// TestWindowedKeysAndStores: a windowed aggregation's table has windowed
// keys (serde named with the inner serde and the size) and a window store
// whose retention defaults to size + grace.
func TestWindowedKeysAndStores(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s, err := b.Stream(StreamOptions{Topics: []string{"in"}, KeySerde: "string"})
	c.ok(err)
	g := c.id(b.GroupByKey(s.ID, "", "", ""))
	w, err := b.WindowedBy(g, Windows{Kind: TimeWindows, Size: 60000, Advance: 5000, Grace: 1000})
	c.ok(err)
	if w.Kind != KindWindowedStream {
		t.Errorf("windowed_by made a %s, want a windowed stream", w.Kind)
	}
	h, err := b.Count(w.ID, &Materialized{StoreName: "per-minute"}, "")
	c.ok(err)
	if h.KeySerde != "windowed(string,60000)" || h.ValueSerde != "long" {
		t.Errorf("windowed count serdes %q %q, want windowed(string,60000) long", h.KeySerde, h.ValueSerde)
	}
	topo, err := b.Topology()
	c.ok(err)
	st := topo.Stores["per-minute"]
	if st.Kind != StoreWindow || st.Retention != 61000 || st.Windows.Advance != 5000 {
		t.Errorf("store %+v, want a window store retaining 61000 ms", st)
	}
	ses := c.id(b.WindowedBy(g, Windows{Kind: SessionWindows, Size: 300}))
	h, err = b.Count(ses, nil, "")
	c.ok(err)
	if h.KeySerde != "session-windowed(string)" {
		t.Errorf("session count key serde %q", h.KeySerde)
	}
}

// TestWindowRefusals: each refusal names the field and the value at fault.
func TestWindowRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	st := c.stream(b, "in")
	g := c.id(b.GroupByKey(st, "", "", ""))
	tw := c.id(b.WindowedBy(g, Windows{Kind: TimeWindows, Size: 100}))
	ses := c.id(b.WindowedBy(g, Windows{Kind: SessionWindows, Size: 100}))
	plain := c.id(b.Count(g, nil, ""))
	agg := Function{Token: 7, Name: "agg"}
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"size 0", func() error { _, err := b.WindowedBy(g, Windows{Kind: TimeWindows}); return err }, []string{"size_ms 0"}},
		{"advance > size", func() error {
			_, err := b.WindowedBy(g, Windows{Kind: TimeWindows, Size: 60000, Advance: 90000})
			return err
		}, []string{"advance_ms 90000", "size_ms 60000"}},
		{"negative grace", func() error {
			_, err := b.WindowedBy(g, Windows{Kind: TimeWindows, Size: 10, Grace: -1})
			return err
		}, []string{"grace_ms -1"}},
		{"session gap 0", func() error { _, err := b.WindowedBy(g, Windows{Kind: SessionWindows}); return err }, []string{"inactivity_gap_ms 0"}},
		{"windowed_by on a stream", func() error { _, err := b.WindowedBy(st, Windows{Kind: TimeWindows, Size: 1}); return err }, []string{"grouped stream", "handle 1"}},
		{"retention < size + grace", func() error { _, err := b.Count(tw, &Materialized{Retention: 50}, ""); return err }, []string{"retention_ms 50", "100"}},
		{"retention without windows", func() error { _, err := b.Count(g, &Materialized{Retention: 50}, ""); return err }, []string{"retention_ms 50", "no windows"}},
		{"session aggregate without merger", func() error { _, err := b.Aggregate(ses, agg, agg, nil, ""); return err }, []string{"merger"}},
		{"merger on time windows", func() error { _, err := b.AggregateSessions(tw, agg, agg, agg, nil, ""); return err }, []string{"merger", "session-windowed"}},
		{"suppress on a key-value table", func() error { _, err := b.Suppress(plain, "", UntilWindowCloses); return err }, []string{"untilWindowCloses", "windowed"}},
		{"host reduce over session windows", func() error { _, err := b.Reduce(ses, agg, nil, ""); return err }, []string{"session windows", "host functions", "fold_programs"}},
		{"host reduce over sliding windows", func() error {
			sl := c.id(b.WindowedBy(g, Windows{Kind: SlidingWindows, Size: 100}))
			_, err := b.Reduce(sl, agg, nil, "")
			return err
		}, []string{"sliding windows", "host functions", "fold_programs"}},
	}
	for _, tt := range tests {
		err := tt.call()
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tt.name, err, w)
			}
		}
	}
}

// A host that runs fold programs (FoldPrograms) may fold host functions
// over session and sliding windows; an aggregate over sessions still needs
// its merger.
func TestHostFunctionsOverSessionsNeedFoldPrograms(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	b.FoldPrograms = true
	g := c.id(b.GroupByKey(c.stream(b, "in"), "", "", ""))
	ses := c.id(b.WindowedBy(g, Windows{Kind: SessionWindows, Size: 100}))
	sl := c.id(b.WindowedBy(g, Windows{Kind: SlidingWindows, Size: 100}))
	fn := Function{Token: 7, Name: "fn"}
	_, err := b.Reduce(ses, fn, nil, "")
	c.ok(err)
	_, err = b.Aggregate(sl, fn, fn, nil, "")
	c.ok(err)
	_, err = b.AggregateSessions(ses, fn, fn, fn, nil, "")
	c.ok(err)
	if _, err := b.Aggregate(ses, fn, fn, nil, ""); err == nil || !strings.Contains(err.Error(), "merger") {
		t.Errorf("session aggregate without a merger: %v", err)
	}
}

// A suppressed table has no value getter (its store is the buffer, keyed
// by buffer time): a stream-table join on it is refused, not answered from
// the buffer.
func TestJoinOnSuppressedTableIsRefused(t *testing.T) {
	b := NewBuilder()
	tbl, err := b.Table(TableOptions{Topic: "t", KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	sup := UntilWindowCloses
	sup.TimeLimit = 10
	s, err := b.Suppress(tbl.ID, "", sup)
	if err != nil {
		t.Fatal(err)
	}
	in, err := b.Stream(StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Join(in.ID, s.ID, Function{Native: ValueJoinerFunc(func(v, o []byte) ([]byte, error) { return v, nil })}, false, "", "")
	if err == nil || !strings.Contains(err.Error(), "keeps no store") {
		t.Fatalf("join on a suppressed table: %v, want a refusal", err)
	}
}
