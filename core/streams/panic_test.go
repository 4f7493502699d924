package streams_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A Go function that panics fails its application with an error naming
// the task and the panic; the process lives on, and so does another
// application beside it (before, the panic ended the process and every
// application in it).
func TestAPanicEndsOnlyItsApplication(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "fragile-in", "calm-in", "calm-out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(id, in string, fn streams.MapValuesFunc, out string) *streams.App {
		t.Helper()
		b := streams.NewBuilder()
		s, err := b.Stream([]string{in})
		must(err)
		m, err := s.MapValues(fn)
		must(err)
		if out != "" {
			must(m.To(out))
		}
		app, err := streams.New(b, streams.Config{ApplicationID: id, Brokers: brokers,
			Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100"},
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(err)
		must(app.Start(ctx))
		t.Cleanup(func() { app.Stop(context.Background()) })
		return app
	}
	fragile := start("fragile", "fragile-in", func(v []byte) ([]byte, error) {
		if string(v) == "boom" {
			var m map[string]int
			m["boom"]++ // a nil map: a Go user's defect
		}
		return v, nil
	}, "")
	calm := start("calm", "calm-in", func(v []byte) ([]byte, error) { return []byte(strings.ToUpper(string(v))), nil }, "calm-out")

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("calm-out"))
	must(err)
	defer cl.Close()
	must(cl.ProduceSync(ctx, &kgo.Record{Topic: "fragile-in", Value: []byte("boom")}).FirstErr())
	select {
	case <-fragile.Done():
	case <-ctx.Done():
		t.Fatal("the application whose function panicked never stopped")
	}
	st, err := fragile.State()
	if err == nil || !strings.Contains(err.Error(), "task 0_0 panicked") || !strings.Contains(err.Error(), "nil map") {
		t.Fatalf("fragile: state %v, error %v; want an error naming the task and the panic", st, err)
	}
	must(cl.ProduceSync(ctx, &kgo.Record{Topic: "calm-in", Value: []byte("still here")}).FirstErr())
	for got := ""; got != "STILL HERE"; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("calm's output: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = string(r.Value) })
	}
	if st, err := calm.State(); err != nil || st != streams.Running {
		t.Errorf("calm: state %v, error %v; want running", st, err)
	}
}
