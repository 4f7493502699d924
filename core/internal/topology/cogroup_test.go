package topology

import "testing"

// TestCogroupDescribeGoldens pins the cogroup's names, numbers and
// repartitions against Kafka Streams' CogroupedKStreamImplTest and
// TimeWindowedCogroupedKStreamImplTest (the test each case is named after).
func TestCogroupDescribeGoldens(t *testing.T) {
	tests := []struct {
		name  string
		build func(c check, b *Builder)
		want  string
	}{{
		name: "shouldNameProcessorsAndStoreBasedOnNamedParameter",
		build: func(c check, b *Builder) {
			one := c.id(b.GroupByKey(c.stream(b, "one"), "", "", ""))
			two := c.id(b.GroupByKey(c.stream(b, "two"), "", "", ""))
			cg := c.id(b.Cogroup(one, 0, fn))
			cg = c.id(b.Cogroup(cg, two, fn))
			table := c.id(b.CogroupAggregate(cg, fn, nil, &Materialized{StoreName: "store"}, "test"))
			c.ok(b.To(c.id(b.ToStream(table, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n" +
			"      --> test-cogroup-agg-0\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [two])\n" +
			"      --> test-cogroup-agg-1\n" +
			"    Processor: test-cogroup-agg-0 (stores: [store])\n" +
			"      --> test-cogroup-merge\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: test-cogroup-agg-1 (stores: [store])\n" +
			"      --> test-cogroup-merge\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Processor: test-cogroup-merge (stores: [])\n" +
			"      --> KTABLE-TOSTREAM-0000000005\n" +
			"      <-- test-cogroup-agg-0, test-cogroup-agg-1\n" +
			"    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000006\n" +
			"      <-- test-cogroup-merge\n" +
			"    Sink: KSTREAM-SINK-0000000006 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000005\n\n",
	}, {
		name: "shouldNameRepartitionTopic",
		build: func(c check, b *Builder) {
			s1, s2 := c.stream(b, "one"), c.stream(b, "two")
			one := c.id(b.GroupByKey(c.id(b.Map(s1, fn, "", "", "")), "", "", "repartition-test"))
			two := c.id(b.GroupByKey(s2, "", "", ""))
			cg := c.id(b.Cogroup(c.id(b.Cogroup(one, 0, fn)), two, fn))
			table := c.id(b.CogroupAggregate(cg, fn, nil, nil, ""))
			c.ok(b.To(c.id(b.ToStream(table, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n" +
			"      --> KSTREAM-MAP-0000000002\n" +
			"    Processor: KSTREAM-MAP-0000000002 (stores: [])\n" +
			"      --> repartition-test-repartition-filter\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: repartition-test-repartition-filter (stores: [])\n" +
			"      --> repartition-test-repartition-sink\n" +
			"      <-- KSTREAM-MAP-0000000002\n" +
			"    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)\n" +
			"      <-- repartition-test-repartition-filter\n\n" +
			"  Sub-topology: 1\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [two])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000008\n" +
			"    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000007\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000009\n" +
			"      <-- repartition-test-repartition-source\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000009\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])\n" +
			"      --> KTABLE-TOSTREAM-0000000010\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008\n" +
			"    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000011\n" +
			"      <-- COGROUPKSTREAM-MERGE-0000000009\n" +
			"    Sink: KSTREAM-SINK-0000000011 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000010\n\n",
	}, {
		name: "shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInDifferentCogroups",
		build: func(c check, b *Builder) {
			s1, s2, s3 := c.stream(b, "one"), c.stream(b, "two"), c.stream(b, "three")
			one := c.id(b.GroupByKey(c.id(b.Map(s1, fn, "", "", "")), "", "", ""))
			two := c.id(b.GroupByKey(s2, "", "", ""))
			three := c.id(b.GroupByKey(s3, "", "", ""))
			c.id(b.CogroupAggregate(c.id(b.Cogroup(c.id(b.Cogroup(one, 0, fn)), three, fn)), fn, nil, nil, ""))
			c.id(b.CogroupAggregate(c.id(b.Cogroup(c.id(b.Cogroup(one, 0, fn)), two, fn)), fn, nil, nil, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n" +
			"      --> KSTREAM-MAP-0000000003\n" +
			"    Processor: KSTREAM-MAP-0000000003 (stores: [])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter (stores: [])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink\n" +
			"      <-- KSTREAM-MAP-0000000003\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter (stores: [])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink\n" +
			"      <-- KSTREAM-MAP-0000000003\n" +
			"    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition)\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter\n" +
			"    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition)\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter\n\n" +
			"  Sub-topology: 1\n" +
			"    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000015\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [two])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000016\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000015 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000017\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000016 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000017\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Processor: COGROUPKSTREAM-MERGE-0000000017 (stores: [])\n" +
			"      --> none\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-0000000015, COGROUPKSTREAM-AGGREGATE-0000000016\n\n" +
			"  Sub-topology: 2\n" +
			"    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000008\n" +
			"    Source: KSTREAM-SOURCE-0000000002 (topics: [three])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000009\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000010\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000009 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000010\n" +
			"      <-- KSTREAM-SOURCE-0000000002\n" +
			"    Processor: COGROUPKSTREAM-MERGE-0000000010 (stores: [])\n" +
			"      --> none\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-0000000008, COGROUPKSTREAM-AGGREGATE-0000000009\n\n",
	}, {
		name: "shouldInsertRepartitionsTopicForCogroupsUsedTwice",
		build: func(c check, b *Builder) {
			one := c.id(b.GroupByKey(c.id(b.Map(c.stream(b, "one"), fn, "", "", "")), "", "", "foo"))
			cg := c.id(b.Cogroup(one, 0, fn))
			c.id(b.CogroupAggregate(cg, fn, nil, nil, ""))
			c.id(b.CogroupAggregate(cg, fn, nil, nil, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n" +
			"      --> KSTREAM-MAP-0000000001\n" +
			"    Processor: KSTREAM-MAP-0000000001 (stores: [])\n" +
			"      --> foo-repartition-filter\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: foo-repartition-filter (stores: [])\n" +
			"      --> foo-repartition-sink\n" +
			"      <-- KSTREAM-MAP-0000000001\n" +
			"    Sink: foo-repartition-sink (topic: foo-repartition)\n" +
			"      <-- foo-repartition-filter\n\n" +
			"  Sub-topology: 1\n" +
			"    Source: foo-repartition-source (topics: [foo-repartition])\n" +
			"      --> COGROUPKSTREAM-AGGREGATE-0000000006, COGROUPKSTREAM-AGGREGATE-0000000012\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000006 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000007\n" +
			"      <-- foo-repartition-source\n" +
			"    Processor: COGROUPKSTREAM-AGGREGATE-0000000012 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000008])\n" +
			"      --> COGROUPKSTREAM-MERGE-0000000013\n" +
			"      <-- foo-repartition-source\n" +
			"    Processor: COGROUPKSTREAM-MERGE-0000000007 (stores: [])\n" +
			"      --> none\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-0000000006\n" +
			"    Processor: COGROUPKSTREAM-MERGE-0000000013 (stores: [])\n" +
			"      --> none\n" +
			"      <-- COGROUPKSTREAM-AGGREGATE-0000000012\n\n",
	}, {
		name: "TimeWindowedCogroupedKStreamImplTest.namedParamShouldSetName",
		build: func(c check, b *Builder) {
			g := c.id(b.GroupByKey(c.stream(b, "topic"), "", "", ""))
			w := c.id(b.WindowedBy(c.id(b.Cogroup(g, 0, fn)), Windows{Kind: TimeWindows, Size: 500}))
			c.id(b.CogroupAggregate(w, fn, nil, nil, "foo"))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n" +
			"      --> foo-cogroup-agg-0\n" +
			"    Processor: foo-cogroup-agg-0 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000001])\n" +
			"      --> foo-cogroup-merge\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: foo-cogroup-merge (stores: [])\n" +
			"      --> none\n" +
			"      <-- foo-cogroup-agg-0\n\n",
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

// TestCogroupRefusals: two key-changed grouped streams without Grouped names
// would both repartition through "<store>-repartition" (Kafka Streams fails
// on the duplicate node names too); count and emit_strategy do not apply to
// a cogroup; session windows need a merger.
func TestCogroupRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	b.FoldPrograms = true
	s1, s2 := c.stream(b, "one"), c.stream(b, "two")
	one := c.id(b.GroupByKey(c.id(b.Map(s1, fn, "", "", "")), "", "", ""))
	two := c.id(b.GroupByKey(c.id(b.Map(s2, fn, "", "", "")), "", "", ""))
	cg := c.id(b.Cogroup(c.id(b.Cogroup(one, 0, fn)), two, fn))
	if _, err := b.CogroupAggregate(cg, fn, nil, nil, ""); err == nil {
		t.Error("two unnamed repartitions of one cogroup: built")
	}
	if _, err := b.Count(cg, nil, ""); err == nil {
		t.Error("count of a cogrouped stream: built")
	}
	sw := c.id(b.WindowedBy(cg, Windows{Kind: SessionWindows, Size: 10}))
	if _, err := b.CogroupAggregate(sw, fn, nil, nil, ""); err == nil {
		t.Error("session-windowed cogroup aggregate without a merger: built")
	}
	if _, err := b.EmitStrategy(sw, true); err == nil {
		t.Error("emit_strategy of a windowed cogroup: built")
	}
	if _, err := b.Cogroup(sw, one, fn); err == nil {
		t.Error("cogroup onto a windowed cogroup: built")
	}
}
