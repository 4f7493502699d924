package frompb

import (
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// windowedBy applies WindowedByOp: time (tumbling or hopping), sliding or
// session windows.
func (c *call) windowedBy(v *pb.WindowedByOp) (*topology.Handle, error) {
	var w topology.Windows
	switch ws := v.Windows.(type) {
	case *pb.WindowedByOp_Time:
		w = topology.Windows{Kind: topology.TimeWindows, Size: ws.Time.SizeMs, Advance: ws.Time.AdvanceMs, Grace: ws.Time.GraceMs}
	case *pb.WindowedByOp_Sliding:
		w = topology.Windows{Kind: topology.SlidingWindows, Size: ws.Sliding.TimeDifferenceMs, Grace: ws.Sliding.GraceMs}
	case *pb.WindowedByOp_Session:
		w = topology.Windows{Kind: topology.SessionWindows, Size: ws.Session.InactivityGapMs, Grace: ws.Session.GraceMs}
	}
	return c.b.WindowedBy(v.Input, w)
}

// emitStrategy applies EmitStrategyOp (unspecified: on window update).
func (c *call) emitStrategy(v *pb.EmitStrategyOp) (*topology.Handle, error) {
	switch v.Strategy {
	case pb.EmitStrategy_EMIT_STRATEGY_UNSPECIFIED, pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_UPDATE:
		return c.b.EmitStrategy(v.Input, false)
	case pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_CLOSE:
		return c.b.EmitStrategy(v.Input, true)
	}
	return nil, fmt.Errorf("topology: emit_strategy names strategy %d, which does not exist (on_window_update or on_window_close): %w", v.Strategy, topology.ErrInvalid)
}

// suppress applies SuppressOp (suppress(untilWindowCloses)).
func (c *call) suppress(v *pb.SuppressOp) (*topology.Handle, error) {
	return c.b.Suppress(v.Input, v.Name)
}
