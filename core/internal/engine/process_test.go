package engine_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// counter is a Go processor: a per-key count in store "counts" (decimal
// strings), forwarded to all children; a value "route" goes to child
// "routed" instead, "boom" forwards and then fails.
type counter struct{ inits *int }

func (c *counter) Init(ctx topology.NativeContext) error { *c.inits++; return nil }
func (c *counter) Close() error                          { return nil }
func (c *counter) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	switch string(r.Value) {
	case "route":
		return ctx.Forward(topology.NativeRecord{Key: r.Key, Value: []byte("routed"), Timestamp: r.Timestamp + 1, Headers: []topology.Header{{Key: "h", Value: []byte("1")}}}, "routed")
	case "boom":
		if err := ctx.Forward(r, ""); err != nil {
			return err
		}
		return errors.New("boom")
	case "nochild":
		return ctx.Forward(r, "nope")
	case "nostore":
		_, err := ctx.Get("other", r.Key)
		return err
	}
	old, err := ctx.Get("counts", r.Key)
	if err != nil {
		return err
	}
	n := int64(0)
	if old != nil {
		n, _ = strconv.ParseInt(string(old), 10, 64)
	}
	v := []byte(strconv.FormatInt(n+1, 10))
	if err := ctx.Put("counts", r.Key, v); err != nil {
		return err
	}
	return ctx.Forward(topology.NativeRecord{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers}, "")
}

// TestGoProcessor runs a Go processor through the test driver: store
// reads see the batch's own writes, forwards reach all children or the
// named one with their own timestamp and headers, and a record that
// fails under log_and_continue keeps the forward it made first.
func TestGoProcessor(t *testing.T) {
	inits := 0
	b := topology.NewBuilder()
	if err := b.AddStateStore(topology.StoreBuilder{Name: "counts", Type: topology.StoreTypeKeyValue, KeySerde: "string", ValueSerde: "string"}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddSource("src", []string{"in"}, "", "string", "string"))
	newP := topology.NewProcessorFunc(func() topology.NativeProcessor { return &counter{inits: &inits} })
	must(b.AddProcessor("count", topology.Function{Name: "counter", Native: newP}, []string{"src"}, []string{"counts"}, "", ""))
	must(b.AddSink("out", "out", []string{"count"}, "", ""))
	must(b.AddSink("routed", "routed", []string{"count"}, "", ""))
	topo, err := b.Topology()
	must(err)

	td, _, ctx := driven(t, "proc", map[string]string{"processing.exception.handler": "log_and_continue"}, topo, nil, nil)
	ts := int64(100)
	var recs []testdriver.Record
	for _, kv := range [][2]string{{"a", "x"}, {"b", "x"}, {"a", "x"}, {"a", "route"}, {"c", "boom"}, {"a", "x"}} {
		ts++
		t := ts
		recs = append(recs, testdriver.Record{Topic: "in", Key: []byte(kv[0]), Value: []byte(kv[1]), Timestamp: &t})
	}
	if _, failure, err := td.Pipe(ctx, recs); err != nil || failure != nil {
		t.Fatalf("pipe: %v %v", failure, err)
	}
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s=%s@%d ", r.Key, r.Value, r.Timestamp.UnixMilli())
	}
	if want := "a=1@101 b=1@102 a=2@103 c=boom@105 a=3@106 "; got != want {
		t.Errorf("out: %s, want %s", got, want)
	}
	routed, _, err := td.Output("routed")
	must(err)
	// Forwards to all children reach both sinks; the named one only
	// "routed", with its own timestamp and headers.
	got = ""
	for _, r := range routed {
		got += fmt.Sprintf("%s=%s@%d%d ", r.Key, r.Value, r.Timestamp.UnixMilli(), len(r.Headers))
	}
	if want := "a=1@1010 b=1@1020 a=2@1030 a=routed@1051 c=boom@1050 a=3@1060 "; got != want {
		t.Errorf("routed: %s, want %s", got, want)
	}
	if inits != 1 {
		t.Errorf("init ran %d times, want once for the one task", inits)
	}
}

