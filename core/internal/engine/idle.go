package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
)

// Task idling (max.task.idle.ms): a task that reads several partitions (a
// join, a merge, a repartition topic beside a table) takes its next record
// only when Kafka Streams' PartitionGroup.readyToProcess would let it. Each
// partition with nothing buffered must be known to be caught up: its
// records on the broker all fetched, as the consumer's position and the
// partition's end offset (high watermark, or last stable offset under
// read_committed) tell. A partition whose lag is not known yet, or above 0,
// holds the others back until its records are fetched, so that a table
// filled before the stream is read whole before the stream's later records
// are joined. A caught-up empty partition holds them back max.task.idle.ms
// more (0: not at all), waiting for producers; past that, the task
// processes without it ("enforced processing", counted in
// EnforcedProcessing). With max.task.idle.ms = -1 nothing waits.
//
// Where franz-go differs from Kafka's consumer: it does not expose the
// consumer's position. The task keeps it from what it is handed: the offset
// after the last record fetched (the consumer keeps transaction markers,
// poll drops them after noting their offsets) or, before any record of a
// partition was fetched, the committed offset the broker reports (askLag).
// Records the client skips without handing them over (a batch compaction
// emptied) would leave that position behind the end for good, so a wait
// for fetched data ends after fetchStall without any record of the
// partition arriving: the partition is then taken to be caught up.

// fetchStall bounds a wait for records of an empty partition whose lag is
// above 0 or not known: no fetch brought any for this long, so the
// consumer has none to bring (see above). Kafka waits without a bound; its
// consumer knows its position exactly.
const fetchStall = 2 * time.Second

// askEvery is how soon a failed ask for lags is made again.
const askEvery = 250 * time.Millisecond

// idleRecheck is how soon the poll loop, under exactly_once_v2, tries
// again to end a transaction it put off because a task was idling.
const idleRecheck = 10 * time.Millisecond

// commitPutOffMax bounds how long, under exactly_once_v2, idling tasks
// may put off the end of a transaction (its timeout is 10 s): past it the
// tasks process what they hold (counted as enforced processing).
const commitPutOffMax = 5 * time.Second

// readiness is what ready found.
type readiness struct {
	// ok: the task may take its next record; enforced: some partition,
	// empty, is given up on (Kafka Streams' enforced processing).
	ok, enforced bool
	// wake: when not ok, when to look again even if nothing is fetched
	// (zero: at the next fetch or lag answer).
	wake time.Time
}

// lag is q's partition's lag, end minus position, and whether both are
// known.
func (q *topicQueue) lag() (int64, bool) {
	if q.pos < 0 || q.end < 0 {
		return 0, false
	}
	return max(q.end-q.pos, 0), true
}

// ready reports whether the next record may be taken now, as Kafka
// Streams' PartitionGroup.readyToProcess decides (and, like it, it stops
// at the first partition that must be waited for). Called with mu held.
func (in *inbox) ready(now time.Time) readiness {
	if in.idleMs == config.MaxTaskIdleDisabled {
		return readiness{ok: true}
	}
	if in.forced != nil && in.forced.Load() {
		r := readiness{ok: true}
		for _, q := range in.queues {
			r.enforced = r.enforced || len(q.recs) == 0
		}
		return r
	}
	var r readiness
	queued := false
	for _, q := range in.queues {
		if len(q.recs) > 0 {
			q.deadline, q.waitSince = time.Time{}, time.Time{}
			queued = true
			continue
		}
		if lag, known := q.lag(); !known || lag > 0 {
			// Records on the broker not fetched yet (or not known): wait
			// for them, whatever max.task.idle.ms says.
			q.deadline = time.Time{}
			if q.waitSince.IsZero() {
				q.waitSince = now
			}
			if stall := q.waitSince.Add(fetchStall); now.Before(stall) {
				return readiness{wake: stall}
			}
			// Past the stall: caught up, as far as the consumer can tell.
		} else {
			q.waitSince = time.Time{}
		}
		// Caught up: wait max.task.idle.ms for producers, from the first
		// time the partition was found so (idlePartitionDeadlines).
		if q.deadline.IsZero() {
			q.deadline = now.Add(time.Duration(in.idleMs) * time.Millisecond)
		}
		if now.Before(q.deadline) {
			return readiness{wake: q.deadline}
		}
		r.enforced = true
	}
	r.ok = queued
	return r
}

// unknownLags are the task's partitions, empty, whose lag is not known.
func (in *inbox) unknownLags() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, q := range in.queues {
		if _, known := q.lag(); !known && len(q.recs) == 0 {
			out = append(out, q.topic)
		}
	}
	return out
}

// noteLag sets what the brokers told of topic's partition (askLag): the
// committed offset (the consumer's position until it hands over a record)
// and the end. What a fetch told meanwhile is newer and stays.
func (t *task) noteLag(topic string, pos, end int64) {
	in := &t.in
	in.mu.Lock()
	if q := in.queue(topic); q.pos < 0 {
		q.pos, q.end = pos, end
	}
	in.mu.Unlock()
	t.wake()
}

