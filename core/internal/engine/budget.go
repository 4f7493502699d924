package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"

	"github.com/polystreams/polystreams/core/internal/config"
)

// The memory budget of one application (polystreams.memory.max.bytes):
// what the engine holds in memory on the application's behalf, measured
// per component, and what happens when it would pass the budget
// (docs/design/isolation.md). Each component says which of three things
// the engine does when the application is at its budget:
//
//   - it waits (back-pressure, as Kafka Streams' producer and fetcher
//     wait): bundles to the host are not sent, fetching pauses, and the
//     producer's buffer drains on its own;
//   - it lets go (as Kafka Streams' record cache evicts): the record cache
//     forwards its updates early, the stores' read caches are emptied, the
//     in-memory view of open windows is dropped and the aggregation reads
//     the store;
//   - it fails the application alone (as Kafka Streams' suppression buffer
//     with BufferConfig.shutDownWhenFull): the suppression buffers, the
//     stream-stream joins' windows and the session and sliding window
//     indexes hold rows the engine keeps in memory to be correct, which
//     no waiting returns.
//
// Accounting is cheap on the hot path: each component keeps its byte count
// in a plain field of the task that owns it, and the task publishes the
// differences to the application's counters with one atomic add per
// component per batch; bundles count once per bundle, fetched records once
// per fetch and per batch.

// Memory components: what the engine holds for an application.
const (
	memCache       = iota // the record cache (cache.go)
	memReadCache          // the stores' read caches (state/cache.go)
	memOpenWindows        // time windows' in-memory open windows (window.go)
	memSuppress           // suppression buffers (window.go)
	memWindowIndex        // session and sliding windows' per-key indexes
	memJoin               // stream-stream joins' windows (join_stream.go)
	memBundles            // bundles sent to the host, not yet answered
	memAnswers            // the host's answers, until their batch ends
	memFetched            // fetched records waiting for their task
	memProduce            // the producer's buffer
	memComponents
)

var memNames = [memComponents]string{
	memCache:       "record cache",
	memReadCache:   "store read caches",
	memOpenWindows: "open windows",
	memSuppress:    "suppression buffers",
	memWindowIndex: "session and sliding window indexes",
	memJoin:        "stream-stream join windows",
	memBundles:     "bundles in flight",
	memAnswers:     "host answers",
	memFetched:     "fetched records",
	memProduce:     "produce buffer",
}

// memHeld are the components that fail the application when they alone
// (with Pebble's share) pass the budget: nothing releases them but the
// application's own progress.
var memHeld = []int{memSuppress, memWindowIndex, memJoin}

// Pebble's share of polystreams.memory.max.bytes (its bounds and default:
// config.DefaultMemoryMaxBytes, config.MinMemoryMaxBytes).
const (
	// PebbleMemory is Pebble's share of every application's budget, fixed:
	// each application has its own Pebble database with Pebble's default
	// block cache (8 MiB) and at most two memtables of 4 MiB
	// (MemTableStopWritesThreshold 2), which Pebble bounds itself.
	PebbleMemory = 16 << 20
)

// Per-entry bookkeeping, approximated (map entry, slice header, struct),
// so that many small entries still count.
const (
	rowOverhead    = 64
	recordOverhead = 96
)

// memory is an application's budget and what its components hold. Safe
// for concurrent use.
type memory struct {
	limit int64
	used  [memComponents]atomic.Int64

	mu sync.Mutex // guards released
	// released is closed, and replaced, when bundles in flight are
	// answered: a bundle waiting to be sent looks again.
	released chan struct{}
	// waiting counts the bundles waiting to be sent.
	waiting atomic.Int32
}

func newMemory(limit int64) *memory {
	if limit <= 0 {
		limit = config.DefaultMemoryMaxBytes
	}
	return &memory{limit: limit, released: make(chan struct{})}
}

// total is what the application holds, Pebble's share included.
func (m *memory) total() int64 {
	n := int64(PebbleMemory)
	for i := range m.used {
		n += m.used[i].Load()
	}
	return n
}

// held is what only the application's progress releases, with Pebble's
// share.
func (m *memory) held() int64 {
	n := int64(PebbleMemory)
	for _, c := range memHeld {
		n += m.used[c].Load()
	}
	return n
}

// over reports whether the application holds more than its budget.
func (m *memory) over() bool { return m.total() > m.limit }

// admit waits until a bundle of n bytes fits in the budget, and counts
// it. A bundle is always admitted when no other bundle of the application
// is in flight, so that the application always progresses; the wait ends
// when bundles in flight are answered (or ctx is done).
func (m *memory) admit(ctx context.Context, n int64) error {
	for {
		m.mu.Lock()
		if m.used[memBundles].Load() == 0 || m.total()+n <= m.limit {
			m.used[memBundles].Add(n)
			m.mu.Unlock()
			return nil
		}
		wait := m.released
		m.mu.Unlock()
		m.waiting.Add(1)
		select {
		case <-wait:
			m.waiting.Add(-1)
		case <-ctx.Done():
			m.waiting.Add(-1)
			return ctx.Err()
		}
	}
}

