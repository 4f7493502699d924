package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A fuzz input is a script of protocol calls on one engine: each call is a
// method byte, a uvarint length and that many bytes of the method's request
// message. The session id of every request is the script's current session
// (OpenSession replaces it), so builder calls reach a live builder; a
// method byte with its high bit set keeps the request's own session id.
const (
	callBuild byte = iota
	callDescribe
	callGetState
	callRegister
	callQuery
	callGetMetrics
	callExchange
	callOpenSession
	callStop
	numCalls
)

// maxCalls bounds one script, so that an input cannot run for long.
const maxCalls = 48

func fuzzScript(t testing.TB, calls ...any) []byte {
	var out []byte
	for i := 0; i < len(calls); i += 2 {
		b, err := proto.Marshal(calls[i+1].(proto.Message))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, calls[i].(byte))
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

func fuzzBuild(op any) *pb.BuildRequest {
	r := &pb.BuildRequest{}
	switch o := op.(type) {
	case *pb.StreamOp:
		r.Operation = &pb.BuildRequest_Stream{Stream: o}
	case *pb.TableOp:
		r.Operation = &pb.BuildRequest_Table{Table: o}
	case *pb.MapValuesOp:
		r.Operation = &pb.BuildRequest_MapValues{MapValues: o}
	case *pb.FlatMapValuesOp:
		r.Operation = &pb.BuildRequest_FlatMapValues{FlatMapValues: o}
	case *pb.FilterOp:
		r.Operation = &pb.BuildRequest_Filter{Filter: o}
	case *pb.GroupByOp:
		r.Operation = &pb.BuildRequest_GroupBy{GroupBy: o}
	case *pb.GroupByKeyOp:
		r.Operation = &pb.BuildRequest_GroupByKey{GroupByKey: o}
	case *pb.CountOp:
		r.Operation = &pb.BuildRequest_Count{Count: o}
	case *pb.ReduceOp:
		r.Operation = &pb.BuildRequest_Reduce{Reduce: o}
	case *pb.AggregateOp:
		r.Operation = &pb.BuildRequest_Aggregate{Aggregate: o}
	case *pb.WindowedByOp:
		r.Operation = &pb.BuildRequest_WindowedBy{WindowedBy: o}
	case *pb.SuppressOp:
		r.Operation = &pb.BuildRequest_Suppress{Suppress: o}
	case *pb.ToStreamOp:
		r.Operation = &pb.BuildRequest_ToStream{ToStream: o}
	case *pb.ToOp:
		r.Operation = &pb.BuildRequest_To{To: o}
	}
	return r
}

// FuzzProtocol runs scripts of builder calls, describes, state and metrics
// polls, queries and exchanges against an engine in-process: every call
// answers or fails with a Connect error of a client's code
// (InvalidArgument, NotFound, FailedPrecondition), never panics, never an
// internal error.
func FuzzProtocol(f *testing.F) {
	open := &pb.OpenSessionRequest{ApplicationId: "fuzz"}
	reg := &pb.RegisterFunctionRequest{Name: "fn"}
	f.Add(fuzzScript(f, callOpenSession, open, callRegister, reg, callRegister, reg,
		callBuild, fuzzBuild(&pb.StreamOp{Topics: []string{"lines"}, ValueSerde: "string"}),
		callBuild, fuzzBuild(&pb.FlatMapValuesOp{Input: 1, Token: 1}),
		callBuild, fuzzBuild(&pb.GroupByOp{Input: 2, Token: 2, KeySerde: "string"}),
		callBuild, fuzzBuild(&pb.CountOp{Input: 3}),
		callBuild, fuzzBuild(&pb.ToStreamOp{Input: 4}),
		callBuild, fuzzBuild(&pb.ToOp{Input: 5, Topic: "counts"}),
		callDescribe, &pb.DescribeRequest{Format: "svg"}, callDescribe, &pb.DescribeRequest{Format: "mermaid"},
		callGetState, &pb.GetStateRequest{}, callGetMetrics, &pb.GetMetricsRequest{}))
	f.Add(fuzzScript(f, callOpenSession, open, callRegister, reg,
		callBuild, fuzzBuild(&pb.StreamOp{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "long"}),
		callBuild, fuzzBuild(&pb.GroupByKeyOp{Input: 1}),
		callBuild, fuzzBuild(&pb.WindowedByOp{Input: 2, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000, AdvanceMs: 500, GraceMs: 10}}}),
		callBuild, fuzzBuild(&pb.ReduceOp{Input: 3, Token: 1}),
		callBuild, fuzzBuild(&pb.SuppressOp{Input: 4}),
		callBuild, fuzzBuild(&pb.ToStreamOp{Input: 5}),
		callBuild, fuzzBuild(&pb.ToOp{Input: 6, Topic: "out"}),
		callDescribe, &pb.DescribeRequest{Format: "json"},
		callQuery, &pb.QueryRequest{Store: "KSTREAM-REDUCE-STATE-STORE-0000000001"},
		callExchange, &pb.ExchangeRequest{WorkerId: strings.Repeat("w", 300)},
		callExchange, &pb.ExchangeRequest{WorkerId: "w", MaxBundles: 4, WaitMs: 100,
			Results: []*pb.BundleResult{{BundleId: 1, OutputCounts: []int32{1}, ValueLengths: []int32{3}, Values: []byte("abc")}}},
		callStop, &pb.StopRequest{}, callBuild, fuzzBuild(&pb.StreamOp{Topics: []string{"late"}})))
	f.Add(fuzzScript(f, callOpenSession, open,
		callBuild, fuzzBuild(&pb.TableOp{Topic: "t", KeySerde: "windowed(windowed(windowed(windowed(windowed(string,5),5),5),5),5)"}),
		callBuild, fuzzBuild(&pb.MapValuesOp{Input: 9, Token: 77}),
		callBuild, &pb.BuildRequest{},
		callOpenSession, &pb.OpenSessionRequest{ApplicationId: "x", Config: map[string]string{"commit.interval.ms": "-5", "sasl.password": "p"}}))
	dir := f.TempDir() // no session starts, so nothing is written here
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(Options{Brokers: "127.0.0.1:1", StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		defer s.Close(context.Background())
		ctx := context.Background()
		session := ""
		// No call waits: the session never starts, so Exchange has no
		// bundles to wait for. A script running long is a hang.
		began := time.Now()
		defer func() {
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("the script took %v", d)
			}
		}()
		for n := 0; len(data) > 0 && n < maxCalls; n++ {
			method := data[0]
			size, k := binary.Uvarint(data[1:])
			if k <= 0 || size > uint64(len(data)-1-k) {
				return
			}
			msg := data[1+k : 1+k+int(size)]
			data = data[1+k+int(size):]
			own := method&0x80 != 0
			sid := func(id *string) {
				if !own {
					*id = session
				}
			}
			var err error
			switch method & 0x7f % numCalls {
			case callBuild:
				var r pb.BuildRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.Build(ctx, connect.NewRequest(&r))
			case callDescribe:
				var r pb.DescribeRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.Describe(ctx, connect.NewRequest(&r))
			case callGetState:
				var r pb.GetStateRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.GetState(ctx, connect.NewRequest(&r))
			case callRegister:
				var r pb.RegisterFunctionRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.RegisterFunction(ctx, connect.NewRequest(&r))
			case callQuery:
				var r pb.QueryRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.Query(ctx, connect.NewRequest(&r))
			case callGetMetrics:
				var r pb.GetMetricsRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.GetMetrics(ctx, connect.NewRequest(&r))
			case callExchange:
				var r pb.ExchangeRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.Exchange(ctx, connect.NewRequest(&r))
			case callOpenSession:
				var r pb.OpenSessionRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				if r.Config != nil {
					delete(r.Config, "state.dir") // the engine's own directory, not one a script names
				}
				var resp *connect.Response[pb.OpenSessionResponse]
				if resp, err = s.OpenSession(ctx, connect.NewRequest(&r)); err == nil {
					session = resp.Msg.SessionId
				}
			case callStop:
				var r pb.StopRequest
				if proto.Unmarshal(msg, &r) != nil {
					continue
				}
				sid(&r.SessionId)
				_, err = s.Stop(ctx, connect.NewRequest(&r))
			}
			if err == nil {
				continue
			}
			if testing.Verbose() {
				t.Logf("call %d: %v", n, err)
			}
			var ce *connect.Error
			if !errors.As(err, &ce) {
				t.Fatalf("call %d (method %d): an error without a Connect code: %v", n, method&0x7f%numCalls, err)
			}
			switch ce.Code() {
			case connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeFailedPrecondition:
			default:
				t.Fatalf("call %d (method %d): %v", n, method&0x7f%numCalls, err)
			}
			if ce.Message() == "" {
				t.Fatalf("call %d: an error without a message", n)
			}
		}
	})
}
