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
