package runtime

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// taskID is Kafka Streams' task id: sub-topology x partition.
type taskID struct {
	sub       int
	partition int32
}

func (id taskID) String() string { return fmt.Sprintf("%d_%d", id.sub, id.partition) }

// rec is a record inside a task. Values are serialized bytes; nil is null.
type rec struct {
	key, value []byte
	// old is a table change's old value, when the node sends old values
	// (nil otherwise, and for stream records).
	old []byte
	ts  int64
	// in is the input record this one descends from: its topic, partition
	// and offset name it in errors.
	in *kgo.Record
	// skey is the record's key in a store, when it differs from key: a
	// windowed aggregation's (window.go).
	skey []byte
}

// storeKey is r's key in the store of the step it is in.
func (r *rec) storeKey() []byte {
	if r.skey != nil {
		return r.skey
	}
	return r.key
}

// storeTx is a store partition plus the writes of the batch in progress,
// which reach Pebble and the changelog only when the batch succeeds.
//
// Under exactly_once_v2 a batch's writes move on to txn, the writes of the
// open transaction, which reach the changelog just before the transaction
// ends and Pebble only once it committed.
type storeTx struct {
	store     *topology.Store
	part      *state.Partition
	changelog string
	// keys maps store keys to changelog keys and back (window.go); nil for
	// a key-value store, whose keys are the same.
	keys keyCodec
	// front, when set, answers gets in its range (window.go).
	front front
	dirty map[string]row
	txn   map[string]row
	// expired: under exactly_once_v2, the key ranges [lo, hi) that
	// retention expired in the open transaction. They reach Pebble after
	// its writes, once it committed: deleted at once, a transaction that
	// then aborts (or a killed engine) would leave Pebble without rows its
	// checkpoint still holds (a window not emitted yet, say), and no
	// restore from the checkpoint would bring them back.
	expired [][2][]byte
	// lastOffset is the offset of the last changelog record of the open
	// transaction, -1 when none (set by produce promises).
	lastOffset atomic.Int64
}

// row is a store's value for a key with its timestamp; a nil value is a
// deleted key.
type row struct {
	value []byte
	ts    int64
}

// get returns key's value (nil when absent) and its timestamp.
func (s *storeTx) get(key []byte) ([]byte, int64, error) {
	if s.front != nil {
		if r, known := s.front.lookup(key); known {
			return r.value, r.ts, nil
		}
	}
	if r, ok := s.dirty[string(key)]; ok {
		return r.value, r.ts, nil
	}
	if r, ok := s.txn[string(key)]; ok {
		return r.value, r.ts, nil
	}
	return s.part.Get(key)
}

// put sets key's value (nil deletes it) as of timestamp ts.
func (s *storeTx) put(key, value []byte, ts int64) {
	s.dirty[string(key)] = row{value, ts}
	if s.front != nil {
		s.front.store(key, row{value, ts})
	}
}

// expire deletes the rows in [lo, hi) (nil: open) that retention no
// longer keeps: at once under at-least-once (whose checkpoint is cleared
// while running), with the open transaction under exactly_once_v2.
func (s *storeTx) expire(eos bool, lo, hi []byte) error {
	if eos {
		s.expired = append(s.expired, [2][]byte{bytes.Clone(lo), bytes.Clone(hi)})
		return nil
	}
	return s.part.DeleteRange(lo, hi)
}

// front is an in-memory view of part of a store that knows every row in
// its range, in front of the batch, transaction and Pebble (window.go's
// open windows).
type front interface {
	// lookup returns key's row, and whether the front knows it (a key in
	// its range that it does not hold is absent).
	lookup(key []byte) (row, bool)
	store(key []byte, r row)
}

// writes turns rows into store writes.
func writes(rows map[string]row) []state.Write {
	ws := make([]state.Write, 0, len(rows))
	for k, r := range rows {
		ws = append(ws, state.Write{Key: []byte(k), Value: r.value, TS: r.ts})
	}
	return ws
}

