package server

// Test driver sessions (config polystreams.test.driver=true): Kafka Streams'
// TopologyTestDriver over the protocol, on core/internal/testdriver. See
// docs/design/test-driver.md.

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// testSession is the started test driver session id names.
func (s *Server) testSession(method, id string) (*session, error) {
	ss, err := s.session(method, id)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	app, stopped := ss.app, ss.stopped
	ss.mu.Unlock()
	switch {
	case ss.test == nil:
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: session %q is not a test driver session (open it with config %s=true)", method, id, testdriver.ConfigKey))
	case stopped:
		return nil, errStopped(method)
	case app == nil:
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: the topology is not started: call Start first", method))
	}
	return ss, nil
}

// testError gives a test driver's error its Connect code.
func testError(method string, err error) error {
	code := connect.CodeFailedPrecondition
	switch {
	case errors.Is(err, testdriver.ErrUnknownTopic):
		code = connect.CodeInvalidArgument
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = connect.CodeDeadlineExceeded
	}
	return connect.NewError(code, fmt.Errorf("%s: %w", method, err))
}

func (s *Server) PipeInput(ctx context.Context, req *connect.Request[pb.PipeInputRequest]) (*connect.Response[pb.PipeInputResponse], error) {
	m := req.Msg
	ss, err := s.testSession("PipeInput", m.SessionId)
	if err != nil {
		return nil, err
	}
	recs := make([]testdriver.Record, len(m.Records))
	for i, r := range m.Records {
		recs[i] = testdriver.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: r.TimestampMs}
		for _, h := range r.Headers {
			recs[i].Headers = append(recs[i].Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	n, failure, err := ss.test.Pipe(ctx, recs)
	if err != nil {
		// Logged too: a client whose deadline ended the call sees only that.
		s.log.Warn("PipeInput failed", "session", ss.label, "application.id", ss.appID, "error", err)
		return nil, testError("PipeInput", err)
	}
	resp := &pb.PipeInputResponse{Processed: int32(n)}
	if failure != nil {
		resp.Error = failure.Error()
		var re *engine.RecordError
		if errors.As(failure, &re) {
			resp.FailedRecord = &pb.RecordContext{Topic: re.Topic, Partition: re.Partition, Offset: re.Offset, Node: re.Node}
		}
	}
	return connect.NewResponse(resp), nil
}

func (s *Server) ReadOutput(_ context.Context, req *connect.Request[pb.ReadOutputRequest]) (*connect.Response[pb.ReadOutputResponse], error) {
	m := req.Msg
	ss, err := s.testSession("ReadOutput", m.SessionId)
	if err != nil {
		return nil, err
	}
	recs, serdes, err := ss.test.Output(m.Topic)
	if err != nil {
		return nil, testError("ReadOutput", err)
	}
	resp := &pb.ReadOutputResponse{KeySerde: serdes[0], ValueSerde: serdes[1]}
	for _, r := range recs {
		ts := r.Timestamp.UnixMilli()
		tr := &pb.TestRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, TimestampMs: &ts}
		for _, h := range r.Headers {
			tr.Headers = append(tr.Headers, &pb.TestHeader{Key: h.Key, Value: h.Value})
		}
		resp.Records = append(resp.Records, tr)
	}
	return connect.NewResponse(resp), nil
}

func (s *Server) AdvanceWallClock(ctx context.Context, req *connect.Request[pb.AdvanceWallClockRequest]) (*connect.Response[pb.AdvanceWallClockResponse], error) {
	m := req.Msg
	ss, err := s.testSession("AdvanceWallClock", m.SessionId)
	if err != nil {
		return nil, err
	}
	if m.Millis < 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("AdvanceWallClock: millis %d is negative; the wall clock only moves forward", m.Millis))
	}
	clock, err := ss.test.AdvanceWallClock(ctx, m.Millis)
	if err != nil {
		return nil, testError("AdvanceWallClock", err)
	}
	return connect.NewResponse(&pb.AdvanceWallClockResponse{WallClockMs: clock}), nil
}
