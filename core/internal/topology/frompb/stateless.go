package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// mapValues applies MapValuesOp to a stream or, materialized or not, a
// table; with_key (ValueMapperWithKey) to a stream only.
func (c *call) mapValues(v *pb.MapValuesOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	if c.kind(v.Input) == topology.KindTable {
		if f, err = c.tableFn(f, "mapper"); err != nil {
			return nil, err
		}
		if v.WithKey {
			return nil, c.invalid("with_key (token %d) is for streams, but handle %d is a table", v.Token, v.Input)
		}
		return c.b.TableMapValues(v.Input, f, v.ValueSerde, materialized(v.Materialized), v.Name)
	}
	if err := c.streamOnly(v.Input, v.Materialized); err != nil {
		return nil, err
	}
	if v.WithKey {
		return c.b.MapValuesWithKey(v.Input, f, v.ValueSerde, v.Name)
	}
	return c.b.MapValues(v.Input, f, v.ValueSerde, v.Name)
}

// filter applies FilterOp to a stream or a table.
func (c *call) filter(v *pb.FilterOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	if c.kind(v.Input) == topology.KindTable {
		if f, err = c.tableFn(f, "predicate"); err != nil {
			return nil, err
		}
		return c.b.TableFilter(v.Input, f, materialized(v.Materialized), v.Name)
	}
	if err := c.streamOnly(v.Input, v.Materialized); err != nil {
		return nil, err
	}
	return c.b.Filter(v.Input, f, v.Name)
}

// filterNot applies FilterNotOp to a stream or a table.
func (c *call) filterNot(v *pb.FilterNotOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	if c.kind(v.Input) == topology.KindTable {
		if f, err = c.tableFn(f, "predicate"); err != nil {
			return nil, err
		}
		return c.b.TableFilterNot(v.Input, f, materialized(v.Materialized), v.Name)
	}
	if err := c.streamOnly(v.Input, v.Materialized); err != nil {
		return nil, err
	}
	return c.b.FilterNot(v.Input, f, v.Name)
}

// flatMapValues applies FlatMapValuesOp.
func (c *call) flatMapValues(v *pb.FlatMapValuesOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	if v.WithKey {
		return c.b.FlatMapValuesWithKey(v.Input, f, v.ValueSerde, v.Name)
	}
	return c.b.FlatMapValues(v.Input, f, v.ValueSerde, v.Name)
}

// flatMap applies FlatMapOp (KStream.flatMap).
func (c *call) flatMap(v *pb.FlatMapOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.FlatMap(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
}

// mapKeyValue applies MapOp (KStream.map; map is Go's keyword).
func (c *call) mapKeyValue(v *pb.MapOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.Map(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
}

// selectKey applies SelectKeyOp.
func (c *call) selectKey(v *pb.SelectKeyOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.SelectKey(v.Input, f, v.KeySerde, v.Name)
}

// peek applies PeekOp.
func (c *call) peek(v *pb.PeekOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.Peek(v.Input, f, v.Name)
}

// foreach applies ForeachOp, a terminal operator (no handle).
func (c *call) foreach(v *pb.ForeachOp) error {
	f, err := c.fn(v.Token)
	if err != nil {
		return err
	}
	return c.b.Foreach(v.Input, f, v.Name)
}

// merge applies MergeOp.
func (c *call) merge(v *pb.MergeOp) (*topology.Handle, error) {
	return c.b.Merge(v.Input, v.Other, v.Name)
}

// repartition applies RepartitionOp.
func (c *call) repartition(v *pb.RepartitionOp) (*topology.Handle, error) {
	p, err := c.optFn(v.PartitionerToken)
	if err != nil {
		return nil, err
	}
	return c.b.RepartitionWith(v.Input, v.Name, v.Partitions, p)
}

// optFn resolves an optional function token (0: none).
func (c *call) optFn(token uint32) (*topology.Function, error) {
	if token == 0 {
		return nil, nil
	}
	f, err := c.fn(token)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// to applies ToOp, a sink (no handle).
func (c *call) to(v *pb.ToOp) error {
	var r topology.Routing
	var err error
	if r.Partitioner, err = c.optFn(v.PartitionerToken); err != nil {
		return err
	}
	if r.TopicExtractor, err = c.optFn(v.TopicExtractorToken); err != nil {
		return err
	}
	return c.b.ToRouted(v.Input, v.Topic, v.KeySerde, v.ValueSerde, v.Name, r)
}

// split applies SplitOp: one handle per branch, the default branch last.
func (c *call) split(v *pb.SplitOp) ([]*topology.Handle, error) {
	var branches []topology.Branch
	for _, br := range v.Branches {
		f, err := c.fn(br.PredicateToken)
		if err != nil {
			return nil, err // names the token
		}
		branches = append(branches, topology.Branch{Predicate: f, Name: br.Name})
	}
	return c.b.Split(v.Input, v.Name, branches, v.DefaultBranch, v.DefaultName)
}

// print applies PrintOp (KStream.print), a terminal operator.
func (c *call) print(v *pb.PrintOp) error {
	f, err := c.fn(v.Token)
	if err != nil {
		return err
	}
	return c.b.Print(v.Input, f, v.Name)
}
