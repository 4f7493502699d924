package streams

import (
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// CogroupedStream is several grouped streams aggregated into one table, each
// with its own aggregator (Kafka Streams' CogroupedKStream, KIP-150). Every
// grouped stream's records update the same aggregate per key, in one store,
// and the table forwards one update per record. The grouped streams must
// share their key type and be co-partitioned; one whose key changed upstream
// is repartitioned first.
//
// As in Kafka Streams a CogroupedStream is one object: Cogroup adds to it and
// returns it again, and every aggregation of it sees every grouped stream
// added so far.
type CogroupedStream struct {
	b *Builder
	h *topology.Handle
}

// Cogroup starts a cogroup with this grouped stream and its aggregator
// (KGroupedStream.cogroup). It adds no node.
func (g *GroupedStream) Cogroup(fn AggregatorFunc) (*CogroupedStream, error) {
	h, err := g.b.b.Cogroup(g.h.ID, 0, native("cogroup", fn))
	if err != nil {
		return nil, err
	}
	return &CogroupedStream{b: g.b, h: h}, nil
}

// Cogroup adds a grouped stream with its aggregator
// (CogroupedKStream.cogroup). It adds no node.
func (c *CogroupedStream) Cogroup(g *GroupedStream, fn AggregatorFunc) (*CogroupedStream, error) {
	if g == nil {
		return nil, fmt.Errorf("streams: Cogroup: the grouped stream is nil: %w", ErrInvalid)
	}
	h, err := c.b.b.Cogroup(c.h.ID, g.h.ID, native("cogroup", fn))
	if err != nil {
		return nil, err
	}
	c.h = h
	return c, nil
}

// Aggregate makes the cogroup's table (CogroupedKStream.aggregate): init
// gives a key's first aggregate, and each record is folded in by the
// aggregator of the grouped stream it came from. The aggregate's serde is
// StoreSerdes' value serde, else the first grouped stream's values'.
// Options: Store, StoreSerdes, ChangelogConfig, Name (the nodes are then
// "<name>-cogroup-agg-<i>" and "<name>-cogroup-merge").
func (c *CogroupedStream) Aggregate(init InitializerFunc, opts ...Option) (*Table, error) {
	o, err := parse("Aggregate", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return c.b.table(c.b.b.CogroupAggregate(c.h.ID, native("initializer", init), nil, o.mat, o.name))
}

// WindowedCogroupedStream is a cogrouped stream with windows
// (TimeWindowedCogroupedKStream, SessionWindowedCogroupedKStream). Its
// aggregation emits every window update.
type WindowedCogroupedStream struct {
	b *Builder
	h *topology.Handle
}

// WindowedBy windows the cogrouped stream (CogroupedKStream.windowedBy).
func (c *CogroupedStream) WindowedBy(w Windows) (*WindowedCogroupedStream, error) {
	h, err := c.b.b.WindowedBy(c.h.ID, w.w)
	if err != nil {
		return nil, err
	}
	return &WindowedCogroupedStream{b: c.b, h: h}, nil
}

// Aggregate makes the cogroup's windowed table over time or sliding
// windows; session windows need AggregateSessions. Options: Store,
// StoreSerdes, Retention, ChangelogConfig, Name.
func (w *WindowedCogroupedStream) Aggregate(init InitializerFunc, opts ...Option) (*Table, error) {
	o, err := parse("Aggregate", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.CogroupAggregate(w.h.ID, native("initializer", init), nil, o.mat, o.name))
}

// AggregateSessions is Aggregate over session windows: merger combines the
// aggregates of two sessions a record bridges
// (SessionWindowedCogroupedKStream.aggregate). Options as Aggregate.
func (w *WindowedCogroupedStream) AggregateSessions(init InitializerFunc, merger AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := parse("AggregateSessions", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	m := native("merger", merger)
	return w.b.table(w.b.b.CogroupAggregate(w.h.ID, native("initializer", init), &m, o.mat, o.name))
}
