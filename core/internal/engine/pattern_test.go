package engine

import (
	"testing"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// A pattern-only sub-topology's steps are instrumented (eachStep walks
// from its pattern sources), its plan finds a matched topic's source step,
// and the application's own internal topics and the broker's are never a
// pattern's.
func TestPatternPlan(t *testing.T) {
	b := topology.NewBuilder()
	s, err := b.Stream(topology.StreamOptions{Pattern: "orders-.*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(s.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Parse("orders-app", map[string]string{"polystreams.metrics.enabled": "true"}, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := a.plans[0]
	steps := 0
	eachStep(p, func(s *step) {
		steps++
		if s.stats == nil {
			t.Errorf("step %d has no stats", s.index)
		}
	})
	if steps != 2 {
		t.Errorf("eachStep visited %d steps, want the source and the sink", steps)
	}
	if p.source("orders-eu") == nil || p.source("orders") != nil {
		t.Errorf("source(orders-eu) = %v, source(orders) = %v", p.source("orders-eu"), p.source("orders"))
	}
	for topic, want := range map[string]bool{
		"orders-eu": true,
		"orders-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog": false,
		"orders-app-x-repartition":                                      false,
		"__consumer_offsets":                                            false,
	} {
		if got := a.planFor(topic) != nil; got != want {
			t.Errorf("planFor(%q): %v, want %v", topic, got, want)
		}
	}
}