// sweeper counts per key into "counts" and forwards nothing; its
// stream-time punctuator (every 1000 ms) forwards every entry with the
// punctuation's time and deletes it; its wall-clock punctuator (every
// 500 ms) forwards ("tick", time).
type sweeper struct{ ctx topology.NativeContext }

func (s *sweeper) Init(ctx topology.NativeContext) error {
	s.ctx = ctx
	if _, err := ctx.Schedule(1000, topology.StreamTime, s.sweep); err != nil {
		return err
	}
	_, err := ctx.Schedule(500, topology.WallClockTime, func(ts int64) error {
		return ctx.Forward(topology.NativeRecord{Key: []byte("tick"), Value: []byte(strconv.FormatInt(ts, 10)), Timestamp: ts}, "")
	})
	return err
}
func (s *sweeper) Close() error { return nil }
func (s *sweeper) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	if _, ok := ctx.RecordMetadata(); !ok {
		return errors.New("no record metadata in process")
	}
	old, err := ctx.Get("counts", r.Key)
	if err != nil {
		return err
	}
	n, _ := strconv.ParseInt(string(old), 10, 64)
	return ctx.Put("counts", r.Key, []byte(strconv.FormatInt(n+1, 10)))
}
func (s *sweeper) sweep(ts int64) error {
	if _, ok := s.ctx.RecordMetadata(); ok {
		return errors.New("record metadata in a punctuator")
	}
	var keys [][]byte
	err := s.ctx.Range("counts", nil, nil, func(k, v []byte) bool {
		keys = append(keys, k)
		return s.ctx.Forward(topology.NativeRecord{Key: k, Value: v, Timestamp: ts}, "") == nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := s.ctx.Delete("counts", k); err != nil {
			return err
		}
	}
	return nil
}

// TestGoProcessorPunctuation: a stream-time punctuator runs after each
// piped record that makes it due (aligned to 0, missed intervals
// skipped, called with the current stream time) and sees the record's
// writes; a wall-clock punctuator runs on AdvanceWallClock, first one
// interval after the start.
func TestGoProcessorPunctuation(t *testing.T) {
	b := topology.NewBuilder()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddStateStore(topology.StoreBuilder{Name: "counts", Type: topology.StoreTypeKeyValue, KeySerde: "string", ValueSerde: "string"}))
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	newP := topology.NewProcessorFunc(func() topology.NativeProcessor { return &sweeper{} })
	p, err := b.Process(in.ID, topology.Function{Name: "sweeper", Native: newP}, topology.ProcessOptions{Stores: []string{"counts"}})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	td, _, ctx := driven(t, "punct", nil, topo, nil, nil)
	pipe := func(k string, ts int64) {
		t.Helper()
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte(k), Value: []byte("v"), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe: %v %v", failure, err)
		}
	}
	read := func() string {
		t.Helper()
		out, _, err := td.Output("out")
		must(err)
		got := ""
		for _, r := range out {
			got += fmt.Sprintf("%s=%s@%d ", r.Key, r.Value, r.Timestamp.UnixMilli())
		}
		return got
	}
	// Stream time 0 is due at once (aligned to 0): the sweep sees a=1.
	pipe("a", 0)
	pipe("a", 10)
	pipe("b", 999)
	// 2500: one punctuation (1000 and 2000 were missed), at 2500.
	pipe("a", 2500)
	pipe("c", 2600)
	if got, want := read(), "a=1@0 a=2@2500 b=1@2500 "; got != want {
		t.Errorf("stream-time punctuations: %s, want %s", got, want)
	}
	clock, err := td.AdvanceWallClock(ctx, 499)
	must(err)
	if got := read(); got != "" {
		t.Errorf("wall clock 499 ms after start: %s, want nothing", got)
	}
	clock, err = td.AdvanceWallClock(ctx, 1)
	must(err)
	if got, want := read(), fmt.Sprintf("tick=%d@%d ", clock, clock); got != want {
		t.Errorf("wall clock 500 ms after start: %s, want %s", got, want)
	}
}

