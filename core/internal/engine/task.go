package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
	// headers, when ownHeaders, are the record's own (a processor set
	// them); else it has its input record's.
	headers    []kgo.RecordHeader
	ownHeaders bool
}

// storeKey is r's key in the store of the step it is in.
func (r *rec) storeKey() []byte {
	if r.skey != nil {
		return r.skey
	}
	return r.key
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
	// matched remembers which step reads each topic a pattern source
	// matched (sourceOf), so a regular expression runs once per topic, not
	// once per record.
	matched map[string]*step

	stores map[string]*storeTx
	out    []*kgo.Record
	// lastIn and lastOut are the records the last batch took and the
	// outputs its records made (batchSize).
	lastIn, lastOut int
	// ops are the plan's steps' operators in this task, by step index
	// (operator.go); made on first use.
	ops []operator
	// caches hold the record cache's updates per caching step (cache.go);
	// cacheBytes is their size.
	caches     map[*step]*recCache
	cacheBytes int
	// unloggedBytes is the size of the stores' changes whose changelog
	// records wait for the record cache to empty (state.Tx.Unlogged),
	// counted as the record cache's.
	unloggedBytes int
	// mem is what the task counts in its application's memory budget
	// (budget.go).
	mem taskMemory
	// flushReq asks the task to flush its record cache; the answer goes to
	// the channel sent.
	flushReq chan chan error
	// syncReq asks the task to write what its held stores hold to Pebble
	// (sync) before a query reads it; the answer goes to the channel sent.
	syncReq chan chan error
	// punctReq asks the task to run its due wall-clock punctuators
	// (App.PunctuateWallClock); schedules are its processors' punctuators
	// and streamTime the largest timestamp it has seen, -1 before any
	// (punctuate.go).
	punctReq   chan chan error
	schedules  []*schedule
	streamTime int64
	// partTime is, per source topic with a TimestampExtractor, the
	// largest timestamp extracted from this task's partition (extract.go).
	partTime map[string]int64
	// restored is set once the task's stores are restored: from then on
	// they answer queries.
	restored atomic.Bool
	// settleMu serializes settleTxn and writeChangelogs: the poll loop
	// ends and settles a transaction while a rebalance callback may be
	// dropping the same task's changes (onRevoked, onLost).
	settleMu sync.Mutex

	mu sync.Mutex
	// offsets: per input topic, the next offset to consume; only batches
	// that completed (outputs handed to the producer, their cached updates
	// forwarded) move it.
	offsets map[string]kgo.EpochOffset
	// processed is offsets, including batches whose updates still wait in
	// the record cache. Only the task's goroutine touches it.
	processed map[string]kgo.EpochOffset

	// asking is set while the task asks the brokers for lags (askLag).
	asking atomic.Bool
	// reached: per input topic, the offset after the last record processed,
	// cached updates included (guarded by mu); the test driver's Quiesce
	// waits on it.
	reached map[string]int64
}

func newTask(a *App, id taskID, p *plan) *task {
	t := &task{
		id: id, app: a, plan: p,
		in: inbox{signal: make(chan struct{}, 1), paused: map[string]bool{},
			idleMs: a.cfg.MaxTaskIdleMs, now: a.clock, enforced: &a.stats.enforced, forced: &a.idleForced},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		stores:     map[string]*storeTx{},
		offsets:    map[string]kgo.EpochOffset{},
		processed:  map[string]kgo.EpochOffset{},
		reached:    map[string]int64{},
		caches:     map[*step]*recCache{},
		flushReq:   make(chan chan error),
		syncReq:    make(chan chan error),
		punctReq:   make(chan chan error),
		streamTime: -1,
	}
	if t.in.now == nil { // an App not made by New (tests)
		t.in.now = time.Now
	}
	for topic := range p.sources {
		t.in.queue(topic)
	}
	for _, topic := range a.matchedTopics(p) {
		t.in.queue(topic)
	}
	return t
}

// run restores the task's stores, then processes batches until stopped.
func (t *task) run(ctx context.Context) {
	defer t.app.recovered("task " + t.id.String())
	defer close(t.done)
	defer t.releaseMemory()
	ctx = t.memoryContext(ctx)
	defer t.dropQueued()
	if !t.openStores(ctx) {
		return
	}
	// Kafka Streams starts no stream thread before the global stores are
	// restored.
	if !t.app.awaitGlobals(ctx, t.stop) {
		return
	}
	t.restored.Store(true)
	t.loop(ctx)
}

// dropQueued forgets the records queued when the task ends: records the
// task will not process no longer hold up a commit.
func (t *task) dropQueued() {
	t.in.mu.Lock()
	if t.in.n > 0 {
		t.app.pending.Add(-int64(t.in.n))
		t.app.workDropped.Store(true)
	}
	t.in.queues, t.in.n = nil, 0
	t.in.mu.Unlock()
}

