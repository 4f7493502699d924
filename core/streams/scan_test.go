package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// Range, PrefixScan, All and FetchWindows read what this instance holds:
// a count per key and a 10 s windowed count per key over two partitions,
// read in partition order, each partition in key (window start) order,
// stopping where fn says; a store of the other kind, or none, is refused
// naming it.
func TestRangeAndWindowQueriesGoAPI(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := streams.NewBuilder()
	s, err := b.Stream([]string{"in"}, streams.KeySerde("string"))
	must(err)
	g, err := s.GroupByKey()
	must(err)
	_, err = g.Count(streams.Store("counts"))
	must(err)
	w, err := g.WindowedBy(streams.TumblingWindows(10*time.Second, 10*time.Second)) // retention 20 s: both windows kept
	must(err)
	_, err = w.Count(streams.Store("windowed"))
	must(err)
	app, err := streams.New(b, streams.Config{ApplicationID: "iq-scan", Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100", "statestore.cache.max.bytes": "0"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	must(app.Start(ctx))
	defer app.Stop(context.Background())

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	must(err)
	defer cl.Close()
	// a0..a4 and b0..b4, key i written i+1 times at 1 s, and once more at 15 s.
	want := map[string]int64{}
	for i := range 5 {
		for _, p := range []string{"a", "b"} {
			k := fmt.Sprintf("%s%d", p, i)
			for range i + 1 {
				must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(1000)}).FirstErr())
			}
			must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(15000)}).FirstErr())
			want[k] = int64(i + 2)
		}
	}
	count := func(v []byte) int64 { return int64(binary.BigEndian.Uint64(v)) }
	all := func() (map[string]int64, error) {
		got := map[string]int64{}
		err := app.All("counts", streams.StoreQueryParameters{}, func(k, v []byte, _ int64) bool {
			got[string(k)] = count(v)
			return true
		})
		return got, err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, err := all()
		must(err)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("All: %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}

	var keys []string
	must(app.Range("counts", []byte("a1"), []byte("b1"), streams.StoreQueryParameters{}, func(k, v []byte, _ int64) bool {
		if count(v) != want[string(k)] {
			t.Errorf("Range: %s = %d, want %d", k, count(v), want[string(k)])
		}
		keys = append(keys, string(k))
		return true
	}))
	slices.Sort(keys) // each partition in key order; partitions one after the other
	if fmt.Sprint(keys) != "[a1 a2 a3 a4 b0 b1]" {
		t.Errorf("Range a1..b1 (both inclusive): %v", keys)
	}
	keys = nil
	must(app.PrefixScan("counts", []byte("b"), streams.StoreQueryParameters{}, func(k, _ []byte, _ int64) bool {
		keys = append(keys, string(k))
		return true
	}))
	slices.Sort(keys)
	if fmt.Sprint(keys) != "[b0 b1 b2 b3 b4]" {
		t.Errorf("PrefixScan b: %v", keys)
	}
	n := 0
	must(app.All("counts", streams.StoreQueryParameters{}, func(_, _ []byte, _ int64) bool { n++; return n < 3 }))
	if n != 3 {
		t.Errorf("All stopped by fn after %d entries, want 3", n)
	}

	var windows []string
	must(app.FetchWindows("windowed", []byte("a3"), time.UnixMilli(0), time.UnixMilli(20000), streams.StoreQueryParameters{}, func(w streams.WindowedValue) bool {
		windows = append(windows, fmt.Sprintf("%s@%d-%d=%d", w.Key, w.Start, w.End, count(w.Value)))
		return true
	}))
	if fmt.Sprint(windows) != "[a3@0-10000=4 a3@10000-20000=1]" {
		t.Errorf("FetchWindows a3: %v", windows)
	}
	windows = nil
	must(app.FetchWindows("windowed", nil, time.UnixMilli(10000), time.UnixMilli(10000), streams.StoreQueryParameters{}, func(w streams.WindowedValue) bool {
		windows = append(windows, string(w.Key))
		return true
	}))
	if len(windows) != 10 {
		t.Errorf("FetchWindows of every key starting at 10 s: %v, want 10 windows", windows)
	}

	if err := app.Range("windowed", nil, nil, streams.StoreQueryParameters{}, func(_, _ []byte, _ int64) bool { return true }); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("Range over a window store: %v, want ErrInvalid", err)
	}
	if err := app.FetchWindows("counts", nil, time.UnixMilli(0), time.UnixMilli(1), streams.StoreQueryParameters{}, func(streams.WindowedValue) bool { return true }); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("FetchWindows over a key-value store: %v, want ErrInvalid", err)
	}
	if err := app.All("nope", streams.StoreQueryParameters{}, func(_, _ []byte, _ int64) bool { return true }); !errors.Is(err, streams.ErrNotFound) || err.Error() != `streams: All: store "nope" does not exist: not found` {
		t.Errorf("All over a missing store: %v", err)
	}
}
