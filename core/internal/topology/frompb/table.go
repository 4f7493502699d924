package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// toTable applies ToTableOp (KStream.toTable).
func (c *call) toTable(v *pb.ToTableOp) (*topology.Handle, error) {
	return c.b.ToTable(v.Input, v.Name, materialized(v.Materialized))
}

// toStream applies ToStreamOp (KTable.toStream).
func (c *call) toStream(v *pb.ToStreamOp) (*topology.Handle, error) {
	return c.b.ToStream(v.Input, v.Name)
}

// transformValues applies TransformValuesOp (KTable.transformValues).
func (c *call) transformValues(v *pb.TransformValuesOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.TableTransformValues(v.Input, f, topology.TransformValuesOptions{
		Stores: v.Stores, Materialized: materialized(v.Materialized), ValueSerde: v.ValueSerde, Name: v.Name,
	})
}
