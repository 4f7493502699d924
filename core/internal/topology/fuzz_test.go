package topology

import (
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
