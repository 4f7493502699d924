package engine

// Pattern sources (StreamsBuilder.stream(Pattern)): a source reads every
// user topic whose whole name its pattern matches, the topics that exist
// at the start and those created later, found at the next metadata
// refresh (metadata.max.age.ms). See docs/design/operators.md, "Pattern
// sources".

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/polystreams/polystreams/core/internal/topics"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// defaultMetadataMaxAge is Kafka's metadata.max.age.ms default: how often
// pattern sources look for new topics unless configured.
const defaultMetadataMaxAge = 5 * time.Minute

// patternSource is one pattern source of a plan and its source step.
type patternSource struct {
	node *topology.Node
	step *step
}

// source answers the step reading topic: a named source's, else that of
// the pattern source whose pattern matches it (nil: none).
func (p *plan) source(topic string) *step {
	if s := p.sources[topic]; s != nil {
		return s
	}
	for _, ps := range p.patterns {
		if ps.node.MatchesTopic(topic) {
			return ps.step
		}
	}
	return nil
}

// planFor answers the plan reading topic: the plan of a named source topic
// or of the pattern that matches it; nil for a topic the application does
// not read.
func (a *App) planFor(topic string) *plan {
	if p := a.planOf[topic]; p != nil {
		return p
	}
	if !a.hasPatterns || topics.Own(a.cfg.ApplicationID, topic) {
		return nil
	}
	for _, p := range a.plans {
		if p.source(topic) != nil {
			return p
		}
	}
	return nil
}

// matchTopics lists the broker's topics and answers what each pattern
// source reads now (topics.Match).
func (a *App) matchTopics(ctx context.Context) (map[*topology.Node][]string, error) {
	details, err := a.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("engine: listing topics for the pattern sources: %w", err)
	}
	var patterns []*topology.Node
	for _, p := range a.plans {
		for _, ps := range p.patterns {
			patterns = append(patterns, ps.node)
		}
	}
	globals := a.globalTopics()
	return topics.Match(slices.Collect(maps.Keys(details)), patterns, func(t string) bool {
		// A topic a source or a global table names is theirs.
		d := details[t]
		return d.Err != nil || d.IsInternal || topics.Own(a.cfg.ApplicationID, t) || a.planOf[t] != nil || slices.Contains(globals, t)
	})
}

// matchedTopics answers the topics the pattern sources of p read, or of
// every plan when p is nil, as last matched.
func (a *App) matchedTopics(p *plan) []string {
	a.patMu.Lock()
	defer a.patMu.Unlock()
	var out []string
	for _, q := range a.plans {
		if p != nil && q != p {
			continue
		}
		for _, ps := range q.patterns {
			out = append(out, a.matched[ps.node]...)
		}
	}
	slices.Sort(out)
	return out
}

// RefreshPatterns looks for topics the pattern sources read that the
// application does not consume yet; it creates what internal topics their
// partitions need, and the group's client subscribes to them, which makes
// the group rebalance (a new topic's partitions join the tasks of their
// partition number, or make new ones). The pattern refresh of
// metadata.max.age.ms calls it; the test driver too, when a record is piped
// into a new topic a pattern matches. It answers the topics added.
func (a *App) RefreshPatterns(ctx context.Context) ([]string, error) {
	if !a.hasPatterns {
		return nil, nil
	}
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	before := a.matchedTopics(nil)
	if _, err := a.ensureTopics(ctx); err != nil {
		return nil, err
	}
	var added []string
	for _, t := range a.matchedTopics(nil) {
		if !slices.Contains(before, t) {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	a.mu.Lock()
	cl := a.cl
	a.mu.Unlock()
	if cl != nil {
		cl.AddConsumeTopics(added...)
	}
	a.log.Info("pattern sources read new topics", "topics", added)
	return added, nil
}

// watchPatterns refreshes the pattern sources every metadata.max.age.ms
// until the application stops. A refresh that cannot list the topics is
// logged and tried again at the next; one whose topics the topology cannot
// read (a topic two patterns match, partition counts that do not fit)
// fails the application.
func (a *App) watchPatterns() {
	every := a.cfg.MetadataMaxAge
	if every <= 0 {
		every = defaultMetadataMaxAge
	}
	for {
		wait := every
		if len(a.planOf) == 0 && len(a.matchedTopics(nil)) == 0 {
			// Nothing is consumed, so no other request shows the brokers
			// alive (brokers.go): look more often than the broker watch's
			// silence.
			wait = min(every, brokerSilence/2)
		}
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(a.ctx, time.Minute)
		_, err := a.RefreshPatterns(ctx)
		cancel()
		switch {
		case err == nil || a.ctx.Err() != nil:
		case unreachable(err) || ctx.Err() != nil:
			a.log.Warn("refreshing the pattern sources' topics", "error", err)
		default:
			a.fail(err)
			return
		}
	}
}

// PatternReads reports whether a pattern source reads topic (which no
// source names).
func (a *App) PatternReads(topic string) bool {
	return a.hasPatterns && a.planOf[topic] == nil && a.planFor(topic) != nil
}

// PatternReading reports whether the application consumes topic already
// for a pattern source (it was matched at the start or a refresh).
func (a *App) PatternReading(topic string) bool {
	return slices.Contains(a.matchedTopics(nil), topic)
}

// patternOffsetReset is the reset policy of a topic a pattern source reads
// (its Consumed.withOffsetResetPolicy, else auto.offset.reset); "" for a
// topic no pattern reads.
func (a *App) patternOffsetReset(topic string) string {
	if !a.hasPatterns || topics.Own(a.cfg.ApplicationID, topic) {
		return ""
	}
	for _, p := range a.plans {
		for _, ps := range p.patterns {
			if ps.node.MatchesTopic(topic) {
				return cmp.Or(ps.node.OffsetReset, a.cfg.OffsetReset)
			}
		}
	}
	return ""
}

// planTopics are the full names of the topics p reads, sorted: its named
// source topics and what its pattern sources match now.
func (a *App) planTopics(p *plan) []string {
	return slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(p.sources)), a.matchedTopics(p)...)))
}
