package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
)

// This file holds the operations Kafka Streams users look for beside
// processing: auto.offset.reset per source, pause and resume (KIP-834),
// cleanUp, and num.stream.threads' slots.

// offsetResets maps each full source topic name to its reset policy: the
// source's Consumed.withOffsetResetPolicy, else auto.offset.reset.
// Internal topics (repartition) always start at the earliest offset, as
// in Kafka Streams.
func (a *App) offsetResets() map[string]string {
	policies := map[string]string{}
	for _, sub := range a.topo.Subtopologies {
		for _, n := range sub.Sources {
			if n.Internal {
				continue
			}
			policy := n.OffsetReset
			if policy == "" {
				policy = a.cfg.OffsetReset
			}
			for _, t := range n.Topics {
				policies[t] = policy
			}
		}
	}
	return policies
}

// adjustOffsets is the consumer group's hook between fetching the committed
// offsets of newly assigned partitions and consuming them: a partition
// with no committed offset (the client's start offset, negative, stands in
// for it) starts where its topic's reset policy says; under none the
// application fails naming the partition (Kafka Streams'
// NoOffsetForPartitionException), and the partition is consumed from a
// committed offset only (so not at all).
func (a *App) adjustOffsets(policies map[string]string) func(context.Context, map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	return func(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		var missing []string
		for topic, parts := range offsets {
			policy, ok := policies[topic]
			if !ok {
				policy = a.patternOffsetReset(topic)
			}
			for p, o := range parts {
				if o.EpochOffset().Offset >= 0 {
					continue // committed
				}
				switch policy {
				case config.OffsetLatest:
					parts[p] = kgo.NewOffset().AtEnd()
				case config.OffsetNone:
					parts[p] = kgo.NewOffset().AtCommitted()
					missing = append(missing, fmt.Sprintf("%s/%d", topic, p))
				default:
					parts[p] = kgo.NewOffset().AtStart()
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			a.fail(fmt.Errorf("engine: partition %s has no committed offset and its reset policy is none (auto.offset.reset or the source's offset_reset); commit an offset for the group %s or choose earliest or latest",
				strings.Join(missing, ", "), a.cfg.ApplicationID))
		}
		return offsets, nil
	}
}

// Pause stops processing (KafkaStreams.pause, KIP-834): the source
// partitions are no longer fetched, and each task, once it has processed
// the batch it is in, takes no more records, while the application stays
// in the group with its tasks and commits what it processed. Under
// exactly_once_v2 a task first processes the records already fetched:
// the transaction holding them must end, and it cannot while polled
// records are unprocessed (the broker would abort it after
// transaction.timeout.ms). It may be called before Start; calling it again
// changes nothing.
func (a *App) Pause() {
	a.pauseMu.Lock()
	defer a.pauseMu.Unlock()
	if a.paused.Swap(true) {
		return
	}
	if a.pauseCl != nil {
		a.pauseCl.PauseFetchTopics(a.sourceTopics()...)
	}
	a.log.Info("processing paused")
}

// Resume undoes Pause: the tasks continue where they left off.
func (a *App) Resume() {
	a.pauseMu.Lock()
	defer a.pauseMu.Unlock()
	if !a.paused.Swap(false) {
		return
	}
	if a.pauseCl != nil {
		a.pauseCl.ResumeFetchTopics(a.sourceTopics()...)
	}
	for _, t := range a.allTasks() {
		t.wake()
	}
	a.log.Info("processing resumed")
}

// Paused is KafkaStreams.isPaused.
func (a *App) Paused() bool { return a.paused.Load() }

// applyPause makes cl the consumer client Pause and Resume act on, and
// pauses its fetches when the application is paused (Pause before Start,
// or a replaced session).
func (a *App) applyPause(cl *kgo.Client) {
	a.pauseMu.Lock()
	defer a.pauseMu.Unlock()
	a.pauseCl = cl
	if a.paused.Load() {
		cl.PauseFetchTopics(a.sourceTopics()...)
	}
}

// sourceTopics are the full names of the topics the tasks read.
func (a *App) sourceTopics() []string {
	topics := make([]string, 0, len(a.planOf))
	for t := range a.planOf {
		topics = append(topics, t)
	}
	return append(topics, a.matchedTopics(nil)...)
}

// holdWhilePaused waits, while the application is paused, until it is
// resumed or the task stops, serving the commits' flush and sync requests
// meanwhile (flush and sync are run's); it reports whether the task goes
// on. Under exactly_once_v2 a task does not wait while it holds polled
// records (see Pause).
func (t *task) holdWhilePaused(ctx context.Context, flush, sync func(chan error) bool) bool {
	for t.app.paused.Load() {
		if t.app.eos && t.in.len() > 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.stop:
			return true // run's loop sees the stop
		case reply := <-t.flushReq:
			if !flush(reply) {
				return false
			}
		case reply := <-t.syncReq:
			if !sync(reply) {
				return false
			}
		case <-t.in.signal: // new records, or Resume (wake)
		}
	}
	return true
}

// slot takes one of num.stream.threads' slots for a batch, waiting for one
// when every slot is taken; release gives it back. Without
// num.stream.threads every task processes at once (no slots).
func (a *App) slot(ctx context.Context) (release func(), ok bool) {
	if a.threads == nil {
		return func() {}, true
	}
	select {
	case a.threads <- struct{}{}:
		return func() { <-a.threads }, true
	case <-ctx.Done():
		return nil, false
	}
}

// ErrRunning is CleanUp's refusal while the application runs.
var ErrRunning = errors.New("the application is running")

// CleanUp deletes the application's local state directory,
// <state.dir>/<application.id> (KafkaStreams.cleanUp): its stores,
// checkpoints and process id, so that the next start restores every store
// from its changelog. It answers the directory deleted, or "" when there
// was none. The caller makes sure the application is not running.
func CleanUp(cfg config.App) (string, error) {
	dir := filepath.Join(cfg.StateDir, cfg.ApplicationID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("engine: cleanUp of %s: %w", dir, err)
	}
	return dir, nil
}
