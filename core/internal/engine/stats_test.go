package engine

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// statelessApp is an App (never started) running stream -> map_values ->
// filter -> foreach in Go, and a task of it: enough to push batches through
// the plan without a broker.
func statelessApp(tb testing.TB, metrics bool) *task {
	tb.Helper()
	b := topology.NewBuilder()
	s, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, ValueSerde: "string"})
	if err != nil {
		tb.Fatal(err)
	}
	m, _ := b.MapValues(s.ID, topology.Function{Name: "upper", Native: topology.MapValuesFunc(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil })}, "", "")
	f, _ := b.Filter(m.ID, topology.Function{Name: "long", Native: topology.PredicateFunc(func(_, v []byte) (bool, error) { return len(v) > 3, nil })}, "")
	if err := b.Foreach(f.ID, topology.Function{Name: "drop", Native: topology.ForeachFunc(func(_, _ []byte) error { return nil })}, ""); err != nil {
		tb.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		tb.Fatal(err)
	}
	cfg, _, err := config.Parse("stats", map[string]string{"polystreams.metrics.enabled": fmt.Sprint(metrics)}, "127.0.0.1:1")
	if err != nil {
		tb.Fatal(err)
	}
	a, err := New(cfg, topo, nil)
	if err != nil {
		tb.Fatal(err)
	}
	t := newTask(a, taskID{0, 0}, a.plans[0])
	t.restored.Store(true)
	return t
}

// cpuTime is the CPU time (user + system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func batchOf(n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: "in", Offset: int64(i), Value: []byte(fmt.Sprintf("value %d", i%7))}
	}
	return out
}

// Nodes count the records into them, per batch.
func TestStatsCountNodeRecords(t *testing.T) {
	task := statelessApp(t, true)
	for range 3 {
		if err := task.process(context.Background(), batchOf(100)); err != nil {
			t.Fatal(err)
		}
	}
	st := task.app.Stats()
	got := map[string]int64{}
	for _, n := range st.Nodes {
		got[n.Name] = n.Records
	}
	want := map[string]int64{"KSTREAM-SOURCE-0000000000": 300, "KSTREAM-MAPVALUES-0000000001": 300, "KSTREAM-FILTER-0000000002": 300, "KSTREAM-FOREACH-0000000003": 300}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s counted %d, want %d (all: %v)", name, got[name], n, got)
		}
	}
	if !st.MetricsEnabled || st.Commit == nil {
		t.Errorf("metrics on: %+v", st)
	}
	off := statelessApp(t, false)
	if err := off.process(context.Background(), batchOf(100)); err != nil {
		t.Fatal(err)
	}
	if st := off.app.Stats(); st.MetricsEnabled || st.Nodes[0].Records != 0 || st.Commit != nil {
		t.Errorf("metrics off: %+v", st)
	}
}

// BenchmarkProcessMetrics pushes 2,000-record batches through a 4-node Go
// plan with metrics on and off: the cost of counting on the hot path.
//
//	go test ./core/internal/engine -run '^$' -bench ProcessMetrics -count 10
func BenchmarkProcessMetrics(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("metrics=%v", on), func(b *testing.B) {
			benchProcess(b, statelessApp(b, on), batchOf(2000))
		})
	}
}

// benchProcess has t process batch b.N times, reporting the CPU time per
// record beside the wall time: CPU time is steadier on a shared machine.
func benchProcess(b *testing.B, t *task, batch []*kgo.Record) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		if err := t.process(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*len(batch)), "cpu-ns/record")
}
