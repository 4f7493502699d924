package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// A cogroup's aggregation steps share their store's record cache (one
// caching store in Kafka Streams): with the cache on, a key updated by both
// streams before a flush is forwarded once, with its latest aggregate, not
// once per stream.
func TestCogroupStepsShareOneRecordCache(t *testing.T) {
	b := topology.NewBuilder()
	must := func(h *topology.Handle, err error) uint64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h.ID
	}
	concat := func(sep string) topology.Function {
		return topology.Function{Name: "concat" + sep, Native: topology.AggregateFunc(func(_, v, agg []byte) ([]byte, error) {
			if len(agg) == 0 {
				return v, nil
			}
			return []byte(string(agg) + sep + string(v)), nil
		})}
	}
	clicks := must(b.GroupByKey(must(b.Stream(topology.StreamOptions{Topics: []string{"clicks"}, KeySerde: "string", ValueSerde: "string"})), "", "", ""))
	views := must(b.GroupByKey(must(b.Stream(topology.StreamOptions{Topics: []string{"views"}, KeySerde: "string", ValueSerde: "string"})), "", "", ""))
	cg := must(b.Cogroup(must(b.Cogroup(clicks, 0, concat("+"))), views, concat("|")))
	init := topology.Function{Name: "empty", Native: topology.InitializerFunc(func() ([]byte, error) { return []byte{}, nil })}
	table := must(b.CogroupAggregate(cg, init, nil, nil, ""))
	if err := b.To(must(b.ToStream(table, "")), "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, b, map[string]string{"statestore.cache.max.bytes": "1048576"})
	var cached []string
	for _, s := range h.t.plan.cached {
		cached = append(cached, s.node.Name)
	}
	if fmt.Sprint(cached) != "[COGROUPKSTREAM-AGGREGATE-0000000003]" {
		t.Errorf("cached steps %v, want only the cogroup's first aggregation (its cache holds the other's updates)", cached)
	}
	for _, r := range []struct{ topic, key, value string }{{"clicks", "a", "x"}, {"views", "a", "v"}, {"clicks", "b", "y"}, {"clicks", "a", "z"}} {
		if got := h.push(t, r.topic, r.key, r.value, 1); got != nil {
			t.Errorf("%s %s=%s: forwarded %q before the flush", r.topic, r.key, r.value, got)
		}
	}
	h.t.begin()
	if err := h.t.flushCaches(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range h.t.out {
		got = append(got, fmt.Sprintf("%s=%s", o.Key, o.Value))
	}
	if fmt.Sprint(got) != "[a=x|v+z b=y]" {
		t.Errorf("flushed %v, want [a=x|v+z b=y]: one update per key, the aggregate both streams made", got)
	}
}
