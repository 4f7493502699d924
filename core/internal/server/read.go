package server

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/engine"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Read answers a processor's store read during a bundle
// (docs/design/processor.md): the dispatcher routes it to the task waiting
// for the bundle, which answers on its own goroutine from the store as of
// the bundle's start. A bundle no longer in flight is NotFound; a store the
// bundle's step did not declare, or a query not served, InvalidArgument.
func (s *Server) Read(ctx context.Context, req *connect.Request[pb.ReadRequest]) (*connect.Response[pb.ReadResponse], error) {
	m := req.Msg
	ss, err := s.session("Read", m.SessionId)
	if err != nil {
		return nil, err
	}
	resp, err := ss.dispatch.read(ctx, m)
	switch {
	case errors.Is(err, engine.ErrBundleNotInFlight):
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("Read: %w", err))
	case errors.Is(err, engine.ErrReadRefused):
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Read: %w", err))
	case err != nil:
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("Read: bundle %d, store %q: %w", m.BundleId, m.Store, err))
	}
	return connect.NewResponse(resp), nil
}
