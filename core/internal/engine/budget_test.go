package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// memHarness runs a topology of topics "left" (and "right") in one task of
// an application with a memory budget, without a broker: records go
// straight to the source steps and a batch's store changes are applied to
// Pebble as a committed batch's would be.
type memHarness struct {
	t    *testing.T
	app  *App
	plan *plan
	task *task
}

func newMemHarness(t *testing.T, limit int64, caching bool, build func(b *topology.Builder, left, right *topology.Handle) *topology.Handle) *memHarness {
	t.Helper()
	b := topology.NewBuilder()
	must := func(h *topology.Handle, err error) *topology.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	l := must(b.Stream(topology.StreamOptions{Topics: []string{"left"}, KeySerde: "string", ValueSerde: "string"}))
	r := must(b.Stream(topology.StreamOptions{Topics: []string{"right"}, KeySerde: "string", ValueSerde: "string"}))
	if err := b.To(build(b, l, r).ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := config.App{ApplicationID: "greedy", BundleMaxRecords: 2000, BundleMaxBytes: 1 << 20, CacheMaxBytes: 1 << 30}
	a := &App{cfg: cfg, topo: topo, db: db, mem: newMemory(limit), tasks: map[taskID]*task{}}
	plans, err := compile(topo, a.fullTopic, caching, false)
	if err != nil {
		t.Fatal(err)
	}
	h := &memHarness{t: t, app: a, plan: plans[0]}
	h.task = newTask(a, taskID{0, 0}, h.plan)
	openStores(h.task, db)
	h.task.restored.Store(true)
	a.tasks[h.task.id] = h.task
	return h
}

// send processes one batch of "key:value@ts" records of topic, publishes
// what the task holds and returns the application's counters.
func (h *memHarness) send(topic string, recs ...string) [memComponents]int64 {
	h.t.Helper()
	var in []rec
	for i, s := range recs {
		kv, ts, _ := strings.Cut(s, "@")
		k, v, _ := strings.Cut(kv, ":")
		var n int64
		fmt.Sscan(ts, &n)
		in = append(in, rec{key: []byte(k), value: []byte(v), ts: n, in: &kgo.Record{Topic: topic, Offset: int64(i)}})
	}
	h.task.begin()
	if err := h.task.push(context.Background(), h.plan.sources[topic], in); err != nil {
		h.t.Fatal(err)
	}
	h.apply()
	return h.used()
}

// apply applies the batch's store changes to Pebble.
func (h *memHarness) apply() {
	for _, tx := range h.task.stores {
		if err := tx.Part.Apply(state.Writes(tx.Dirty)); err != nil {
			h.t.Fatal(err)
		}
		clear(tx.Dirty)
	}
}

func (h *memHarness) used() (out [memComponents]int64) {
	h.task.publishMemory()
	for c := range out {
		out[c] = h.app.mem.used[c].Load()
	}
	return out
}

func windowedCount(t *testing.T, b *topology.Builder, in *topology.Handle, w topology.Windows) *topology.Handle {
	t.Helper()
	g, err := b.GroupByKey(in.ID, "", "", "")
	if err == nil {
		g, err = b.WindowedBy(g.ID, w)
	}
	if err == nil {
		g, err = b.Count(g.ID, nil, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// must(t)(h, err) is h, failing t on err.
func must(t *testing.T) func(*topology.Handle, error) *topology.Handle {
	return func(h *topology.Handle, err error) *topology.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// The record cache counts what it holds, and nothing once flushed.
func TestMemoryRecordCacheGoesUpAndDown(t *testing.T) {
	h := newMemHarness(t, config.DefaultMemoryMaxBytes, true, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		g := must(t)(b.GroupByKey(l.ID, "", "", ""))
		return must(t)(b.ToStream(must(t)(b.Count(g.ID, nil, "")).ID, ""))
	})
	used := h.send("left", "a:x@1", "b:x@2", "a:x@3")
	// Two keys cached: key, 8-byte count, no old value, and the overhead.
	if want := int64(2 * (1 + 8 + cacheOverhead)); used[memCache] != want || int64(h.task.cacheBytes) != want {
		t.Fatalf("record cache counts %d (task: %d), want %d", used[memCache], h.task.cacheBytes, want)
	}
	if err := h.task.flushCaches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if used = h.used(); used[memCache] != 0 {
		t.Fatalf("record cache counts %d after a flush", used[memCache])
	}
}

// The stores' read caches count what they hold, and are emptied when the
// application is over its budget.
func TestMemoryStoreReadCachesCountAndEmpty(t *testing.T) {
	h := newMemHarness(t, PebbleMemory+100, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		g := must(t)(b.GroupByKey(l.ID, "", "", ""))
		return must(t)(b.ToStream(must(t)(b.Count(g.ID, nil, "")).ID, ""))
	})
	used := h.send("left", "a:x@1", "b:x@2", "a:x@3")
	var held int64
	for _, tx := range h.task.stores {
		held += int64(tx.Part.CacheBytes())
	}
	if held == 0 || used[memReadCache] != held {
		t.Fatalf("store read caches count %d, the stores hold %d (want the same, more than 0)", used[memReadCache], held)
	}
	if err := h.task.checkMemory(); err != nil {
		t.Fatal(err)
	}
	if used = h.used(); used[memReadCache] != 0 {
		t.Fatalf("store read caches count %d over the budget, want them emptied", used[memReadCache])
	}
	for _, tx := range h.task.stores {
		if v, _, err := tx.Part.Get([]byte("a")); err != nil || len(v) != 8 || v[7] != 2 {
			t.Fatalf("store %s reads a = %v (%v) once its cache is emptied, want the count 2", tx.store.Name, v, err)
		}
	}
}

// The open windows of a time-window aggregation count while open and
// leave as stream time closes them.
func TestMemoryOpenWindowsGoUpAndDown(t *testing.T) {
	h := newMemHarness(t, config.DefaultMemoryMaxBytes, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		c := windowedCount(t, b, l, topology.Windows{Kind: topology.TimeWindows, Size: 1000, Advance: 1000})
		return must(t)(b.ToStream(c.ID, ""))
	})
	row := int64(1 + 8 + rowOverhead) // inner key, 8-byte count
	if used := h.send("left", "a:x@100", "b:x@200", "a:x@300"); used[memOpenWindows] != 2*row {
		t.Fatalf("open windows count %d, want %d", used[memOpenWindows], 2*row)
	}
	// Stream time 5000 closes [0, 1000): only c's window is open.
	if used := h.send("left", "c:x@5000"); used[memOpenWindows] != row {
		t.Fatalf("open windows count %d after the first closed, want %d", used[memOpenWindows], row)
	}
}

// A suppression buffer counts its pending updates until it emits them.
func TestMemorySuppressionBufferGoesUpAndDown(t *testing.T) {
	h := newMemHarness(t, config.DefaultMemoryMaxBytes, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		c := windowedCount(t, b, l, topology.Windows{Kind: topology.TimeWindows, Size: 1000, Advance: 1000})
		s := must(t)(b.Suppress(c.ID, "", topology.UntilWindowCloses))
		return must(t)(b.ToStream(s.ID, ""))
	})
	// Each entry: its buffer key (end 8, key, start 8) twice, the count.
	entry := func(key string) int64 { return pendingBytes(string(make([]byte, 8+len(key)+8)), make([]byte, 8)) }
	if used := h.send("left", "a:x@100", "b:x@200", "a:x@300"); used[memSuppress] != 2*entry("a") {
		t.Fatalf("suppression buffer counts %d, want %d", used[memSuppress], 2*entry("a"))
	}
	if used := h.send("left", "longer:x@5000"); used[memSuppress] != entry("longer") {
		t.Fatalf("suppression buffer counts %d after emitting, want %d", used[memSuppress], entry("longer"))
	}
	if len(h.task.out) != 2 {
		t.Fatalf("%d results emitted, want a's and b's", len(h.task.out))
	}
}

// The session and sliding window indexes count each key's windows and
// let them go with retention.
func TestMemoryWindowIndexesGoUpAndDown(t *testing.T) {
	for _, w := range []topology.Windows{
		{Kind: topology.SessionWindows, Size: 100},
		{Kind: topology.SlidingWindows, Size: 100},
	} {
		t.Run(fmt.Sprint(w.Kind), func(t *testing.T) {
			h := newMemHarness(t, config.DefaultMemoryMaxBytes, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
				return must(t)(b.ToStream(windowedCount(t, b, l, w).ID, ""))
			})
			first := h.send("left", "a:x@1000", "b:x@1010", "a:x@1020")[memWindowIndex]
			if first <= 2*(1+rowOverhead) {
				t.Fatalf("window indexes count %d for two keys' windows", first)
			}
			// Far past retention (at least a minute past the last trim):
			// a's and b's windows expire.
			used := h.send("left", "c:x@200000")
			if used[memWindowIndex] <= 0 || used[memWindowIndex] >= first {
				t.Fatalf("window indexes count %d after a's and b's expired, %d before", used[memWindowIndex], first)
			}
		})
	}
}