// ticker forwards ("tick", time) from a stream-time punctuator every
// 1000 ms, counting its inits and closes.
type ticker struct{ inits, closes *int }

func (k *ticker) Init(ctx topology.NativeContext) error {
	*k.inits++
	_, err := ctx.Schedule(1000, topology.StreamTime, func(ts int64) error {
		return ctx.Forward(topology.NativeRecord{Key: []byte("tick"), Value: []byte(strconv.FormatInt(ts, 10)), Timestamp: ts}, "")
	})
	return err
}
func (k *ticker) Close() error                                                { *k.closes++; return nil }
func (k *ticker) Process(topology.NativeContext, topology.NativeRecord) error { return nil }

// TestGoProcessorRevival: an aborted transaction's revival closes the
// task's processor and drops its schedules; the next record makes and
// initialises a new one, whose schedule replaces the old (one punctuation,
// not two).
func TestGoProcessorRevival(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	inits, closes := 0, 0
	b := topology.NewBuilder()
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	newP := topology.NewProcessorFunc(func() topology.NativeProcessor { return &ticker{inits: &inits, closes: &closes} })
	p, err := b.Process(in.ID, topology.Function{Name: "ticker", Native: newP}, topology.ProcessOptions{})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	td, app, ctx := driven(t, "revive", nil, topo, nil, nil)
	pipe := func(ts int64) {
		t.Helper()
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte("k"), Value: []byte("v"), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe: %v %v", failure, err)
		}
	}
	pipe(0)
	engine.ReviveOperators(app)
	pipe(1500)
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s=%s ", r.Key, r.Value)
	}
	if want := "tick=0 tick=1500 "; got != want {
		t.Errorf("out: %s, want %s", got, want)
	}
	if inits != 2 || closes != 1 {
		t.Errorf("%d inits and %d closes, want 2 and 1", inits, closes)
	}
	// Stopping closes the task's processor.
	must(app.Stop(ctx))
	if closes != 2 {
		t.Errorf("%d closes after Stop, want 2", closes)
	}
}

// deduper drops a record whose key had one in the last second (a window
// store "seen", one row per key and record time); a value "dump"
// forwards every row fetchAll still sees, as "key@start".
type deduper struct{}

func (deduper) Init(topology.NativeContext) error { return nil }
func (deduper) Close() error                      { return nil }
func (deduper) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	if string(r.Value) == "dump" {
		var rows []string
		err := ctx.WindowFetch("seen", nil, 0, 1<<62, func(k []byte, start int64, _ []byte) bool {
			rows = append(rows, fmt.Sprintf("%s@%d", k, start))
			return true
		})
		if err != nil {
			return err
		}
		return ctx.Forward(topology.NativeRecord{Key: r.Key, Value: []byte(fmt.Sprint(rows)), Timestamp: r.Timestamp}, "")
	}
	dup := false
	if err := ctx.WindowFetch("seen", r.Key, r.Timestamp-999, r.Timestamp, func([]byte, int64, []byte) bool { dup = true; return false }); err != nil {
		return err
	}
	if dup {
		return nil
	}
	if err := ctx.WindowPut("seen", r.Key, r.Value, r.Timestamp); err != nil {
		return err
	}
	return ctx.Forward(r, "")
}

