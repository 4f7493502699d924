package engine

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// inbox holds fetched records between the poll loop and the task, one
// queue per source topic (the task's partition of each), as Kafka Streams'
// PartitionGroup keeps one RecordQueue per partition. It is unbounded so
// that the poll loop never waits on a slow task (other tasks would
// starve); instead a partition whose queue is full is paused in the
// consumer and resumed once drained (Kafka Streams'
// buffered.records.per.partition, here inboxHigh).
type inbox struct {
	mu sync.Mutex // guards queues, n, bytes, paused
	// queues are in topic name order, the order that breaks timestamp
	// ties in take. A task has one per source topic from the start, so
	// that a partition with nothing fetched yet holds the others back
	// (idle.go).
	queues []*topicQueue
	n      int             // records in all queues
	bytes  int64           // what they hold (budget.go)
	paused map[string]bool // topic -> this task's partition of it is paused
	// signal has a token when a queue became non-empty, or what the task
	// knows of a partition's lag changed.
	signal chan struct{}

	// idleMs is max.task.idle.ms (idle.go); now is the clock its waits
	// are measured by (time.Now; tests set their own).
	idleMs int64
	now    func() time.Time
	// enforced counts the records taken while some partition, empty, was
	// given up on (the application's EnforcedProcessing); forced, when
	// set, ends every wait (an exactly_once_v2 commit put off too long).
	// Nil in tests that build a bare inbox.
	enforced *atomic.Int64
	forced   *atomic.Bool
}

// topicQueue is the fetched records of one partition, in offset order,
// and what the task knows of the partition's lag (idle.go).
type topicQueue struct {
	topic string
	recs  []*kgo.Record
	// pos is the consumer's position in the partition as far as the task
	// knows: the offset after the last record fetched since the task
	// started (transaction markers included), or before any, the
	// committed offset the brokers reported (askLag); -1: not known.
	pos int64
	// end is the partition's end offset as the last fetch (or ask) that
	// told it: its high watermark, or last stable offset under
	// read_committed; -1: not known.
	end int64
	// waitSince: since when the task has waited, this queue empty, for
	// records on the broker (lag above 0 or not known); deadline: until
	// when it waits, this queue empty and caught up, for new ones
	// (max.task.idle.ms; Kafka's idlePartitionDeadlines). Zero: not
	// waiting.
	waitSince, deadline time.Time
}

// queue returns topic's queue, made on first use. Called with mu held.
func (in *inbox) queue(topic string) *topicQueue {
	i, found := slices.BinarySearchFunc(in.queues, topic, func(q *topicQueue, topic string) int { return strings.Compare(q.topic, topic) })
	if !found {
		in.queues = slices.Insert(in.queues, i, &topicQueue{topic: topic, pos: -1, end: -1})
	}
	return in.queues[i]
}

// enqueue appends a fetch's records of topic (transaction markers left
// out) to its queue; next is the offset after the last record the fetch
// brought (markers included), end the partition's end as it told.
func (t *task) enqueue(topic string, rs []*kgo.Record, next, end int64) {
	in := &t.in
	in.mu.Lock()
	q := in.queue(topic)
	q.recs = append(q.recs, rs...)
	q.pos, q.end = next, end
	in.n += len(rs)
	t.fetched(recordsBytes(rs))
	// Paused when full, or when the application is at its memory budget.
	full := len(rs) > 0 && (len(q.recs) >= t.app.inboxHigh() || t.app.mem.over()) && !in.paused[topic]
	if full {
		in.paused[topic] = true
	}
	in.mu.Unlock()
	if full {
		t.app.cl.PauseFetchPartitions(map[string][]int32{topic: {t.id.partition}})
	}
	t.wake()
}

// end is the end offset of topic's partition as the task last heard it
// (-1: not known).
func (in *inbox) end(topic string) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	i, found := slices.BinarySearchFunc(in.queues, topic, func(q *topicQueue, topic string) int { return strings.Compare(q.topic, topic) })
	if !found {
		return -1
	}
	return in.queues[i].end
}

// len is how many records the queues hold.
func (in *inbox) len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}

// take cuts up to n records from the queues, merged as Kafka Streams'
// PartitionGroup.nextRecord picks them: always the head record with the
// smallest timestamp (ties: the topic first in name order), so each
// partition stays in offset order and a table update at t=5 is applied
// before a stream record at t=7 is joined, whatever order they were
// fetched in. Before each record, as Kafka Streams' StreamTask.process,
// it asks ready (idle.go) whether the task may go on: a queue that runs
// empty may hold the others back (max.task.idle.ms). When it takes
// nothing for that reason, it returns when to look again (zero: at the
// next fetch or lag answer).
func (in *inbox) take(n int) ([]*kgo.Record, time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	n = min(n, in.n)
	if n == 0 {
		return nil, time.Time{}
	}
	now := in.now()
	r := in.ready(now)
	if !r.ok {
		return nil, r.wake
	}
	out := make([]*kgo.Record, 0, n)
	for len(out) < n {
		// head is the queue to take from; next the one whose head comes
		// right after head's (nil: no other queue has records).
		var head, next *topicQueue
		for _, q := range in.queues {
			switch {
			case len(q.recs) == 0:
			case head == nil || before(q, head):
				head, next = q, head
			case next == nil || before(q, next):
				next = q
			}
		}
		// Take head's records while they still come first: a run, cut
		// with one scan of the queues.
		k := 1
		for k < len(head.recs) && len(out)+k < n && (next == nil || headBefore(head, k, next)) {
			k++
		}
		out = append(out, head.recs[:k]...)
		// The queue's array keeps no pointer to what was taken: each would
		// keep its fetch's decoded records alive until the array is
		// dropped.
		clear(head.recs[:k])
		if r.enforced && in.enforced != nil {
			in.enforced.Add(int64(k))
		}
		if head.recs = head.recs[k:]; len(head.recs) == 0 {
			head.recs = nil
			// Readiness changes only when a queue runs empty.
			if r = in.ready(now); !r.ok {
				break
			}
		}
	}
	in.n -= len(out)
	return out, time.Time{}
}

// before reports whether q's head record is taken before p's.
func before(q, p *topicQueue) bool { return headBefore(q, 0, p) }

// headBefore reports whether q's record i is taken before p's head: an
// earlier timestamp, or the same one in a topic earlier in name order.
func headBefore(q *topicQueue, i int, p *topicQueue) bool {
	qt, pt := q.recs[i].Timestamp.UnixMilli(), p.recs[0].Timestamp.UnixMilli()
	return qt < pt || qt == pt && q.topic < p.topic
}

// resumeIfDrained resumes fetching the task's paused partitions whose
// queue is below half its bound.
func (t *task) resumeIfDrained() {
	in := &t.in
	in.mu.Lock()
	var resume map[string][]int32
	for topic := range in.paused {
		// At its memory budget, the application fetches for a task only
		// once its queue is empty.
		if n := len(in.queue(topic).recs); n < t.app.inboxHigh()/2 && (n == 0 || !t.app.mem.over()) {
			if resume == nil {
				resume = map[string][]int32{}
			}
			resume[topic] = []int32{t.id.partition}
			delete(in.paused, topic)
		}
	}
	in.mu.Unlock()
	if resume != nil {
		t.app.cl.ResumeFetchPartitions(resume)
	}
}
