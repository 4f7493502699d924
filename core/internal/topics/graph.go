// Package topics answers which topics an application reads and needs, as
// Kafka Streams does: the topic graph of a topology (which sub-topology
// reads and writes which topic), the partition counts of its sub-topologies
// and internal topics, co-partitioning, the internal topics' configs, which
// broker topics a pattern source reads; and, through the admin client
// (Admin), checks the source topics and creates the internal ones. Its
// errors begin "engine:", as they did when this was the engine's.
package topics

import (
	"fmt"
	"strconv"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Graph is which sub-topology reads and writes which topic.
type Graph struct {
	subSources map[int][]srcInfo
	writerOf   map[string]int   // internal topic -> sub-topology writing it
	fixed      map[string]int32 // repartition topic -> Repartitioned's partition count
	// follow: a foreign-key join's internal topic -> the sub-topology
	// reading it, whose other sources' partition count it takes
	// (copartitionSources); byPartition: its response topics, written to
	// the partition each record names.
	follow      map[string]int
	byPartition []string
	// User are the source topics that are not internal.
	User []string
}

type srcInfo struct {
	topic    string
	internal bool
}

// Read reads the topic graph of topo; matched are the topics its
// pattern sources read now.
func Read(topo *topology.Topology, matched map[*topology.Node][]string) *Graph {
	g := &Graph{subSources: map[int][]srcInfo{}, writerOf: map[string]int{}, fixed: map[string]int32{}, follow: map[string]int{}}
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			if n.Topic != "" && n.Internal {
				g.writerOf[n.Topic] = sub.ID
				if n.Partitions > 0 {
					g.fixed[n.Topic] = n.Partitions
				}
				if n.Type == topology.Sink && n.FK != nil {
					g.byPartition = append(g.byPartition, n.Topic)
				}
			}
		}
		for _, src := range sub.Sources {
			topics := src.Topics
			if src.Pattern != "" {
				topics = matched[src]
			}
			for _, t := range topics {
				if src.Copartitioned {
					g.follow[t] = sub.ID
				}
				g.subSources[sub.ID] = append(g.subSources[sub.ID], srcInfo{t, src.Internal})
				if !src.Internal {
					g.User = append(g.User, t)
				}
			}
		}
	}
	return g
}

// Copartition checks and fixes the partition counts of joins. A join's
// sub-topology joins partition p of the stream with partition p of the
// table: its user topics must have one partition count (Kafka Streams'
// co-partitioning), which its repartition topics take. It answers the
// join sub-topologies that read only repartition topics (a join of two
// key-changed streams): those topics all take the largest count of their
// writers, so that they are co-partitioned (Kafka Streams'
// CopartitionedTopicsEnforcer).
func (g *Graph) Copartition(topo *topology.Topology, userParts map[string]int32) (internalJoins []int, err error) {
	for _, sub := range topo.Subtopologies {
		var join *topology.Node
		for _, n := range sub.Nodes {
			if n.Op == topology.OpJoin || n.Op == topology.OpLeftJoin || n.Op == topology.OpStreamJoin || n.Op == topology.OpTableMerge {
				join = n
			}
		}
		if join == nil {
			continue
		}
		var first string
		for _, src := range g.subSources[sub.ID] {
			switch {
			case src.internal:
			case first == "":
				first = src.topic
			case userParts[src.topic] != userParts[first]:
				hint := "e.g. by repartition() of the stream"
				if join.Op == topology.OpTableMerge {
					hint = "a table's topic cannot be repartitioned by the join: write both tables with one partition count"
				}
				return nil, fmt.Errorf("engine: %s joins topics that are not co-partitioned: %q has %d partitions and %q has %d (Kafka Streams' TopologyException); give them one partition count, %s",
					join.Name, first, userParts[first], src.topic, userParts[src.topic], hint)
			}
		}
		for _, src := range g.subSources[sub.ID] {
			if src.internal && first != "" && g.fixed[src.topic] == 0 {
				g.fixed[src.topic] = userParts[first]
			}
		}
		if first == "" {
			internalJoins = append(internalJoins, sub.ID)
		}
	}
	return internalJoins, nil
}

