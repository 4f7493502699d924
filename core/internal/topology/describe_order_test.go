package topology

import (
	"strings"
	"testing"
)

// graph builds a hand-made Topology for describe tests: nodes are given in
// the order Kafka Streams writes them (which fixes seq), edges by name.
type graph struct {
	nodes  []*Node
	byName map[string]*Node
}

func (g *graph) add(n *Node, preds ...string) *Node {
	if g.byName == nil {
		g.byName = map[string]*Node{}
	}
	n.seq = len(g.nodes)
	for _, p := range preds {
		link(g.byName[p], n)
	}
	g.nodes = append(g.nodes, n)
	g.byName[n.Name] = n
	return n
}

func (g *graph) source(name string, topics ...string) {
	g.add(&Node{Name: name, Type: Source, Topics: topics})
}
func (g *graph) processor(name string, stores []string, preds ...string) {
	g.add(&Node{Name: name, Type: Processor, Stores: stores}, preds...)
}
func (g *graph) sink(name, topic string, pred string) {
	g.add(&Node{Name: name, Type: Sink, Topic: topic}, pred)
}

// topology groups the nodes into sub-topologies given by their names.
func (g *graph) topology(subs ...[]string) *Topology {
	t := &Topology{}
	for id, names := range subs {
		s := &Subtopology{ID: id}
		for _, n := range g.nodes {
			for _, name := range names {
				if n.Name == name {
					s.Nodes = append(s.Nodes, n)
				}
			}
		}
		t.Subtopologies = append(t.Subtopologies, s)
	}
	return t
}

