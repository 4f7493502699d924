package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// ensureTopics checks the source topics and creates the internal ones as
// Kafka Streams does: a repartition topic gets the partition count of the
// sub-topology writing it, a changelog the count of its store's
// sub-topology. It returns the topics written by partition: changelogs and
// foreign-key joins' response topics.
func (a *App) ensureTopics(ctx context.Context) (map[string]bool, error) {
	var matched map[*topology.Node][]string
	if a.hasPatterns {
		var err error
		if matched, err = a.matchTopics(ctx); err != nil {
			return nil, err
		}
	}
	g := readTopics(a.topo, matched)
	if err := a.ensureDeadLetterTopic(ctx); err != nil {
		return nil, err
	}
	if a.cfg.CreateMissingTopics {
		if err := a.createMissingTopics(ctx); err != nil {
			return nil, err
		}
	}
	userParts, err := a.sourcePartitions(ctx, g.user)
	if err != nil {
		return nil, err
	}
	internalJoins, err := g.copartition(a.topo, userParts)
	if err != nil {
		return nil, err
	}
	subParts := g.resolvePartitions(userParts, len(a.topo.Subtopologies))
	want, configs, changelogs := a.internalTopics(g, subParts, internalJoins)
	for t, n := range want {
		if n == 0 {
			// The sub-topology reads only patterns that match no topic
			// yet: its internal topics are made by the refresh that
			// finds one (pattern.go).
			delete(want, t)
		}
	}
	if a.hasPatterns {
		a.patMu.Lock()
		a.matched = matched
		a.patMu.Unlock()
	}
	if len(want) == 0 {
		return changelogs, nil
	}
	if err := a.createInternalTopics(ctx, want, configs); err != nil {
		return nil, err
	}
	return changelogs, nil
}

// topicGraph is which sub-topology reads and writes which topic.
type topicGraph struct {
	subSources map[int][]srcInfo
	writerOf   map[string]int   // internal topic -> sub-topology writing it
	fixed      map[string]int32 // repartition topic -> Repartitioned's partition count
	// follow: a foreign-key join's internal topic -> the sub-topology
	// reading it, whose other sources' partition count it takes
	// (copartitionSources); byPartition: its response topics, written to
	// the partition each record names.
	follow      map[string]int
	byPartition []string
	user        []string // the source topics that are not internal
}

type srcInfo struct {
	topic    string
	internal bool
}

// readTopics reads the topic graph of topo; matched are the topics its
// pattern sources read now.
func readTopics(topo *topology.Topology, matched map[*topology.Node][]string) *topicGraph {
	g := &topicGraph{subSources: map[int][]srcInfo{}, writerOf: map[string]int{}, fixed: map[string]int32{}, follow: map[string]int{}}
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
					g.user = append(g.user, t)
				}
			}
		}
	}
	return g
}

// sourcePartitions answers the partition count of each user source topic;
// a missing one fails (Kafka Streams' MissingSourceTopicException).
func (a *App) sourcePartitions(ctx context.Context, user []string) (map[string]int32, error) {
	userParts := map[string]int32{}
	if len(user) == 0 {
		return userParts, nil
	}
	details, err := a.listExisting(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("engine: reading metadata of source topics: %w", err)
	}
	var missing []string
	for _, t := range user {
		d, ok := details[t]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			missing = append(missing, fmt.Sprintf("%q", t))
			continue
		}
		userParts[t] = int32(len(d.Partitions))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("engine: source topic %s does not exist (Kafka Streams' MissingSourceTopicException); create it first", strings.Join(missing, ", "))
	}
	return userParts, nil
}

