package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Finding 5 (issue 21): names over Kafka's limits are refused by the
// engine, naming the limit, not later by the broker with franz-go's
// message. An application.id Kafka's rules refuse fails OpenSession; one
// they allow, whose internal topics (<application.id>-<store>-changelog)
// would pass Kafka's 249 characters, fails Start before any broker is
// asked.
func TestNamesOverKafkasLimitsAreRefusedByTheEngine(t *testing.T) {
	noWait := time.Duration(0)
	_, cl, _ := brokerless(t, server.Options{BrokerWait: &noWait})
	ctx := context.Background()
	for id, want := range map[string]string{
		"":          "application.id is empty",
		".":         "application.id may not be '.' or '..'",
		"..":        "application.id may not be '.' or '..'",
		"a/b":       "application.id has byte 0x2f at offset 1",
		"caf\u00e9": "application.id has byte 0xc3 at offset 3",
	} {
		_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: id}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("application.id %q: %v, want invalid_argument saying %q", id, err, want)
		}
	}

	start := func(appID string) error {
		t.Helper()
		id := openSession(t, cl, appID)
		for _, op := range []*pb.BuildRequest{
			{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}},
			{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: 1}}},
			{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 2}}},
		} {
			op.SessionId = id
			if _, err := cl.Build(ctx, connect.NewRequest(op)); err != nil {
				t.Fatalf("Build: %v", err)
			}
		}
		_, err := cl.Start(ctx, connect.NewRequest(&pb.StartRequest{SessionId: id}))
		return err
	}
	// 240 characters: allowed, but its count's changelog topic
	// (<id>-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog) is not.
	err := start(strings.Repeat("a", 240))
	want := "internal topic " + strings.Repeat("a", 240) + "-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog is 291 characters; Kafka allows at most 249"
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), want) {
		t.Errorf("Start with a 240-character application.id: %v, want failed_precondition saying %q", err, want)
	}
	// 190: its topics fit; Start gets as far as the (absent) broker.
	if err := start(strings.Repeat("b", 190)); err == nil || strings.Contains(err.Error(), "internal topic") {
		t.Errorf("Start with a 190-character application.id: %v, want the broker's absence", err)
	}
}