// TestDescribeReproducesJavaCollectionOrder pins describe() against a topology
// whose text Kafka Streams' own test fixes, and whose successor lists are NOT
// sorted by final sub-tree size (the TreeSets are filled while sizes grow):
// RepartitionTopicNamingTest#shouldReuseFirstRepartitionTopicNameWhenOptimizing,
// EXPECTED_UNOPTIMIZED_TOPOLOGY. The graph (with joins, reduce and process,
// which polystreams' builder does not have) is made by hand, nodes in the
// order Kafka writes them (build priority of the DSL calls in buildTopology).
func TestDescribeReproducesJavaCollectionOrder(t *testing.T) {
	var g graph
	g.source("KSTREAM-SOURCE-0000000000", "input")
	g.processor("KSTREAM-MAP-0000000001", nil, "KSTREAM-SOURCE-0000000000")
	g.processor("KSTREAM-FILTER-0000000002", nil, "KSTREAM-MAP-0000000001")
	g.processor("KSTREAM-MAPVALUES-0000000003", nil, "KSTREAM-FILTER-0000000002")
	g.processor("KSTREAM-PROCESSOR-0000000004", nil, "KSTREAM-MAPVALUES-0000000003")
	// groupByKey(Grouped.as("count-stream")).count(Materialized.with(..))
	g.processor("count-stream-repartition-filter", nil, "KSTREAM-MAP-0000000001")
	g.sink("count-stream-repartition-sink", "count-stream-repartition", "count-stream-repartition-filter")
	g.source("count-stream-repartition-source", "count-stream-repartition")
	g.processor("KSTREAM-AGGREGATE-0000000007", []string{"KSTREAM-AGGREGATE-STATE-STORE-0000000006"}, "count-stream-repartition-source")
	g.processor("KTABLE-TOSTREAM-0000000011", nil, "KSTREAM-AGGREGATE-0000000007")
	g.sink("KSTREAM-SINK-0000000012", "outputTopic_0", "KTABLE-TOSTREAM-0000000011")
	// groupByKey(Grouped.as("aggregate-stream")).aggregate(..)
	g.processor("aggregate-stream-repartition-filter", nil, "KSTREAM-MAP-0000000001")
	g.sink("aggregate-stream-repartition-sink", "aggregate-stream-repartition", "aggregate-stream-repartition-filter")
	g.source("aggregate-stream-repartition-source", "aggregate-stream-repartition")
	g.processor("KSTREAM-AGGREGATE-0000000014", []string{"KSTREAM-AGGREGATE-STATE-STORE-0000000013"}, "aggregate-stream-repartition-source")
	g.processor("KTABLE-TOSTREAM-0000000018", nil, "KSTREAM-AGGREGATE-0000000014")
	g.sink("KSTREAM-SINK-0000000019", "outputTopic_1", "KTABLE-TOSTREAM-0000000018")
	// filter.peek.groupByKey(Grouped.as("reduced-stream")).reduce(..)
	g.processor("KSTREAM-FILTER-0000000020", nil, "KSTREAM-MAP-0000000001")
	g.processor("KSTREAM-PEEK-0000000021", nil, "KSTREAM-FILTER-0000000020")
	g.processor("reduced-stream-repartition-filter", nil, "KSTREAM-PEEK-0000000021")
	g.sink("reduced-stream-repartition-sink", "reduced-stream-repartition", "reduced-stream-repartition-filter")
	g.source("reduced-stream-repartition-source", "reduced-stream-repartition")
	g.processor("KSTREAM-REDUCE-0000000023", []string{"KSTREAM-REDUCE-STATE-STORE-0000000022"}, "reduced-stream-repartition-source")
	g.processor("KTABLE-TOSTREAM-0000000027", nil, "KSTREAM-REDUCE-0000000023")
	g.sink("KSTREAM-SINK-0000000028", "outputTopic_2", "KTABLE-TOSTREAM-0000000027")
	// filter.join(countStream, .., StreamJoined..withName("joined-stream"))
	g.processor("KSTREAM-FILTER-0000000029", nil, "KSTREAM-MAP-0000000001")
	g.processor("joined-stream-left-repartition-filter", nil, "KSTREAM-FILTER-0000000029")
	g.sink("joined-stream-left-repartition-sink", "joined-stream-left-repartition", "joined-stream-left-repartition-filter")
	g.source("joined-stream-left-repartition-source", "joined-stream-left-repartition")
	g.processor("joined-stream-this-windowed", []string{"joined-stream-this-join-store"}, "joined-stream-left-repartition-source")
	g.processor("joined-stream-other-windowed", []string{"joined-stream-other-join-store"}, "KTABLE-TOSTREAM-0000000011")
	g.processor("joined-stream-this-join", []string{"joined-stream-other-join-store"}, "joined-stream-this-windowed")
	g.processor("joined-stream-other-join", []string{"joined-stream-this-join-store"}, "joined-stream-other-windowed")
	g.processor("joined-stream-merge", nil, "joined-stream-this-join", "joined-stream-other-join")
	g.sink("KSTREAM-SINK-0000000038", "outputTopicForJoin", "joined-stream-merge")

	topo := g.topology(
		[]string{"KSTREAM-SOURCE-0000000000", "KSTREAM-MAP-0000000001", "KSTREAM-FILTER-0000000002", "KSTREAM-MAPVALUES-0000000003",
			"KSTREAM-PROCESSOR-0000000004", "count-stream-repartition-filter", "count-stream-repartition-sink",
			"aggregate-stream-repartition-filter", "aggregate-stream-repartition-sink", "KSTREAM-FILTER-0000000020",
			"KSTREAM-PEEK-0000000021", "reduced-stream-repartition-filter", "reduced-stream-repartition-sink",
			"KSTREAM-FILTER-0000000029", "joined-stream-left-repartition-filter", "joined-stream-left-repartition-sink"},
		[]string{"count-stream-repartition-source", "KSTREAM-AGGREGATE-0000000007", "KTABLE-TOSTREAM-0000000011",
			"KSTREAM-SINK-0000000012", "joined-stream-left-repartition-source", "joined-stream-this-windowed",
			"joined-stream-other-windowed", "joined-stream-this-join", "joined-stream-other-join", "joined-stream-merge",
			"KSTREAM-SINK-0000000038"},
		[]string{"aggregate-stream-repartition-source", "KSTREAM-AGGREGATE-0000000014", "KTABLE-TOSTREAM-0000000018", "KSTREAM-SINK-0000000019"},
		[]string{"reduced-stream-repartition-source", "KSTREAM-REDUCE-0000000023", "KTABLE-TOSTREAM-0000000027", "KSTREAM-SINK-0000000028"},
	)
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n" +
		"      --> KSTREAM-MAP-0000000001\n" +
		"    Processor: KSTREAM-MAP-0000000001 (stores: [])\n" +
		"      --> KSTREAM-FILTER-0000000029, KSTREAM-FILTER-0000000002, KSTREAM-FILTER-0000000020, aggregate-stream-repartition-filter, count-stream-repartition-filter\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Processor: KSTREAM-FILTER-0000000020 (stores: [])\n" +
		"      --> KSTREAM-PEEK-0000000021\n" +
		"      <-- KSTREAM-MAP-0000000001\n" +
		"    Processor: KSTREAM-FILTER-0000000002 (stores: [])\n" +
		"      --> KSTREAM-MAPVALUES-0000000003\n" +
		"      <-- KSTREAM-MAP-0000000001\n" +
		"    Processor: KSTREAM-FILTER-0000000029 (stores: [])\n" +
		"      --> joined-stream-left-repartition-filter\n" +
		"      <-- KSTREAM-MAP-0000000001\n" +
		"    Processor: KSTREAM-PEEK-0000000021 (stores: [])\n" +
		"      --> reduced-stream-repartition-filter\n" +
		"      <-- KSTREAM-FILTER-0000000020\n" +
		"    Processor: KSTREAM-MAPVALUES-0000000003 (stores: [])\n" +
		"      --> KSTREAM-PROCESSOR-0000000004\n" +
		"      <-- KSTREAM-FILTER-0000000002\n" +
		"    Processor: aggregate-stream-repartition-filter (stores: [])\n" +
		"      --> aggregate-stream-repartition-sink\n" +
		"      <-- KSTREAM-MAP-0000000001\n" +
		"    Processor: count-stream-repartition-filter (stores: [])\n" +
		"      --> count-stream-repartition-sink\n" +
		"      <-- KSTREAM-MAP-0000000001\n" +
		"    Processor: joined-stream-left-repartition-filter (stores: [])\n" +
		"      --> joined-stream-left-repartition-sink\n" +
		"      <-- KSTREAM-FILTER-0000000029\n" +
		"    Processor: reduced-stream-repartition-filter (stores: [])\n" +
		"      --> reduced-stream-repartition-sink\n" +
		"      <-- KSTREAM-PEEK-0000000021\n" +
		"    Processor: KSTREAM-PROCESSOR-0000000004 (stores: [])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-MAPVALUES-0000000003\n" +
		"    Sink: aggregate-stream-repartition-sink (topic: aggregate-stream-repartition)\n" +
		"      <-- aggregate-stream-repartition-filter\n" +
		"    Sink: count-stream-repartition-sink (topic: count-stream-repartition)\n" +
		"      <-- count-stream-repartition-filter\n" +
		"    Sink: joined-stream-left-repartition-sink (topic: joined-stream-left-repartition)\n" +
		"      <-- joined-stream-left-repartition-filter\n" +
		"    Sink: reduced-stream-repartition-sink (topic: reduced-stream-repartition)\n" +
		"      <-- reduced-stream-repartition-filter\n" +
		"\n" +
		"  Sub-topology: 1\n" +
		"    Source: count-stream-repartition-source (topics: [count-stream-repartition])\n" +
		"      --> KSTREAM-AGGREGATE-0000000007\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000007 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000006])\n" +
		"      --> KTABLE-TOSTREAM-0000000011\n" +
		"      <-- count-stream-repartition-source\n" +
		"    Processor: KTABLE-TOSTREAM-0000000011 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000012, joined-stream-other-windowed\n" +
		"      <-- KSTREAM-AGGREGATE-0000000007\n" +
		"    Source: joined-stream-left-repartition-source (topics: [joined-stream-left-repartition])\n" +
		"      --> joined-stream-this-windowed\n" +
		"    Processor: joined-stream-other-windowed (stores: [joined-stream-other-join-store])\n" +
		"      --> joined-stream-other-join\n" +
		"      <-- KTABLE-TOSTREAM-0000000011\n" +
		"    Processor: joined-stream-this-windowed (stores: [joined-stream-this-join-store])\n" +
		"      --> joined-stream-this-join\n" +
		"      <-- joined-stream-left-repartition-source\n" +
		"    Processor: joined-stream-other-join (stores: [joined-stream-this-join-store])\n" +
		"      --> joined-stream-merge\n" +
		"      <-- joined-stream-other-windowed\n" +
		"    Processor: joined-stream-this-join (stores: [joined-stream-other-join-store])\n" +
		"      --> joined-stream-merge\n" +
		"      <-- joined-stream-this-windowed\n" +
		"    Processor: joined-stream-merge (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000038\n" +
		"      <-- joined-stream-this-join, joined-stream-other-join\n" +
		"    Sink: KSTREAM-SINK-0000000012 (topic: outputTopic_0)\n" +
		"      <-- KTABLE-TOSTREAM-0000000011\n" +
		"    Sink: KSTREAM-SINK-0000000038 (topic: outputTopicForJoin)\n" +
		"      <-- joined-stream-merge\n" +
		"\n" +
		"  Sub-topology: 2\n" +
		"    Source: aggregate-stream-repartition-source (topics: [aggregate-stream-repartition])\n" +
		"      --> KSTREAM-AGGREGATE-0000000014\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000014 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000013])\n" +
		"      --> KTABLE-TOSTREAM-0000000018\n" +
		"      <-- aggregate-stream-repartition-source\n" +
		"    Processor: KTABLE-TOSTREAM-0000000018 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000019\n" +
		"      <-- KSTREAM-AGGREGATE-0000000014\n" +
		"    Sink: KSTREAM-SINK-0000000019 (topic: outputTopic_1)\n" +
		"      <-- KTABLE-TOSTREAM-0000000018\n" +
		"\n" +
		"  Sub-topology: 3\n" +
		"    Source: reduced-stream-repartition-source (topics: [reduced-stream-repartition])\n" +
		"      --> KSTREAM-REDUCE-0000000023\n" +
		"    Processor: KSTREAM-REDUCE-0000000023 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000022])\n" +
		"      --> KTABLE-TOSTREAM-0000000027\n" +
		"      <-- reduced-stream-repartition-source\n" +
		"    Processor: KTABLE-TOSTREAM-0000000027 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000028\n" +
		"      <-- KSTREAM-REDUCE-0000000023\n" +
		"    Sink: KSTREAM-SINK-0000000028 (topic: outputTopic_2)\n" +
		"      <-- KTABLE-TOSTREAM-0000000027\n\n"
	if got := topo.Describe(); got != want {
		t.Errorf("describe() differs from Kafka Streams'\n%s", diffLines(got, want))
	}
}

