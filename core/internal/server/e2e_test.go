package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// env is an embedded broker plus an engine serving on a real loopback port.
type env struct {
	t        *testing.T
	broker   testBroker
	srv      *server.Server
	http     *httptest.Server
	cl       polystreamsv1alpha1connect.EngineServiceClient
	stateDir string
}

func newEnv(t *testing.T, topics ...string) *env {
	t.Helper()
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	e.startEngine()
	t.Cleanup(func() {
		e.stopEngine()
		b.Close()
	})
	return e
}

func (e *env) startEngine() {
	e.srv = server.New(server.Options{Brokers: e.broker.Addr(), StateDir: e.stateDir})
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	e.http = httptest.NewServer(mux)
	e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, e.http.URL)
}

func (e *env) stopEngine() {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.srv.Close(ctx)
	e.http.Close()
	e.srv = nil
}

// open opens a session. Unless config sets statestore.cache.max.bytes, the
// record cache is off (0): most tests pin every update, as Kafka Streams
// emits them without a cache; cache_test.go tests the cache.
func (e *env) open(appID string, config map[string]string) *testHost {
	e.t.Helper()
	return e.openWith(appID, config)
}

// openWith is open for a host with the given host features.
func (e *env) openWith(appID string, config map[string]string, features ...string) *testHost {
	e.t.Helper()
	if _, ok := config["statestore.cache.max.bytes"]; !ok {
		config = maps.Clone(config)
		if config == nil {
			config = map[string]string{}
		}
		config["statestore.cache.max.bytes"] = "0"
	}
	resp, err := e.cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: appID, Config: config, HostFeatures: features}))
	if err != nil {
		e.t.Fatalf("OpenSession: %v", err)
	}
	return &testHost{t: e.t, cl: e.cl, session: resp.Msg.SessionId, funcs: map[uint32]any{}}
}

func (h *testHost) build(op any) (*pb.Handle, error) {
	req := &pb.BuildRequest{SessionId: h.session}
	switch o := op.(type) {
	case *pb.StreamOp:
		req.Operation = &pb.BuildRequest_Stream{Stream: o}
	case *pb.MapValuesOp:
		req.Operation = &pb.BuildRequest_MapValues{MapValues: o}
	case *pb.FilterOp:
		req.Operation = &pb.BuildRequest_Filter{Filter: o}
	case *pb.FilterNotOp:
		req.Operation = &pb.BuildRequest_FilterNot{FilterNot: o}
	case *pb.TableOp:
		req.Operation = &pb.BuildRequest_Table{Table: o}
	case *pb.FlatMapValuesOp:
		req.Operation = &pb.BuildRequest_FlatMapValues{FlatMapValues: o}
	case *pb.FlatMapOp:
		req.Operation = &pb.BuildRequest_FlatMap{FlatMap: o}
	case *pb.PrintOp:
		req.Operation = &pb.BuildRequest_Print{Print: o}
	case *pb.GroupByOp:
		req.Operation = &pb.BuildRequest_GroupBy{GroupBy: o}
	case *pb.GroupByKeyOp:
		req.Operation = &pb.BuildRequest_GroupByKey{GroupByKey: o}
	case *pb.CountOp:
		req.Operation = &pb.BuildRequest_Count{Count: o}
	case *pb.ToStreamOp:
		req.Operation = &pb.BuildRequest_ToStream{ToStream: o}
	case *pb.ToOp:
		req.Operation = &pb.BuildRequest_To{To: o}
	case *pb.ReduceOp:
		req.Operation = &pb.BuildRequest_Reduce{Reduce: o}
	case *pb.AggregateOp:
		req.Operation = &pb.BuildRequest_Aggregate{Aggregate: o}
	case *pb.WindowedByOp:
		req.Operation = &pb.BuildRequest_WindowedBy{WindowedBy: o}
	case *pb.SuppressOp:
		req.Operation = &pb.BuildRequest_Suppress{Suppress: o}
	case *pb.SelectKeyOp:
		req.Operation = &pb.BuildRequest_SelectKey{SelectKey: o}
	case *pb.JoinOp:
		req.Operation = &pb.BuildRequest_Join{Join: o}
	case *pb.MergeOp:
		req.Operation = &pb.BuildRequest_Merge{Merge: o}
	case *pb.RepartitionOp:
		req.Operation = &pb.BuildRequest_Repartition{Repartition: o}
	case *pb.SplitOp:
		req.Operation = &pb.BuildRequest_Split{Split: o}
	case *pb.EmitStrategyOp:
		req.Operation = &pb.BuildRequest_EmitStrategy{EmitStrategy: o}
	case *pb.ToTableOp:
		req.Operation = &pb.BuildRequest_ToTable{ToTable: o}
	case *pb.GlobalTableOp:
		req.Operation = &pb.BuildRequest_GlobalTable{GlobalTable: o}
	default:
		h.t.Fatalf("build: unsupported op %T", op)
	}
	resp, err := h.cl.Build(context.Background(), connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg.Handle, nil
}

func (h *testHost) mustBuild(op any) *pb.Handle {
	h.t.Helper()
	hd, err := h.build(op)
	if err != nil {
		h.t.Fatalf("Build(%T): %v", op, err)
	}
	return hd
}

// buildWordCount builds stream(lines) -> flat_map_values(split) ->
// group_by(word) -> count() -> to_stream() -> to(out).
func (h *testHost) buildWordCount(in, out string) {
	split := h.register("split", flatFn(func(v []byte) ([][]byte, error) { return bytes.Fields(v), nil }))
	word := h.register("word", keyFn(func(_, v []byte) ([]byte, error) { return v, nil }))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{in}, ValueSerde: "string"})
	w := h.mustBuild(&pb.FlatMapValuesOp{Input: s.Id, Token: split})
	g := h.mustBuild(&pb.GroupByOp{Input: w.Id, Token: word, KeySerde: "string"})
	c := h.mustBuild(&pb.CountOp{Input: g.Id})
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
}

