package topology

import (
	"maps"
	"strings"
	"testing"
)

// KStream.join(KTable), as Kafka Streams prints it for
// stream(in).join(table(compacted), joiner).to(out): the table's store
// takes number 1 before its source (2) and table source (3); the join (4)
// reads that store, which puts both sources in one sub-topology.
func TestStreamTableJoinDescribe(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "test-kstream-input-topic")
	tb := c.id(b.Table(TableOptions{Topic: "test-kstream-compacted-topic"}))
	j := c.id(b.Join(s, tb, fn, false, "", ""))
	c.ok(b.To(j, "test-kstream-output-topic", "", "", ""))
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [test-kstream-input-topic])\n" +
		"      --> KSTREAM-JOIN-0000000004\n" +
		"    Processor: KSTREAM-JOIN-0000000004 (stores: [test-kstream-compacted-topic-STATE-STORE-0000000001])\n" +
		"      --> KSTREAM-SINK-0000000005\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Source: KSTREAM-SOURCE-0000000002 (topics: [test-kstream-compacted-topic])\n" +
		"      --> KTABLE-SOURCE-0000000003\n" +
		"    Sink: KSTREAM-SINK-0000000005 (topic: test-kstream-output-topic)\n" +
		"      <-- KSTREAM-JOIN-0000000004\n" +
		"    Processor: KTABLE-SOURCE-0000000003 (stores: [test-kstream-compacted-topic-STATE-STORE-0000000001])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-SOURCE-0000000002\n\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// A key-changed stream is repartitioned before the join, through a topic
// named after the stream's node (KStreamImpl.repartitionForJoin), whose
// numbers come before the join's; a left join is KSTREAM-LEFTJOIN-.
func TestStreamTableJoinRepartitionsAKeyChangedStream(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.id(b.SelectKey(c.stream(b, "orders"), fn, "", ""))
	tb := c.id(b.Table(TableOptions{Topic: "customers"}))
	j, err := b.Join(s, tb, fn, true, "", "")
	c.ok(err)
	if j.Node.Name != "KSTREAM-LEFTJOIN-0000000008" {
		t.Errorf("left join node %s", j.Node.Name)
	}
	d := describe(t, b)
	for _, w := range []string{
		"Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-KEY-SELECT-0000000001-repartition)",
		"Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-KEY-SELECT-0000000001-repartition])",
		"Processor: KSTREAM-LEFTJOIN-0000000008 (stores: [customers-STATE-STORE-0000000002])",
	} {
		if !strings.Contains(d, w) {
			t.Errorf("describe lacks %q:\n%s", w, d)
		}
	}
}

func TestStreamTableJoinRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.id(b.Stream(StreamOptions{Topics: []string{"a"}, KeySerde: "string"}))
	longs := c.id(b.Table(TableOptions{Topic: "t", KeySerde: "long"}))
	strs := c.id(b.Table(TableOptions{Topic: "u", KeySerde: "string"}))
	// A filter reads through its value getter; one over an unmaterialized
	// join result reaches no store.
	filtered := c.id(b.TableFilter(c.id(b.TableJoin(strs, strs, fn, TableJoinOptions{})), fn, nil, ""))
	g := c.id(b.GroupByKey(s, "", "", ""))
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"key serdes differ", func() error { _, err := b.Join(s, longs, fn, false, "", ""); return err }(), "string keys and table handle 2 long keys"},
		{"table keeps no store", func() error { _, err := b.Join(s, filtered, fn, false, "", ""); return err }(), "keeps no store"},
		{"not a table", func() error { _, err := b.Join(s, g, fn, false, "", ""); return err }(), "needs a table, but handle 6 is a grouped stream"},
		{"no joiner", func() error { _, err := b.Join(s, strs, Function{}, false, "", ""); return err }(), "names no function"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v; want it to say %q", tt.name, tt.err, tt.want)
		}
	}
}

// keptNullKeys maps each repartition filter of b's topology to whether it
// keeps null keys.
func keptNullKeys(t *testing.T, b *Builder) map[string]bool {
	t.Helper()
	top, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, s := range top.Subtopologies {
		for _, n := range s.Nodes {
			if n.Op == OpRepartitionFilter {
				kept[n.Name] = n.KeepNullKeys
			}
		}
	}
	return kept
}

// A repartition's filter keeps null keys when a left join is downstream of
// it, however far (InternalStreamsBuilder.rewriteRepartitionNodes,
// KIP-962), and drops them before an inner join; the filter node is there
// either way.
func TestRepartitionKeepsNullKeysForALeftJoinDownstream(t *testing.T) {
	for _, tc := range []struct {
		name string
		left bool
	}{{"inner", false}, {"left", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := check{t}
			b := NewBuilder()
			s := c.id(b.SelectKey(c.stream(b, "orders"), fn, "", ""))
			tb := c.id(b.Table(TableOptions{Topic: "customers"}))
			c.id(b.Join(s, tb, fn, tc.left, "", ""))
			want := map[string]bool{"KSTREAM-FILTER-0000000006": tc.left}
			if got := keptNullKeys(t, b); !maps.Equal(got, want) {
				t.Errorf("repartition filters keeping null keys: %v, want %v", got, want)
			}
		})
	}
	t.Run("past an aggregation", func(t *testing.T) {
		c := check{t}
		b := NewBuilder()
		s := c.id(b.SelectKey(c.stream(b, "orders"), fn, "", ""))
		counts := c.id(b.Count(c.id(b.GroupByKey(s, "", "", "")), nil, ""))
		changes := c.id(b.ToStream(counts, ""))
		before := keptNullKeys(t, b)
		tb := c.id(b.Table(TableOptions{Topic: "customers"}))
		c.id(b.Join(changes, tb, fn, true, "", ""))
		after := keptNullKeys(t, b)
		if len(after) != 1 {
			t.Fatalf("repartition filters: %v, want the count's only", after)
		}
		for name, kept := range after {
			if !kept || before[name] {
				t.Errorf("filter %s keeps null keys: %v before the left join, %v after; want false, true", name, before[name], kept)
			}
		}
	})
}