// A stream-stream join's rows count while the join window keeps them.
func TestMemoryJoinWindowsGoUpAndDown(t *testing.T) {
	h := newMemHarness(t, config.DefaultMemoryMaxBytes, false, func(b *topology.Builder, l, r *topology.Handle) *topology.Handle {
		w := topology.JoinWindows{Before: 100, After: 100}
		return must(t)(b.StreamJoin(l.ID, r.ID, topology.Function{Native: topology.ValueJoinerFunc(joinFnOf)}, topology.StreamJoinOptions{Kind: topology.JoinLeft, Windows: &w}))
	})
	// Left rows, and the unmatched ones again in the shared store.
	used := h.send("left", "a:1234@1000", "b:5678@1000")
	if want := 2 * 2 * joinRowBytes("a", []byte("1234")); used[memJoin] != want {
		t.Fatalf("join windows count %d, want %d", used[memJoin], want)
	}
	// a joins (its unmatched entry goes); much later, retention drops the
	// left side's rows (the right side's store goes by its own time: its
	// row stays) and b is emitted unmatched.
	used = h.send("right", "a:r@1010")
	if want := 3*joinRowBytes("a", []byte("1234")) + joinRowBytes("a", []byte("r")); used[memJoin] != want {
		t.Fatalf("join windows count %d after a joined, want %d", used[memJoin], want)
	}
	used = h.send("left", "c:1@100000")
	if want := 2*joinRowBytes("c", []byte("1")) + joinRowBytes("a", []byte("r")); used[memJoin] != want {
		t.Fatalf("join windows count %d after expiry, want %d (c's row, unmatched; a's right row)", used[memJoin], want)
	}
}