// changelogRecord is the changelog record of a store change: the plain
// value, with the row's timestamp as the record's.
func (s *storeTx) changelogRecord(partition int32, w state.Write) *kgo.Record {
	key := w.Key
	if s.keys != nil {
		key = s.keys.toLog(key)
	}
	return &kgo.Record{Topic: s.changelog, Partition: partition, Key: key, Value: w.Value, Timestamp: time.UnixMilli(w.TS)}
}

// aggTime is the timestamp of an aggregate updated by a record at ts: the
// later of ts and the previous aggregate's, as Kafka Streams' aggregations
// since timestamped stores (KIP-258) have it.
func aggTime(ts int64, prev []byte, prevTS int64) int64 {
	if prev != nil && prevTS > ts {
		return prevTS
	}
	return ts
}

// task processes the records of one partition of one sub-topology, in offset
// order, one batch at a time. Its goroutine is the only one touching its
// stores and buffers; mu guards only offsets, which the committer reads.
type task struct {
	id   taskID
	app  *App
	plan *plan
	in   inbox
	stop chan struct{}
	done chan struct{}

	stores map[string]*storeTx
	out    []*kgo.Record
	// caches hold the record cache's updates per caching step (cache.go);
	// cacheBytes is their size.
	caches map[*step]*recCache
	// wins are the windowed steps' stream times and buffers (window.go).
	wins map[*step]*winState
	// ssjoins are the stream-stream joins' states, by left store
	// (join_stream.go).
	ssjoins map[string]*ssState
	// expandBuf is windowAggregate's scratch: a record per window.
	expandBuf  []rec
	cacheBytes int
	// mem is what the task counts in its application's memory budget
	// (budget.go).
	mem taskMemory
	// flushReq asks the task to flush its record cache; the answer goes to
	// the channel sent.
	flushReq chan chan error
	// restored is set once the task's stores are restored: from then on
	// they answer queries.
	restored atomic.Bool
	// settleMu serializes settleTxn: the poll loop settles the transaction
	// it ended while a rebalance callback may be dropping the same task's
	// changes (onRevoked, onLost).
	settleMu sync.Mutex

	mu sync.Mutex
	// offsets: per input topic, the next offset to consume; only batches
	// that completed (outputs handed to the producer, their cached updates
	// forwarded) move it.
	offsets map[string]kgo.EpochOffset
	// processed is offsets, including batches whose updates still wait in
	// the record cache. Only the task's goroutine touches it.
	processed map[string]kgo.EpochOffset

	// ends: per input topic, the high watermark of the last fetch (guarded
	// by mu); lag is measured to it.
	ends map[string]int64
	// reached: per input topic, the offset after the last record processed,
	// cached updates included (guarded by mu); the test driver's Quiesce
	// waits on it.
	reached map[string]int64
}

func newTask(a *App, id taskID, p *plan) *task {
	return &task{
		id: id, app: a, plan: p,
		in:        inbox{signal: make(chan struct{}, 1), paused: map[string]bool{}},
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		stores:    map[string]*storeTx{},
		offsets:   map[string]kgo.EpochOffset{},
		processed: map[string]kgo.EpochOffset{},
		reached:   map[string]int64{},
		caches:    map[*step]*recCache{},
		wins:      map[*step]*winState{},
		flushReq:  make(chan chan error),
	}
}

