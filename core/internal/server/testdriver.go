package server

// Test driver sessions (config polystreams.test.driver=true): Kafka Streams'
// TopologyTestDriver over the protocol. Each session gets its own in-process
// broker (topics of one partition) and state directory, both gone when the
// session ends; PipeInput writes one record at a time and waits until the
// topology is quiescent before the next. See docs/design/test-driver.md.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/runtime"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// testDriverKey is the config key that makes a session a test driver's.
const testDriverKey = "polystreams.test.driver"

// testDriver is a test driver session's broker, state directory and clock.
// Its methods serialize on mu: one piped record is processed completely
// before anything else happens.
type testDriver struct {
	broker *broker.Embedded
	dir    string
	cl     *kgo.Client // writes piped records
	closed sync.Once

	mu sync.Mutex // guards clock; held for each test driver call
	// clock is the virtual wall clock, epoch ms: the timestamp of records
	// piped without one.
	clock int64
}

// isTestDriver reports whether config asks for a test driver session.
func isTestDriver(config map[string]string) bool {
	b, _ := strconv.ParseBool(config[testDriverKey])
	return b
}

// openTestDriver starts a test driver session's broker and state directory
// and returns the configuration the session runs with: bootstrap.servers
// and state.dir are the driver's; processing.guarantee is at_least_once
// (one instance with no failures writes the same either way, and the
// driver's quiescence needs writes visible before a commit); the bundle
// linger is 0 unless set (a test pipes one record at a time).
func openTestDriver(config map[string]string) (*testDriver, map[string]string, error) {
	b, err := broker.Start(broker.Options{Partitions: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("test driver: %w", err)
	}
	dir, err := os.MkdirTemp("", "polystreams-test-driver-")
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("test driver: state directory: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Close()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("test driver: %w", err)
	}
	kv := make(map[string]string, len(config)+4)
	for k, v := range config {
		kv[k] = v
	}
	kv["bootstrap.servers"] = b.Addr()
	kv["state.dir"] = dir
	kv["processing.guarantee"] = runtime.AtLeastOnce
	if _, ok := kv["polystreams.bundle.linger.ms"]; !ok {
		kv["polystreams.bundle.linger.ms"] = "0"
	}
	return &testDriver{broker: b, dir: dir, cl: cl, clock: time.Now().UnixMilli()}, kv, nil
}

// close ends the broker and removes the state; a session may be closed
// more than once (Stop, then expiry).
func (td *testDriver) close() {
	td.closed.Do(func() {
		td.cl.Close()
		td.broker.Close()
		os.RemoveAll(td.dir)
	})
}

// createSources creates the topology's source topics, one partition each
// (TopologyTestDriver runs every task as partition 0).
func (td *testDriver) createSources(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	adm := kadm.NewClient(td.cl)
	resp, err := adm.CreateTopics(ctx, 1, 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("test driver: creating source topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("test driver: creating source topic %q: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// testSession is the started test driver session id names.
func (s *Server) testSession(method, id string) (*session, *runtime.App, error) {
	ss, err := s.session(method, id)
	if err != nil {
		return nil, nil, err
	}
	ss.mu.Lock()
	app, stopped := ss.app, ss.stopped
	ss.mu.Unlock()
	switch {
	case ss.test == nil:
		return nil, nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: session %q is not a test driver session (open it with config %s=true)", method, id, testDriverKey))
	case stopped:
		return nil, nil, errStopped(method)
	case app == nil:
		return nil, nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: the topology is not started: call Start first", method))
	}
	return ss, app, nil
}

func (s *Server) PipeInput(ctx context.Context, req *connect.Request[pb.PipeInputRequest]) (*connect.Response[pb.PipeInputResponse], error) {
	m := req.Msg
	ss, app, err := s.testSession("PipeInput", m.SessionId)
	if err != nil {
		return nil, err
	}
	sources := app.SourceTopics()
	for i, r := range m.Records {
		if !slices.Contains(sources, r.Topic) {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("PipeInput: record %d: topic %q is not read by the topology (it reads %s)", i, r.Topic, listOf(sources)))
		}
	}
	td := ss.test
	td.mu.Lock()
	defer td.mu.Unlock()
	resp := &pb.PipeInputResponse{}
	for _, r := range m.Records {
		ts := td.clock
		if r.TimestampMs != nil {
			ts = *r.TimestampMs
		}
		rec := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(ts)}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if err := td.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("PipeInput: writing to %q: %w", r.Topic, err))
		}
		if err := app.Quiesce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf("PipeInput: %w", err))
			}
			resp.Error = err.Error()
			var re *runtime.RecordError
			if errors.As(err, &re) {
				resp.FailedRecord = &pb.RecordContext{Topic: re.Topic, Partition: re.Partition, Offset: re.Offset, Node: re.Node}
			}
			return connect.NewResponse(resp), nil
		}
		resp.Processed++
	}
	return connect.NewResponse(resp), nil
}

func (s *Server) ReadOutput(_ context.Context, req *connect.Request[pb.ReadOutputRequest]) (*connect.Response[pb.ReadOutputResponse], error) {
	m := req.Msg
	ss, app, err := s.testSession("ReadOutput", m.SessionId)
	if err != nil {
		return nil, err
	}
	sinks := app.SinkTopics()
	serdes, ok := sinks[m.Topic]
	if !ok {
		names := make([]string, 0, len(sinks))
		for t := range sinks {
			names = append(names, t)
		}
		slices.Sort(names)
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("ReadOutput: topic %q is not written by the topology (it writes %s)", m.Topic, listOf(names)))
	}
	ss.test.mu.Lock()
	defer ss.test.mu.Unlock()
	resp := &pb.ReadOutputResponse{KeySerde: serdes[0], ValueSerde: serdes[1]}
	for _, r := range app.TakeOutput(m.Topic) {
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
	ss, app, err := s.testSession("AdvanceWallClock", m.SessionId)
	if err != nil {
		return nil, err
	}
	if m.Millis < 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("AdvanceWallClock: millis %d is negative; the wall clock only moves forward", m.Millis))
	}
	td := ss.test
	td.mu.Lock()
	defer td.mu.Unlock()
	td.clock += m.Millis
	// As advanceWallClockTime: wall-clock punctuation (none exists in
	// polystreams yet), then a commit.
	if err := app.Quiesce(ctx); err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("AdvanceWallClock: %w", err))
	}
	return connect.NewResponse(&pb.AdvanceWallClockResponse{WallClockMs: td.clock}), nil
}

// listOf names topics for an error: "a, b" or "no topic".
func listOf(topics []string) string {
	if len(topics) == 0 {
		return "no topic"
	}
	q := make([]string, len(topics))
	for i, t := range topics {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, ", ")
}
