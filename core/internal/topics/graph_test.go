package topics

import (
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
)

func build(t *testing.T, f func(b *topology.Builder, must func(*topology.Handle, error) *topology.Handle)) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	must := func(h *topology.Handle, err error) *topology.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	f(b, must)
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func full(t string) string { return "app-" + t }

// A key-changing aggregation: the repartition topic and the changelog take
// the source topic's partition count.
func TestInternalTopicsTakeTheirWritersPartitions(t *testing.T) {
	topo := build(t, func(b *topology.Builder, must func(*topology.Handle, error) *topology.Handle) {
		s := must(b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"}))
		k := must(b.SelectKey(s.ID, topology.Function{Token: 1}, "string", ""))
		g := must(b.GroupByKey(k.ID, "", "", ""))
		must(b.Count(g.ID, &topology.Materialized{StoreName: "counts"}, ""))
	})
	g := Read(topo, nil)
	if len(g.User) != 1 || g.User[0] != "in" {
		t.Fatalf("User = %v, want [in]", g.User)
	}
	userParts := map[string]int32{"in": 4}
	joins, err := g.Copartition(topo, userParts)
	if err != nil || len(joins) != 0 {
		t.Fatalf("Copartition = %v, %v", joins, err)
	}
	subParts := g.ResolvePartitions(userParts, len(topo.Subtopologies))
	want, configs, changelogs := g.Internal(topo, subParts, joins, full)
	if len(want) != 2 {
		t.Fatalf("internal topics = %v, want a repartition topic and a changelog", want)
	}
	for name, n := range want {
		if !strings.HasPrefix(name, "app-") || n != 4 {
			t.Errorf("internal topic %q: %d partitions, want app-prefixed with 4", name, n)
		}
	}
	cl := "app-counts-changelog"
	if want[cl] != 4 || !changelogs[cl] || *configs[cl]["cleanup.policy"] != "compact" {
		t.Errorf("changelog %q: %d partitions, by partition %v, configs %v", cl, want[cl], changelogs[cl], configs[cl])
	}
}

// A stream-table join of topics with different partition counts fails,
// naming the join and both topics.
func TestCopartitionRefusesDifferentCounts(t *testing.T) {
	topo := build(t, func(b *topology.Builder, must func(*topology.Handle, error) *topology.Handle) {
		s := must(b.Stream(topology.StreamOptions{Topics: []string{"a"}, KeySerde: "string", ValueSerde: "string"}))
		tb := must(b.Table(topology.TableOptions{Topic: "b", KeySerde: "string", ValueSerde: "string"}))
		must(b.Join(s.ID, tb.ID, topology.Function{Token: 1}, false, "", ""))
	})
	g := Read(topo, nil)
	_, err := g.Copartition(topo, map[string]int32{"a": 2, "b": 3})
	if err == nil {
		t.Fatal("Copartition of 2 and 3 partitions: no error")
	}
	for _, s := range []string{"not co-partitioned", `"a" has 2 partitions`, `"b" has 3`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if _, err := g.Copartition(topo, map[string]int32{"a": 3, "b": 3}); err != nil {
		t.Errorf("Copartition of 3 and 3 partitions: %v", err)
	}
}

func TestChangelogConfig(t *testing.T) {
	day := int64(24 * 60 * 60 * 1000)
	for _, c := range []struct {
		store         topology.Store
		policy, extra string
		value         string
	}{
		{topology.Store{Kind: topology.StoreKeyValue}, "compact", "", ""},
		{topology.Store{Kind: topology.StoreWindow, Retention: 1000}, "compact,delete", "retention.ms", "86401000"},
		{topology.Store{Kind: topology.StoreJoinWindow, Retention: 1000}, "delete", "retention.ms", "86401000"},
		{topology.Store{Kind: topology.StoreVersioned, Versioned: &topology.Versioned{HistoryRetention: day}}, "compact", "min.compaction.lag.ms", "172800000"},
	} {
		got := ChangelogConfig(&c.store)
		if *got["cleanup.policy"] != c.policy {
			t.Errorf("kind %v: cleanup.policy %q, want %q", c.store.Kind, *got["cleanup.policy"], c.policy)
		}
		if c.extra != "" && (got[c.extra] == nil || *got[c.extra] != c.value) {
			t.Errorf("kind %v: %s = %v, want %s", c.store.Kind, c.extra, got[c.extra], c.value)
		}
	}
	over := ChangelogConfig(&topology.Store{Kind: topology.StoreKeyValue, ChangelogConfig: map[string]string{"cleanup.policy": "delete"}})
	if *over["cleanup.policy"] != "delete" {
		t.Errorf("the store's changelog config does not win: %q", *over["cleanup.policy"])
	}
}