// run restores the task's stores, then processes batches until stopped.
func (t *task) run(ctx context.Context) {
	defer t.app.recovered("task " + t.id.String())
	defer close(t.done)
	defer t.releaseMemory()
	ctx = t.memoryContext(ctx)
	defer func() {
		// Records the task will not process no longer hold up a commit.
		t.in.mu.Lock()
		if t.in.n > 0 {
			t.app.pending.Add(-int64(t.in.n))
			t.app.workDropped.Store(true)
		}
		t.in.queues, t.in.n = nil, 0
		t.in.mu.Unlock()
	}()
	for _, st := range t.plan.stores {
		tx := &storeTx{
			store:     st,
			part:      t.app.db.Partition(st.Name, t.id.partition),
			changelog: t.app.fullTopic(st.ChangelogTopic, true),
			dirty:     map[string]row{},
			txn:       map[string]row{},
			keys:      codecFor(st),
		}
		tx.lastOffset.Store(-1)
		if err := t.app.restore(ctx, tx); err != nil {
			if ctx.Err() == nil { // else: stopping, not failing
				t.app.fail(fmt.Errorf("runtime: task %s: %w", t.id, err))
			}
			return
		}
		t.stores[st.Name] = tx
	}
	// Kafka Streams starts no stream thread before the global stores are
	// restored.
	if !t.app.awaitGlobals(ctx, t.stop) {
		return
	}
	t.restored.Store(true)
	max := t.app.cfg.BundleMaxRecords
	linger := t.app.cfg.BundleLinger
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func(reply chan error) bool {
		err := t.flushNow(ctx)
		t.publishMemory()
		reply <- err
		if err != nil {
			t.app.workDropped.Store(true)
			if ctx.Err() == nil {
				t.app.fail(err)
			}
			return false
		}
		return true
	}
	for {
		select {
		case reply := <-t.flushReq:
			if !flush(reply) {
				return
			}
		default:
		}
		if t.in.len() == 0 {
			t.resumeIfDrained()
			select {
			case <-t.stop:
				t.flushOnStop(ctx)
				return
			case <-t.in.signal:
				continue
			case reply := <-t.flushReq:
				if !flush(reply) {
					return
				}
				continue
			}
		}
		// Fewer than a full bundle buffered: wait a short linger for more,
		// so bundles are big under load while latency stays low. What is
		// fetched meanwhile is merged by timestamp with what was buffered.
		if t.in.len() < max && linger > 0 {
			timer.Reset(linger)
		wait:
			for t.in.len() < max {
				select {
				case <-t.in.signal:
				case <-timer.C:
					break wait
				case <-t.stop:
					break wait
				}
			}
			timer.Stop()
		}
		batch := t.in.take(max)
		t.tookFetched(batch)
		t.resumeIfDrained()
		err := t.process(ctx, batch)
		t.app.pending.Add(-int64(len(batch)))
		if err != nil {
			// A batch cut short by Stop is not a failure: it was not
			// committed and is processed again after a restart.
			t.app.workDropped.Store(true)
			if ctx.Err() == nil {
				t.app.fail(err)
			}
			return
		}
	}
}

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

// process runs one batch through the plan. A batch is atomic: if any record
// fails, its state changes and outputs are discarded and its offsets are not
// advanced, so nothing of it is committed.
func (t *task) process(ctx context.Context, batch []*kgo.Record) error {
	t.begin()
	if err := t.pushBatch(ctx, batch); err != nil {
		return err
	}
	if t.cacheBytes > t.app.cacheBudget() || t.cacheBytes > 0 && t.memoryOver() {
		if err := t.flushCaches(ctx); err != nil {
			return err
		}
	}
	if err := t.checkMemory(); err != nil {
		return err
	}
	if err := t.finish(); err != nil {
		return err
	}
	// Each topic's records are in offset order: its last one in the batch
	// is the last processed.
	for _, r := range batch {
		t.processed[r.Topic] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	}
	t.mu.Lock()
	for topic, eo := range t.processed {
		t.reached[topic] = eo.Offset
	}
	t.mu.Unlock()
	if t.cacheBytes == 0 {
		t.settleOffsets()
	}
	return nil
}

