// Package metrics holds the engine's lock-free instruments and serves them
// in Prometheus' format. The engine records into plain atomics and
// Histograms on its hot path (per batch or bundle, never per record taking
// a lock or allocating); the Prometheus collector (core/internal/server/observe.go) reads them
// only when scraped.
package metrics

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// Histogram counts observations in fixed buckets. Observe takes no lock and
// allocates nothing; safe for concurrent use. The zero value is unusable:
// make one with NewHistogram.
type Histogram struct {
	bounds []float64       // upper bounds, ascending; +Inf is implied
	counts []atomic.Uint64 // len(bounds)+1, the last for +Inf
	sum    atomic.Uint64   // float64 bits
}

// NewHistogram makes a Histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe adds one observation of v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ObserveSince adds the seconds since start.
func (h *Histogram) ObserveSince(start time.Time) { h.Observe(time.Since(start).Seconds()) }

// HistogramSnapshot is a Histogram at one moment, buckets cumulative as
// Prometheus has them.
type HistogramSnapshot struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64 // upper bound -> observations <= it
}

// Snapshot reads h. Observations made meanwhile may be counted in some
// buckets and not in Count; a scrape tolerates that.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Buckets: make(map[float64]uint64, len(h.bounds))}
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		s.Buckets[b] = cum
	}
	s.Count = cum + h.counts[len(h.bounds)].Load()
	s.Sum = math.Float64frombits(h.sum.Load())
	return s
}

// Bucket layouts of the engine's histograms.
var (
	// LatencyBuckets, in seconds: 100 µs to ~26 s.
	LatencyBuckets = exponential(0.0001, 2, 19)
	// SizeBuckets, in records: 1 to 16,384.
	SizeBuckets = exponential(1, 2, 15)
)

func exponential(start, factor float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start
		start *= factor
	}
	return out
}
