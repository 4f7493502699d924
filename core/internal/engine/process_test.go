package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/internal/config"
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
	must(b.AddSource("src", []string{"in"}, "string", "string"))
	newP := topology.NewProcessorFunc(func() topology.NativeProcessor { return &counter{inits: &inits} })
	must(b.AddProcessor("count", topology.Function{Name: "counter", Native: newP}, []string{"src"}, []string{"counts"}, "", ""))
	must(b.AddSink("out", "out", []string{"count"}, "", ""))
	must(b.AddSink("routed", "routed", []string{"count"}, "", ""))
	topo, err := b.Topology()
	must(err)

	td, kv, err := testdriver.New(map[string]string{"application.id": "proc", "processing.exception.handler": "log_and_continue"})
	must(err)
	defer td.Close()
	cfg, _, err := config.Parse("proc", kv, "")
	must(err)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := engine.New(cfg, topo, nil)
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(td.Start(ctx, app))
	defer app.Stop(ctx)
	must(td.Ready(ctx))
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
	td, kv, err := testdriver.New(map[string]string{"application.id": "punct"})
	must(err)
	defer td.Close()
	cfg, _, err := config.Parse("punct", kv, "")
	must(err)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := engine.New(cfg, topo, nil)
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(td.Start(ctx, app))
	defer app.Stop(ctx)
	must(td.Ready(ctx))
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
