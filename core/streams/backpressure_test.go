package streams_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A task's inbox is bounded (4,000 records with the default bundle size):
// a partition whose queue is full is paused and resumed once it drains,
// while the poll loop takes every fetch whole. Records much larger than a
// fetch's share (256 KiB per partition), a slow function and two
// partitions make the queues fill and pause many times over: every record
// still comes through once, in its partition's order.
func TestBackpressureLosesNoRecord(t *testing.T) {
	const perPartition = 12000
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pad := strings.Repeat("x", 200) // ~1,100 records per partition fetch
	for p := range int32(2) {
		var rs []*kgo.Record
		for i := range perPartition {
			rs = append(rs, &kgo.Record{Topic: "in", Partition: p, Key: []byte(strconv.Itoa(int(p))), Value: []byte(fmt.Sprintf("%d/%s", i, pad))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	next := map[string]int{} // per partition (the key), the next value expected
	var problems []string
	seen := 0
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	in, err := b.Stream([]string{"in"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Foreach(func(k, v []byte) error {
		n, _, _ := strings.Cut(string(v), "/")
		i, _ := strconv.Atoi(n)
		mu.Lock()
		defer mu.Unlock()
		if want := next[string(k)]; i != want && len(problems) < 10 {
			problems = append(problems, fmt.Sprintf("partition %s: record %d where %d was next", k, i, want))
		}
		next[string(k)] = i + 1
		seen++
		if seen%100 == 0 {
			time.Sleep(time.Millisecond) // slower than fetching: the inboxes fill
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	app, err := streams.New(b, streams.Config{
		ApplicationID: "backpressure", Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Stop(context.Background())
	for {
		mu.Lock()
		done := seen >= 2*perPartition
		got := fmt.Sprint(seen, " records, next per partition ", next)
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d records: got %s", 2*perPartition, got)
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would come now
	mu.Lock()
	defer mu.Unlock()
	if seen != 2*perPartition || next["0"] != perPartition || next["1"] != perPartition || len(problems) > 0 {
		t.Errorf("%d records, next per partition %v, want each of %d once in order; %v", seen, next, perPartition, problems)
	}
}