// wake makes the task look at its inbox again.
func (t *task) wake() {
	select {
	case t.in.signal <- struct{}{}:
	default:
	}
}

// askLag asks the brokers, in the background and once at a time, for the
// lag of the task's empty partitions whose lag it does not know (nothing
// fetched of them since the task started: a partition with nothing to
// fetch yields no fetch response to learn from), as Kafka's consumer
// answers currentLag with a ListOffsets request when it has no fetch to go
// by. A failed ask is made again every askEvery while the task needs it.
func (t *task) askLag(ctx context.Context) {
	if t.app.adm == nil || len(t.in.unknownLags()) == 0 || !t.asking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer t.asking.Store(false)
		defer t.app.recovered("task " + t.id.String() + " asking for lags")
		for {
			topics := t.in.unknownLags()
			if len(topics) == 0 {
				return
			}
			lags, err := t.app.partitionLags(ctx, topics, t.id.partition)
			if err == nil {
				for topic, l := range lags {
					t.noteLag(topic, l[0], l[1])
				}
				continue
			}
			if ctx.Err() == nil {
				t.app.log.Debug("asking for the lag of partitions", "task", t.id.String(), "topics", topics, "error", err)
			}
			select {
			case <-t.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(askEvery):
			}
		}
	}()
}

// partitionLags are, per topic, the consumer's position (the group's
// committed offset, or the log start offset when none is committed, as
// the consumer starts there: kgo's default, Kafka Streams'
// auto.offset.reset earliest) and the end offset (the last stable offset
// under exactly_once_v2, which reads read_committed) of the topics'
// partition.
func (a *App) partitionLags(ctx context.Context, topics []string, partition int32) (map[string][2]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list := a.adm.ListEndOffsets
	if a.eos {
		list = a.adm.ListCommittedOffsets
	}
	ends, err := list(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	starts, err := a.adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing start offsets: %w", err)
	}
	committed, err := a.adm.FetchOffsetsForTopics(ctx, a.cfg.ApplicationID, topics...)
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil // no group, so nothing committed (kfake answers so)
	}
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets: %w", err)
	}
	out := map[string][2]int64{}
	for _, topic := range topics {
		end, ok1 := ends.Lookup(topic, partition)
		start, ok2 := starts.Lookup(topic, partition)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("no offsets for %s/%d", topic, partition)
		}
		pos := start.Offset
		if c, ok := committed.Lookup(topic, partition); ok && c.Err == nil && c.At >= 0 {
			pos = max(c.At, start.Offset)
		}
		out[topic] = [2]int64{pos, end.Offset}
	}
	return out, nil
}

// fetchedPartition hands the task what a fetch brought of one of its
// partitions: its records, and the partition's end as the fetch told it.
func (t *task) fetchedPartition(ftp kgo.FetchTopicPartition) {
	end := ftp.HighWatermark
	if t.app.eos && ftp.LastStableOffset >= 0 {
		end = ftp.LastStableOffset // read_committed: what can be fetched
	}
	rs := ftp.Records
	if len(rs) == 0 {
		t.noteEnd(ftp.Topic, end)
		return
	}
	next := rs[len(rs)-1].Offset + 1
	// Transaction markers are kept by the consumer only to tell the
	// position (the offset after them); they are no input.
	for i, r := range rs {
		if r.Attrs.IsControl() {
			data := append([]*kgo.Record(nil), rs[:i]...)
			for _, r := range rs[i+1:] {
				if !r.Attrs.IsControl() {
					data = append(data, r)
				}
			}
			rs = data
			break
		}
	}
	t.app.pending.Add(int64(len(rs)))
	t.enqueue(ftp.Topic, rs, next, end)
}

// noteEnd records the end of topic's partition that a fetch reported
// without records: the fetch was at the consumer's position, so when the
// task knows that position, it now knows the lag.
func (t *task) noteEnd(topic string, end int64) {
	in := &t.in
	in.mu.Lock()
	q := in.queue(topic)
	known := q.pos >= 0 && end >= 0 && q.end != end
	if known {
		q.end = end
	}
	in.mu.Unlock()
	if known {
		t.wake()
	}
}

// idle waits, with records buffered that the task may not take yet, until
// a fetch, a lag answer or wake time changes that, serving flushes
// meanwhile. It reports false when the task must end (stopped, or a flush
// failed).
func (t *task) idle(ctx context.Context, wake time.Time, flush func(chan error) bool) bool {
	t.askLag(ctx)
	t.resumeIfDrained()
	t.app.idling.Add(1)
	defer t.app.idling.Add(-1)
	var after <-chan time.Time
	if !wake.IsZero() {
		timer := time.NewTimer(max(wake.Sub(t.in.now()), 0))
		defer timer.Stop()
		after = timer.C
	}
	select {
	case <-t.stop:
		t.flushOnStop(ctx)
		t.closeProcessors(ctx)
		return false
	case <-t.in.signal:
	case <-after:
	case reply := <-t.flushReq:
		return flush(reply)
	}
	return true
}