// TestGoProcessorWindowStore runs a dedup over a window store: fetches
// see the batch's own puts, and retention (observed time - 2000 ms) hides
// and drops windows as Kafka Streams' window store does.
func TestGoProcessorWindowStore(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := topology.NewBuilder()
	must(b.AddStateStore(topology.StoreBuilder{Name: "seen", Type: topology.StoreTypeWindow, KeySerde: "string", ValueSerde: "string", Retention: 2000, WindowSize: 1000}))
	must(b.AddSource("src", []string{"in"}, "", "string", "string"))
	newP := topology.NewProcessorFunc(func() topology.NativeProcessor { return deduper{} })
	must(b.AddProcessor("dedup", topology.Function{Name: "deduper", Native: newP}, []string{"src"}, []string{"seen"}, "", ""))
	must(b.AddSink("out", "out", []string{"dedup"}, "", ""))
	topo, err := b.Topology()
	must(err)
	td, _, ctx := driven(t, "procwin", nil, topo, nil, nil)
	pipe := func(recs ...[3]any) {
		t.Helper()
		var in []testdriver.Record
		for _, r := range recs {
			ts := int64(r[2].(int))
			in = append(in, testdriver.Record{Topic: "in", Key: []byte(r[0].(string)), Value: []byte(r[1].(string)), Timestamp: &ts})
		}
		if _, failure, err := td.Pipe(ctx, in); err != nil || failure != nil {
			t.Fatalf("pipe: %v %v", failure, err)
		}
	}
	// One batch: the second a is a duplicate of the first (the batch's own put).
	pipe([3]any{"a", "1", 0}, [3]any{"a", "2", 500}, [3]any{"b", "3", 600})
	pipe([3]any{"a", "4", 1500}, [3]any{"x", "dump", 1600})
	// Observed time 5000: windows starting at or before 3000 are expired;
	// a put into one (c@100) is dropped.
	pipe([3]any{"b", "5", 5000}, [3]any{"c", "6", 100}, [3]any{"x", "dump", 5000}, [3]any{"b", "7", 5100})
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s=%s@%d ", r.Key, r.Value, r.Timestamp.UnixMilli())
	}
	want := "a=1@0 b=3@600 a=4@1500 x=[a@0 a@1500 b@600]@1600 b=5@5000 c=6@100 x=[b@5000]@5000 "
	if got != want {
		t.Errorf("out: %s\nwant %s", got, want)
	}
}

// ranger puts each record's key into "seen" and forwards, as one value,
// the keys of "seen" from "b" to "d", both inclusive (KeyValueStore.range).
type ranger struct{}

func (ranger) Init(topology.NativeContext) error { return nil }
func (ranger) Close() error                      { return nil }
func (ranger) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	if err := ctx.Put("seen", r.Key, r.Value); err != nil {
		return err
	}
	var keys []string
	if err := ctx.Range("seen", []byte("b"), []byte("d"), func(k, _ []byte) bool {
		keys = append(keys, string(k))
		return true
	}); err != nil {
		return err
	}
	return ctx.Forward(topology.NativeRecord{Key: r.Key, Value: []byte(strings.Join(keys, ",")), Timestamp: r.Timestamp}, "")
}

// TestGoProcessorRangeIsInclusive: a Go processor's range includes both
// bounds, as Kafka Streams' KeyValueStore.range and the host processors'.
func TestGoProcessorRangeIsInclusive(t *testing.T) {
	b := topology.NewBuilder()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddStateStore(topology.StoreBuilder{Name: "seen", Type: topology.StoreTypeKeyValue, KeySerde: "string", ValueSerde: "string"}))
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	p, err := b.Process(in.ID, topology.Function{Name: "ranger", Native: topology.NewProcessorFunc(func() topology.NativeProcessor { return ranger{} })},
		topology.ProcessOptions{Stores: []string{"seen"}})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	td, _, ctx := driven(t, "ranger", nil, topo, nil, nil)
	for i, k := range []string{"a", "b", "c", "d", "da", "e"} {
		ts := int64(i)
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte(k), Value: []byte("v"), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe %s: %v %v", k, failure, err)
		}
	}
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s=[%s] ", r.Key, r.Value)
	}
	if want := "a=[] b=[b] c=[b,c] d=[b,c,d] da=[b,c,d] e=[b,c,d] "; got != want {
		t.Errorf("ranges b..d: %s, want %s", got, want)
	}
}
