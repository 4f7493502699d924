package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Admin checks and creates an application's topics through its admin
// client.
type Admin struct {
	Client            *kadm.Client
	ReplicationFactor int16 // replication.factor of the topics it creates
	Log               *slog.Logger
}

// SourcePartitions answers the partition count of each user source topic;
// a missing one fails (Kafka Streams' MissingSourceTopicException).
func (a Admin) SourcePartitions(ctx context.Context, user []string) (map[string]int32, error) {
	userParts := map[string]int32{}
	if len(user) == 0 {
		return userParts, nil
	}
	details, err := a.ListExisting(ctx, user)
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

// CreateInternal creates the internal topics of want that do not
// exist (one that exists must have its partition count) and waits, up to
// 30 s, until metadata shows them all.
func (a Admin) CreateInternal(ctx context.Context, want map[string]int32, configs map[string]map[string]*string) error {
	names := slices.Sorted(maps.Keys(want))
	existing, err := a.Client.ListTopics(ctx, names...)
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
		resp, err := a.Client.CreateTopic(ctx, want[t], a.ReplicationFactor, configs[t], t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("engine: creating internal topic %q: %w", t, err)
		}
		a.Log.Info("created internal topic", "topic", t, "partitions", want[t])
	}
	// A created topic may take a moment to show in metadata everywhere.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := a.Client.ListTopics(ctx, names...)
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

// missingTopicGrace is how long ListExisting asks again for topics that
// metadata does not show.
const missingTopicGrace = 5 * time.Second

// ListExisting lists topics' metadata, asking again for up to
// missingTopicGrace while some are missing. Apache Kafka answers
// CreateTopics once the controller committed the topic, and a broker's
// metadata shows it a moment later: a topic created just before Start must
// not fail the start as missing. (kfake shows it at once.)
func (a Admin) ListExisting(ctx context.Context, topics []string) (kadm.TopicDetails, error) {
	deadline := time.Now().Add(missingTopicGrace)
	for {
		details, err := a.Client.ListTopics(ctx, topics...)
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

// EnsureDeadLetter creates t (errors.deadletterqueue.topic.name) when it
// does not exist, with the broker's default partition count and
// replication.factor, so that the first failed record does not wait on
// the broker's auto-creation (or fail where that is off).
func (a Admin) EnsureDeadLetter(ctx context.Context, t string) error {
	if t == "" {
		return nil
	}
	details, err := a.Client.ListTopics(ctx, t)
	if err != nil {
		return fmt.Errorf("engine: reading metadata of dead letter topic %q: %w", t, err)
	}
	if d, ok := details[t]; ok && d.Err == nil && len(d.Partitions) > 0 {
		return nil
	}
	resp, err := a.Client.CreateTopic(ctx, -1, a.ReplicationFactor, nil, t)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("engine: creating dead letter topic %q (errors.deadletterqueue.topic.name): %w", t, err)
	}
	a.Log.Info("created dead letter topic", "topic", t)
	return nil
}

// CreateMissing creates, on the embedded broker only
// (config.App.CreateMissingTopics), the topics the topology reads (streams,
// tables, global tables) or writes (sinks) that do not exist, with the
// broker's default partition count, and logs them in one line: in
// development the first run of a program needs no topic set up first.
// Internal topics are CreateInternal's business.
func (a Admin) CreateMissing(ctx context.Context, topo *topology.Topology) error {
	seen := map[string]bool{}
	var topics []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			topics = append(topics, t)
		}
	}
	for _, sub := range topo.Subtopologies {
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
	for _, g := range topo.Globals {
		add(g.Topic())
	}
	if len(topics) == 0 {
		return nil
	}
	sort.Strings(topics)
	details, err := a.Client.ListTopics(ctx, topics...)
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
	resps, err := a.Client.CreateTopics(ctx, -1, -1, nil, missing...)
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
	a.Log.Info("created missing topics on the embedded broker (development only: with --brokers a missing source topic is an error)",
		"topics", strings.Join(missing, ","), "partitions", parts)
	// The client's metadata may be younger than MetadataMinAge: wait until
	// it shows the new topics, as for internal topics.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := a.Client.ListTopics(ctx, missing...)
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
