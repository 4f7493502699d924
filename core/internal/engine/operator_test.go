package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// BenchmarkProcessCount pushes 2,000-record batches over 1,000 keys
// through stream -> group_by_key -> count in Go, on a Pebble store, under
// exactly_once_v2 (the batches' writes join the open transaction, which
// never ends: nothing is produced): the stateful hot path, operator calls
// and store reads and writes included.
//
//	go test ./core/internal/engine -run '^$' -bench ProcessCount -count 10
func BenchmarkProcessCount(b *testing.B) {
	topo := countTopology(b, nil)
	task := newOrderTask(b, topo, nil, map[string]string{"processing.guarantee": "exactly_once_v2"})
	batch := make([]*kgo.Record, 2000)
	for i := range batch {
		batch[i] = &kgo.Record{Topic: "in", Offset: int64(i), Key: []byte(fmt.Sprintf("key-%d", i%1000)), Value: []byte("v")}
	}
	benchProcess(b, task, batch)
}

// BenchmarkProcessHoppingCount pushes 2,000-record batches over 10,000
// keys, 0.6 ms apart in time (bench-peers' 1M records over 10 minutes),
// through stream -> group_by_key -> windowed_by(60 s every 15 s) -> count
// in Go, under exactly_once_v2 as BenchmarkProcessCount: four window
// updates per record, the open windows in memory, the record cache on.
//
//	go test ./core/internal/engine -run '^$' -bench ProcessHoppingCount -count 10
func BenchmarkProcessHoppingCount(b *testing.B) {
	topo := countTopology(b, &topology.Windows{Kind: topology.TimeWindows, Size: 60_000, Advance: 15_000})
	task := newOrderTask(b, topo, nil, map[string]string{"processing.guarantee": "exactly_once_v2"})
	batch := make([]*kgo.Record, 2000)
	for i := range batch {
		batch[i] = &kgo.Record{Topic: "in", Key: []byte(fmt.Sprintf("key-%d", (i*7919)%10_000)), Value: []byte("v")}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := int64(0)
	for range b.N {
		for _, r := range batch {
			r.Offset, r.Timestamp = n, time.UnixMilli(n*6/10)
			n++
		}
		if err := task.process(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*len(batch)), "cpu-ns/record")
}

// countTopology is stream(in) -> group_by_key [-> windowed_by(w)] -> count,
// string keys and values.
func countTopology(b *testing.B, w *topology.Windows) *topology.Topology {
	return groupedTopology(b, w, func(tb *topology.Builder, g uint64) (*topology.Handle, error) {
		return tb.Count(g, nil, "")
	})
}

// groupedTopology is stream(in) -> group_by_key [-> windowed_by(w)] ->
// fold(grouped), string keys and values.
func groupedTopology(b *testing.B, w *topology.Windows, fold func(tb *topology.Builder, grouped uint64) (*topology.Handle, error)) *topology.Topology {
	b.Helper()
	must := func(h *topology.Handle, err error) uint64 {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return h.ID
	}
	tb := topology.NewBuilder()
	g := must(tb.GroupByKey(must(tb.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})), "", "", ""))
	if w != nil {
		g = must(tb.WindowedBy(g, *w))
	}
	must(fold(tb, g))
	topo, err := tb.Topology()
	if err != nil {
		b.Fatal(err)
	}
	return topo
}

// latestHost folds each group's values to the last one: a host reducer
// that costs next to nothing, so that BenchmarkProcessHostReduce measures
// the engine's side of a fold bundle.
type latestHost struct{}

func (latestHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	res := &pb.BundleResult{BundleId: b.Id, OutputCounts: make([]int32, len(b.ValueLengths))}
	for i := range res.OutputCounts {
		res.OutputCounts[i] = 1
	}
	res.ValueLengths, res.Values = b.ValueLengths, b.Values
	return res, nil
}

// BenchmarkProcessHostReduce pushes 2,000-record batches over 10,000 keys
// through stream -> group_by_key -> reduce by a host function under
// exactly_once_v2 with the record cache on (bench-peers' exactly-once sum):
// the fold bundle's grouping, encoding and result decoding, the store reads
// and writes; the host (latestHost) does next to nothing.
//
//	go test ./core/internal/engine -run '^$' -bench ProcessHostReduce -count 10
func BenchmarkProcessHostReduce(b *testing.B) {
	topo := groupedTopology(b, nil, func(tb *topology.Builder, g uint64) (*topology.Handle, error) {
		return tb.Reduce(g, topology.Function{Token: 1, Name: "latest"}, nil, "")
	})
	task := newOrderTask(b, topo, latestHost{}, map[string]string{"processing.guarantee": "exactly_once_v2"})
	batch := make([]*kgo.Record, 2000)
	for i := range batch {
		batch[i] = &kgo.Record{Topic: "in", Key: []byte(fmt.Sprintf("key-%d", (i*7919)%10_000)), Value: []byte(`{"amount":17}`)}
	}
	benchProcess(b, task, batch)
}
