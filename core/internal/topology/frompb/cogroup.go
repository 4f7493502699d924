package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// cogroup applies CogroupOp: it starts a cogroup from a grouped stream, or
// adds a grouped stream to a cogrouped one.
func (c *call) cogroup(v *pb.CogroupOp) (*topology.Handle, error) {
	agg, err := c.readFn(v.AggregatorToken, "aggregator")
	if err != nil {
		return nil, err
	}
	return c.b.Cogroup(v.Input, v.Grouped, agg)
}

// isCogroup reports whether input is a cogrouped stream, windowed or not.
func (c *call) isCogroup(input uint64) bool {
	switch c.kind(input) {
	case topology.KindCogroupedStream, topology.KindWindowedCogroupedStream, topology.KindSessionWindowedCogroupedStream:
		return true
	}
	return false
}

// cogroupAggregate applies AggregateOp to a cogrouped stream: its
// aggregators came with CogroupOp, so it takes none.
func (c *call) cogroupAggregate(v *pb.AggregateOp) (*topology.Handle, error) {
	if v.AggregatorToken != 0 {
		return nil, c.invalid("handle %d is a %s, whose aggregators cogroup gave; aggregator_token %d has no place here", v.Input, c.kind(v.Input), v.AggregatorToken)
	}
	if v.SubtractorToken != 0 {
		return nil, c.invalid("subtractor_token is for grouped tables, but handle %d is a %s", v.Input, c.kind(v.Input))
	}
	init, err := c.readFn(v.InitializerToken, "initializer")
	if err != nil {
		return nil, err
	}
	var merger *topology.Function
	if v.MergerToken != 0 {
		m, err := c.readFn(v.MergerToken, "merger")
		if err != nil {
			return nil, err
		}
		merger = &m
	}
	return c.b.CogroupAggregate(v.Input, init, merger, materialized(v.Materialized), v.Name)
}
