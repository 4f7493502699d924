package engine

// Test driver mode (config.App.TestDriver, polystreams.test.driver=true): the
// application runs on its own in-process broker, and the session pipes one
// record at a time and waits until the topology is quiescent before the next
// (Kafka Streams' TopologyTestDriver). See docs/design/test-driver.md.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// outputs holds what the tasks wrote to the topology's sink topics, per
// topic in the order written, until TakeOutput takes it.
type outputs struct {
	sinks map[string]bool // user (not internal) sink topics
	// internal, when a TopicNameExtractor names topics at run time, is
	// the prefix of internal topics ("<application.id>-"): every other
	// topic written is a sink topic. Empty: sinks lists them all.
	internal string

	mu   sync.Mutex // guards recs
	recs map[string][]*kgo.Record
}

func newOutputs(sinks []string) *outputs {
	o := &outputs{sinks: map[string]bool{}, recs: map[string][]*kgo.Record{}}
	for _, s := range sinks {
		o.sinks[s] = true
	}
	return o
}

// note keeps r if it goes to a sink topic. Called as r is handed to the
// producer, so records keep the order the tasks wrote them in.
func (o *outputs) note(r *kgo.Record) {
	if !o.sinks[r.Topic] && (o.internal == "" || strings.HasPrefix(r.Topic, o.internal)) {
		return
	}
	o.mu.Lock()
	o.recs[r.Topic] = append(o.recs[r.Topic], r)
	o.mu.Unlock()
}

// SourceTopics are the user topics the topology reads, sorted: its
// sources' and its global tables' (TopologyTestDriver pipes into a global
// table's topic too, and updates the global store at once).
func (a *App) SourceTopics() []string {
	set := map[string]bool{}
	for _, t := range a.globalTopics() {
		set[t] = true
	}
	for _, sub := range a.topo.Subtopologies {
		for _, src := range sub.Sources {
			if !src.Internal {
				for _, t := range src.Topics {
					set[t] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// SinkTopics are the user topics the topology writes (to), each with the
// key and value serdes its sinks write (both empty when two sinks of the
// topic write different ones).
func (a *App) SinkTopics() map[string][2]string {
	out := map[string][2]string{}
	for _, sub := range a.topo.Subtopologies {
		for _, n := range sub.Nodes {
			if n.Type != topology.Sink || n.Internal || n.TopicExtractor != nil {
				continue
			}
			s := [2]string{n.KeySerde, n.ValueSerde}
			if prev, ok := out[n.Topic]; ok && prev != s {
				s = [2]string{}
			}
			out[n.Topic] = s
		}
	}
	return out
}

// TakeOutput returns the records written to sink topic since the last
// TakeOutput of it, oldest first. Only in test driver mode.
func (a *App) TakeOutput(topic string) []*kgo.Record {
	if a.outputs == nil {
		return nil
	}
	a.outputs.mu.Lock()
	defer a.outputs.mu.Unlock()
	rs := a.outputs.recs[topic]
	delete(a.outputs.recs, topic)
	return rs
}

// quiesceTick is how often Quiesce looks at the tasks' progress.
const quiesceTick = 100 * time.Microsecond

// Quiesce waits until the application is quiescent: every record of every
// topic it reads (repartition topics included) processed, no bundle at a
// host, the record cache flushed and the producer flushed; then nothing is
// left that could write more. It first waits for the tasks to be assigned
// and restored. It returns the application's error if it fails meanwhile.
// Only in test driver mode, where each topic has one partition and this is
// the only instance of the application.
func (a *App) Quiesce(ctx context.Context) error {
	if err := a.awaitRunning(ctx); err != nil {
		return err
	}
	for {
		if err := a.flushProducer(ctx); err != nil {
			return err
		}
		ends, err := a.endOffsets(ctx)
		if err != nil {
			return err
		}
		if err := a.awaitProcessed(ctx, ends); err != nil {
			return err
		}
		// Commit, as TopologyTestDriver does after each record: the record
		// cache forwards what it holds (which may write to repartition
		// topics, so the loop goes round again when it did).
		a.flushTasks(a.allTasks())
		if err := a.flushProducer(ctx); err != nil {
			return err
		}
		after, err := a.endOffsets(ctx)
		if err != nil {
			return err
		}
		if maps.Equal(ends, after) {
			return a.failure()
		}
	}
}

// failure is the application's error when it failed or stopped.
func (a *App) failure() error {
	st, err := a.State()
	switch {
	case err != nil:
		return err
	case st == Stopped:
		return errors.New("engine: the application is stopped")
	}
	return nil
}

// awaitRunning waits until every partition of every topic the application
// reads has a restored task.
func (a *App) awaitRunning(ctx context.Context) error {
	for {
		states, _, changed := a.Changes(1 << 30)
		switch states[0] {
		case Failed, Stopped:
			return a.failure()
		case Running:
			return nil
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Millisecond): // a derived state (restored) may change unannounced
		case <-ctx.Done():
			st, _ := a.State()
			return fmt.Errorf("engine: waiting for the tasks to be assigned and restored (state %s): %w", st, ctx.Err())
		}
	}
}

func (a *App) flushProducer(ctx context.Context) error {
	if err := a.cl.Flush(ctx); err != nil {
		return fmt.Errorf("engine: flushing the producer: %w", err)
	}
	return a.failure()
}

type topicPartition struct {
	topic     string
	partition int32
}

// endOffsets are the end offsets of every partition the application reads,
// global tables' topics included.
func (a *App) endOffsets(ctx context.Context) (map[topicPartition]int64, error) {
	topics := append(slices.Collect(maps.Keys(a.planOf)), a.globalTopics()...)
	topics = append(topics, a.matchedTopics(nil)...)
	lo, err := a.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("engine: listing end offsets: %w", err)
	}
	out := map[topicPartition]int64{}
	var errs []error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err))
			return
		}
		out[topicPartition{o.Topic, o.Partition}] = o.Offset
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("engine: listing end offsets: %w", errors.Join(errs...))
	}
	return out, nil
}