// copartition checks and fixes the partition counts of joins. A join's
// sub-topology joins partition p of the stream with partition p of the
// table: its user topics must have one partition count (Kafka Streams'
// co-partitioning), which its repartition topics take. It answers the
// join sub-topologies that read only repartition topics (a join of two
// key-changed streams): those topics all take the largest count of their
// writers, so that they are co-partitioned (Kafka Streams'
// CopartitionedTopicsEnforcer).
func (g *topicGraph) copartition(topo *topology.Topology, userParts map[string]int32) (internalJoins []int, err error) {
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

// resolvePartitions answers each sub-topology's partition count, resolved
// until nothing changes (a repartition topic can be read by a sub-topology
// that writes another one), and fixes the count of the topics that follow
// their reader's.
func (g *topicGraph) resolvePartitions(userParts map[string]int32, subs int) map[int]int32 {
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

// internalTopics answers the internal topics the application needs (full
// name -> partitions), their configs, and the topics restored from or
// written by partition (changelogs and foreign-key response topics).
func (a *App) internalTopics(g *topicGraph, subParts map[int]int32, internalJoins []int) (want map[string]int32, configs map[string]map[string]*string, changelogs map[string]bool) {
	want, configs, changelogs = map[string]int32{}, map[string]map[string]*string{}, map[string]bool{}
	for t, sub := range g.writerOf {
		want[a.fullTopic(t, true)] = subParts[sub]
		if f := g.fixed[t]; f > 0 {
			want[a.fullTopic(t, true)] = f
		}
	}
	for _, id := range internalJoins {
		for _, src := range g.subSources[id] {
			if g.fixed[src.topic] == 0 {
				want[a.fullTopic(src.topic, true)] = subParts[id]
			}
		}
	}
	for _, sub := range a.topo.Subtopologies {
		for _, n := range sub.Nodes {
			for _, s := range n.Stores {
				st := a.topo.Stores[s]
				if st == nil || st.ChangelogTopic == "" {
					continue
				}
				t := a.fullTopic(st.ChangelogTopic, true)
				want[t] = subParts[sub.ID]
				configs[t] = changelogConfig(st)
				changelogs[t] = true
			}
		}
	}
	for _, t := range g.byPartition {
		changelogs[a.fullTopic(t, true)] = true
	}
	return want, configs, changelogs
}

// changelogConfig is the topic config of st's changelog, as Kafka Streams
// sets it.
func changelogConfig(st *topology.Store) map[string]*string {
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

// createInternalTopics creates the internal topics of want that do not
// exist (one that exists must have its partition count) and waits, up to
// 30 s, until metadata shows them all.
func (a *App) createInternalTopics(ctx context.Context, want map[string]int32, configs map[string]map[string]*string) error {
	names := slices.Sorted(maps.Keys(want))
	existing, err := a.adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("engine: reading metadata of internal topics: %w", err)
	}
	for _, t := range names {
		if d, ok := existing[t]; ok && d.Err == nil && len(d.Partitions) > 0 {
			if int32(len(d.Partitions)) != want[t] {
				return fmt.Errorf("engine: internal topic %q has %d partitions, but the topology needs %d", t, len(d.Partitions), want[t])
			}
			continue
		}
		resp, err := a.adm.CreateTopic(ctx, want[t], a.cfg.ReplicationFactor, configs[t], t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("engine: creating internal topic %q: %w", t, err)
		}
		a.log.Info("created internal topic", "topic", t, "partitions", want[t])
	}
	// A created topic may take a moment to show in metadata everywhere.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := a.adm.ListTopics(ctx, names...)
		ready := err == nil
		for _, t := range names {
			if d, ok := got[t]; !ok || d.Err != nil || int32(len(d.Partitions)) != want[t] {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("engine: internal topics %v did not appear in metadata within 30s", names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// missingTopicGrace is how long listExisting asks again for topics that
// metadata does not show.
const missingTopicGrace = 5 * time.Second

// listExisting lists topics' metadata, asking again for up to
// missingTopicGrace while some are missing. Apache Kafka answers
// CreateTopics once the controller committed the topic, and a broker's
// metadata shows it a moment later: a topic created just before Start must
// not fail the start as missing. (kfake shows it at once.)
func (a *App) listExisting(ctx context.Context, topics []string) (kadm.TopicDetails, error) {
	deadline := time.Now().Add(missingTopicGrace)
	for {
		details, err := a.adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, err
		}
		complete := true
		for _, t := range topics {
			if d, ok := details[t]; !ok || d.Err != nil || len(d.Partitions) == 0 {
				complete = false
			}
		}
		if complete || time.Now().After(deadline) {
			return details, nil
		}
		select {
		case <-ctx.Done():
			return details, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkpoint records, after a successful flush, that each store partition
// of tasks reflects its changelog up to the changelog's end offset (the task
// is its only writer).
func (a *App) checkpoint(ctx context.Context, tasks []*task) {
	if a.produceFailed.Load() {
		return
	}
	var topics []string
	for _, t := range tasks {
		for _, tx := range t.stores {
			topics = append(topics, tx.changelog)
		}
	}
	if len(topics) == 0 {
		return
	}
	ends, err := a.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		a.log.Warn("checkpoint: listing changelog end offsets", "error", err)
		return
	}
	for _, t := range tasks {
		for _, tx := range t.stores {
			if len(tx.Unlogged) > 0 {
				continue // Pebble is ahead of the changelog (a flush that failed): not checkpointed, so restored
			}
			if end, ok := ends.Lookup(tx.changelog, tx.Part.Number); ok && end.Err == nil {
				if err := tx.Part.SetCheckpoint(end.Offset); err != nil {
					a.log.Warn("checkpoint", "error", err)
				}
			}
		}
	}
}

// ensureDeadLetterTopic creates errors.deadletterqueue.topic.name when it
// does not exist, with the broker's default partition count and
// replication.factor, so that the first failed record does not wait on
// the broker's auto-creation (or fail where that is off).
func (a *App) ensureDeadLetterTopic(ctx context.Context) error {
	t := a.cfg.DeadLetterTopic
	if t == "" {
		return nil
	}
	details, err := a.adm.ListTopics(ctx, t)
	if err != nil {
		return fmt.Errorf("engine: reading metadata of dead letter topic %q: %w", t, err)
	}
	if d, ok := details[t]; ok && d.Err == nil && len(d.Partitions) > 0 {
		return nil
	}
	resp, err := a.adm.CreateTopic(ctx, -1, a.cfg.ReplicationFactor, nil, t)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("engine: creating dead letter topic %q (errors.deadletterqueue.topic.name): %w", t, err)
	}
	a.log.Info("created dead letter topic", "topic", t)
	return nil
}

// createMissingTopics creates, on the embedded broker only
// (config.App.CreateMissingTopics), the topics the topology reads (streams,
// tables, global tables) or writes (sinks) that do not exist, with the
// broker's default partition count, and logs them in one line: in
// development the first run of a program needs no topic set up first.
// Internal topics are ensureTopics' business.
func (a *App) createMissingTopics(ctx context.Context) error {
	seen := map[string]bool{}
	var topics []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			topics = append(topics, t)
		}
	}
	for _, sub := range a.topo.Subtopologies {
		for _, src := range sub.Sources {
			if !src.Internal {
				for _, t := range src.Topics {
					add(t)
				}
			}
		}
		for _, n := range sub.Nodes {
			if n.Type == topology.Sink && !n.Internal && n.TopicExtractor == nil {
				add(n.Topic)
			}
		}
	}
	for _, g := range a.topo.Globals {
		add(g.Topic())
	}
	if len(topics) == 0 {
		return nil
	}
	sort.Strings(topics)
	details, err := a.adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("engine: reading metadata of the topology's topics: %w", err)
	}
	var missing []string
	for _, t := range topics {
		if d, ok := details[t]; !ok || d.Err != nil || len(d.Partitions) == 0 {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	resps, err := a.adm.CreateTopics(ctx, -1, -1, nil, missing...)
	if err != nil {
		return fmt.Errorf("engine: creating missing topics %s on the embedded broker: %w", strings.Join(missing, ", "), err)
	}
	for _, t := range missing {
		if r, ok := resps[t]; ok && r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("engine: creating missing topic %q on the embedded broker: %w", t, r.Err)
		}
	}
	parts := int32(-1)
	if r, ok := resps[missing[0]]; ok {
		parts = r.NumPartitions
	}
	a.log.Info("created missing topics on the embedded broker (development only: with --brokers a missing source topic is an error)",
		"topics", strings.Join(missing, ","), "partitions", parts)
	// The client's metadata may be younger than MetadataMinAge: wait until
	// it shows the new topics, as for internal topics.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := a.adm.ListTopics(ctx, missing...)
		ready := err == nil
		for _, t := range missing {
			if d, ok := got[t]; !ok || d.Err != nil || len(d.Partitions) == 0 {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("engine: created topics %s did not appear in metadata within 30s", strings.Join(missing, ", "))
		}
	}
}

// windowedSinkTopics are the topics that sinks write with a windowed key
// serde (KStream.to with WindowedSerdes), each with the length of its keys'
// window suffix. Kafka Streams partitions what such a sink writes by the
// inner key (WindowedStreamPartitioner), and so does the engine
// (changelogPartitioner).
func windowedSinkTopics(topo *topology.Topology) map[string]int {
	out := map[string]int{}
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			if n.Type != topology.Sink || n.Internal || n.FK != nil || n.TopicExtractor != nil {
				continue
			}
			if _, _, session, ok := serde.ParseWindowed(n.KeySerde); ok {
				out[n.Topic] = 8
				if session {
					out[n.Topic] = 16
				}
			}
		}
	}
	return out
}