// openStores opens the transaction of each of the task's stores, restored
// from its changelog, and reports whether all are (else the task ends; a
// failure fails the application unless ctx is done).
func (t *task) openStores(ctx context.Context) bool {
	for _, st := range t.plan.stores {
		tx := &storeTx{
			Tx:        state.NewTx(t.app.db.Partition(st.Name, t.id.partition), t.app.holdsChanges(st)),
			store:     st,
			changelog: t.app.fullTopic(st.ChangelogTopic, true),
			keys:      codecFor(st),
		}
		if err := t.app.restore(ctx, tx); err != nil {
			if ctx.Err() == nil { // else: stopping, not failing
				t.app.fail(fmt.Errorf("engine: task %s: %w", t.id, err))
			}
			return false
		}
		t.stores[st.Name] = tx
	}
	return true
}

// taskRequests answers the requests a task takes between batches: each
// reports whether the task goes on (task.answer).
type taskRequests struct {
	flush, sync, punctuate func(reply chan error) bool
}

// requests returns the task's answers to its requests under ctx.
func (t *task) requests(ctx context.Context) taskRequests {
	return taskRequests{
		flush: func(reply chan error) bool {
			err := t.flushNow(ctx)
			t.dropOut()
			t.publishMemory()
			return t.answer(ctx, reply, err)
		},
		sync: func(reply chan error) bool {
			// Not ctx: a sync (Pebble writes, no crossing, no wait) never
			// fails because the task is stopping.
			return t.answer(context.Background(), reply, t.sync())
		},
		punctuate: func(reply chan error) bool {
			return t.answer(ctx, reply, t.punctuateWallClock(ctx))
		},
	}
}

// loop processes batches until the task stops, answering requests and
// running due wall-clock punctuators between them.
func (t *task) loop(ctx context.Context) {
	max := t.app.cfg.BundleMaxRecords
	linger := t.app.cfg.BundleLinger
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	rq := t.requests(ctx)
	wall := time.NewTimer(time.Hour)
	wall.Stop()
	defer wall.Stop()
	for {
		if !t.answerWaiting(rq) {
			return
		}
		// Outside the test driver, due wall-clock punctuators run between
		// batches, and a timer wakes an idle task for them.
		if t.app.wallNow == nil && len(t.schedules) > 0 {
			if !rq.punctuate(nil) {
				return
			}
		}
		if t.in.len() == 0 {
			if !t.awaitWork(ctx, rq, wall) {
				return
			}
			continue
		}
		n := t.batchSize(max)
		t.lingerFor(n, linger, timer)
		if !t.holdWhilePaused(ctx, rq.flush, rq.sync) {
			return
		}
		batch, wake := t.in.take(n)
		if len(batch) == 0 {
			// Records the task may not take yet: another of its
			// partitions holds them back (idle.go).
			if !t.idle(ctx, wake, rq.flush) {
				return
			}
			continue
		}
		if !t.runBatch(ctx, batch) {
			return
		}
	}
}

// batchSize is how many records the task takes for its next batch, at
// most max (polystreams.bundle.max.records). A batch's outputs wait for
// its end (a batch is atomic), so a batch whose records fan out (a line
// split into words) holds many times its own records: a plan that never
// crosses to a host takes as many records as, at the last batch's outputs
// per record, make about max outputs. A plan that crosses takes max: its
// batch is its bundles, whose size is the crossing's cost per record.
func (t *task) batchSize(max int) int {
	if t.plan.host || t.lastOut <= t.lastIn {
		return max
	}
	return min(max, int(int64(max)*int64(t.lastIn)/int64(t.lastOut))+1)
}

// answerWaiting answers a request that is waiting, if any, and reports
// whether the task goes on.
func (t *task) answerWaiting(rq taskRequests) bool {
	select {
	case reply := <-t.flushReq:
		return rq.flush(reply)
	case reply := <-t.syncReq:
		return rq.sync(reply)
	case reply := <-t.punctReq:
		return rq.punctuate(reply)
	default:
		return true
	}
}

// awaitWork waits, with no record queued, for records, a request, a due
// wall-clock punctuator (wall) or the stop, and reports whether the task
// goes on. At the stop it flushes its record cache and closes its
// processors.
func (t *task) awaitWork(ctx context.Context, rq taskRequests, wall *time.Timer) bool {
	t.resumeIfDrained()
	var wallC <-chan time.Time
	if d, ok := t.wallTimer(); ok && t.app.wallNow == nil {
		wall.Reset(d)
		wallC = wall.C
	}
	select {
	case <-t.stop:
		t.flushOnStop(ctx)
		t.closeProcessors(ctx)
		return false
	case <-wallC:
		return true
	case reply := <-t.punctReq:
		wall.Stop()
		return rq.punctuate(reply)
	case <-t.in.signal:
		wall.Stop()
		return true
	case reply := <-t.flushReq:
		return rq.flush(reply)
	case reply := <-t.syncReq:
		return rq.sync(reply)
	}
}