// awaitProcessed waits until the tasks have processed every partition up to
// ends, with nothing of it still at a host, and the global reader has
// applied its topics up to ends (a record piped into a global table's topic
// is in the store when PipeInput returns, as in TopologyTestDriver).
func (a *App) awaitProcessed(ctx context.Context, ends map[topicPartition]int64) error {
	tick := time.NewTicker(quiesceTick)
	defer tick.Stop()
	for {
		if err := a.failure(); err != nil {
			return err
		}
		if a.pending.Load() == 0 && a.reachedAll(ends) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("engine: waiting for the topology to process its input (%s): %w", a.behind(ends), ctx.Err())
		}
	}
}

func (a *App) reachedAll(ends map[topicPartition]int64) bool {
	for tp, end := range ends {
		if end <= 0 {
			continue
		}
		if reached, ok := a.reached(tp); !ok || reached < end {
			return false
		}
	}
	return true
}

// reached is the offset up to which tp is processed: by its task, or by
// the global reader for a global table's topic; ok false when no task (or
// reader) has it.
func (a *App) reached(tp topicPartition) (offset int64, ok bool) {
	if a.planFor(tp.topic) == nil {
		return a.globalApplied(tp.topic, tp.partition)
	}
	t := a.taskFor(tp.topic, tp.partition)
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	offset, ok = t.reached[tp.topic]
	t.mu.Unlock()
	if !ok {
		// A task made by a rebalance (a pattern source's new topic)
		// resumes where its predecessor got to.
		a.mu.Lock()
		offset = a.carried[tp]
		a.mu.Unlock()
	}
	return offset, true
}

// carryReached keeps how far t got, for its successor (reached). Called
// with a.mu held, as a rebalance takes t.
func (a *App) carryReached(t *task) {
	if !a.cfg.TestDriver {
		return
	}
	if a.carried == nil {
		a.carried = map[topicPartition]int64{}
	}
	t.mu.Lock()
	for topic, o := range t.reached {
		a.carried[topicPartition{topic, t.id.partition}] = o
	}
	t.mu.Unlock()
}

// behind says what Quiesce still waits for: the partitions not processed
// to their end, and the records at tasks.
func (a *App) behind(ends map[topicPartition]int64) string {
	var parts []string
	for tp, end := range ends {
		if end <= 0 {
			continue
		}
		reached, ok := a.reached(tp)
		if !ok {
			parts = append(parts, fmt.Sprintf("%s/%d has no task (or global reader)", tp.topic, tp.partition))
			continue
		}
		if reached < end {
			parts = append(parts, fmt.Sprintf("%s/%d processed to %d of %d", tp.topic, tp.partition, reached, end))
		}
	}
	slices.Sort(parts)
	st, _ := a.State()
	return fmt.Sprintf("state %s, %d records at tasks; %s", st, a.pending.Load(), strings.Join(parts, ", "))
}
