package streams_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// The operations of issue 24 through the Go API: a source's OffsetReset,
// Pause/Resume/IsPaused, CleanUp, and default serdes given to NewBuilder.
func TestOperations(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("before")

	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	in, err := b.Stream([]string{"in"}, streams.OffsetReset(streams.OffsetLatest))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.To("out"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := streams.Config{
		ApplicationID: "ops", Brokers: brokers,
		Properties: map[string]string{"state.dir": dir, "commit.interval.ms": "100", "default.value.serde": "long"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if _, err := streams.New(b, config); err == nil || !strings.Contains(err.Error(), "default.value.serde in Properties is not the Builder's") {
		t.Errorf("a default serde only in Properties: %v", err)
	}
	config.Properties["default.value.serde"] = "string"
	app, err := streams.New(b, config)
	if err != nil {
		t.Fatal(err)
	}
	app.Pause()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Stop(ctx)
	if !app.IsPaused() {
		t.Error("IsPaused after Pause")
	}
	if _, err := app.CleanUp(); err == nil || !strings.Contains(err.Error(), "the application is running") {
		t.Errorf("CleanUp while running: %v", err)
	}
	app.Resume()
	if app.IsPaused() {
		t.Error("IsPaused after Resume")
	}
	// latest: "before" is skipped; produce until a later record comes out.
	var out []string
	for !slices.Contains(out, "after") {
		produce("after")
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("nothing came out: %q", out)
		}
	}
	if slices.Contains(out, "before") {
		t.Errorf("OffsetLatest read a record from before the start: %q", out)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	deleted, err := app.CleanUp()
	if err != nil || deleted != filepath.Join(dir, "ops") {
		t.Errorf("CleanUp after Stop: %q, %v", deleted, err)
	}
	if _, err := os.Stat(deleted); !os.IsNotExist(err) {
		t.Errorf("state directory still there: %v", err)
	}
	if _, err := streams.NewBuilder(streams.KeySerde("avro")).Stream([]string{"x"}); err == nil || !strings.Contains(err.Error(), "default.key.serde") {
		t.Errorf("a bad default serde: %v", err)
	}
	if _, err := streams.NewBuilder().Stream([]string{"x"}, streams.OffsetReset("smallest")); err == nil || !strings.Contains(err.Error(), `offset_reset "smallest"`) {
		t.Errorf("OffsetReset smallest: %v", err)
	}
}