// lingerFor waits, with fewer than a full bundle (max) buffered, a short
// linger for more, so bundles are big under load while latency stays low.
// What is fetched meanwhile is merged by timestamp with what was buffered.
func (t *task) lingerFor(max int, linger time.Duration, timer *time.Timer) {
	if t.in.len() >= max || linger <= 0 {
		return
	}
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

// runBatch processes batch in one of the application's processing slots
// and reports whether the task goes on: a failure fails the application
// (unless ctx is done: a batch cut short by Stop is not committed and is
// processed again after a restart).
func (t *task) runBatch(ctx context.Context, batch []*kgo.Record) bool {
	t.tookFetched(batch)
	t.resumeIfDrained()
	release, ok := t.app.slot(ctx)
	if !ok { // stopping: the batch is processed again after a restart
		t.app.pending.Add(-int64(len(batch)))
		t.app.workDropped.Store(true)
		return false
	}
	err := t.process(ctx, batch)
	t.dropOut()
	release()
	t.app.pending.Add(-int64(len(batch)))
	if err != nil {
		t.app.workDropped.Store(true)
		if ctx.Err() == nil {
			t.app.fail(err)
		}
		return false
	}
	return true
}

// process runs one batch through the plan. A batch is atomic: if any record
// fails, its state changes and outputs are discarded and its offsets are not
// advanced, so nothing of it is committed.
func (t *task) process(ctx context.Context, batch []*kgo.Record) error {
	t.begin()
	if err := t.pushBatch(ctx, batch); err != nil {
		return err
	}
	t.lastIn, t.lastOut = len(batch), len(t.out)
	if t.cacheBytes+t.unloggedBytes > t.app.cacheBudget() || t.cacheBytes > 0 && t.memoryOver() {
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

// sourceOf answers the source step reading topic: a named source's, else
// the pattern source's that matches it, remembered per topic (nil: none).
func (t *task) sourceOf(topic string) *step {
	if s := t.plan.sources[topic]; s != nil || len(t.plan.patterns) == 0 {
		return s
	}
	s, ok := t.matched[topic]
	if !ok {
		s = t.plan.source(topic)
		if t.matched == nil {
			t.matched = map[string]*step{}
		}
		t.matched[topic] = s
	}
	return s
}

// pushBatch pushes a batch through the plan in the batch's order (take's
// merge by timestamp): each maximal run of consecutive records of one
// source step goes through as one push, so a host operator crosses once
// per run. A task reading one topic has one run per batch; records of
// two topics whose timestamps alternate make runs of one record.
func (t *task) pushBatch(ctx context.Context, batch []*kgo.Record) error {
	if err := t.initProcessors(ctx); err != nil {
		return err
	}
	recs := make([]rec, len(batch))
	srcs := make([]*step, len(batch))
	for i, r := range batch {
		s := t.sourceOf(r.Topic)
		if s == nil {
			return fmt.Errorf("engine: task %s got a record of topic %q, which it does not read", t.id, r.Topic)
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
		run := recs[i:j:j]
		if srcs[i].node.Extractor != nil {
			var err error
			if run, err = t.extract(ctx, srcs[i], run); err != nil {
				return err
			}
		}
		if err := t.push(ctx, srcs[i], run); err != nil {
			return err
		}
		for _, r := range run {
			t.streamTime = max(t.streamTime, r.ts)
		}
		if len(t.schedules) > 0 {
			if err := t.punctuate(ctx, topology.StreamTime, t.streamTime); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// push runs recs through step s and everything downstream of it: s's
// operator, then each child in turn with what it forwarded (or the record
// cache, for a caching step).
func (t *task) push(ctx context.Context, s *step, recs []rec) error {
	if len(recs) == 0 {
		return nil
	}
	if s.slice > 0 {
		for len(recs) > s.slice {
			if err := t.push(ctx, s, recs[:s.slice]); err != nil {
				return err
			}
			recs = recs[s.slice:]
		}
	}
	if s.stats != nil {
		s.stats.records.Add(int64(len(recs)))
	}
	out, err := t.op(s).process(ctx, recs)
	if err != nil {
		return err
	}
	if s.cached {
		if s.owner != nil {
			t.cache(s.owner, out) // a cogroup's store has one cache
		} else {
			t.cache(s, out)
		}
		return nil
	}
	for _, c := range s.next {
		if err := t.push(ctx, c, out); err != nil {
			return err
		}
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

// begin starts a batch: no outputs, no store changes yet. Each store's
// read cache (state/cache.go) gets its share of the task's share of
// statestore.cache.max.bytes, which changes as tasks come and go.
func (t *task) begin() {
	t.out = t.out[:0]
	var share int
	if len(t.stores) > 0 {
		share = t.app.cacheBudget() / len(t.stores)
	}
	for _, tx := range t.stores {
		tx.Begin(share)
	}
}

// finish ends a batch that succeeded: its store changes are applied (under
// exactly_once_v2 they join the transaction instead) and its outputs and
// changelog records are handed to the producer; the changelog records of
// a store that logs later (state.Tx.Unlogged) wait until the record cache
// is empty. Offsets settle only with the cache empty (process, flushNow),
// so every settled offset's store changes are in the changelog, as
// at-least-once requires.
func (t *task) finish() error {
	for _, tx := range t.stores {
		if len(tx.Dirty) == 0 {
			continue
		}
		if t.app.eos {
			tx.Hold()
			continue
		}
		if tx.Unlogged != nil {
			// Held until the cache empties, or a query asks (sync).
			t.unloggedBytes += tx.LogLater()
			tx.Hold()
			continue
		}
		ws := state.Writes(tx.Dirty)
		if versionedStore(tx.store) {
			sortVersions(ws)
		}
		for _, w := range ws {
			if r := tx.changelogRecord(t.id.partition, w); r != nil {
				t.out = append(t.out, r)
			}
		}
		if err := tx.Part.Apply(ws); err != nil {
			return fmt.Errorf("engine: task %s: %w", t.id, err)
		}
	}
	if t.cacheBytes == 0 && t.unloggedBytes > 0 {
		if err := t.sync(); err != nil {
			return err
		}
		for _, tx := range t.stores {
			for k, r := range tx.Unlogged {
				w := state.Write{Key: []byte(k), Value: r.Value, TS: r.TS}
				if r := tx.changelogRecord(t.id.partition, w); r != nil {
					t.out = append(t.out, r)
				}
			}
			clear(tx.Unlogged)
		}
		t.unloggedBytes = 0
	}
	for _, r := range t.out {
		t.app.produce(r)
	}
	return nil
}

// answer sends err, the outcome of a request to the task (a flush, a
// sync, a punctuation), to reply (when not nil), and reports whether the
// task goes on: on an error it drops the task's work and fails the
// application, unless ctx is done (stopping, not failing).
func (t *task) answer(ctx context.Context, reply chan error, err error) bool {
	if reply != nil {
		reply <- err
	}
	if err == nil {
		return true
	}
	t.app.workDropped.Store(true)
	if ctx.Err() == nil {
		t.app.fail(err)
	}
	return false
}

// dropOut forgets the last batch's outputs once the producer has them, so
// that a task waiting for its next batch does not keep them (and the
// records they came from) alive. Tests that call process read t.out
// after it; the task's loop drops it.
func (t *task) dropOut() {
	clear(t.out)
	t.out = t.out[:0]
}

// sync writes the changes that held stores hold (state.Tx.Unlogged) to
// Pebble, so that a query, which reads Pebble, sees every batch
// processed; their changelog records still wait for the record cache.
// Only the task's goroutine calls it: at the end of a batch, or between
// batches when StorePartitions asks.
func (t *task) sync() error {
	for _, tx := range t.stores {
		if err := tx.Sync(); err != nil {
			return fmt.Errorf("engine: task %s: %w", t.id, err)
		}
	}
	return nil
}

// writeChangelogs hands the open transaction's store changes to the
// producer: the latest value of each key changed (Kafka Streams' cache
// flush at commit). Called only while the task is idle.
func (t *task) writeChangelogs() {
	if !t.restored.Load() {
		return // still restoring: it has processed nothing
	}
	// onRevoked and onLost settle a task's transaction from the group's
	// goroutine while the poll loop may be ending it (a data race -race
	// found): one at a time. A transaction settled first leaves nothing
	// to write; one settled after aborts anyway (the session lost it).
	t.settleMu.Lock()
	defer t.settleMu.Unlock()
	for _, tx := range t.stores {
		ws := state.Writes(tx.Txn)
		if versionedStore(tx.store) {
			sortVersions(ws)
		}
		for _, w := range ws {
			cr := tx.changelogRecord(t.id.partition, w)
			if cr == nil {
				continue
			}
			t.app.produceThen(cr, func(r *kgo.Record) { tx.Logged(r.Offset) })
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
		for _, op := range t.ops {
			if r, ok := op.(reviver); ok {
				r.revive()
			}
		}
		for _, tx := range t.stores {
			tx.Front = nil
		}
	}
	for _, tx := range t.stores {
		if err := tx.Settle(committed); err != nil {
			t.app.fail(fmt.Errorf("engine: task %s: applying a committed transaction: %w", t.id, err))
		}
	}
}