func (h *testHost) start() {
	h.t.Helper()
	if _, err := h.cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h.session})); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
}

func (h *testHost) stop() {
	h.t.Helper()
	if _, err := h.cl.Stop(context.Background(), connect.NewRequest(&pb.StopRequest{SessionId: h.session})); err != nil {
		h.t.Fatalf("Stop: %v", err)
	}
}

// stopServing stops the session and checks that the host's loop (done,
// from serveAsync) ended in STATE_STOPPED.
func (h *testHost) stopServing(done <-chan string) {
	h.t.Helper()
	h.stop()
	if got := <-done; !strings.HasPrefix(got, "STATE_STOPPED") {
		h.t.Fatalf("ended with %q", got)
	}
}

// serveAsync serves bundles until the session ends; the returned channel
// gives the final state and error.
func (h *testHost) serveAsync() <-chan string {
	done := make(chan string, 1)
	go func() {
		st, msg, err := h.serve(context.Background())
		if err != nil {
			done <- "exchange error: " + err.Error()
			return
		}
		done <- st.String() + ": " + msg
	}()
	return done
}

func (e *env) produce(topic string, values ...string) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Value: []byte(v)}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// readTopic calls fn for every record of topic from the start to its end:
// the high watermark, or with committed the last stable offset (reading
// read_committed, transaction markers skipped).
func (e *env) readTopic(topic string, committed bool, fn func(*kgo.Record)) {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	list := adm.ListEndOffsets
	opts := []kgo.Opt{kgo.SeedBrokers(e.broker.Addr()), kgo.ConsumeTopics(topic), kgo.KeepControlRecords()}
	if committed {
		list = adm.ListCommittedOffsets
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	ends, err := list(context.Background(), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fetchErr error // the last a fetch reported, for the failure's message
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			// A partition whose log start passed the offsets waited for
			// lost its records (deleted by retention, say).
			starts := map[int32]int64{}
			if s, err := adm.ListStartOffsets(context.Background(), topic); err == nil {
				s.Each(func(o kadm.ListedOffset) { starts[o.Partition] = o.Offset })
			}
			e.t.Fatalf("reading %s: %v (still waiting for %v; log start offsets %v; last fetch error: %v)", topic, ctx.Err(), want, starts, fetchErr)
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fetchErr = fmt.Errorf("%s/%d: %w", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				fn(r)
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
}

// lastCounts returns the last value of each key of topic, decoded as Kafka's
// Serdes.Long.
func (e *env) lastCounts(topic string) map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	e.readTopic(topic, false, func(r *kgo.Record) {
		if len(r.Value) != 8 {
			e.t.Fatalf("%s/%d@%d: value is %d bytes, want an 8-byte long", r.Topic, r.Partition, r.Offset, len(r.Value))
		}
		out[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	})
	return out
}

func lines(n, offset int) ([]string, map[string]int64) {
	var ls []string
	want := map[string]int64{}
	for i := range n {
		var ws []string
		for j := range 5 {
			w := fmt.Sprintf("w%d", (i*7+j*13+offset)%97)
			ws = append(ws, w)
			want[w]++
		}
		ls = append(ls, strings.Join(ws, " "))
	}
	return ls, want
}

func sameCounts(got, want map[string]int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d words counted, want %d", len(got), len(want))
	}
	for w, n := range want {
		if got[w] != n {
			return fmt.Errorf("word %q counted %d, want %d", w, got[w], n)
		}
	}
	return nil
}

func waitCounts(t *testing.T, e *env, topic string, want map[string]int64) {
	t.Helper()
	var last error
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if last = sameCounts(e.lastCounts(topic), want); last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("counts never matched: %v", last)
}

func TestWordCountCrossesInBundles(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(3000, 0)
	e.produce("lines", ls...)
	h := e.open("wc", nil)
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)
	h.stop()
	if got := <-done; !strings.HasPrefix(got, "STATE_STOPPED") {
		t.Fatalf("host loop ended with %q, want STATE_STOPPED", got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// 3,000 lines crossed (one chain: split then select key): batching must
	// have put many records in each bundle, never one per round trip.
	if h.records != 3000 {
		t.Errorf("host saw %d records, want 3000 (each line crosses once: the chain is fused)", h.records)
	}
	if h.bundles*10 > h.records {
		t.Errorf("%d bundles for %d records: records are not crossing in bundles", h.bundles, h.records)
	}
}

// Counts continue across an engine restart: after a clean stop from the
// checkpoint, and after the state directory is deleted from the changelog.
func TestCountsContinueAfterRestart(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	total := map[string]int64{}
	add := func(m map[string]int64) {
		for k, v := range m {
			total[k] += v
		}
	}
	run := func(round int) {
		ls, want := lines(500, round)
		add(want)
		e.produce("lines", ls...)
		h := e.open("restart", map[string]string{"commit.interval.ms": "200"})
		h.buildWordCount("lines", "word-counts")
		h.start()
		done := h.serveAsync()
		waitCounts(t, e, "word-counts", total)
		h.stop()
		<-done
		e.stopEngine()
		e.startEngine()
	}
	run(0)
	run(1) // local state from the checkpoint
	if err := os.RemoveAll(filepath.Join(e.stateDir, "restart")); err != nil {
		t.Fatal(err)
	}
	run(2) // state restored from the changelog topic
}

func TestHostFailureStopsWithoutSkipping(t *testing.T) {
	e := newEnv(t)
	adm, _ := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	e.produce("in", "a", "b", "poison", "c")
	h := e.open("fail", map[string]string{"commit.interval.ms": "100"})
	upper := h.register("upper", valueFn(func(v []byte) ([]byte, error) {
		if string(v) == "poison" {
			return nil, errBoom
		}
		return bytes.ToUpper(v), nil
	}))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}, ValueSerde: "string"})
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: upper})
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "out"})
	h.start()
	got := <-h.serveAsync()
	for _, want := range []string{"STATE_ERROR", "in/0@2", "KSTREAM-MAPVALUES-0000000001", "Error: boom"} {
		if !strings.Contains(got, want) {
			t.Errorf("final state %q does not contain %q", got, want)
		}
	}
	h.stop()
	// Nothing past the failing record is committed.
	offs, err := adm.FetchOffsets(context.Background(), "fail")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("in", 0); ok && o.At > 2 {
		t.Errorf("committed offset %d is past the failing record at offset 2", o.At)
	}
}

