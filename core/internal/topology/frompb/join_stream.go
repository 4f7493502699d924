package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// streamStreamJoin builds a JoinOp whose other side is a stream: a
// stream-stream join (windows required, left or outer allowed). It
// returns handled=false for any other JoinOp, refusing windows given for
// a join whose other side is no stream.
func (c *call) streamStreamJoin(v *pb.JoinOp, joiner topology.Function) (h *topology.Handle, handled bool, err error) {
	k, _ := c.b.Kind(v.Table)
	if k != topology.KindStream {
		if v.Windows != nil && k != 0 {
			return nil, true, c.invalid("windows are for stream-stream joins, but handle %d (the other side) is a %s", v.Table, k)
		}
		return nil, false, nil
	}
	if v.Left && v.Outer {
		return nil, true, c.invalid("left and outer are exclusive; give one (neither: an inner join)")
	}
	o := topology.StreamJoinOptions{ValueSerde: v.ValueSerde, Name: v.Name, StoreName: v.StoreName}
	switch {
	case v.Outer:
		o.Kind = topology.JoinOuter
	case v.Left:
		o.Kind = topology.JoinLeft
	}
	if w := v.Windows; w != nil {
		o.Windows = &topology.JoinWindows{Before: w.BeforeMs, After: w.AfterMs, Grace: w.GraceMs}
	}
	h, err = c.b.StreamJoin(v.Input, v.Table, joiner, o)
	return h, true, err
}
