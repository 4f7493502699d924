package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// openTestDriver opens a test driver session (polystreams.test.driver=true)
// on e's engine; the session brings its own broker.
func (e *env) openTestDriver(appID string, config map[string]string) (*testHost, map[string]string) {
	e.t.Helper()
	kv := map[string]string{"polystreams.test.driver": "true"}
	for k, v := range config {
		kv[k] = v
	}
	resp, err := e.cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: appID, Config: kv}))
	if err != nil {
		e.t.Fatalf("OpenSession: %v", err)
	}
	return &testHost{t: e.t, cl: e.cl, session: resp.Msg.SessionId, funcs: map[uint32]any{}}, resp.Msg.Config
}

func (h *testHost) pipe(topic, key, value string, ts int64) *pb.PipeInputResponse {
	h.t.Helper()
	resp, err := h.cl.PipeInput(context.Background(), connect.NewRequest(&pb.PipeInputRequest{SessionId: h.session,
		Records: []*pb.TestRecord{{Topic: topic, Key: []byte(key), Value: []byte(value), TimestampMs: &ts}}}))
	if err != nil {
		h.t.Fatalf("PipeInput(%s): %v", topic, err)
	}
	return resp.Msg
}

// readCounts reads topic's records as "key=count" (counts are 8-byte longs).
func (h *testHost) readCounts(topic string) []string {
	h.t.Helper()
	resp, err := h.cl.ReadOutput(context.Background(), connect.NewRequest(&pb.ReadOutputRequest{SessionId: h.session, Topic: topic}))
	if err != nil {
		h.t.Fatalf("ReadOutput(%s): %v", topic, err)
	}
	var out []string
	for _, r := range resp.Msg.Records {
		out = append(out, string(r.Key)+"="+strconv.FormatUint(binary.BigEndian.Uint64(r.Value), 10))
	}
	return out
}

// With the record cache off, each piped line's word counts come out before
// the next line is piped, through the group_by's repartition topic, one
// update per word occurrence in order (TopologyTestDriver processes each
// piped record completely, repartitions included, before returning).
// With the cache on, the driver commits after each piped record
// (TopologyTestDriver.pipeRecord ends with a commit of every task), so each
// line yields the latest count of each of its words, once.
func TestTestDriverProcessesEachRecordCompletely(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		cache string
		want  [][]string
	}{
		{"0", [][]string{{"a=1", "b=1", "a=2"}, {"b=2"}}},
		{"10485760", [][]string{{"b=1", "a=2"}, {"b=2"}}},
	} {
		t.Run("cache="+tc.cache, func(t *testing.T) {
			start := time.Now()
			h, cfg := e.openTestDriver("td-wordcount-"+tc.cache, map[string]string{"statestore.cache.max.bytes": tc.cache})
			split := h.register("split", flatFn(func(v []byte) ([][]byte, error) { return bytes.Fields(v), nil }))
			word := h.register("word", keyFn(func(_, v []byte) ([]byte, error) { return v, nil }))
			s := h.mustBuild(&pb.StreamOp{Topics: []string{"lines"}, ValueSerde: "string"})
			w := h.mustBuild(&pb.FlatMapValuesOp{Input: s.Id, Token: split})
			g := h.mustBuild(&pb.GroupByOp{Input: w.Id, Token: word, KeySerde: "string"})
			c := h.mustBuild(&pb.CountOp{Input: g.Id, Materialized: &pb.Materialized{StoreName: "counts"}})
			ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
			h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "word-counts"})
			h.start()
			done := h.serveAsync()
			if _, err := h.cl.AdvanceWallClock(context.Background(), connect.NewRequest(&pb.AdvanceWallClockRequest{SessionId: h.session})); err != nil {
				t.Fatal(err)
			}
			ready := time.Since(start)
			h.pipe("lines", "", "a b a", 1000)
			got := h.readCounts("word-counts")
			if tc.cache == "0" {
				if strings.Join(got, " ") != strings.Join(tc.want[0], " ") {
					t.Fatalf("after line 1: got %v, want %v", got, tc.want[0])
				}
			} else if len(got) != 2 || !containsAll(got, tc.want[0]) {
				t.Fatalf("after line 1: got %v, want %v in some order, each once", got, tc.want[0])
			}
			piped := time.Now()
			h.pipe("lines", "", "b", 2000)
			perRecord := time.Since(piped)
			if got := h.readCounts("word-counts"); strings.Join(got, " ") != strings.Join(tc.want[1], " ") {
				t.Fatalf("after line 2: got %v, want %v", got, tc.want[1])
			}
			if got := h.readCounts("word-counts"); len(got) != 0 {
				t.Fatalf("a second read: got %v, want nothing (read_output returns what was written since the last read)", got)
			}
			q, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "counts", Query: &pb.QueryRequest_Get{Get: []byte("a")}}))
			if err != nil || binary.BigEndian.Uint64(q.Msg.Values) != 2 {
				t.Fatalf("counts[a]: %v %v, want 2", q, err)
			}
			t.Logf("ready after %v; a piped line processed in %v", ready, perRecord)
			h.stopServing(done)
			if _, err := os.Stat(cfg["state.dir"]); !os.IsNotExist(err) {
				t.Fatalf("state.dir %s outlives the session: %v", cfg["state.dir"], err)
			}
		})
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}