func TestBadInputNamesTheOffenderAndKeepsTheSession(t *testing.T) {
	e := newEnv(t, "in")
	h := e.open("bad", nil)
	tok := h.register("f", valueFn(func(v []byte) ([]byte, error) { return v, nil }))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	cases := []struct {
		name string
		op   any
		code connect.Code
		want []string
	}{
		{"unknown handle", &pb.MapValuesOp{Input: 999, Token: tok}, connect.CodeNotFound, []string{"map_values", "999"}},
		{"wrong kind", &pb.CountOp{Input: s.Id}, connect.CodeInvalidArgument, []string{"count", "grouped stream", fmt.Sprint(s.Id), "stream"}},
		{"wrong kind for map_values", &pb.MapValuesOp{Input: g.Id, Token: tok}, connect.CodeInvalidArgument, []string{"map_values", fmt.Sprint(g.Id), "grouped stream"}},
		{"unregistered token", &pb.MapValuesOp{Input: s.Id, Token: 77}, connect.CodeNotFound, []string{"map_values", "token 77"}},
		{"stream with no topic", &pb.StreamOp{}, connect.CodeInvalidArgument, []string{"stream", "topic"}},
		{"unknown serde", &pb.StreamOp{Topics: []string{"in"}, ValueSerde: "xml"}, connect.CodeInvalidArgument, []string{"xml"}},
		{"aggregate on a stream", &pb.AggregateOp{Input: s.Id, InitializerToken: tok, AggregatorToken: tok}, connect.CodeInvalidArgument, []string{"aggregate", "grouped stream", fmt.Sprint(s.Id)}},
		{"reduce with an unregistered token", &pb.ReduceOp{Input: g.Id, Token: 55}, connect.CodeNotFound, []string{"reduce", "token 55"}},
		{"built-in sum over bytes", &pb.ReduceOp{Input: g.Id, Builtin: pb.Reducer_REDUCER_SUM}, connect.CodeInvalidArgument, []string{"reduce", "sum", "long or double", "bytes"}},
		{"reduce with token and built-in", &pb.ReduceOp{Input: g.Id, Token: tok, Builtin: pb.Reducer_REDUCER_MAX}, connect.CodeInvalidArgument, []string{"reduce", "both"}},
	}
	for _, c := range cases {
		_, err := h.build(c.op)
		if connect.CodeOf(err) != c.code {
			t.Errorf("%s: code %v (%v), want %v", c.name, connect.CodeOf(err), err, c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", c.name, err, w)
			}
		}
	}
	// The session is still usable, and refused calls burned no node number.
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: tok})
	if m.Node != "KSTREAM-MAPVALUES-0000000001" {
		t.Errorf("after refused calls the next node is %s, want KSTREAM-MAPVALUES-0000000001", m.Node)
	}
	// Unknown session.
	_, err := e.cl.Describe(context.Background(), connect.NewRequest(&pb.DescribeRequest{SessionId: "nope"}))
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown session: %v", err)
	}
	// A malformed body fails that call only.
	resp, err := http.Post(e.http.URL+"/polystreams.v1alpha1.EngineService/Build", "application/proto", strings.NewReader("\xff\xff\xff garbage"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 || !strings.Contains(string(body), "invalid_argument") {
		t.Errorf("malformed body: status %d body %s", resp.StatusCode, body)
	}
	// Builder calls after Start are refused.
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "out"})
	h.start()
	_, err = h.build(&pb.MapValuesOp{Input: s.Id, Token: tok})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "after Start") {
		t.Errorf("build after start: %v", err)
	}
	if _, err := h.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: h.session})); err != nil {
		t.Errorf("session unusable after refused calls: %v", err)
	}
	h.stop()
}

