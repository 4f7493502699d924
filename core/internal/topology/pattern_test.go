package topology

import (
	"strings"
	"testing"
)

// A pattern source: a pattern RE2 cannot read is refused naming the
// pattern and the source; the pattern must match whole topic names; and
// describe() prints it where a source prints its topics.
func TestStreamPattern(t *testing.T) {
	b := NewBuilder()
	_, err := b.Stream(StreamOptions{Pattern: "orders-(?!eu).*", Name: "orders"})
	if err == nil || !strings.Contains(err.Error(), `stream orders pattern "orders-(?!eu).*" is not a regular expression Go's RE2 reads`) {
		t.Fatalf("lookahead: %v", err)
	}
	if _, err := b.Stream(StreamOptions{Pattern: "orders", Topics: []string{"orders"}}); err == nil || !strings.Contains(err.Error(), "either topics or a pattern") {
		t.Fatalf("topics and pattern: %v", err)
	}
	h, err := b.Stream(StreamOptions{Pattern: "orders-[a-z]{2}"})
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"orders-eu": true, "orders-eu-archive": false, "xorders-eu": false, "orders-": false} {
		if got := h.Node.MatchesTopic(topic); got != want {
			t.Errorf("MatchesTopic(%q) = %v, want %v", topic, got, want)
		}
	}
	if err := b.To(h.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if d := topo.Describe(); !strings.Contains(d, "    Source: KSTREAM-SOURCE-0000000000 (topics: orders-[a-z]{2})\n      --> KSTREAM-SINK-0000000001\n") {
		t.Fatalf("describe:\n%s", d)
	}
	// The text parses back (a JVM application's pattern source renders
	// too), and prints as it was.
	pd, err := ParseDescription([]byte(topo.Describe()))
	if err != nil {
		t.Fatal(err)
	}
	if pd.Subtopologies[0].Nodes[0].Pattern != "orders-[a-z]{2}" || pd.Text() != topo.Describe() {
		t.Fatalf("parsed: %+v\n%s", pd.Subtopologies[0].Nodes[0], pd.Text())
	}
	// A later source of any kind may not name a topic the pattern matches.
	if _, err := b.Table(TableOptions{Topic: "orders-us"}); err == nil || !strings.Contains(err.Error(), `table reads topic "orders-us", which matches pattern "orders-[a-z]{2}" of source KSTREAM-SOURCE-0000000000`) {
		t.Fatalf("table on a matched topic: %v", err)
	}
}
