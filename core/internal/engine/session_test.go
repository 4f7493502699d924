package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// sessionHarness runs a session count of topic "in" into "out" in one
// task, without a broker, as ssHarness runs a join.
type sessionHarness struct {
	t    *testing.T
	app  *App
	plan *plan
	task *task
	db   *state.DB
}

func newSessionHarness(t *testing.T, w topology.Windows, db *state.DB) *sessionHarness {
	t.Helper()
	b := topology.NewBuilder()
	must := func(h *topology.Handle, err error) *topology.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	s := must(b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"}))
	g := must(b.GroupByKey(s.ID, "", "", ""))
	win := must(b.WindowedBy(g.ID, w))
	c := must(b.Count(win.ID, nil, ""))
	out := must(b.ToStream(c.ID, ""))
	if err := b.To(out.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if db == nil {
		if db, err = state.Open(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
	}
	a := &App{cfg: config.App{ApplicationID: "app", BundleMaxRecords: 2000, BundleMaxBytes: 1 << 20}, topo: topo, db: db}
	plans, err := compile(topo, a.fullTopic, false, false)
	if err != nil {
		t.Fatal(err)
	}
	h := &sessionHarness{t: t, app: a, plan: plans[0], db: db}
	h.task = newTask(a, taskID{0, 0}, h.plan)
	openStores(h.task, db)
	return h
}

// send processes one batch, "key@ts" each, and returns the outputs as
// "key[start,end]=count@ts".
func (h *sessionHarness) send(recs ...string) []string {
	h.t.Helper()
	var in []rec
	for i, s := range recs {
		var k string
		var ts int64
		if _, err := fmt.Sscanf(s, "%1s@%d", &k, &ts); err != nil {
			h.t.Fatalf("record %q: %v", s, err)
		}
		in = append(in, rec{key: []byte(k), value: []byte("v"), ts: ts, in: &kgo.Record{Topic: "in", Offset: int64(i)}})
	}
	h.task.begin()
	h.task.out = nil
	if err := h.task.push(context.Background(), h.plan.sources["in"], in); err != nil {
		h.t.Fatal(err)
	}
	for _, tx := range h.task.stores {
		if err := tx.Part.Apply(state.Writes(tx.Dirty)); err != nil {
			h.t.Fatal(err)
		}
	}
	var got []string
	for _, r := range h.task.out {
		key, start, end, err := serde.SplitSessionWindowed(r.Key)
		if err != nil {
			h.t.Fatal(err)
		}
		v := "null"
		if r.Value != nil {
			v = fmt.Sprint(binary.BigEndian.Uint64(r.Value))
		}
		got = append(got, fmt.Sprintf("%s[%d,%d]=%s@%d", key, start, end, v, r.Timestamp.UnixMilli()))
	}
	return got
}

// A session store finds sessions by its own observed time, the largest
// session end written to it (Kafka Streams' segmented store), not by the
// stream time, which includes the record being aggregated and dropped
// records. SuppressScenarioTest#shouldSupportFinalResultsForSessionWindows:
// with gap 5 and the default retention (gap + grace = 5), k@5 still merges
// with k's [0,0] (the store's time is 0, not 5); and the result does not
// depend on how the records are batched, nor on a restart, which reads the
// store's time back.
func TestSessionStoreGoesByItsOwnTime(t *testing.T) {
	w := topology.Windows{Kind: topology.SessionWindows, Size: 5}
	want := []string{
		"k[0,0]=1@0", "k[0,0]=null@0", "k[0,5]=2@5", // 5 merges with [0,0]
		"k[0,5]=null@5", "k[0,5]=3@5", // 1 falls inside [0,5]
		"j[11,11]=1@11", // k@5 at stream time 11: [0,5] ended before 11 - 5: dropped
		"k[30,30]=1@30",
	}
	in := []string{"k@0", "k@5", "k@1", "j@11", "k@5", "k@30"}
	one := newSessionHarness(t, w, nil)
	if got := one.send(in...); !slices.Equal(got, want) {
		t.Errorf("one batch:\n got %q\nwant %q", got, want)
	}
	h := newSessionHarness(t, w, nil)
	var got []string
	for i, r := range in {
		if i == 3 {
			h = newSessionHarness(t, w, h.db) // a restart: the store's time comes back
		}
		got = append(got, h.send(r)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("a batch per record, restarted:\n got %q\nwant %q", got, want)
	}
	for _, h := range []*sessionHarness{one, h} {
		if n := h.app.dropped.Load(); n != 1 {
			t.Errorf("dropped %d, want 1", n)
		}
	}
}