// release uncounts n bytes of component c and wakes the bundles waiting.
func (m *memory) release(c int, n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.used[c].Add(-n)
	close(m.released)
	m.released = make(chan struct{})
	m.mu.Unlock()
}

// Usage is what an application holds in memory, by component, in bytes.
type Usage struct {
	// Limit is polystreams.memory.max.bytes.
	Limit int64 `json:"limit"`
	// Total is the sum of Components.
	Total int64 `json:"total"`
	// Components: component name -> bytes; Pebble's fixed share is
	// "Pebble (block cache, memtables)".
	Components map[string]int64 `json:"components"`
}

// pebbleName names Pebble's share in Usage and errors.
const pebbleName = "Pebble (block cache, memtables)"

// MemoryUsage returns what the application holds in memory now. Safe for
// concurrent use.
func (a *App) MemoryUsage() Usage {
	u := Usage{Limit: a.mem.limit, Components: map[string]int64{pebbleName: PebbleMemory}}
	u.Total = PebbleMemory
	for c := range a.mem.used {
		n := a.mem.used[c].Load()
		u.Components[memNames[c]] = n
		u.Total += n
	}
	return u
}

// MemoryError is the error of an application that held more than its
// budget in memory.
type MemoryError struct {
	ApplicationID string
	Usage         Usage
}

func (e *MemoryError) Error() string {
	type part struct {
		name string
		n    int64
	}
	parts := make([]part, 0, len(e.Usage.Components))
	for name, n := range e.Usage.Components {
		if n > 0 {
			parts = append(parts, part{name, n})
		}
	}
	slices.SortFunc(parts, func(a, b part) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	held := make([]string, len(parts))
	for i, p := range parts {
		held[i] = p.name + " " + sizeOf(p.n)
	}
	return fmt.Sprintf("engine: application %s exceeds its memory budget: polystreams.memory.max.bytes is %d (%s) and it holds %s: %s; raise polystreams.memory.max.bytes (the engine allows up to its --max-app-memory) or hold less",
		e.ApplicationID, e.Usage.Limit, sizeOf(e.Usage.Limit), sizeOf(e.Usage.Total), strings.Join(held, ", "))
}

// sizeOf writes n bytes for people: "40.0 MiB".
func sizeOf(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// taskMemory is what a task published to its application's counters.
// Only the task's goroutine touches pub; answers is added to by the
// crossings of its batch, which may run concurrently.
type taskMemory struct {
	pub     [memComponents]int64
	answers atomic.Int64
}

// A memoryHolder is an operator that holds memory across batches: its
// in-memory windows, buffer or join rows. It adds their byte counts to
// held, by component.
type memoryHolder interface {
	memoryHeld(held *[memComponents]int64)
}

// A memoryReleaser is an operator that can let go of memory it holds
// whose contents its store holds too (the time windows' open windows).
type memoryReleaser interface {
	releaseMemory()
}

// memoryHeld measures what the task holds in its components now: the
// sums of the byte counts its record cache and its operators keep.
func (t *task) memoryHeld() (held [memComponents]int64) {
	held[memCache] = int64(t.cacheBytes + t.unloggedBytes)
	for _, tx := range t.stores {
		held[memReadCache] += int64(tx.Part.CacheBytes())
	}
	for _, op := range t.ops {
		if h, ok := op.(memoryHolder); ok {
			h.memoryHeld(&held)
		}
	}
	return held
}

// publishMemory brings the application's counters up to date with what
// the task holds: one atomic add per component that changed.
func (t *task) publishMemory() {
	m := t.app.mem
	held := t.memoryHeld()
	for c := range memBundles {
		if d := held[c] - t.mem.pub[c]; d != 0 {
			t.mem.pub[c] = held[c]
			m.used[c].Add(d)
		}
	}
	if t.app.cl != nil {
		m.used[memProduce].Store(t.app.cl.BufferedProduceBytes())
	}
}

// memoryOver publishes what the task holds and reports whether the
// application is over its budget: then the task's record cache forwards
// its updates now (process), as when statestore.cache.max.bytes is full.
func (t *task) memoryOver() bool {
	t.publishMemory()
	return t.app.mem.over()
}

// checkMemory ends a batch's accounting: the host's answers of the batch
// are released, and when the application is over its budget, the task
// drops its in-memory open windows (the aggregation reads the store from
// then on); if what only progress releases still passes the budget, the
// application fails with a MemoryError.
func (t *task) checkMemory() error {
	m := t.app.mem
	m.release(memAnswers, t.mem.answers.Swap(0))
	t.publishMemory()
	if !m.over() {
		return nil
	}
	for _, op := range t.ops {
		if r, ok := op.(memoryReleaser); ok {
			r.releaseMemory()
		}
	}
	for _, tx := range t.stores {
		tx.Part.DropCache()
	}
	t.publishMemory()
	if m.held() <= m.limit {
		return nil
	}
	return &MemoryError{ApplicationID: t.app.cfg.ApplicationID, Usage: t.app.MemoryUsage()}
}

// releaseMemory uncounts everything the task held, as it stops.
func (t *task) releaseMemory() {
	m := t.app.mem
	for c := range memBundles {
		m.release(c, t.mem.pub[c])
		t.mem.pub[c] = 0
	}
	m.release(memAnswers, t.mem.answers.Swap(0))
	t.in.mu.Lock()
	m.release(memFetched, t.in.bytes)
	t.in.bytes = 0
	t.in.mu.Unlock()
}

// taskMemoryKey is the context key of the task's taskMemory in the
// contexts its crossings get, so that the host's answers count until the
// task's batch ends.
type taskMemoryKey struct{}

// memoryContext is ctx carrying the task's accounting.
func (t *task) memoryContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, taskMemoryKey{}, &t.mem)
}

