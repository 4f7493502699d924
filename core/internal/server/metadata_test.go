package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// TestRegisterFunctionMetadata: a function asking for record metadata is
// refused, naming it, by a session whose host did not advertise host
// feature "metadata", and so is a metadata level the protocol does not
// have; the session stays usable.
func TestRegisterFunctionMetadata(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{})
	ctx := context.Background()
	register := func(session string, md pb.Metadata) error {
		_, err := cl.RegisterFunction(ctx, connect.NewRequest(&pb.RegisterFunctionRequest{SessionId: session, Name: "tag", Metadata: md}))
		return err
	}
	plain := openSession(t, cl, "meta-plain")
	if err := register(plain, pb.Metadata_METADATA_WRITE); connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "RegisterFunction(tag)") || !strings.Contains(err.Error(), `"metadata"`) {
		t.Errorf("METADATA_WRITE without host feature metadata: %v", err)
	}
	if err := register(plain, pb.Metadata_METADATA_UNSPECIFIED); err != nil {
		t.Errorf("the session stays usable: %v", err)
	}
	resp, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "meta", HostFeatures: []string{"metadata"}}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.SessionId
	for _, md := range []pb.Metadata{pb.Metadata_METADATA_READ, pb.Metadata_METADATA_WRITE} {
		if err := register(id, md); err != nil {
			t.Errorf("%s: %v", md, err)
		}
	}
	var ce *connect.Error
	if err := register(id, pb.Metadata(7)); !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "metadata 7") {
		t.Errorf("metadata 7: %v", err)
	}
}