// ResolvePartitions answers each sub-topology's partition count, resolved
// until nothing changes (a repartition topic can be read by a sub-topology
// that writes another one), and fixes the count of the topics that follow
// their reader's.
func (g *Graph) ResolvePartitions(userParts map[string]int32, subs int) map[int]int32 {
	subParts := map[int]int32{}
	for range subs + 1 {
		changed := false
		for id, srcs := range g.subSources {
			var n int32
			for _, s := range srcs {
				if _, ok := g.follow[s.topic]; ok {
					continue
				}
				if f := g.fixed[s.topic]; f > 0 {
					n = max(n, f)
				} else if s.internal {
					n = max(n, subParts[g.writerOf[s.topic]])
				} else {
					n = max(n, userParts[s.topic])
				}
			}
			if n != subParts[id] {
				subParts[id], changed = n, true
			}
		}
		if !changed {
			break
		}
	}
	for t, sub := range g.follow {
		if g.fixed[t] == 0 {
			g.fixed[t] = subParts[sub]
		}
	}
	return subParts
}

// Internal answers the internal topics the application needs (full
// name -> partitions), their configs, and the topics restored from or
// written by partition (changelogs and foreign-key response topics). full
// is an internal topic's name in Kafka ("<application.id>-" prefixed).
func (g *Graph) Internal(topo *topology.Topology, subParts map[int]int32, internalJoins []int, full func(string) string) (want map[string]int32, configs map[string]map[string]*string, changelogs map[string]bool) {
	want, configs, changelogs = map[string]int32{}, map[string]map[string]*string{}, map[string]bool{}
	for t, sub := range g.writerOf {
		want[full(t)] = subParts[sub]
		if f := g.fixed[t]; f > 0 {
			want[full(t)] = f
		}
	}
	for _, id := range internalJoins {
		for _, src := range g.subSources[id] {
			if g.fixed[src.topic] == 0 {
				want[full(src.topic)] = subParts[id]
			}
		}
	}
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			for _, s := range n.Stores {
				st := topo.Stores[s]
				if st == nil || st.ChangelogTopic == "" {
					continue
				}
				t := full(st.ChangelogTopic)
				want[t] = subParts[sub.ID]
				configs[t] = ChangelogConfig(st)
				changelogs[t] = true
			}
		}
	}
	for _, t := range g.byPartition {
		changelogs[full(t)] = true
	}
	return want, configs, changelogs
}

// ChangelogConfig is the topic config of st's changelog, as Kafka Streams
// sets it.
func ChangelogConfig(st *topology.Store) map[string]*string {
	compact, compactDelete, deletePolicy := "compact", "compact,delete", "delete"
	c := map[string]*string{"cleanup.policy": &compact}
	if st.Kind == topology.StoreWindow || st.Kind == topology.StoreSession || st.Kind == topology.StoreJoinWindow {
		// Kafka Streams' windowed changelogs: compacted and deleted after
		// the store's retention plus
		// windowstore.changelog.additional.retention.ms (1 day).
		retention := strconv.FormatInt(st.Retention+24*time.Hour.Milliseconds(), 10)
		c["cleanup.policy"], c["retention.ms"] = &compactDelete, &retention
		if st.Kind == topology.StoreJoinWindow {
			// A join window store keeps duplicates: nothing to compact
			// (KAFKA-13345, Kafka 3.1).
			c["cleanup.policy"] = &deletePolicy
		}
	}
	if st.Kind == topology.StoreVersioned {
		// Kafka Streams' versioned changelogs
		// (VersionedChangelogTopicConfig): compacted, but no version is
		// compacted away while a read may need it: history retention plus
		// 1 day.
		lag := strconv.FormatInt(st.Versioned.HistoryRetention+24*time.Hour.Milliseconds(), 10)
		c["min.compaction.lag.ms"] = &lag
	}
	for k, v := range st.ChangelogConfig {
		c[k] = &v
	}
	return c
}