// Fetched records count from the fetch until their batch takes them.
func TestMemoryFetchedRecordsGoUpAndDown(t *testing.T) {
	h := newMemHarness(t, config.DefaultMemoryMaxBytes, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle { return l })
	rs := []*kgo.Record{{Topic: "left", Key: []byte("k"), Value: make([]byte, 1000)}, {Topic: "left", Value: make([]byte, 24)}}
	h.task.fetch(rs)
	h.task.caughtUp()
	if got, want := h.app.mem.used[memFetched].Load(), int64(1+1000+24+2*recordOverhead); got != want {
		t.Fatalf("fetched records count %d, want %d", got, want)
	}
	// Taken out at the average size of what waits.
	h.task.tookFetched(h.task.in.taken(1))
	total := int64(1 + 1000 + 24 + 2*recordOverhead)
	if got, want := h.app.mem.used[memFetched].Load(), total-total/2; got != want {
		t.Fatalf("fetched records count %d after one was taken, want %d", got, want)
	}
	h.task.tookFetched(h.task.in.taken(1))
	if got := h.app.mem.used[memFetched].Load(); got != 0 {
		t.Fatalf("fetched records count %d once all were taken", got)
	}
	h.task.fetch(rs)
	// A stopping task lets go of everything it held.
	h.task.releaseMemory()
	if u := h.app.MemoryUsage(); u.Total != PebbleMemory {
		t.Fatalf("a stopped task leaves %d bytes counted: %v", u.Total-PebbleMemory, u.Components)
	}
}

