package topology

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseDescription: a topology file (`polystreams describe FILE`), JSON
// or Kafka Streams' describe() text, however malformed, parses or fails
// with a "topology: " error, and what parses renders in every format
// without a panic; a parsed description's text parses back to the same
// text.
func FuzzParseDescription(f *testing.F) {
	files, _ := filepath.Glob("testdata/render/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("Topologies:\n   Sub-topology: 0\n    Source: S (topics: [in])\n      --> P\n    Processor: P (stores: [s])\n      --> none\n      <-- S\n\n"))
	f.Add([]byte(`{"subtopologies":[{"id":0,"nodes":[{"name":"a","type":"source","topics":["x"],"successors":["a"]}]}]}`))
	f.Add([]byte("Sub-topology: x"))
	f.Add([]byte(`{"subtopologies":[{"id":-1,"nodes":[{"name":"","type":"?"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDescription(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "topology: ") {
				t.Fatalf("error without its component: %v", err)
			}
			return
		}
		for _, format := range Formats {
			if _, err := d.Render(format); err != nil {
				t.Fatalf("Render(%s): %v", format, err)
			}
		}
		text := d.Text()
		again, err := ParseDescription([]byte(text))
		if err != nil {
			return // names holding the text form's own punctuation do not round-trip
		}
		if got := again.Text(); got != text {
			t.Fatalf("text does not round-trip:\n%s\nthen\n%s", text, got)
		}
	})
}

// FuzzWindowsFor: any int64 timestamp falls in exactly the time windows
// that contain it and whose end does not pass math.MaxInt64, in ascending
// order, and never loops without end (before, math.MaxInt64-1 did).
func FuzzWindowsFor(f *testing.F) {
	f.Add(int64(1000), int64(100), int64(100))
	f.Add(int64(1005), int64(100), int64(30))
	f.Add(int64(math.MaxInt64-1), int64(10), int64(5))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(1<<62))
	f.Add(int64(math.MinInt64+1), int64(10), int64(5))
	f.Add(int64(3), int64(10), int64(5))
	f.Fuzz(func(t *testing.T, ts, size, advance int64) {
		if size <= 0 || advance <= 0 || advance > size || size/advance > 100_000 {
			return // WindowedBy refuses these, or they are too many to check
		}
		w := &Windows{Kind: TimeWindows, Size: size, Advance: advance}
		starts := w.For(ts, nil)
		if len(starts) > int(size/advance)+1 {
			t.Fatalf("ts %d in %d windows of size %d advancing %d", ts, len(starts), size, advance)
		}
		for i, s := range starts {
			if s < 0 || s%advance != 0 || s > ts || s > math.MaxInt64-size || s+size <= ts || (i > 0 && s != starts[i-1]+advance) {
				t.Fatalf("ts %d, size %d, advance %d: window %d starts at %d (all: %v)", ts, size, advance, i, s, starts)
			}
		}
		if ts >= size && ts <= math.MaxInt64-size {
			if want := ts/advance - (ts-size)/advance; int64(len(starts)) != want {
				t.Fatalf("ts %d, size %d, advance %d: %d windows, want %d", ts, size, advance, len(starts), want)
			}
		}
	})
}
