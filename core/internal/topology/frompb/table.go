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