// budgetedHost counts an application's bundles while they are in flight,
// and the host's answers until their task's batch ends; a bundle that does
// not fit in the budget waits (memory.admit).
type budgetedHost struct {
	Host
	mem *memory
}

func (h budgetedHost) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	return h.ProcessReads(ctx, b, nil)
}

// ProcessReads is Process for a processor bundle, when the host serves
// Reads (ReadsHost).
func (h budgetedHost) ProcessReads(ctx context.Context, b *pb.Bundle, reads ReadFunc) (*pb.BundleResult, error) {
	n := bundleBytes(b)
	if err := h.mem.admit(ctx, n); err != nil {
		return nil, err
	}
	var res *pb.BundleResult
	var err error
	if rh, ok := h.Host.(ReadsHost); ok && reads != nil {
		res, err = rh.ProcessReads(ctx, b, reads)
	} else {
		res, err = h.Host.Process(ctx, b)
	}
	h.mem.release(memBundles, n)
	if res != nil {
		if tm, ok := ctx.Value(taskMemoryKey{}).(*taskMemory); ok {
			a := resultBytes(res)
			h.mem.used[memAnswers].Add(a)
			tm.answers.Add(a)
		}
	}
	return res, err
}

// bundleBytes is what a bundle holds: its columns and per-record arrays.
func bundleBytes(b *pb.Bundle) int64 {
	n := len(b.Keys) + len(b.Values) + len(b.Aggregates) + len(b.OldValues) + len(b.OtherValues)
	n += 4 * (len(b.KeyLengths) + len(b.ValueLengths) + len(b.GroupSizes) + len(b.AggregateLengths) +
		len(b.OldValueLengths) + len(b.ValueRefs) + len(b.FoldBases) + len(b.OtherValueLengths))
	n += 8 * (len(b.Offsets) + len(b.Timestamps))
	return int64(n) + 256
}

// resultBytes is what a bundle's answer holds.
func resultBytes(r *pb.BundleResult) int64 {
	n := len(r.Keys) + len(r.Values) + 4*(len(r.OutputCounts)+len(r.KeyLengths)+len(r.ValueLengths))
	for _, f := range r.Failures {
		n += len(f.Message) + 32
	}
	return int64(n) + 128
}

// recordsBytes is what fetched records hold.
func recordsBytes(rs []*kgo.Record) int64 {
	n := 0
	for _, r := range rs {
		n += len(r.Key) + len(r.Value) + recordOverhead
	}
	return int64(n)
}

// fetched counts records added to the task's inbox (n > 0) or taken from
// it (n < 0); called with t.in.mu held.
func (t *task) fetched(n int64) {
	t.in.bytes += n
	if n > 0 {
		t.app.mem.used[memFetched].Add(n)
	} else {
		t.app.mem.release(memFetched, -n)
	}
}

// pendingBytes is what a suppression buffer's entry holds: its buffer key
// (in the map and the heap), its key and value.
func pendingBytes(bk string, value []byte) int64 {
	return int64(2*len(bk) + len(value) + recordOverhead)
}

// setIndex sets key's entry of a session or sliding window index of ws to
// v (keep), or deletes it, and counts the change in ws.bytes.
func setIndex[T session | int64](ws *winState, index map[string][]T, key string, v []T, keep bool) {
	var zero T
	elem := int64(unsafe.Sizeof(zero))
	if old, had := index[key]; had {
		ws.bytes -= int64(len(key)+rowOverhead) + elem*int64(len(old))
	}
	if !keep {
		delete(index, key)
		return
	}
	index[key] = v
	ws.bytes += int64(len(key)+rowOverhead) + elem*int64(len(v))
}

// joinRowBytes is what a stream-stream join's row holds in memory.
func joinRowBytes[K string | []byte](key K, value []byte) int64 {
	return int64(len(key) + len(value) + rowOverhead)
}

// tookFetched uncounts the records a batch took from the task's inbox,
// at the average size of the records waiting (what is left when none
// is), so that the batch's records need not be read once more.
func (t *task) tookFetched(batch []*kgo.Record) {
	if len(batch) == 0 {
		return
	}
	in := &t.in
	in.mu.Lock()
	taken := in.bytes
	if in.n > 0 {
		taken = in.bytes * int64(len(batch)) / int64(in.n+len(batch))
	}
	t.fetched(-taken)
	in.mu.Unlock()
}
