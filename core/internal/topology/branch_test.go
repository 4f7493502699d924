package topology

import (
	"strings"
	"testing"
)

// Merge, split and repartition, named as Kafka Streams names them.
func TestMergeSplitRepartitionDescribe(t *testing.T) {
	pred := Function{Token: 2, Name: "p"}
	tests := []struct {
		name  string
		build func(c check, b *Builder)
		want  string
	}{{
		// KStreamImpl#merge: a KSTREAM-MERGE- processor with both streams
		// as predecessors, in one sub-topology (the two-source merge
		// Kafka Streams prints, e.g. in KIP-307's discussion).
		name: "merge two sources",
		build: func(c check, b *Builder) {
			m := c.id(b.Merge(c.stream(b, "a"), c.stream(b, "b"), ""))
			c.ok(b.To(m, "c", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [a])\n" +
			"      --> KSTREAM-MERGE-0000000002\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [b])\n" +
			"      --> KSTREAM-MERGE-0000000002\n" +
			"    Processor: KSTREAM-MERGE-0000000002 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000000, KSTREAM-SOURCE-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000003 (topic: c)\n" +
			"      <-- KSTREAM-MERGE-0000000002\n\n",
	}, {
		// KStreamImpl#repartition(Repartitioned.numberOfPartitions(10)):
		// KSTREAM-REPARTITION-1 names the topic; sink 2, filter 3,
		// source 4 (createRepartitionedSource's order), as Kafka Streams
		// prints it for stream(...).repartition(...).foreach(...).
		name: "repartition unnamed",
		build: func(c check, b *Builder) {
			r := c.id(b.Repartition(c.stream(b, "customer-input"), "", 10))
			c.ok(b.Foreach(r, fn, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [customer-input])\n" +
			"      --> KSTREAM-FILTER-0000000003\n" +
			"    Processor: KSTREAM-FILTER-0000000003 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Sink: KSTREAM-SINK-0000000002 (topic: KSTREAM-REPARTITION-0000000001-repartition)\n" +
			"      <-- KSTREAM-FILTER-0000000003\n\n" +
			"  Sub-topology: 1\n" +
			"    Source: KSTREAM-SOURCE-0000000004 (topics: [KSTREAM-REPARTITION-0000000001-repartition])\n" +
			"      --> KSTREAM-FOREACH-0000000005\n" +
			"    Processor: KSTREAM-FOREACH-0000000005 (stores: [])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000004\n\n",
	}, {
		// Repartitioned.as("by-user"): the topic and its nodes are named
		// after it; the name takes no number, the three nodes do.
		name: "repartition named",
		build: func(c check, b *Builder) {
			r := c.id(b.Repartition(c.stream(b, "in"), "by-user", 0))
			c.ok(b.To(r, "out", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n" +
			"      --> by-user-repartition-filter\n" +
			"    Processor: by-user-repartition-filter (stores: [])\n" +
			"      --> by-user-repartition-sink\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Sink: by-user-repartition-sink (topic: by-user-repartition)\n" +
			"      <-- by-user-repartition-filter\n\n" +
			"  Sub-topology: 1\n" +
			"    Source: by-user-repartition-source (topics: [by-user-repartition])\n" +
			"      --> KSTREAM-SINK-0000000004\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: out)\n" +
			"      <-- by-user-repartition-source\n\n",
	}, {
		// BranchedKStreamImpl: the splitter KSTREAM-BRANCH-1; branches are
		// the splitter's name + their number (1, 2, ...) or Branched.as
		// name, the default branch's number 0, each burning a number
		// (builder.newProcessorName(branchChildName)); sinks follow.
		name: "split with a default branch",
		build: func(c check, b *Builder) {
			hs, err := b.Split(c.stream(b, "in"), "", []Branch{{Predicate: pred}, {Predicate: pred, Name: "b"}}, true, "")
			c.ok(err)
			for i, h := range hs {
				c.ok(b.To(h.ID, "out"+string(rune('1'+i)), "", "", ""))
			}
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n" +
			"      --> KSTREAM-BRANCH-0000000001\n" +
			"    Processor: KSTREAM-BRANCH-0000000001 (stores: [])\n" +
			"      --> KSTREAM-BRANCH-00000000010, KSTREAM-BRANCH-00000000011, KSTREAM-BRANCH-0000000001b\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-BRANCH-00000000010 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000007\n" +
			"      <-- KSTREAM-BRANCH-0000000001\n" +
			"    Processor: KSTREAM-BRANCH-00000000011 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000005\n" +
			"      <-- KSTREAM-BRANCH-0000000001\n" +
			"    Processor: KSTREAM-BRANCH-0000000001b (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000006\n" +
			"      <-- KSTREAM-BRANCH-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000005 (topic: out1)\n" +
			"      <-- KSTREAM-BRANCH-00000000011\n" +
			"    Sink: KSTREAM-SINK-0000000006 (topic: out2)\n" +
			"      <-- KSTREAM-BRANCH-0000000001b\n" +
			"    Sink: KSTREAM-SINK-0000000007 (topic: out3)\n" +
			"      <-- KSTREAM-BRANCH-00000000010\n\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder()
			tt.build(check{t}, b)
			if got := describe(t, b); got != tt.want {
				t.Errorf("describe:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// A split named "sp-" names its branches "sp-<name>"; a merged stream
// needs a repartition before an aggregation when either input does.
func TestSplitNamesAndMergeRepartition(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	in := c.stream(b, "in")
	hs, err := b.Split(in, "sp-", []Branch{{Predicate: fn, Name: "big"}}, true, "rest")
	c.ok(err)
	if hs[0].Node.Name != "sp-big" || hs[1].Node.Name != "sp-rest" {
		t.Errorf("branch names %s, %s", hs[0].Node.Name, hs[1].Node.Name)
	}
	keyed := c.id(b.SelectKey(hs[0].ID, fn, "", ""))
	m := c.id(b.Merge(keyed, hs[1].ID, "both"))
	g := c.id(b.GroupByKey(m, "", "", ""))
	c.id(b.Count(g, nil, ""))
	if d := describe(t, b); !strings.Contains(d, "-repartition)") {
		t.Errorf("a count of a merge with a key-changed input does not repartition:\n%s", d)
	}
}

func TestMergeSplitRepartitionRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	strs := c.id(b.Stream(StreamOptions{Topics: []string{"a"}, KeySerde: "string", ValueSerde: "string"}))
	longs := c.id(b.Stream(StreamOptions{Topics: []string{"b"}, KeySerde: "string", ValueSerde: "long"}))
	g := c.id(b.GroupByKey(strs, "", "", ""))
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"merge of different serdes", func() error { _, err := b.Merge(strs, longs, ""); return err }(), []string{"handle 1 carries (string, string)", "handle 2 (string, long)"}},
		{"merge of a grouped stream", func() error { _, err := b.Merge(strs, g, ""); return err }(), []string{"handle 3 is a grouped stream"}},
		{"split of a missing handle", func() error { _, err := b.Split(99, "", nil, true, ""); return err }(), []string{"handle 99", "does not exist"}},
		{"split branch without predicate", func() error { _, err := b.Split(strs, "", []Branch{{}}, false, ""); return err }(), []string{"branch 1 names no predicate"}},
		{"split branches of one name", func() error {
			_, err := b.Split(strs, "s-", []Branch{{Predicate: fn, Name: "x"}, {Predicate: fn, Name: "x"}}, false, "")
			return err
		}(), []string{`node "s-x", which exists already`}},
		{"repartition with negative partitions", func() error { _, err := b.Repartition(strs, "", -1); return err }(), []string{"partitions -1"}},
		{"repartition with an illegal name", func() error { _, err := b.Repartition(strs, "a b", 0); return err }(), []string{`"a b"`, "illegal"}},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(tt.err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tt.name, tt.err, w)
			}
		}
	}
	// Refused calls take no number: the sources took 0 and 1.
	h, err := b.MapValues(strs, fn, "", "")
	c.ok(err)
	if h.Node.Name != "KSTREAM-MAPVALUES-0000000002" {
		t.Errorf("after refused calls, the next node is %s", h.Node.Name)
	}
}
