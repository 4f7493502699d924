package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// join applies JoinOp, whose fields pick the join: a foreign key
// (join_fk.go), a global table or a key mapper (global.go), else a join on
// the key of streams and tables (join_table.go, join_stream.go).
func (c *call) join(v *pb.JoinOp) (*topology.Handle, error) {
	switch {
	case v.ForeignKeyToken != 0:
		return c.foreignKeyJoin(v)
	case c.isGlobalJoin(v):
		return c.globalJoin(v)
	}
	f, err := c.joiner(v)
	if err != nil {
		return nil, err
	}
	return c.keyJoin(v, f)
}
