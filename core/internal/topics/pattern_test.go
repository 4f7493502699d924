package topics

import (
	"slices"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
)

func TestOwn(t *testing.T) {
	for topic, want := range map[string]bool{
		"__consumer_offsets":                                      true,
		"app-KSTREAM-KEY-SELECT-0000-repartition":                 true,
		"app-counts-changelog":                                    true,
		"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000-topic": true,
		"other-counts-changelog":                                  false,
		"app-orders":                                              false,
		"orders":                                                  false,
	} {
		if got := Own("app", topic); got != want {
			t.Errorf("Own(app, %q) = %v, want %v", topic, got, want)
		}
	}
}

func TestMatch(t *testing.T) {
	var a, b *topology.Node
	build(t, func(bd *topology.Builder, must func(*topology.Handle, error) *topology.Handle) {
		a = must(bd.Stream(topology.StreamOptions{Pattern: "orders-.*", KeySerde: "string", ValueSerde: "string"})).Node
		b = must(bd.Stream(topology.StreamOptions{Pattern: ".*-eu", KeySerde: "string", ValueSerde: "string"})).Node
	})
	names := []string{"orders-us", "payments-eu", "orders", "orders-skip", "app-x-changelog"}
	skip := func(t string) bool { return t == "orders-skip" || Own("app", t) }
	got, err := Match(names, []*topology.Node{a, b}, skip)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[a], []string{"orders-us"}) || !slices.Equal(got[b], []string{"payments-eu"}) {
		t.Errorf("Match = %v, %v; want [orders-us], [payments-eu]", got[a], got[b])
	}
	_, err = Match(append(names, "orders-eu"), []*topology.Node{a, b}, skip)
	if err == nil || !strings.Contains(err.Error(), `topic "orders-eu" matches pattern "orders-.*"`) {
		t.Errorf("a topic two patterns match: error %v", err)
	}
}
