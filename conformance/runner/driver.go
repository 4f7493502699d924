package main

// Test driver mode (-driver): each case runs in a test driver session
// (polystreams.test.driver=true, docs/design/test-driver.md), as a unit test
// with TopologyTestDriver would: the runner pipes the inputs one record at a
// time, each processed completely before the next, then reads what the
// topology wrote to each expected output topic. The case's expectations mean
// the same as in the broker mode: one matrix, two ways to run it.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// driven is a started execution in test driver mode: the runner pipes and
// reads through it.
type driven interface {
	// Pipe pipes recs in order; failure is the topology's failure on one
	// of them (then the rest are not piped).
	Pipe(ctx context.Context, recs []*kgo.Record) (failure *event, err error)
	// Read returns what the topology wrote to topic since the last Read.
	Read(ctx context.Context, topic string) ([]*kgo.Record, error)
	// AdvanceWallClock moves the wall clock forward by ms milliseconds,
	// running the wall-clock punctuators that become due.
	AdvanceWallClock(ctx context.Context, ms int64) error
}

// sessionDriver drives an SDK executor's session through the engine's
// PipeInput and ReadOutput.
type sessionDriver struct {
	cl      polystreamsv1alpha1connect.EngineServiceClient
	session string
}

func newSessionDriver(engine, session string) *sessionDriver {
	return &sessionDriver{cl: polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, engine), session: session}
}

func (d *sessionDriver) Pipe(ctx context.Context, recs []*kgo.Record) (*event, error) {
	req := &pb.PipeInputRequest{SessionId: d.session}
	for _, r := range recs {
		ts := r.Timestamp.UnixMilli()
		tr := &pb.TestRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, TimestampMs: &ts}
		for _, h := range r.Headers {
			tr.Headers = append(tr.Headers, &pb.TestHeader{Key: h.Key, Value: h.Value})
		}
		req.Records = append(req.Records, tr)
	}
	resp, err := d.cl.PipeInput(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	if resp.Msg.Error == "" {
		return nil, nil
	}
	ev := &event{Event: "failed", Code: "aborted", Message: resp.Msg.Error}
	if f := resp.Msg.FailedRecord; f != nil {
		ev.Topic, ev.Partition, ev.Offset, ev.Node = f.Topic, f.Partition, f.Offset, f.Node
	}
	return ev, nil
}

func (d *sessionDriver) AdvanceWallClock(ctx context.Context, ms int64) error {
	_, err := d.cl.AdvanceWallClock(ctx, connect.NewRequest(&pb.AdvanceWallClockRequest{SessionId: d.session, Millis: ms}))
	return err
}

func (d *sessionDriver) Read(ctx context.Context, topic string) ([]*kgo.Record, error) {
	resp, err := d.cl.ReadOutput(ctx, connect.NewRequest(&pb.ReadOutputRequest{SessionId: d.session, Topic: topic}))
	if err != nil {
		return nil, err
	}
	out := make([]*kgo.Record, len(resp.Msg.Records))
	for i, r := range resp.Msg.Records {
		out[i] = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.GetTimestampMs())}
		for _, h := range r.Headers {
			out[i].Headers = append(out[i].Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	return out, nil
}

// driverOf is the driver of a started execution in test driver mode: the
// Go executor's own, or the session the SDK executor's started event names.
func (e *env) driverOf(x execution, started event) (driven, error) {
	if d, ok := x.(interface{ driver() driven }); ok {
		return d.driver(), nil
	}
	if started.Session == "" {
		return nil, errors.New("the executor's started event names no session (test driver mode needs it)")
	}
	return newSessionDriver(e.engine, started.Session), nil
}

// checkDriven pipes the inputs and checks the outputs and the failure, in
// test driver mode.
func (e *env) checkDriven(ctx context.Context, x execution, started event, c *Case, prefix string, unprefix func(string) string, res *result) {
	d, err := e.driverOf(x, started)
	if err != nil {
		res.add("test driver: %v", err)
		return
	}
	var failed *event
	for i, in := range c.Inputs {
		if ms := in.AdvanceWallClockMs; ms != nil {
			actx, cancel := context.WithTimeout(ctx, outputTimeout)
			err := d.AdvanceWallClock(actx, *ms)
			cancel()
			if err != nil {
				res.add("inputs[%d]: advancing the wall clock by %d ms: %v", i, *ms, err)
				return
			}
			continue
		}
		recs := make([]*kgo.Record, 0, len(in.Records))
		for j, r := range in.Records {
			rec, err := record(prefix+in.Topic, in.Key, in.Value, r)
			if err != nil {
				res.add("input %s[%d]: %v", in.Topic, j, err)
				return
			}
			recs = append(recs, rec)
		}
		pctx, cancel := context.WithTimeout(ctx, outputTimeout)
		failed, err = d.Pipe(pctx, recs)
		cancel()
		if err != nil {
			res.add("piping input %s: %v", in.Topic, err)
			return
		}
		if failed != nil {
			break
		}
	}
	if checkFailure(c, failed, unprefix, res) {
		return
	}
	for _, o := range c.Expect.Outputs {
		got, err := d.Read(ctx, prefix+o.Topic)
		if err != nil {
			res.add("reading output %s: %v", o.Topic, err)
			continue
		}
		compareOutput(&o, got, res)
	}
	if want := c.Expect.Printed; want != nil {
		comparePrinted(want, awaitPrinted(x, len(want)), res)
	}
	if want := c.Expect.DroppedRecords; want != nil {
		got, ok := droppedOnStop(x)
		switch {
		case !ok:
			res.add("dropped records: want %d, got no dropped_records report when the executor stopped", *want)
		case got != *want:
			res.add("dropped records: want %d, got %d", *want, got)
		}
	}
}

// checkFailure compares the topology's failure (nil: none) with the case's;
// it reports true when the run is over (a failure was expected or came).
func checkFailure(c *Case, failed *event, unprefix func(string) string, res *result) bool {
	if f := c.Expect.Failure; f != nil {
		switch {
		case failed == nil:
			res.add("failure: want the topology to fail on %s/%d@%d in node %s, got no failure", f.Topic, f.Partition, f.Offset, f.Node)
		default:
			msg := unprefix(failed.Message)
			gotTopic := unprefix(failed.Topic)
			if failed.Node != f.Node || gotTopic != f.Topic || failed.Partition != f.Partition || failed.Offset != f.Offset {
				res.add("failure: want record %s/%d@%d in node %s, got %s/%d@%d in node %q (%s)", f.Topic, f.Partition, f.Offset, f.Node, gotTopic, failed.Partition, failed.Offset, failed.Node, msg)
			}
			for _, frag := range f.Contains {
				if !strings.Contains(msg, frag) {
					res.add("failure message: want it to contain %q, got %q", frag, msg)
				}
			}
		}
		return true
	}
	if failed != nil {
		res.add("the topology failed: %s: %s", failed.Code, unprefix(failed.Message))
		return true
	}
	return false
}