// TestJavaHashOrder pins the java.util.HashSet iteration orders describe()
// reproduces, against values printed by OpenJDK 17. The 12-name case is
// where a copied set (new HashSet<>(collection): 32 buckets on JDK 17) and
// a set grown by add() (16 buckets) differ; JDK 19 and later size the copy
// at 16 buckets there (see javaCopyCapacity).
func TestJavaHashOrder(t *testing.T) {
	twelve := strings.Fields("pOi tL15IU7W1kpYinmKDd2iAMH ftHhmh5MT40URNw6iS4D6KIk rG1DCxLzOPR57oq8X4ptMhEI OzPu6FmnxdPsU " +
		"7A4hTUOHgmLDtK6 WOcB.I1qpKv-6y w vJ9P3 r2zxMP3NDp9 8xhdW1wenpS067njUNg xUj.e.jjhM6uyv7Jj")
	tests := []struct {
		name     string
		items    []string
		capacity int
		want     string
	}{
		{"source topics", []string{"europe.orders", "asia.orders", "us.orders", "africa.orders"}, javaCopyCapacity(4),
			"africa.orders europe.orders asia.orders us.orders"},
		{"copied set of 12", twelve, javaCopyCapacity(12),
			"r2zxMP3NDp9 7A4hTUOHgmLDtK6 vJ9P3 pOi OzPu6FmnxdPsU 8xhdW1wenpS067njUNg ftHhmh5MT40URNw6iS4D6KIk " +
				"xUj.e.jjhM6uyv7Jj w WOcB.I1qpKv-6y rG1DCxLzOPR57oq8X4ptMhEI tL15IU7W1kpYinmKDd2iAMH"},
		{"grown set of 12", twelve, javaDefaultCapacity(12),
			"r2zxMP3NDp9 ftHhmh5MT40URNw6iS4D6KIk xUj.e.jjhM6uyv7Jj 7A4hTUOHgmLDtK6 w vJ9P3 WOcB.I1qpKv-6y pOi " +
				"rG1DCxLzOPR57oq8X4ptMhEI OzPu6FmnxdPsU tL15IU7W1kpYinmKDd2iAMH 8xhdW1wenpS067njUNg"},
	}
	for _, tt := range tests {
		if got := strings.Join(javaHashOrder(tt.items, tt.capacity), " "); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	for n, want := range map[int]int{0: 16, 11: 16, 12: 32, 13: 32, 23: 32, 24: 64} {
		if got := javaCopyCapacity(n); got != want {
			t.Errorf("javaCopyCapacity(%d) = %d, want %d", n, got, want)
		}
	}
	for n, want := range map[int]int{1: 16, 12: 16, 13: 32, 24: 32, 25: 64} {
		if got := javaDefaultCapacity(n); got != want {
			t.Errorf("javaDefaultCapacity(%d) = %d, want %d", n, got, want)
		}
	}
}
