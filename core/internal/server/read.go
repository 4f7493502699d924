package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Read answers a processor's store read during a bundle
// (docs/design/processor.md). A bundle is in flight for Read only while a
// processor step's task waits for it; until the engine runs processor steps
// (issue 24, step 3), no bundle is.
func (s *Server) Read(ctx context.Context, req *connect.Request[pb.ReadRequest]) (*connect.Response[pb.ReadResponse], error) {
	m := req.Msg
	if _, err := s.session("Read", m.SessionId); err != nil {
		return nil, err
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("Read: bundle %d is not in flight with a processor step (store %q)", m.BundleId, m.Store))
}
