package topics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Own reports whether a pattern never reads topic: the broker's own
// (__consumer_offsets, __transaction_state) and the internal topics of
// application appID (repartition, changelog and foreign-key join topics),
// which Kafka Streams never hands a pattern source either.
func Own(appID, topic string) bool {
	if strings.HasPrefix(topic, "__") {
		return true
	}
	rest, ok := strings.CutPrefix(topic, appID+"-")
	return ok && (strings.HasSuffix(rest, "-repartition") || strings.HasSuffix(rest, "-changelog") || strings.HasSuffix(rest, "-topic"))
}

// Match answers what each pattern source of patterns reads of the broker's
// topics names: every topic whose whole name its pattern matches, but those
// skip reports (topics no pattern reads, or that a named source or global
// table reads). A topic two patterns match fails (Kafka Streams'
// TopologyException: a topic matches at most one pattern).
func Match(names []string, patterns []*topology.Node, skip func(topic string) bool) (map[*topology.Node][]string, error) {
	out := map[*topology.Node][]string{}
	by := map[string]*topology.Node{}
	for _, t := range slices.Sorted(slices.Values(names)) {
		if skip(t) {
			continue
		}
		for _, n := range patterns {
			if !n.MatchesTopic(t) {
				continue
			}
			if other := by[t]; other != nil {
				return nil, fmt.Errorf("engine: topic %q matches pattern %q of source %s and pattern %q of source %s; a topic can be read by one pattern only (Kafka Streams' TopologyException)",
					t, other.Pattern, other.Name, n.Pattern, n.Name)
			}
			by[t] = n
			out[n] = append(out[n], t)
		}
	}
	return out, nil
}