// State checkpointed against one cluster is not trusted against another:
// when the changelog is behind the checkpoint (a new broker, a recreated
// topic), the local state is wiped and rebuilt from the changelog, as Kafka
// Streams does on OffsetOutOfRange, instead of counting on top of it.
func TestCheckpointAheadOfChangelogWipesState(t *testing.T) {
	stateDir := t.TempDir()
	ls, want := lines(300, 0)
	for range 2 {
		b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 2, Topics: []string{"lines", "word-counts"}})
		if err != nil {
			t.Fatal(err)
		}
		e := &env{t: t, broker: b, stateDir: stateDir}
		e.startEngine()
		e.produce("lines", ls...)
		h := e.open("moved", nil)
		h.buildWordCount("lines", "word-counts")
		h.start()
		done := h.serveAsync()
		waitCounts(t, e, "word-counts", want)
		h.stop()
		<-done
		e.stopEngine()
		b.Close()
	}
}

// A record that does not decode with its source's declared serde fails like
// a raising function (Kafka Streams' source node deserialises; the default
// handler fails): named by node, topic, partition and offset, nothing after
// it committed.
func TestUndecodableRecordFailsNamingIt(t *testing.T) {
	e := newEnv(t)
	adm, _ := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "longs"); err != nil {
		t.Fatal(err)
	}
	eight := string([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	e.produce("longs", eight, eight, "abc", eight)
	h := e.open("undecodable", map[string]string{"commit.interval.ms": "100"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"longs"}, ValueSerde: "long"})
	h.mustBuild(&pb.ToOp{Input: s.Id, Topic: "copy"})
	h.start()
	got := <-h.serveAsync()
	for _, want := range []string{"STATE_ERROR", "longs/0@2", "KSTREAM-SOURCE-0000000000", "does not decode as long", "8 bytes, got 3"} {
		if !strings.Contains(got, want) {
			t.Errorf("final state %q does not contain %q", got, want)
		}
	}
	h.stop()
	offs, err := adm.FetchOffsets(context.Background(), "undecodable")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("longs", 0); ok && o.At > 2 {
		t.Errorf("committed offset %d is past the undecodable record at offset 2", o.At)
	}
}
