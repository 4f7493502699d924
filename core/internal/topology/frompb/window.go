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

// suppress applies SuppressOp: untilWindowCloses, or untilTimeLimit when
// it gives a time limit; absent buffer bounds are none.
func (c *call) suppress(v *pb.SuppressOp) (*topology.Handle, error) {
	sup := topology.UntilWindowCloses
	if v.TimeLimitMs != nil {
		if *v.TimeLimitMs < 0 {
			return nil, fmt.Errorf("topology: suppress: untilTimeLimit of %d ms: want at least 0: %w", *v.TimeLimitMs, topology.ErrInvalid)
		}
		sup.TimeLimit = *v.TimeLimitMs
	}
	if bc := v.Buffer; bc != nil {
		if bc.MaxRecords != nil {
			sup.MaxRecords = *bc.MaxRecords
		}
		if bc.MaxBytes != nil {
			sup.MaxBytes = *bc.MaxBytes
		}
		switch bc.WhenFull {
		case pb.BufferFull_BUFFER_FULL_UNSPECIFIED, pb.BufferFull_BUFFER_FULL_EMIT_EARLY:
			sup.ShutDown = false
		case pb.BufferFull_BUFFER_FULL_SHUT_DOWN:
			sup.ShutDown = true
		default:
			return nil, fmt.Errorf("topology: suppress names buffer_full %d, which does not exist (emit_early or shut_down): %w", bc.WhenFull, topology.ErrInvalid)
		}
	}
	return c.b.Suppress(v.Input, v.Name, sup)
}
