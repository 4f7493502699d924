package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// The record cache (statestore.cache.max.bytes), as Kafka Streams' caching
// stores have it: a stateful node (an aggregation, a materialized table)
// does not forward each update at once but keeps the latest one per key,
// with the value the key had before its first cached update, and forwards
// them at commit, or when the task's share of the cache is full. Under
// at_least_once a key-value store's changes wait too and go to Pebble and
// the changelog with the flush, once per key (state.Tx.Unlogged; a query
// has them written to Pebble first: task.sync); other stores are written
// batch by batch, and under exactly_once_v2 every store at commit. A key
// whose cached update leaves it as absent as it was (inserted, then
// deleted) is not forwarded (CachingKeyValueStore: neither value is
// non-null).
//
// Commits move only offsets whose records' cached updates were forwarded
// (task.offsets lags task.processed while the cache holds updates), and
// under exactly_once_v2 the caches are flushed into the transaction before
// it ends, so a crash can lose no update.

// recCache is one node's cached updates, in the order their keys were
// first cached.
type recCache struct {
	index   map[string]int
	entries []rec
}

// cacheOverhead approximates an entry's bookkeeping, so that a cache of
// many small entries is still bounded (as a held store's, state.Tx.LogLater).
const cacheOverhead = state.RecordOverhead

func entrySize(r rec) int { return len(r.key) + len(r.value) + len(r.old) + cacheOverhead }

// cache keeps recs, the updates step s made, in place of forwarding them.
func (t *task) cache(s *step, recs []rec) {
	c := t.caches[s]
	if c == nil {
		c = &recCache{index: map[string]int{}}
		t.caches[s] = c
	}
	for _, r := range recs {
		if i, ok := c.index[string(r.key)]; ok {
			e := &c.entries[i]
			t.cacheBytes += len(r.value) - len(e.value)
			e.value, e.ts, e.in = r.value, r.ts, r.in // e.old stays: the value before the first update
			continue
		}
		c.index[string(r.key)] = len(c.entries)
		c.entries = append(c.entries, r)
		t.cacheBytes += entrySize(r)
	}
}

// flushCaches forwards every cached update, upstream nodes first, so that
// updates they forward into caches downstream go out in the same flush.
func (t *task) flushCaches(ctx context.Context) error {
	for _, s := range t.plan.cached {
		c := t.caches[s]
		if c == nil || len(c.entries) == 0 {
			continue
		}
		recs := c.entries[:0:0]
		for _, e := range c.entries {
			t.cacheBytes -= entrySize(e)
			if e.value != nil || e.old != nil {
				recs = append(recs, e)
			}
		}
		delete(t.caches, s)
		for _, n := range s.next {
			if err := t.push(ctx, n, recs); err != nil {
				return err
			}
		}
	}
	if t.cacheBytes != 0 {
		return fmt.Errorf("engine: task %s: the record cache counts %d bytes after a flush", t.id, t.cacheBytes)
	}
	return nil
}

// flushNow forwards the cache's updates as a batch of their own: their
// outputs and store changes go out as a batch's do, then the processed
// offsets become committable.
func (t *task) flushNow(ctx context.Context) error {
	if t.cacheBytes > 0 || t.unloggedBytes > 0 {
		t.begin()
		if err := t.flushCaches(ctx); err != nil {
			return err
		}
		if err := t.finish(); err != nil {
			return err
		}
	}
	t.settleOffsets()
	return nil
}

// flushOnStop flushes what the cache holds as the task stops. While the
// application runs (a revocation) the host is there; once it is stopping,
// only a plan with no host operator can still flush. What cannot be flushed
// is work dropped: its offsets are not committed (at-least-once) and the
// transaction aborts (exactly-once).
func (t *task) flushOnStop(ctx context.Context) {
	if t.cacheBytes == 0 && t.unloggedBytes == 0 {
		return
	}
	if ctx.Err() != nil {
		if t.plan.host {
			t.app.workDropped.Store(true)
			return
		}
		ctx = context.Background()
	}
	if err := t.flushNow(ctx); err != nil {
		t.app.workDropped.Store(true)
		t.app.log.Warn("flushing the record cache as the task stops", "task", t.id.String(), "error", err)
	}
}

// holdsChanges reports whether store st holds its changes until the record
// cache empties (state.Tx.Unlogged): under at_least_once with the cache on,
// a key-value store, and a time-window aggregation's store, whose updates
// (one per window a record falls in) the open windows answer in memory
// (window.go), as Kafka Streams' CachingKeyValueStore and
// CachingWindowStore write through at flush. Session and sliding window
// stores are written batch by batch: their aggregations read the store
// itself for a key's sessions or windows (session.go, sliding.go).
func (a *App) holdsChanges(st *topology.Store) bool {
	if a.eos || a.cfg.CacheMaxBytes == 0 {
		return false
	}
	return st.Kind == topology.StoreKeyValue ||
		st.Kind == topology.StoreWindow && st.Windows != nil && st.Windows.Kind == topology.TimeWindows
}

// cacheBudget is one task's share of statestore.cache.max.bytes.
func (a *App) cacheBudget() int {
	a.mu.Lock()
	n := len(a.tasks)
	a.mu.Unlock()
	return int(a.cfg.CacheMaxBytes / int64(max(n, 1)))
}

// flushTasks has each running task flush its record cache (in its own
// goroutine) and waits for them; a task that fails to flush fails the
// application.
func (a *App) flushTasks(tasks []*task) {
	if a.cfg.CacheMaxBytes == 0 {
		return
	}
	done := make(chan struct{}, len(tasks))
	for _, t := range tasks {
		go func() {
			defer func() { done <- struct{}{} }()
			defer a.recovered("flushing task " + t.id.String())
			if !t.restored.Load() {
				return // restoring: it has processed nothing
			}
			reply := make(chan error, 1)
			select {
			case t.flushReq <- reply:
				select {
				case <-reply:
				case <-t.done:
				}
			case <-t.done:
			}
		}()
	}
	for range tasks {
		<-done
	}
}