// Piping to a topic the topology does not read (TopologyTestDriver throws
// IllegalArgumentException "Unknown topic"), reading a topic it does not
// write and querying an unknown store fail naming the topic or store, and
// leave the session usable; a session that is not a test driver's refuses
// PipeInput.
func TestTestDriverNamesBadInput(t *testing.T) {
	e := newEnv(t, "in")
	h, _ := e.openTestDriver("td-bad", nil)
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}, ValueSerde: "string"})
	h.mustBuild(&pb.ToOp{Input: s.Id, Topic: "out"})
	h.start()
	done := h.serveAsync()
	ctx := context.Background()
	_, err := h.cl.PipeInput(ctx, connect.NewRequest(&pb.PipeInputRequest{SessionId: h.session, Records: []*pb.TestRecord{{Topic: "nope", Value: []byte("x")}}}))
	wantErr(t, err, connect.CodeInvalidArgument, `topic "nope" is not read by the topology (it reads "in")`)
	_, err = h.cl.ReadOutput(ctx, connect.NewRequest(&pb.ReadOutputRequest{SessionId: h.session, Topic: "in"}))
	wantErr(t, err, connect.CodeInvalidArgument, `topic "in" is not written by the topology (it writes "out")`)
	_, err = h.cl.Query(ctx, connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "missing", Query: &pb.QueryRequest_All{All: true}}))
	wantErr(t, err, connect.CodeNotFound, `store "missing" does not exist`)
	_, err = h.cl.AdvanceWallClock(ctx, connect.NewRequest(&pb.AdvanceWallClockRequest{SessionId: h.session, Millis: -1}))
	wantErr(t, err, connect.CodeInvalidArgument, "millis -1 is negative")
	// The session still works; a record without a timestamp takes the wall clock's.
	clock, err := h.cl.AdvanceWallClock(ctx, connect.NewRequest(&pb.AdvanceWallClockRequest{SessionId: h.session, Millis: 5000}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.cl.PipeInput(ctx, connect.NewRequest(&pb.PipeInputRequest{SessionId: h.session, Records: []*pb.TestRecord{{Topic: "in", Value: []byte("x"),
		Headers: []*pb.TestHeader{{Key: "h", Value: []byte("v")}}}}})); err != nil {
		t.Fatal(err)
	}
	out, err := h.cl.ReadOutput(ctx, connect.NewRequest(&pb.ReadOutputRequest{SessionId: h.session, Topic: "out"}))
	if err != nil {
		t.Fatal(err)
	}
	if rs := out.Msg.Records; len(rs) != 1 || string(rs[0].Value) != "x" || rs[0].Key != nil || rs[0].GetTimestampMs() != clock.Msg.WallClockMs ||
		len(rs[0].Headers) != 1 || rs[0].Headers[0].Key != "h" || string(rs[0].Headers[0].Value) != "v" {
		t.Fatalf("out: %v, want one record x, null key, headers h=v, at the wall clock %d", rs, clock.Msg.WallClockMs)
	}
	if out.Msg.ValueSerde != "string" {
		t.Fatalf("out's value serde %q, want string", out.Msg.ValueSerde)
	}
	h.stopServing(done)

	plain := e.open("td-plain", nil)
	_, err = plain.cl.PipeInput(ctx, connect.NewRequest(&pb.PipeInputRequest{SessionId: plain.session}))
	wantErr(t, err, connect.CodeFailedPrecondition, "is not a test driver session")
}

// A record whose function raises fails the session, and PipeInput says so
// naming the record and node rather than hanging.
func TestTestDriverReportsAFailedRecord(t *testing.T) {
	e := newEnv(t)
	h, _ := e.openTestDriver("td-fail", nil)
	boom := h.register("boom", valueFn(func(v []byte) ([]byte, error) {
		if string(v) == "bad" {
			return nil, errors.New("ValueError: bad value")
		}
		return v, nil
	}))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}, ValueSerde: "string"})
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: boom})
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "out"})
	h.start()
	done := h.serveAsync()
	if r := h.pipe("in", "k", "ok", 1); r.Error != "" || r.Processed != 1 {
		t.Fatalf("ok: %v", r)
	}
	r := h.pipe("in", "k", "bad", 2)
	if !strings.Contains(r.Error, "ValueError: bad value") || r.FailedRecord.GetTopic() != "in" || r.FailedRecord.GetOffset() != 1 || r.Processed != 0 {
		t.Fatalf("bad: %v; want the error naming in@1", r)
	}
	<-done
}

func wantErr(t *testing.T, err error, code connect.Code, text string) {
	t.Helper()
	if connect.CodeOf(err) != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %v containing %q", err, code, text)
	}
}