// pushBatch pushes a batch through the plan in the batch's order (take's
// merge by timestamp): each maximal run of consecutive records of one
// source step goes through as one push, so a host operator crosses once
// per run. A task reading one topic has one run per batch; records of
// two topics whose timestamps alternate make runs of one record.
func (t *task) pushBatch(ctx context.Context, batch []*kgo.Record) error {
	recs := make([]rec, len(batch))
	srcs := make([]*step, len(batch))
	for i, r := range batch {
		s := t.plan.sources[r.Topic]
		if s == nil {
			return fmt.Errorf("runtime: task %s got a record of topic %q, which it does not read", t.id, r.Topic)
		}
		srcs[i] = s
		recs[i] = rec{key: r.Key, value: r.Value, ts: r.Timestamp.UnixMilli(), in: r}
	}
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && srcs[j] == srcs[i] {
			j++
		}
		// A run's slice ends at its capacity: a step appending to its input
		// cannot overwrite the next run.
		if err := t.push(ctx, srcs[i], recs[i:j:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// settleOffsets makes the processed offsets committable: every update of
// their records went out (none waits in the record cache).
func (t *task) settleOffsets() {
	t.mu.Lock()
	for topic, eo := range t.processed {
		t.offsets[topic] = eo
	}
	t.mu.Unlock()
}

// begin starts a batch: no outputs, no store changes yet.
func (t *task) begin() {
	t.out = t.out[:0]
	for _, tx := range t.stores {
		clear(tx.dirty)
	}
}

// finish ends a batch that succeeded: its store changes are applied (under
// exactly_once_v2 they join the transaction instead) and its outputs and
// changelog records are handed to the producer.
func (t *task) finish() error {
	for _, tx := range t.stores {
		if len(tx.dirty) == 0 {
			continue
		}
		if t.app.eos {
			for k, v := range tx.dirty {
				tx.txn[k] = v
			}
			continue
		}
		ws := writes(tx.dirty)
		for _, w := range ws {
			t.out = append(t.out, tx.changelogRecord(t.id.partition, w))
		}
		if err := tx.part.Apply(ws); err != nil {
			return fmt.Errorf("runtime: task %s: %w", t.id, err)
		}
	}
	for _, r := range t.out {
		t.app.produce(r)
	}
	return nil
}

// RecordError is a record that failed in a node: its input record's topic,
// partition and offset, and the node.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Node      string
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("runtime: record at %s/%d@%d failed in node %s: %v", e.Topic, e.Partition, e.Offset, e.Node, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// writeChangelogs hands the open transaction's store changes to the
// producer: the latest value of each key changed (Kafka Streams' cache
// flush at commit). Called only while the task is idle.
func (t *task) writeChangelogs() {
	if !t.restored.Load() {
		return // still restoring: it has processed nothing
	}
	for _, tx := range t.stores {
		for k, r := range tx.txn {
			w := state.Write{Key: []byte(k), Value: r.value, TS: r.ts}
			t.app.produceThen(tx.changelogRecord(t.id.partition, w), func(r *kgo.Record) {
				for {
					cur := tx.lastOffset.Load()
					if r.Offset <= cur || tx.lastOffset.CompareAndSwap(cur, r.Offset) {
						return
					}
				}
			})
		}
	}
}

// settleTxn applies the ended transaction's store changes to Pebble when it
// committed, with a checkpoint just past its changelog records, or drops
// them when it aborted. Called only while the task is idle.
func (t *task) settleTxn(committed bool) {
	if !t.restored.Load() {
		return
	}
	t.settleMu.Lock()
	defer t.settleMu.Unlock()
	if !committed {
		// The stream-stream joins' in-memory rows and stream time, and the
		// windowed steps' stream times, close times emitted, open windows
		// and buffers, include the aborted batches: reload them from
		// Pebble on next use, as Kafka Streams revives a task whose
		// transaction aborted from its stores. Else the session's rewind
		// to the committed offsets would count the records again into the
		// open windows, and drop them as late, and never emit the windows
		// the aborted batches closed.
		clear(t.ssjoins)
		clear(t.wins)
		for _, tx := range t.stores {
			tx.front = nil
		}
	}
	for _, tx := range t.stores {
		if committed && (len(tx.txn) > 0 || len(tx.expired) > 0) {
			err := tx.part.Apply(writes(tx.txn))
			for _, r := range tx.expired {
				if err == nil {
					err = tx.part.DeleteRange(r[0], r[1])
				}
			}
			if last := tx.lastOffset.Load(); err == nil && last >= 0 {
				err = tx.part.SetCheckpoint(last + 1)
			}
			if err != nil {
				t.app.fail(fmt.Errorf("runtime: task %s: applying a committed transaction: %w", t.id, err))
			}
		}
		clear(tx.txn)
		tx.expired = nil
		tx.lastOffset.Store(-1)
	}
}

// recordError names the record, the node and what went wrong.
func recordError(r rec, node string, err error) error {
	return &RecordError{Topic: r.in.Topic, Partition: r.in.Partition, Offset: r.in.Offset, Node: node, Err: err}
}

var empty = []byte{}

// maxWindowUpdates bounds the window updates of one pass of a hopping
// window aggregation: a batch whose records fall into more windows than
// this goes through the aggregation and everything downstream in slices of
// records, in order, so that what it holds at once (the expanded records,
// their outputs, the updates the record cache and the store batch take)
// grows with this bound and not with the batch times the windows per
// record (topology.MaxWindowsPerRecord).
const maxWindowUpdates = 1 << 16

// push runs recs through step s and everything downstream of it.
func (t *task) push(ctx context.Context, s *step, recs []rec) error {
	if len(recs) == 0 {
		return nil
	}
	if s.kind == stepWindow {
		if per := int(s.node.Windows.PerRecord()); per > 1 && len(recs)*per > maxWindowUpdates {
			n := max(1, maxWindowUpdates/per)
			for len(recs) > n {
				if err := t.push(ctx, s, recs[:n]); err != nil {
					return err
				}
				recs = recs[n:]
			}
		}
	}
	if s.stats != nil {
		s.stats.records.Add(int64(len(recs)))
	}
	var out []rec
	switch s.kind {
	case stepSource:
		var err error
		if out, err = t.deserialize(s, recs); err != nil {
			return err
		}
	case stepTableSource:
		var err error
		if out, err = t.tableSource(s, recs); err != nil {
			return err
		}
	case stepTableTransform:
		var err error
		if out, err = t.tableTransform(ctx, s, recs); err != nil {
			return err
		}
	case stepTableSelect:
		var err error
		if out, err = t.tableSelect(ctx, s, recs); err != nil {
			return err
		}
	case stepTableFold:
		var err error
		if out, err = t.tableFold(ctx, s, recs); err != nil {
			return err
		}
	case stepHost:
		var err error
		if out, err = t.runHost(ctx, s, recs); err != nil {
			return err
		}
	case stepNative:
		var err error
		if out, err = runNative(s.node, recs, t.recordFailed); err != nil {
			return err
		}
	case stepDropNullKey:
		out = make([]rec, 0, len(recs))
		for _, r := range recs {
			if r.key != nil {
				out = append(out, r)
			}
		}
	case stepCount:
		var err error
		if out, err = t.count(s, t.stores[s.store.Name], t.dropNulls(recs)); err != nil {
			return err
		}
	case stepWindow:
		var err error
		if out, err = t.windowAggregate(ctx, s, recs); err != nil {
			return err
		}
	case stepSuppress:
		var err error
		if out, err = t.suppress(s, recs); err != nil {
			return err
		}
	case stepFold:
		var err error
		if out, err = t.fold(ctx, s, recs); err != nil {
			return err
		}
	case stepJoin:
		var err error
		if out, err = t.join(ctx, s, recs); err != nil {
			return err
		}
	case stepStreamJoin:
		var err error
		if out, err = t.streamJoin(ctx, s, recs); err != nil {
			return err
		}
	case stepTableJoin:
		var err error
		if out, err = t.tableJoin(ctx, s, recs); err != nil {
			return err
		}
	case stepTableMerge:
		var err error
		if out, err = t.tableMerge(s, recs); err != nil {
			return err
		}
	case stepFKSend:
		var err error
		if out, err = t.fkSend(ctx, s, recs); err != nil {
			return err
		}
	case stepFKReceive:
		var err error
		if out, err = t.fkReceive(s, recs); err != nil {
			return err
		}
	case stepFKSubscriptionJoin:
		var err error
		if out, err = t.fkSubscriptionJoin(ctx, s, recs); err != nil {
			return err
		}
	case stepFKForeignJoin:
		var err error
		if out, err = t.fkForeignJoin(s, recs); err != nil {
			return err
		}
	case stepFKResolve:
		var err error
		if out, err = t.fkResolve(ctx, s, recs); err != nil {
			return err
		}
	case stepBranch:
		routed, err := t.branch(ctx, s, recs)
		if err != nil {
			return err
		}
		for i, c := range s.next {
			if len(routed[i]) > 0 {
				if err := t.push(ctx, c, routed[i]); err != nil {
					return err
				}
			}
		}
		return nil
	case stepPass:
		out = recs
	case stepSink:
		for _, r := range recs {
			v := r.value
			if s.change {
				if v == nil && r.old == nil {
					continue
				}
				v = encodeChange(r.value, r.old)
			}
			// The input record's headers go with what it became, as Kafka
			// Streams forwards them (to repartition topics too).
			out := &kgo.Record{Topic: s.topic, Key: r.key, Value: v, Timestamp: time.UnixMilli(r.ts), Headers: r.in.Headers}
			if s.byPartition {
				p, err := fkResponsePartition(v)
				if err != nil {
					return recordError(r, s.node.Name, err)
				}
				out.Partition = p
			}
			t.out = append(t.out, out)
		}
		return nil
	}
	if s.cached {
		t.cache(s, out)
		return nil
	}
	for _, c := range s.next {
		if err := t.push(ctx, c, out); err != nil {
			return err
		}
	}
	return nil
}

// runNative runs a Go function node per record; a record whose function
// fails goes to failed (recordFailed: nil skips it).
func runNative(n *topology.Node, recs []rec, failed func(rec, string, failKind, error) error) ([]rec, error) {
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		var err error
		switch f := n.Fn.Native.(type) {
		case topology.MapValuesFunc:
			var v []byte
			if v, err = f(r.value); err == nil {
				r.value = v
				out = append(out, r)
			}
		case topology.PredicateFunc:
			var keep bool
			if keep, err = f(r.key, r.value); err == nil && keep == (n.Op != topology.OpFilterNot) {
				out = append(out, r)
			}
		case topology.FlatMapValuesFunc:
			var vs [][]byte
			if vs, err = f(r.value); err == nil {
				for _, v := range vs {
					out = append(out, rec{key: r.key, value: v, ts: r.ts, in: r.in})
				}
			}
		case topology.MapFunc:
			var k, v []byte
			if k, v, err = f(r.key, r.value); err == nil {
				r.key, r.value = k, v
				out = append(out, r)
			}
		case topology.SelectKeyFunc:
			var k []byte
			if k, err = f(r.key, r.value); err == nil {
				r.key = k
				out = append(out, r)
			}
		case topology.ForeachFunc:
			if err = f(r.key, r.value); err == nil && n.Op == topology.OpPeek {
				out = append(out, r)
			}
		default:
			return nil, fmt.Errorf("runtime: node %s has a native function of type %T, which does not fit its operation", n.Name, f)
		}
		if err != nil {
			if err = failed(r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// deserialize checks a source's records against its serdes, as Kafka
// Streams' source node deserializes them, and for a change source splits
// each value into new and old. A record that does not decode goes to the
// deserialization policy: skipped, or its error fails the batch.
func (t *task) deserialize(s *step, recs []rec) ([]rec, error) {
	checkKey, checkValue := serde.Checks(s.keySerde), serde.Checks(s.valueSerde)
	if !checkKey && !checkValue && !s.change {
		return recs, nil
	}
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		var err error
		if checkKey && r.key != nil {
			if e := serde.Validate(s.keySerde, r.key); e != nil {
				err = fmt.Errorf("key does not decode as %s: %w", s.keySerde, e)
			}
		}
		if err == nil && checkValue && r.value != nil {
			if e := serde.Validate(s.valueSerde, r.value); e != nil {
				err = fmt.Errorf("value does not decode as %s: %w", s.valueSerde, e)
			}
		}
		if err == nil && s.change {
			nv, ov, e := decodeChange(r.value)
			if e != nil {
				err = fmt.Errorf("value is not a change: %w", e)
			}
			r.value, r.old = nv, ov
		}
		if err != nil {
			if err = t.recordFailed(r, s.node.Name, kindDeserialization, err); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
