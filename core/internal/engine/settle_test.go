package engine

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A ListOffsets request that fails as a whole with a retriable error (a
// broker back from a freeze answers LEADER_NOT_AVAILABLE while it elects
// leaders) is asked again; one that fails for good is not.
func TestSettledOffsetsAsksAgainAfterARetriableRequestError(t *testing.T) {
	election := &kadm.ShardErrors{Name: "ListOffsets", AllFailed: true, Errs: []kadm.ShardError{{Err: kerr.LeaderNotAvailable}}}
	calls := 0
	list := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		if calls < 3 {
			return nil, election
		}
		return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 42}}}, nil
	}
	ends, err := settledOffsets(context.Background(), list, "t")
	if err != nil {
		t.Fatalf("settledOffsets after two LEADER_NOT_AVAILABLE answers: %v", err)
	}
	if o, ok := ends.Lookup("t", 0); !ok || o.Offset != 42 || calls != 3 {
		t.Fatalf("got %+v (found %v) after %d calls, want offset 42 after 3", o, ok, calls)
	}

	denied := &kadm.ShardErrors{Name: "ListOffsets", AllFailed: true, Errs: []kadm.ShardError{{Err: kerr.TopicAuthorizationFailed}}}
	calls = 0
	_, err = settledOffsets(context.Background(), func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		return nil, denied
	}, "t")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || calls != 1 {
		t.Fatalf("a non-retriable error: %v after %d calls, want TOPIC_AUTHORIZATION_FAILED at once", err, calls)
	}
}

// A ListOffsets request no broker answered (a broker restarting refuses
// connections) is asked again, as a retriable answer is.
func TestSettledOffsetsAsksAgainWhileNoBrokerAnswers(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	calls := 0
	list := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		if calls < 3 {
			return nil, refused
		}
		return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 7}}}, nil
	}
	ends, err := settledOffsets(context.Background(), list, "t")
	if err != nil {
		t.Fatalf("settledOffsets after two refused connections: %v", err)
	}
	if o, ok := ends.Lookup("t", 0); !ok || o.Offset != 7 || calls != 3 {
		t.Fatalf("got %+v (found %v) after %d calls, want offset 7 after 3", o, ok, calls)
	}
}
