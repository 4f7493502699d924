package engine

import (
	"slices"
	"strings"
	"sync"

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
	mu sync.Mutex // guards queues, n, paused
	// queues are in topic name order, the order that breaks timestamp
	// ties in take.
	queues []*topicQueue
	n      int             // records in all queues
	bytes  int64           // what they hold (budget.go)
	paused map[string]bool // topic -> this task's partition of it is paused
	// signal has a token when a queue became non-empty.
	signal chan struct{}
}

// topicQueue is the fetched records of one partition, in offset order.
type topicQueue struct {
	topic string
	recs  []*kgo.Record
}

// queue returns topic's queue, made on first use. Called with mu held.
func (in *inbox) queue(topic string) *topicQueue {
	i, found := slices.BinarySearchFunc(in.queues, topic, func(q *topicQueue, topic string) int { return strings.Compare(q.topic, topic) })
	if !found {
		in.queues = slices.Insert(in.queues, i, &topicQueue{topic: topic})
	}
	return in.queues[i]
}

func (t *task) enqueue(topic string, rs []*kgo.Record) {
	in := &t.in
	in.mu.Lock()
	q := in.queue(topic)
	q.recs = append(q.recs, rs...)
	in.n += len(rs)
	t.fetched(recordsBytes(rs))
	// Paused when full, or when the application is at its memory budget.
	full := (len(q.recs) >= t.app.inboxHigh() || t.app.mem.over()) && !in.paused[topic]
	if full {
		in.paused[topic] = true
	}
	in.mu.Unlock()
	if full {
		t.app.cl.PauseFetchPartitions(map[string][]int32{topic: {t.id.partition}})
	}
	select {
	case in.signal <- struct{}{}:
	default:
	}
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
// fetched in. A queue with nothing buffered holds no other back (Kafka's
// max.task.idle.ms = -1: see docs/design/joins.md).
func (in *inbox) take(n int) []*kgo.Record {
	in.mu.Lock()
	defer in.mu.Unlock()
	n = min(n, in.n)
	if n == 0 {
		return nil
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
		if head.recs = head.recs[k:]; len(head.recs) == 0 {
			head.recs = nil
		}
	}
	in.n -= n
	return out
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
