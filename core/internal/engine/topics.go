package engine

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topics"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// ensureTopics checks the source topics and creates the internal ones as
// Kafka Streams does (package topics): a repartition topic gets the
// partition count of the sub-topology writing it, a changelog the count of
// its store's sub-topology. It returns the topics written by partition:
// changelogs and foreign-key joins' response topics.
func (a *App) ensureTopics(ctx context.Context) (map[string]bool, error) {
	var matched map[*topology.Node][]string
	if a.hasPatterns {
		var err error
		if matched, err = a.matchTopics(ctx); err != nil {
			return nil, err
		}
	}
	g := topics.Read(a.topo, matched)
	adm := a.topicAdmin()
	if err := adm.EnsureDeadLetter(ctx, a.cfg.DeadLetterTopic); err != nil {
		return nil, err
	}
	if a.cfg.CreateMissingTopics {
		if err := adm.CreateMissing(ctx, a.topo); err != nil {
			return nil, err
		}
	}
	userParts, err := adm.SourcePartitions(ctx, g.User)
	if err != nil {
		return nil, err
	}
	internalJoins, err := g.Copartition(a.topo, userParts)
	if err != nil {
		return nil, err
	}
	subParts := g.ResolvePartitions(userParts, len(a.topo.Subtopologies))
	full := func(t string) string { return a.fullTopic(t, true) }
	want, configs, changelogs := g.Internal(a.topo, subParts, internalJoins, full)
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
	if err := adm.CreateInternal(ctx, want, configs); err != nil {
		return nil, err
	}
	return changelogs, nil
}

// topicAdmin is the application's admin client as package topics uses it.
func (a *App) topicAdmin() topics.Admin {
	return topics.Admin{Client: a.adm, ReplicationFactor: a.cfg.ReplicationFactor, Log: a.log}
}

// listExisting lists topics' metadata, asking again for a moment while
// some are missing (topics.Admin.ListExisting).
func (a *App) listExisting(ctx context.Context, ts []string) (kadm.TopicDetails, error) {
	return a.topicAdmin().ListExisting(ctx, ts)
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
