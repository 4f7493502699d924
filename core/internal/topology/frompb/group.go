package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// groupByKey applies GroupByKeyOp.
func (c *call) groupByKey(v *pb.GroupByKeyOp) (*topology.Handle, error) {
	return c.b.GroupByKey(v.Input, v.KeySerde, v.ValueSerde, v.Name)
}

// groupBy applies GroupByOp to a stream or a table.
func (c *call) groupBy(v *pb.GroupByOp) (*topology.Handle, error) {
	f, err := c.readFn(v.Token, "key selector")
	if err != nil {
		return nil, err
	}
	if c.kind(v.Input) == topology.KindTable {
		return c.b.TableGroupBy(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
	}
	return c.b.GroupBy(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
}

// count applies CountOp to a grouped stream (windowed or not) or a grouped
// table.
func (c *call) count(v *pb.CountOp) (*topology.Handle, error) {
	if c.kind(v.Input) == topology.KindGroupedTable {
		return c.b.TableCount(v.Input, materialized(v.Materialized), v.Name)
	}
	return c.b.Count(v.Input, materialized(v.Materialized), v.Name)
}

// builtinReducers are ReduceOp.builtin's names in the builder.
var builtinReducers = map[pb.Reducer]string{
	pb.Reducer_REDUCER_SUM:    topology.BuiltinSum,
	pb.Reducer_REDUCER_MIN:    topology.BuiltinMin,
	pb.Reducer_REDUCER_MAX:    topology.BuiltinMax,
	pb.Reducer_REDUCER_LATEST: topology.BuiltinLatest,
}

// reduce applies ReduceOp: a host reducer (token) or a built-in one, and on
// a grouped table the subtractor.
func (c *call) reduce(v *pb.ReduceOp) (*topology.Handle, error) {
	var f topology.Function
	switch {
	case v.Token != 0 && v.Builtin != pb.Reducer_REDUCER_UNSPECIFIED:
		return nil, c.invalid("names both token %d and built-in %v; give one", v.Token, v.Builtin)
	case v.Builtin != pb.Reducer_REDUCER_UNSPECIFIED:
		name, ok := builtinReducers[v.Builtin]
		if !ok {
			return nil, c.invalid("built-in reducer %d is not known", v.Builtin)
		}
		f = topology.Function{Builtin: name, Name: name}
	default:
		var err error
		if f, err = c.readFn(v.Token, "reducer"); err != nil {
			return nil, err
		}
	}
	sub, err := c.subtractor(v.Input, v.SubtractorToken)
	if err != nil {
		return nil, err
	}
	if c.kind(v.Input) == topology.KindGroupedTable {
		return c.b.TableReduce(v.Input, f, sub, materialized(v.Materialized), v.Name)
	}
	return c.b.Reduce(v.Input, f, materialized(v.Materialized), v.Name)
}

// aggregate applies AggregateOp: on a grouped table with its subtractor, on
// session windows with its merger, else on a grouped (windowed) stream.
func (c *call) aggregate(v *pb.AggregateOp) (*topology.Handle, error) {
	if c.isCogroup(v.Input) {
		return c.cogroupAggregate(v)
	}
	init, err := c.readFn(v.InitializerToken, "initializer")
	if err != nil {
		return nil, err
	}
	agg, err := c.readFn(v.AggregatorToken, "aggregator")
	if err != nil {
		return nil, err
	}
	sub, err := c.subtractor(v.Input, v.SubtractorToken)
	if err != nil {
		return nil, err
	}
	switch {
	case c.kind(v.Input) == topology.KindGroupedTable:
		return c.b.TableAggregate(v.Input, init, agg, sub, materialized(v.Materialized), v.Name)
	case v.MergerToken != 0:
		merger, err := c.readFn(v.MergerToken, "merger")
		if err != nil {
			return nil, err
		}
		return c.b.AggregateSessions(v.Input, init, agg, merger, materialized(v.Materialized), v.Name)
	}
	return c.b.Aggregate(v.Input, init, agg, materialized(v.Materialized), v.Name)
}
