package topology

import (
	"fmt"
	"strings"
	"testing"
)

// fn is a host function token, enough for topology tests.
var fn = Function{Token: 1, Name: "f"}

// check fails the test on a refused call; its methods take a builder
// call's results directly.
type check struct{ t *testing.T }

// id returns the handle's id.
func (c check) id(h *Handle, err error) uint64 {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	return h.ID
}

func (c check) ok(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c check) stream(b *Builder, topics ...string) uint64 {
	c.t.Helper()
	return c.id(b.Stream(StreamOptions{Topics: topics}))
}

func describe(t *testing.T, b *Builder) string {
	t.Helper()
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo.Describe()
}

// TestDescribeGoldens builds chains with the Builder and compares describe()
// with the text Kafka Streams prints for the same DSL calls. Each case says
// where its text comes from. Kafka's documentation pages print the text
// without the blank line that ends every sub-topology in toString(); the
// goldens have it, as Kafka's own tests (TopologyTest) do.
func TestDescribeGoldens(t *testing.T) {
	tests := []struct {
		name  string
		build func(c check, b *Builder)
		want  string
	}{{
		// TopologyTest#kGroupedStreamZeroArgCountShouldPreserveTopologyStructure:
		// count() takes no number of its own; store 1, processor 2.
		name: "groupByKey count zero-arg",
		build: func(c check, b *Builder) {
			g := c.id(b.GroupByKey(c.stream(b, "input-topic"), "", "", ""))
			c.id(b.Count(g, nil, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n" +
			"      --> KSTREAM-AGGREGATE-0000000002\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// TopologyTest#kGroupedStreamNamedMaterializedCountShouldPreserveTopologyStructure:
		// a named store takes no number.
		name: "groupByKey count Materialized.as",
		build: func(c check, b *Builder) {
			g := c.id(b.GroupByKey(c.stream(b, "input-topic"), "", "", ""))
			c.id(b.Count(g, &Materialized{StoreName: "count-store"}, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n" +
			"      --> KSTREAM-AGGREGATE-0000000001\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000001 (stores: [count-store])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// TopologyTest#kGroupedStreamAnonymousMaterializedCountShouldPreserveTopologyStructure:
		// Materialized.with(null, Serdes.Long()) burns number 1.
		name: "groupByKey count Materialized.with",
		build: func(c check, b *Builder) {
			g := c.id(b.GroupByKey(c.stream(b, "input-topic"), "", "", ""))
			c.id(b.Count(g, &Materialized{ValueSerde: "long"}, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n" +
			"      --> KSTREAM-AGGREGATE-0000000003\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// Kafka docs, streams/developer-guide/dsl-topology-naming.html,
		// "Readability Issues": stream("input").filter().mapValues().to("output").
		name: "filter mapValues to",
		build: func(c check, b *Builder) {
			f := c.id(b.Filter(c.stream(b, "input"), fn, ""))
			c.ok(b.To(c.id(b.MapValues(f, fn, "", "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-FILTER-0000000001\n" +
			"    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n" +
			"      --> KSTREAM-MAPVALUES-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000003\n" +
			"      <-- KSTREAM-FILTER-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000003 (topic: output)\n" +
			"      <-- KSTREAM-MAPVALUES-0000000002\n\n",
	}, {
		// Kafka docs, dsl-topology-naming.html: every processor named with
		// Consumed.as, Named.as and Produced.as.
		name: "all named",
		build: func(c check, b *Builder) {
			s := c.id(b.Stream(StreamOptions{Topics: []string{"input"}, Name: "Customer_transactions_input_topic"}))
			f := c.id(b.Filter(s, fn, "filter_out_invalid_txns"))
			m := c.id(b.MapValues(f, fn, "", "Map_values_to_first_6_characters"))
			c.ok(b.To(m, "output", "", "", "Mapped_transactions_output_topic"))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: Customer_transactions_input_topic (topics: [input])\n" +
			"      --> filter_out_invalid_txns\n" +
			"    Processor: filter_out_invalid_txns (stores: [])\n" +
			"      --> Map_values_to_first_6_characters\n" +
			"      <-- Customer_transactions_input_topic\n" +
			"    Processor: Map_values_to_first_6_characters (stores: [])\n" +
			"      --> Mapped_transactions_output_topic\n" +
			"      <-- filter_out_invalid_txns\n" +
			"    Sink: Mapped_transactions_output_topic (topic: output)\n" +
			"      <-- Map_values_to_first_6_characters\n\n",
	}, {
		// Kafka docs, dsl-topology-naming.html, "Changing Names":
		// stream("input").groupByKey().count().toStream().to("output").
		name: "groupByKey count toStream to",
		build: func(c check, b *Builder) {
			n := c.id(b.Count(c.id(b.GroupByKey(c.stream(b, "input"), "", "", "")), nil, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-AGGREGATE-0000000002\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])\n" +
			"      --> KTABLE-TOSTREAM-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000004\n" +
			"      <-- KSTREAM-AGGREGATE-0000000002\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000003\n\n",
	}, {
		// Kafka docs, dsl-topology-naming.html: the same with a filter
		// first, which shifts the store's name. filter keeps the key, so no
		// repartition.
		name: "filter groupByKey count toStream to",
		build: func(c check, b *Builder) {
			f := c.id(b.Filter(c.stream(b, "input"), fn, ""))
			n := c.id(b.Count(c.id(b.GroupByKey(f, "", "", "")), nil, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-FILTER-0000000001\n" +
			"    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n" +
			"      --> KSTREAM-AGGREGATE-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n" +
			"      --> KTABLE-TOSTREAM-0000000004\n" +
			"      <-- KSTREAM-FILTER-0000000001\n" +
			"    Processor: KTABLE-TOSTREAM-0000000004 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000005\n" +
			"      <-- KSTREAM-AGGREGATE-0000000003\n" +
			"    Sink: KSTREAM-SINK-0000000005 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000004\n\n",
	}, {
		// Kafka docs, dsl-topology-naming.html: the same with
		// count(Materialized.as("Purchase_count_store")).
		name: "filter groupByKey count Materialized.as toStream to",
		build: func(c check, b *Builder) {
			f := c.id(b.Filter(c.stream(b, "input"), fn, ""))
			n := c.id(b.Count(c.id(b.GroupByKey(f, "", "", "")), &Materialized{StoreName: "Purchase_count_store"}, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-FILTER-0000000001\n" +
			"    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n" +
			"      --> KSTREAM-AGGREGATE-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [Purchase_count_store])\n" +
			"      --> KTABLE-TOSTREAM-0000000003\n" +
			"      <-- KSTREAM-FILTER-0000000001\n" +
			"    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000004\n" +
			"      <-- KSTREAM-AGGREGATE-0000000002\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000003\n\n",
	}, {
		// The chain of KAFKA-STREAMS-FACTS.md: like the filter case above
		// (dsl-topology-naming.html), mapValues keeps the key: source 0,
		// mapValues 1, store 2, aggregate 3, toStream 4, sink 5.
		name: "mapValues groupByKey count toStream to",
		build: func(c check, b *Builder) {
			m := c.id(b.MapValues(c.stream(b, "input"), fn, "", ""))
			n := c.id(b.Count(c.id(b.GroupByKey(m, "", "", "")), nil, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-MAPVALUES-0000000001\n" +
			"    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])\n" +
			"      --> KSTREAM-AGGREGATE-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n" +
			"      --> KTABLE-TOSTREAM-0000000004\n" +
			"      <-- KSTREAM-MAPVALUES-0000000001\n" +
			"    Processor: KTABLE-TOSTREAM-0000000004 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000005\n" +
			"      <-- KSTREAM-AGGREGATE-0000000003\n" +
			"    Sink: KSTREAM-SINK-0000000005 (topic: output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000004\n\n",
	}, {
		// Kafka docs, streams/tutorial.html ("Pipe", Kafka 2.x docs onward):
		// stream("streams-pipe-input").to("streams-pipe-output").
		name: "pipe",
		build: func(c check, b *Builder) {
			c.ok(b.To(c.stream(b, "streams-pipe-input"), "streams-pipe-output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-pipe-input])\n" +
			"      --> KSTREAM-SINK-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000001 (topic: streams-pipe-output)\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// Kafka docs, streams/tutorial.html ("LineSplit").
		name: "line split",
		build: func(c check, b *Builder) {
			w := c.id(b.FlatMapValues(c.stream(b, "streams-linesplit-input"), fn, "", ""))
			c.ok(b.To(w, "streams-linesplit-output", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-linesplit-input])\n" +
			"      --> KSTREAM-FLATMAPVALUES-0000000001\n" +
			"    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Sink: KSTREAM-SINK-0000000002 (topic: streams-linesplit-output)\n" +
			"      <-- KSTREAM-FLATMAPVALUES-0000000001\n\n",
	}, {
		// Kafka docs, streams/tutorial.html ("WordCount"): flatMapValues,
		// groupBy, count(Materialized.as("counts-store")), toStream, to. The
		// repartition is named after the store; numbers 4-6 are burnt.
		name: "word count",
		build: func(c check, b *Builder) {
			w := c.id(b.FlatMapValues(c.stream(b, "streams-wordcount-input"), fn, "", ""))
			n := c.id(b.Count(c.id(b.GroupBy(w, fn, "", "", "")), &Materialized{StoreName: "counts-store"}, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "streams-wordcount-output", "string", "long", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-wordcount-input])\n" +
			"      --> KSTREAM-FLATMAPVALUES-0000000001\n" +
			"    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])\n" +
			"      --> KSTREAM-KEY-SELECT-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])\n" +
			"      --> counts-store-repartition-filter\n" +
			"      <-- KSTREAM-FLATMAPVALUES-0000000001\n" +
			"    Processor: counts-store-repartition-filter (stores: [])\n" +
			"      --> counts-store-repartition-sink\n" +
			"      <-- KSTREAM-KEY-SELECT-0000000002\n" +
			"    Sink: counts-store-repartition-sink (topic: counts-store-repartition)\n" +
			"      <-- counts-store-repartition-filter\n" +
			"\n" +
			"  Sub-topology: 1\n" +
			"    Source: counts-store-repartition-source (topics: [counts-store-repartition])\n" +
			"      --> KSTREAM-AGGREGATE-0000000003\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts-store])\n" +
			"      --> KTABLE-TOSTREAM-0000000007\n" +
			"      <-- counts-store-repartition-source\n" +
			"    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000008\n" +
			"      <-- KSTREAM-AGGREGATE-0000000003\n" +
			"    Sink: KSTREAM-SINK-0000000008 (topic: streams-wordcount-output)\n" +
			"      <-- KTABLE-TOSTREAM-0000000007\n\n",
	}, {
		// Generated repartition names (the store name matches
		// "KSTREAM.*-[0-9]{10}", so createRepartitionedSource keeps the
		// generated sink 4, filter 5, source 6). No Kafka test prints this
		// chain; the same text (from groupBy, which makes the same
		// KSTREAM-KEY-SELECT node) is printed by real Kafka Streams in
		// third-party write-ups, and SuppressTopologyTest pins the numbering
		// of groupBy + count up to the repartition.
		name: "selectKey groupByKey count toStream to",
		build: func(c check, b *Builder) {
			k := c.id(b.SelectKey(c.stream(b, "sourceTopic"), fn, "", ""))
			n := c.id(b.Count(c.id(b.GroupByKey(k, "", "", "")), nil, ""))
			c.ok(b.To(c.id(b.ToStream(n, "")), "targetTopic", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [sourceTopic])\n" +
			"      --> KSTREAM-KEY-SELECT-0000000001\n" +
			"    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n" +
			"      --> KSTREAM-FILTER-0000000005\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-FILTER-0000000005 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000004\n" +
			"      <-- KSTREAM-KEY-SELECT-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)\n" +
			"      <-- KSTREAM-FILTER-0000000005\n" +
			"\n" +
			"  Sub-topology: 1\n" +
			"    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])\n" +
			"      --> KSTREAM-AGGREGATE-0000000003\n" +
			"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n" +
			"      --> KTABLE-TOSTREAM-0000000007\n" +
			"      <-- KSTREAM-SOURCE-0000000006\n" +
			"    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000008\n" +
			"      <-- KSTREAM-AGGREGATE-0000000003\n" +
			"    Sink: KSTREAM-SINK-0000000008 (topic: targetTopic)\n" +
			"      <-- KTABLE-TOSTREAM-0000000007\n\n",
	}, {
		// SuppressTopologyTest (final-suppression cases) up to the count:
		// groupBy then count(Materialized.as("counts")): the repartition is
		// named after the store, its numbers 3-5 burnt.
		name: "groupBy count Materialized.as",
		build: func(c check, b *Builder) {
			g := c.id(b.GroupBy(c.stream(b, "input"), fn, "string", "string", ""))
			c.id(b.Count(g, &Materialized{StoreName: "counts"}, ""))
		},
		want: "Topologies:\n" +
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
			"      --> none\n" +
			"      <-- counts-repartition-source\n\n",
	}, {
		// Branching: the source feeds a peek and a mapValues; the bigger
		// sub-tree is listed first. Real Kafka Streams output for these calls
		// appears in third-party material (a Spring Cloud Stream sample);
		// the ordering rule is InternalTopologyBuilder.NodeComparator.
		name: "peek and mapValues from one stream",
		build: func(c check, b *Builder) {
			s := c.stream(b, "in")
			c.id(b.Peek(s, fn, ""))
			m := c.id(b.MapValues(s, fn, "", ""))
			c.id(b.Peek(m, fn, ""))
			c.ok(b.To(m, "out", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n" +
			"      --> KSTREAM-MAPVALUES-0000000002, KSTREAM-PEEK-0000000001\n" +
			"    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n" +
			"      --> KSTREAM-PEEK-0000000003, KSTREAM-SINK-0000000004\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-PEEK-0000000001 (stores: [])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-PEEK-0000000003 (stores: [])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-MAPVALUES-0000000002\n" +
			"    Sink: KSTREAM-SINK-0000000004 (topic: out)\n" +
			"      <-- KSTREAM-MAPVALUES-0000000002\n\n",
	}, {
		// map, filterNot, peek, foreach: one number each (filterNot is a
		// KSTREAM-FILTER- in KStreamImpl); foreach ends the chain.
		name: "map filterNot peek foreach",
		build: func(c check, b *Builder) {
			m := c.id(b.Map(c.stream(b, "input"), fn, "", "", ""))
			p := c.id(b.Peek(c.id(b.FilterNot(m, fn, "")), fn, ""))
			c.ok(b.Foreach(p, fn, ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
			"      --> KSTREAM-MAP-0000000001\n" +
			"    Processor: KSTREAM-MAP-0000000001 (stores: [])\n" +
			"      --> KSTREAM-FILTER-0000000002\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Processor: KSTREAM-FILTER-0000000002 (stores: [])\n" +
			"      --> KSTREAM-PEEK-0000000003\n" +
			"      <-- KSTREAM-MAP-0000000001\n" +
			"    Processor: KSTREAM-PEEK-0000000003 (stores: [])\n" +
			"      --> KSTREAM-FOREACH-0000000004\n" +
			"      <-- KSTREAM-FILTER-0000000002\n" +
			"    Processor: KSTREAM-FOREACH-0000000004 (stores: [])\n" +
			"      --> none\n" +
			"      <-- KSTREAM-PEEK-0000000003\n\n",
	}, {
		// StreamsBuilderTest#shouldUseSpecifiedNameForSinkProcessor: a named
		// operator still takes a number (NamedInternal.orElseGenerateWithPrefix
		// burns it), so the second sink is 2, not 1.
		name: "named sink burns a number",
		build: func(c check, b *Builder) {
			s := c.stream(b, "stream-topic")
			c.ok(b.To(s, "stream-topic-two", "", "", "sink-processor"))
			c.ok(b.To(s, "stream-topic-two", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [stream-topic])\n" +
			"      --> KSTREAM-SINK-0000000002, sink-processor\n" +
			"    Sink: KSTREAM-SINK-0000000002 (topic: stream-topic-two)\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Sink: sink-processor (topic: stream-topic-two)\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// One source reading several topics: Source.toString prints a
		// java.util.HashSet of them, so the order is HashSet's, not the
		// order given (checked against JDK 17:
		// new HashSet<>(List.of("orders", "payments", "refunds"))).
		name: "several topics in one source",
		build: func(c check, b *Builder) {
			c.ok(b.To(c.stream(b, "orders", "payments", "refunds"), "all", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [payments, orders, refunds])\n" +
			"      --> KSTREAM-SINK-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000001 (topic: all)\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n\n",
	}, {
		// Two unconnected streams are two sub-topologies, numbered in the
		// order their sources were written (TopologyTest#
		// multipleSourcesWithProcessorsShouldHaveDistinctSubtopologies for
		// the structure); calls may interleave.
		name: "two independent streams",
		build: func(c check, b *Builder) {
			a := c.stream(b, "topic-a")
			n := c.stream(b, "topic-b")
			c.ok(b.To(c.id(b.MapValues(n, fn, "", "")), "out-b", "", "", ""))
			c.ok(b.To(c.id(b.Filter(a, fn, "")), "out-a", "", "", ""))
		},
		want: "Topologies:\n" +
			"   Sub-topology: 0\n" +
			"    Source: KSTREAM-SOURCE-0000000000 (topics: [topic-a])\n" +
			"      --> KSTREAM-FILTER-0000000004\n" +
			"    Processor: KSTREAM-FILTER-0000000004 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000005\n" +
			"      <-- KSTREAM-SOURCE-0000000000\n" +
			"    Sink: KSTREAM-SINK-0000000005 (topic: out-a)\n" +
			"      <-- KSTREAM-FILTER-0000000004\n" +
			"\n" +
			"  Sub-topology: 1\n" +
			"    Source: KSTREAM-SOURCE-0000000001 (topics: [topic-b])\n" +
			"      --> KSTREAM-MAPVALUES-0000000002\n" +
			"    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n" +
			"      --> KSTREAM-SINK-0000000003\n" +
			"      <-- KSTREAM-SOURCE-0000000001\n" +
			"    Sink: KSTREAM-SINK-0000000003 (topic: out-b)\n" +
			"      <-- KSTREAM-MAPVALUES-0000000002\n\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder()
			tt.build(check{t}, b)
			if got := describe(t, b); got != tt.want {
				t.Errorf("describe() differs from Kafka Streams'\n%s", diffLines(got, tt.want))
			}
		})
	}
}

// TestDescribeGroupedNames pins what a Grouped name does: groupBy names its
// key selector with it (KStreamImpl.groupBy passes it to internalSelectKey,
// taking a number all the same), and the repartition topic is
// "<name>-repartition" (RepartitionTopicNamingTest#
// shouldKeepRepartitionTopicNameForGroupByNoWindows checks the topic).
func TestDescribeGroupedNames(t *testing.T) {
	c, b := check{t}, NewBuilder()
	k := c.id(b.SelectKey(c.stream(b, "topic"), fn, "", ""))
	c.id(b.Count(c.id(b.GroupBy(k, fn, "", "", "kstream-grouping")), nil, ""))
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n" +
		"      --> KSTREAM-KEY-SELECT-0000000001\n" +
		"    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n" +
		"      --> kstream-grouping\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Processor: kstream-grouping (stores: [])\n" +
		"      --> kstream-grouping-repartition-filter\n" +
		"      <-- KSTREAM-KEY-SELECT-0000000001\n" +
		"    Processor: kstream-grouping-repartition-filter (stores: [])\n" +
		"      --> kstream-grouping-repartition-sink\n" +
		"      <-- kstream-grouping\n" +
		"    Sink: kstream-grouping-repartition-sink (topic: kstream-grouping-repartition)\n" +
		"      <-- kstream-grouping-repartition-filter\n" +
		"\n" +
		"  Sub-topology: 1\n" +
		"    Source: kstream-grouping-repartition-source (topics: [kstream-grouping-repartition])\n" +
		"      --> KSTREAM-AGGREGATE-0000000004\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])\n" +
		"      --> none\n" +
		"      <-- kstream-grouping-repartition-source\n\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe() differs\n%s", diffLines(got, want))
	}
}

// TestDescribedEdges checks that the structured form matches the text: for
// a branching node, describe order (by sub-tree size) differs from the
// forwarding order in Node.Successors (the order the children were made).
func TestDescribedEdges(t *testing.T) {
	c, b := check{t}, NewBuilder()
	s := c.stream(b, "in")
	c.id(b.Peek(s, fn, ""))
	m := c.id(b.MapValues(s, fn, "", ""))
	c.ok(b.To(m, "out", "", "", ""))
	topo, err := b.Topology()
	c.ok(err)
	sub := topo.Subtopologies[0]
	src := sub.Nodes[0]
	if got := names(src.Successors); got != "KSTREAM-PEEK-0000000001, KSTREAM-MAPVALUES-0000000002" {
		t.Errorf("Successors (forwarding order) = %s", got)
	}
	succ, pred := sub.DescribedEdges(src)
	if got := names(succ); got != "KSTREAM-MAPVALUES-0000000002, KSTREAM-PEEK-0000000001" {
		t.Errorf("described successors = %s", got)
	}
	if len(pred) != 0 {
		t.Errorf("described predecessors of a source = %s", names(pred))
	}
}

func names(ns []*Node) string { return nodeNames(ns) }

// diffLines shows two texts side by side from the first line that differs.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q\n--- got (full):\n%s", i+1, gl, wl, got)
		}
	}
	return "(texts differ only in length)"
}

// KGroupedTable.reduce names its store KTABLE-AGGREGATE-STATE-STORE-, as
// count and aggregate do (KGroupedTableImpl builds every
// MaterializedInternal with AGGREGATE_NAME); its processor is
// KTABLE-REDUCE-. Kafka Streams 4.1.1 prints this text for
// table("accounts").groupBy(f).reduce(adder, subtractor) (the conformance
// case table_reduce_adder_subtractor runs it through Kafka Streams).
func TestDescribeTableReduceStoreName(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	tbl := c.id(b.Table(TableOptions{Topic: "accounts"}))
	g := c.id(b.TableGroupBy(tbl, fn, "", "", ""))
	c.id(b.TableReduce(g, fn, fn, nil, ""))
	got := describe(t, b)
	for _, want := range []string{
		"Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)",
		"Processor: KTABLE-REDUCE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe() lacks %q:\n%s", want, got)
		}
	}
}