// blockingHost answers a bundle only when told to.
type blockingHost struct {
	mu      sync.Mutex
	got     []*pb.Bundle
	answers chan struct{}
}

func (h *blockingHost) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	h.got = append(h.got, b)
	h.mu.Unlock()
	select {
	case <-h.answers:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &pb.BundleResult{BundleId: b.Id, Values: make([]byte, 1000)}, nil
}

func (h *blockingHost) received() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// Bundles wait for the budget rather than fail: a bundle that would pass
// it is not sent until bundles in flight are answered; one bundle is
// always sent, however large, so that the application progresses. The
// answers count until the task's batch ends.
func TestMemoryBundlesWaitForTheBudget(t *testing.T) {
	m := newMemory(PebbleMemory + 30<<20)
	host := &blockingHost{answers: make(chan struct{})}
	h := budgetedHost{host, m}
	var tm taskMemory
	ctx := context.WithValue(context.Background(), taskMemoryKey{}, &tm)
	bundle := func(mib int) *pb.Bundle { return &pb.Bundle{Values: make([]byte, mib<<20)} }

	errs := make(chan error, 3)
	send := func(b *pb.Bundle) {
		go func() {
			_, err := h.Process(ctx, b)
			errs <- err
		}()
	}
	// 40 MiB: more than the budget, but alone in flight.
	send(bundle(40))
	waitUntil(t, "the first bundle to reach the host", func() bool { return host.received() == 1 })
	if got := m.used[memBundles].Load(); got != bundleBytes(bundle(40)) {
		t.Fatalf("bundles in flight count %d, want %d", got, bundleBytes(bundle(40)))
	}
	send(bundle(10))
	host.answers <- struct{}{}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second bundle to reach the host", func() bool { return host.received() == 2 })
	// 10 MiB in flight; 25 more would pass the budget: it waits.
	send(bundle(25))
	waitUntil(t, "the third bundle to wait", func() bool { return m.waiting.Load() == 1 })
	if host.received() != 2 {
		t.Fatal("a bundle that passes the budget was sent while another was in flight")
	}
	host.answers <- struct{}{}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the third bundle to reach the host", func() bool { return host.received() == 3 })
	host.answers <- struct{}{}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if got := m.used[memBundles].Load(); got != 0 {
		t.Fatalf("bundles in flight count %d once all were answered", got)
	}
	if got, want := m.used[memAnswers].Load(), 3*resultBytes(&pb.BundleResult{Values: make([]byte, 1000)}); got != want || tm.answers.Load() != want {
		t.Fatalf("answers count %d (task: %d), want %d", got, tm.answers.Load(), want)
	}
	// A bundle waiting when its application stops returns.
	send(bundle(1))
	waitUntil(t, "the fourth bundle to reach the host", func() bool { return host.received() == 4 })
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := h.Process(cctx, bundle(100))
		errs <- err
	}()
	waitUntil(t, "the fifth bundle to wait", func() bool { return m.waiting.Load() == 1 })
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiting bundle of a stopped application returned %v", err)
	}
	host.answers <- struct{}{}
	<-errs
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Over its budget, an application's record cache forwards its updates and
// its open windows are dropped (the aggregation reads the store); if what
// only progress releases still passes the budget, it fails naming the
// application, the key, the budget and what held the memory.
func TestMemoryOverBudget(t *testing.T) {
	h := newMemHarness(t, config.MinMemoryMaxBytes, true, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		c := windowedCount(t, b, l, topology.Windows{Kind: topology.TimeWindows, Size: 1000, Advance: 1000})
		return must(t)(b.ToStream(c.ID, ""))
	})
	h.send("left", "a:x@100", "b:x@200")
	if h.task.cacheBytes == 0 || h.app.mem.used[memOpenWindows].Load() == 0 {
		t.Fatal("nothing cached, or no open windows")
	}
	if err := h.task.checkMemory(); err != nil {
		t.Fatalf("under its budget: %v", err)
	}
	// Someone else's 20 MiB of bundles put the application over: the
	// cache flushes (process does it when memoryOver), the windows go.
	h.app.mem.used[memBundles].Add(20 << 20)
	if !h.task.memoryOver() {
		t.Fatal("not over its budget")
	}
	if err := h.task.checkMemory(); err != nil {
		t.Fatalf("over its budget with only bundles in flight: %v", err)
	}
	for _, op := range h.task.ops {
		if w, ok := op.(*timeWindowOp); ok && w.ws != nil && w.ws.open != nil {
			t.Fatal("open windows kept over the budget")
		}
	}
	if got := h.app.mem.used[memOpenWindows].Load(); got != 0 {
		t.Fatalf("open windows count %d once dropped", got)
	}
	h.app.mem.used[memBundles].Add(-20 << 20)
	// Rows only progress releases, past the budget.
	h.app.mem.used[memJoin].Add(17 << 20)
	err := h.task.checkMemory()
	var me *MemoryError
	if !errors.As(err, &me) || me.ApplicationID != "greedy" {
		t.Fatalf("over its budget: %v", err)
	}
	for _, want := range []string{
		"application greedy exceeds its memory budget",
		"polystreams.memory.max.bytes is 33554432 (32.0 MiB)",
		"stream-stream join windows 17.0 MiB, Pebble (block cache, memtables) 16.0 MiB, record cache ",
		"--max-app-memory",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestMemoryConfig(t *testing.T) {
	cfg, eff, err := config.Parse("app", map[string]string{}, "b:9092")
	if err != nil || cfg.MemoryMaxBytes != config.DefaultMemoryMaxBytes || eff["polystreams.memory.max.bytes"] != "1073741824" {
		t.Fatalf("default: %d, %q, %v", cfg.MemoryMaxBytes, eff["polystreams.memory.max.bytes"], err)
	}
	if cfg, _, err = config.Parse("app", map[string]string{"polystreams.memory.max.bytes": "67108864"}, "b:9092"); err != nil || cfg.MemoryMaxBytes != 64<<20 {
		t.Fatalf("64 MiB: %d, %v", cfg.MemoryMaxBytes, err)
	}
	for v, want := range map[string]string{
		"1000": "polystreams.memory.max.bytes: want an integer from 33554432 to 9223372036854775807",
		"lots": "polystreams.memory.max.bytes: want an integer from 33554432",
	} {
		if _, _, err := config.Parse("app", map[string]string{"polystreams.memory.max.bytes": v}, "b:9092"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
	if _, _, err := config.Parse("app", map[string]string{"polystreams.memory.max.byte": "67108864"}, "b:9092"); err == nil || !strings.Contains(err.Error(), "did you mean polystreams.memory.max.bytes?") {
		t.Errorf("a typo: %v", err)
	}
}

// What the budget costs a batch of 2,000 fetched records: counting them
// in and out of the inbox, publishing what the task holds and checking
// the budget.
func BenchmarkMemoryAccountingPerBatch(b *testing.B) {
	h := newMemHarness(&testing.T{}, config.DefaultMemoryMaxBytes, false, func(_ *topology.Builder, l, _ *topology.Handle) *topology.Handle { return l })
	rs := make([]*kgo.Record, 2000)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: "left", Key: []byte("key"), Value: make([]byte, 100)}
	}
	b.ReportAllocs()
	for b.Loop() {
		h.task.in.mu.Lock()
		h.task.fetched(recordsBytes(rs))
		h.task.in.mu.Unlock()
		h.task.tookFetched(rs)
		if h.task.memoryOver() {
			b.Fatal("over")
		}
		if err := h.task.checkMemory(); err != nil {
			b.Fatal(err)
		}
	}
}
