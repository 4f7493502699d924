package metrics

import (
	"sync"
	"testing"
)

func TestHistogram(t *testing.T) {
	h := NewHistogram([]float64{1, 10, 100})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, v := range []float64{0.5, 1, 5, 50, 500} {
				h.Observe(v)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 20 || s.Sum != 4*556.5 {
		t.Errorf("count %d sum %v, want 20 and %v", s.Count, s.Sum, 4*556.5)
	}
	want := map[float64]uint64{1: 8, 10: 12, 100: 16}
	for b, n := range want {
		if s.Buckets[b] != n {
			t.Errorf("bucket <= %v holds %d, want %d", b, s.Buckets[b], n)
		}
	}
}

func TestHistogramObserveDoesNotAllocate(t *testing.T) {
	h := NewHistogram(LatencyBuckets)
	if n := testing.AllocsPerRun(1000, func() { h.Observe(0.003) }); n != 0 {
		t.Errorf("Observe allocates %v times per call", n)
	}
}
