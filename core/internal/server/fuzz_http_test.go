package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// The request fuzz targets (FuzzOpenSession ... FuzzHTTPEndpoints) send raw
// request bytes to the engine as a client reaches it: through
// RequireToken, the mux of Server.Mount, limitBody and connect-go's
// decoding (protobuf binary, Connect JSON, gzip-compressed protobuf, with
// and without a Content-Length). Each input is one call on an engine
// holding a session with a topology, and each must hold the invariants of
// checkAnswer: no panic, an answer within fuzzHang, an answer whose size
// is bounded relative to the request, an error of a client's code that
// names the call it refuses, and a session that still answers afterwards.

const (
	fuzzToken = "fuzz-engine-token-9f3a"
	// fuzzMaxBody is the fuzzed engine's --max-request-bytes: small, so
	// that bodies past it are within a fuzzer's reach.
	fuzzMaxBody = 64 << 10
	// fuzzHang: a call that has not answered by then hangs. The longest
	// wait a request can ask for is Exchange's, 5 s.
	fuzzHang = 30 * time.Second
	// fuzzMaxError bounds an error answer: boundMessage keeps 8 KiB of
	// message, which JSON may escape to six times as much.
	fuzzMaxError = 6*maxErrorBytes + 1024
	// fuzzApp is the application.id of the fixture's session.
	fuzzApp = "fuzz-fixture"
	// fuzzSessionMark in a JSON body stands for the fixture's session id.
	fuzzSessionMark = "@S"
)

// A fuzzed body is sent in one of these encodings (the low bits of the
// encoding byte); bit 0x80 sends it without a Content-Length (chunked).
const (
	encProto byte = iota
	encJSON
	encGzipProto
	numEncodings
	encChunked byte = 0x80
)

var fuzzLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// fuzzEngine is an engine behind its whole HTTP handler stack, and the
// session a fuzzed call targets.
type fuzzEngine struct {
	srv     *Server
	h       http.Handler
	session string
}

func newFuzzEngine(t testing.TB, dir string) *fuzzEngine {
	noWait := time.Duration(0)
	srv := New(Options{Brokers: "127.0.0.1:1", StateDir: dir, Logger: fuzzLog, MaxRequestBytes: fuzzMaxBody,
		BrokerWait: &noWait, SessionTimeout: time.Hour})
	mux := http.NewServeMux()
	srv.Mount(mux)
	return &fuzzEngine{srv: srv, h: RequireToken(fuzzToken, mux)}
}

func (e *fuzzEngine) close() { e.srv.Close(context.Background()) }

// answer is what the engine wrote back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// serve sends r through the handler stack and waits for its answer; a
// panic in a handler ends the fuzzing process (a crash), no answer within
// fuzzHang fails the input.
func (e *fuzzEngine) serve(t testing.TB, r *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.h.ServeHTTP(rec, r)
	}()
	select {
	case <-done:
	case <-time.After(fuzzHang):
		t.Fatalf("%s %s: no answer within %v (a hang)", r.Method, r.URL.Path, fuzzHang)
	}
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// rpc sends body as a Connect unary call of method in encoding enc.
func (e *fuzzEngine) rpc(t testing.TB, method string, enc byte, body []byte) answer {
	t.Helper()
	wire := body
	ct := "application/proto"
	switch enc &^ encChunked % numEncodings {
	case encJSON:
		ct = "application/json"
	case encGzipProto:
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		wire = b.Bytes()
	}
	r := httptest.NewRequest(http.MethodPost, "/"+polystreamsv1alpha1connect.EngineServiceName+"/"+method, bytes.NewReader(wire))
	r.Header.Set("Content-Type", ct)
	r.Header.Set("Connect-Protocol-Version", "1")
	r.Header.Set("Authorization", "Bearer "+fuzzToken)
	if enc&^encChunked%numEncodings == encGzipProto {
		r.Header.Set("Content-Encoding", "gzip")
	}
	if enc&encChunked != 0 {
		r.ContentLength = -1
	}
	return e.serve(t, r)
}

// call sends m in protobuf binary and fails t unless it is answered 200.
func (e *fuzzEngine) call(t testing.TB, method string, m, out proto.Message) {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	a := e.rpc(t, method, encProto, b)
	if a.status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, a.status, a.body)
	}
	if out != nil {
		if err := proto.Unmarshal(a.body, out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
}

// withSession gives a fuzzed body the fixture's session id: in protobuf a
// session_id field (1) appended, which wins over one the body holds; in
// JSON every fuzzSessionMark replaced. own keeps the body as it is.
func withSession(enc byte, body []byte, id string, own bool) []byte {
	if own {
		return body
	}
	if enc&^encChunked%numEncodings == encJSON {
		return bytes.ReplaceAll(body, []byte(fuzzSessionMark), []byte(id))
	}
	out := append(bytes.Clone(body), 0x0a)
	out = binary.AppendUvarint(out, uint64(len(id)))
	return append(out, id...)
}

// fuzzBuildAll is one BuildRequest of every operator kind, on the
// fixture's handles (fixtureTopology).
func fuzzBuildAll() []*pb.BuildRequest {
	mat := &pb.Materialized{StoreName: "fz-store", KeySerde: "string", ValueSerde: "long"}
	return []*pb.BuildRequest{
		{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"more"}, KeySerde: "string", ValueSerde: "string", Name: "src"}}},
		{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: 1, Token: 1, ValueSerde: "json"}}},
		{Operation: &pb.BuildRequest_Filter{Filter: &pb.FilterOp{Input: 2, Token: 2}}},
		{Operation: &pb.BuildRequest_FilterNot{FilterNot: &pb.FilterNotOp{Input: 1, Token: 2}}},
		{Operation: &pb.BuildRequest_FlatMapValues{FlatMapValues: &pb.FlatMapValuesOp{Input: 1, Token: 1}}},
		{Operation: &pb.BuildRequest_Map{Map: &pb.MapOp{Input: 1, Token: 1, KeySerde: "long", ValueSerde: "double"}}},
		{Operation: &pb.BuildRequest_SelectKey{SelectKey: &pb.SelectKeyOp{Input: 1, Token: 1, KeySerde: "bytes"}}},
		{Operation: &pb.BuildRequest_Peek{Peek: &pb.PeekOp{Input: 1, Token: 1}}},
		{Operation: &pb.BuildRequest_Foreach{Foreach: &pb.ForeachOp{Input: 2, Token: 1}}},
		{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: 1, KeySerde: "string", ValueSerde: "string"}}},
		{Operation: &pb.BuildRequest_GroupBy{GroupBy: &pb.GroupByOp{Input: 6, Token: 1, KeySerde: "string"}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 3, Materialized: mat}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 5}}},
		{Operation: &pb.BuildRequest_ToStream{ToStream: &pb.ToStreamOp{Input: 4}}},
		{Operation: &pb.BuildRequest_To{To: &pb.ToOp{Input: 2, Topic: "fz-out", KeySerde: "string", ValueSerde: "string"}}},
		{Operation: &pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: 3, Token: 3}}},
		{Operation: &pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: 5, Builtin: pb.Reducer_REDUCER_SUM}}},
		{Operation: &pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: 3, InitializerToken: 3, AggregatorToken: 3, Materialized: mat}}},
		{Operation: &pb.BuildRequest_Table{Table: &pb.TableOp{Topic: "fz-table", KeySerde: "string", ValueSerde: "string", Materialized: &pb.Materialized{StoreName: "fz-table-store"}}}},
		{Operation: &pb.BuildRequest_WindowedBy{WindowedBy: &pb.WindowedByOp{Input: 3, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 60000, AdvanceMs: 1000, GraceMs: 5}}}}},
		{Operation: &pb.BuildRequest_WindowedBy{WindowedBy: &pb.WindowedByOp{Input: 3, Windows: &pb.WindowedByOp_Sliding{Sliding: &pb.SlidingWindows{TimeDifferenceMs: 100, GraceMs: 1}}}}},
		{Operation: &pb.BuildRequest_WindowedBy{WindowedBy: &pb.WindowedByOp{Input: 3, Windows: &pb.WindowedByOp_Session{Session: &pb.SessionWindows{InactivityGapMs: 300}}}}},
		{Operation: &pb.BuildRequest_Suppress{Suppress: &pb.SuppressOp{Input: 8, Name: "fz-suppress"}}},
		{Operation: &pb.BuildRequest_Merge{Merge: &pb.MergeOp{Input: 1, Other: 2}}},
		{Operation: &pb.BuildRequest_Split{Split: &pb.SplitOp{Input: 1, Name: "fz-split-", Branches: []*pb.Branch{{PredicateToken: 2, Name: "a"}, {PredicateToken: 2}}, DefaultBranch: true}}},
		{Operation: &pb.BuildRequest_Repartition{Repartition: &pb.RepartitionOp{Input: 1, Name: "fz-rep", Partitions: 3}}},
		{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: 1, Table: 6, JoinerToken: 1, Left: true}}},
		{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: 1, Table: 2, JoinerToken: 1, Outer: true, Windows: &pb.JoinWindows{BeforeMs: 100, AfterMs: 100, GraceMs: 10}}}},
		{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: 6, Table: 6, JoinerToken: 1, ForeignKeyToken: 1}}},
		{Operation: &pb.BuildRequest_GlobalTable{GlobalTable: &pb.GlobalTableOp{Topic: "fz-global", KeySerde: "string", ValueSerde: "string"}}},
		{Operation: &pb.BuildRequest_EmitStrategy{EmitStrategy: &pb.EmitStrategyOp{Input: 7, Strategy: pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_CLOSE}}},
		{Operation: &pb.BuildRequest_ToTable{ToTable: &pb.ToTableOp{Input: 1, Name: "fz-totable", Materialized: &pb.Materialized{StoreName: "fz-totable-store"}}}},
	}
}

// fixtureTopology builds, in an unstarted session with three functions
// registered: 1 stream "in" (string/string), 2 map_values(1), 3
// group_by_key(2), 4 count(3) "counts", 5 group_by_key(1) of longs, 6
// table "tab", 7 windowed_by(3) of 1 s windows, 8 count(7) "windowed", 9
// to_stream(4), then to(9) "out".
func fixtureTopology(t testing.TB, e *fuzzEngine) {
	t.Helper()
	for _, name := range []string{"upper", "keep", "fold"} {
		e.call(t, "RegisterFunction", &pb.RegisterFunctionRequest{SessionId: e.session, Name: name}, nil)
	}
	steps := []*pb.BuildRequest{
		{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"}}},
		{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: 1, Token: 1}}},
		{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: 2}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 3, Materialized: &pb.Materialized{StoreName: "counts"}}}},
		{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: 1, ValueSerde: "long"}}},
		{Operation: &pb.BuildRequest_Table{Table: &pb.TableOp{Topic: "tab", KeySerde: "string", ValueSerde: "string"}}},
		{Operation: &pb.BuildRequest_WindowedBy{WindowedBy: &pb.WindowedByOp{Input: 3, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000, AdvanceMs: 1000}}}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 7, Materialized: &pb.Materialized{StoreName: "windowed"}}}},
		{Operation: &pb.BuildRequest_ToStream{ToStream: &pb.ToStreamOp{Input: 4}}},
		{Operation: &pb.BuildRequest_To{To: &pb.ToOp{Input: 9, Topic: "out"}}},
	}
	for _, r := range steps {
		r.SessionId = e.session
		e.call(t, "Build", r, nil)
	}
}

// openFixture opens the fixture's session (config added to the session's)
// and builds fixtureTopology.
func (e *fuzzEngine) openFixture(t testing.TB, config map[string]string) {
	t.Helper()
	var open pb.OpenSessionResponse
	e.call(t, "OpenSession", &pb.OpenSessionRequest{ApplicationId: fuzzApp, Config: config}, &open)
	e.session = open.SessionId
	fixtureTopology(t, e)
}

// checkAnswer holds a fuzzed call's answer to the invariants: an error is
// a Connect error of a client's code whose message names the call (or the
// bound it passed) and is bounded; a success is at most maxOK bytes more
// than twice the request; neither holds the engine's token.
func checkAnswer(t testing.TB, method string, req []byte, a answer, maxOK int) {
	t.Helper()
	if bytes.Contains(a.body, []byte(fuzzToken)) {
		t.Fatalf("%s: the answer holds the engine's token", method)
	}
	if a.status == http.StatusOK {
		if len(a.body) > maxOK+2*len(req) {
			t.Fatalf("%s: a %d-byte answer to a %d-byte request", method, len(a.body), len(req))
		}
		return
	}
	if len(a.body) > fuzzMaxError {
		t.Fatalf("%s: HTTP %d: a %d-byte error answer (at most %d)", method, a.status, len(a.body), fuzzMaxError)
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("%s: HTTP %d with a body that is no Connect error (%v): %q", method, a.status, err, a.body)
	}
	switch e.Code {
	case "invalid_argument", "not_found", "failed_precondition", "resource_exhausted", "out_of_range":
	default:
		t.Fatalf("%s: HTTP %d code %q: %s", method, a.status, e.Code, e.Message)
	}
	if !namesTheCall(method, e.Message) {
		t.Fatalf("%s: the error names neither the call nor what it refused: %q", method, e.Message)
	}
}

// namesTheCall: an error names the method it refuses ("Build: ...",
// "Build(map_values): ...") or the request message that could not be
// read, or says which bound the body passed.
func namesTheCall(method, msg string) bool {
	for _, s := range []string{method + ":", method + "(", method + "Request", "--max-request-bytes", "message size"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// stillAnswers: the fixture's session answers GetState after a fuzzed
// call, whatever that call was; a refused call fails only itself.
func (e *fuzzEngine) stillAnswers(t testing.TB, after string) *pb.GetStateResponse {
	t.Helper()
	b, _ := proto.Marshal(&pb.GetStateRequest{SessionId: e.session})
	a := e.rpc(t, "GetState", encProto, b)
	if a.status != http.StatusOK {
		t.Fatalf("after %s, the session's GetState: HTTP %d: %s", after, a.status, a.body)
	}
	var st pb.GetStateResponse
	if err := proto.Unmarshal(a.body, &st); err != nil {
		t.Fatalf("after %s, GetState: %v", after, err)
	}
	return &st
}

// rpcSeeds adds each message as seeds in protobuf and JSON (its
// session_id the mark), and a few shapes every decoder must refuse.
func rpcSeeds(f *testing.F, msgs ...proto.Message) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(encProto, false, b)
		f.Add(encGzipProto|encChunked, false, b)
		j, err := protojson.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		var obj map[string]any
		json.Unmarshal(j, &obj)
		if _, ok := obj["applicationId"]; !ok {
			obj["sessionId"] = fuzzSessionMark
		}
		j, _ = json.Marshal(obj)
		f.Add(encJSON, false, j)
	}
	f.Add(encJSON, false, []byte(`{"sessionId":"@S","unknownField":[1,2,3]}`))
	f.Add(encJSON, false, []byte(`{"sessionId":"@S"`))
	f.Add(encProto, true, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(encProto|encChunked, true, bytes.Repeat([]byte{0x0a, 0x00}, 40000)) // past fuzzMaxBody
}

// fuzzRPC fuzzes method on a fresh engine per input, whose fixture
// session is unstarted (open's config); maxOK bounds a success answer
// beyond twice the request.
func fuzzRPC(f *testing.F, method string, maxOK int, config map[string]string) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, enc byte, own bool, body []byte) {
		e := newFuzzEngine(t, dir)
		defer e.close()
		e.openFixture(t, config)
		req := withSession(enc, body, e.session, own)
		a := e.rpc(t, method, enc, req)
		checkAnswer(t, method, req, a, maxOK)
		e.stillAnswers(t, method)
	})
}

func FuzzRegisterFunction(f *testing.F) {
	rpcSeeds(f, &pb.RegisterFunctionRequest{Name: "upper"}, &pb.RegisterFunctionRequest{Name: strings.Repeat("é", 300)})
	fuzzRPC(f, "RegisterFunction", 256, nil)
}

// FuzzBuild feeds BuildRequests of every operator kind, on the fixture's
// handles of each kind (stream, grouped stream, table, windowed stream,
// windowed table).
func FuzzBuild(f *testing.F) {
	var msgs []proto.Message
	for _, r := range fuzzBuildAll() {
		msgs = append(msgs, r)
	}
	rpcSeeds(f, msgs...)
	fuzzRPC(f, "Build", 1024, nil)
}

func FuzzDescribe(f *testing.F) {
	rpcSeeds(f, &pb.DescribeRequest{}, &pb.DescribeRequest{Format: "json"}, &pb.DescribeRequest{Format: "svg"},
		&pb.DescribeRequest{Format: "mermaid"}, &pb.DescribeRequest{Format: "dot"}, &pb.DescribeRequest{Format: "x\x00y"})
	fuzzRPC(f, "Describe", 128<<10, nil)
}

// FuzzStart starts the fixture's topology against a broker that is not
// there (127.0.0.1:1, no wait): Start fails and names the broker.
func FuzzStart(f *testing.F) {
	rpcSeeds(f, &pb.StartRequest{})
	fuzzRPC(f, "Start", 64, nil)
}

func FuzzStop(f *testing.F) {
	rpcSeeds(f, &pb.StopRequest{})
	fuzzRPC(f, "Stop", 64, nil)
}

func FuzzGetState(f *testing.F) {
	rpcSeeds(f, &pb.GetStateRequest{})
	fuzzRPC(f, "GetState", 1024, nil)
}

func FuzzGetMetrics(f *testing.F) {
	rpcSeeds(f, &pb.GetMetricsRequest{})
	fuzzRPC(f, "GetMetrics", 16<<10, nil)
}

// FuzzExchange on the unstarted session: results for bundles that were
// never handed out, worker ids of every length.
func FuzzExchange(f *testing.F) {
	rpcSeeds(f, &pb.ExchangeRequest{WorkerId: "w1", MaxBundles: 4, WaitMs: 50},
		&pb.ExchangeRequest{WorkerId: "w1", Results: []*pb.BundleResult{{BundleId: 7, OutputCounts: []int32{1}, ValueLengths: []int32{2}, Values: []byte("ab"),
			Failures: []*pb.RecordFailure{{Index: 0, Message: "boom", Kind: pb.RecordFailure_KIND_DESERIALIZATION}}}}},
		&pb.ExchangeRequest{WorkerId: strings.Repeat("w", maxWorkerID+1)})
	fuzzRPC(f, "Exchange", 1024, nil)
}

// FuzzOpenSession opens a second session beside the fixture's, with any
// application.id, config and host features; the fixture's session still
// answers unless the new one took its application.id (that replaces it).
func FuzzOpenSession(f *testing.F) {
	rpcSeeds(f, &pb.OpenSessionRequest{ApplicationId: "orders", Config: map[string]string{"processing.guarantee": "exactly_once_v2", "commit.interval.ms": "100"}},
		&pb.OpenSessionRequest{ApplicationId: "a", Config: map[string]string{"polystreams.bundle.max.records": "99999999999", "sasl.password": "p", "bootstrap.servers": "u:pw@h:1"}},
		&pb.OpenSessionRequest{ApplicationId: strings.Repeat("x", 250), HostFeatures: []string{"fold_value_refs", "fold_programs"}},
		&pb.OpenSessionRequest{ApplicationId: "..", Config: map[string]string{"statestore.cache.max.bytes": "-1", "num.standby.replicas": "x"}})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, enc byte, own bool, body []byte) {
		e := newFuzzEngine(t, dir)
		defer e.close()
		e.openFixture(t, nil)
		// OpenSession names no session; own decides whether the body may
		// set state.dir (else it is the fuzz test's own directory) or
		// open a test driver session (a private broker each).
		if enc&^encChunked%numEncodings == encProto && !own {
			var m pb.OpenSessionRequest
			if proto.Unmarshal(body, &m) == nil {
				delete(m.Config, "state.dir")
				delete(m.Config, "polystreams.test.driver")
				body, _ = proto.Marshal(&m)
			}
		}
		a := e.rpc(t, "OpenSession", enc, body)
		checkAnswer(t, "OpenSession", body, a, 4096)
		if a.status == http.StatusOK {
			var m pb.OpenSessionRequest
			if proto.Unmarshal(body, &m) == nil && m.ApplicationId == fuzzApp {
				return // replaced the fixture's session, as it should
			}
			if protojson.Unmarshal(body, &m) == nil && m.ApplicationId == fuzzApp {
				return
			}
		}
		e.stillAnswers(t, "OpenSession")
	})
}

// The started fixture of the test driver targets: one test driver session
// per fuzzing process (its start takes a private broker), kept while it
// answers, with builtinTopology.
var driverFixture struct {
	mu sync.Mutex
	e  *fuzzEngine
}

// builtinTopology runs in the engine alone (no host function): 1 stream
// "in" (bytes), 2 group_by_key(1), 3 count(2) "counts", 4 table "tab"
// "tab-store", 5 windowed_by(2) of 1 s windows, 6 count(5) "windowed", 7
// to_stream(3), then to(7) "out".
func builtinTopology() []*pb.BuildRequest {
	return []*pb.BuildRequest{
		{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}},
		{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: 1}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 2, Materialized: &pb.Materialized{StoreName: "counts"}}}},
		{Operation: &pb.BuildRequest_Table{Table: &pb.TableOp{Topic: "tab", Materialized: &pb.Materialized{StoreName: "tab-store"}}}},
		{Operation: &pb.BuildRequest_WindowedBy{WindowedBy: &pb.WindowedByOp{Input: 2, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000, AdvanceMs: 1000}}}}},
		{Operation: &pb.BuildRequest_Count{Count: &pb.CountOp{Input: 5, Materialized: &pb.Materialized{StoreName: "windowed"}}}},
		{Operation: &pb.BuildRequest_ToStream{ToStream: &pb.ToStreamOp{Input: 3}}},
		{Operation: &pb.BuildRequest_To{To: &pb.ToOp{Input: 7, Topic: "out"}}},
	}
}

// startedEngine returns the process's started test driver engine, making
// it when there is none or the last one's session no longer runs.
func startedEngine(t testing.TB) *fuzzEngine {
	t.Helper()
	if e := driverFixture.e; e != nil {
		if st := e.stillAnswers(t, "the last input"); st.State == pb.State_STATE_RUNNING || st.State == pb.State_STATE_CREATED {
			return e
		}
		e.close()
		driverFixture.e = nil
	}
	// A test driver session has a state directory of its own.
	e := newFuzzEngine(t, "")
	var open pb.OpenSessionResponse
	e.call(t, "OpenSession", &pb.OpenSessionRequest{ApplicationId: fuzzApp,
		Config: map[string]string{"polystreams.test.driver": "true", "statestore.cache.max.bytes": "0"}}, &open)
	e.session = open.SessionId
	for _, r := range builtinTopology() {
		r.SessionId = e.session
		e.call(t, "Build", r, nil)
	}
	e.call(t, "Start", &pb.StartRequest{SessionId: e.session}, nil)
	ts := int64(1000)
	var pipe pb.PipeInputResponse
	e.call(t, "PipeInput", &pb.PipeInputRequest{SessionId: e.session, Records: []*pb.TestRecord{
		{Topic: "in", Key: []byte("k"), Value: []byte("v"), TimestampMs: &ts},
		{Topic: "tab", Key: []byte("k"), Value: []byte("v"), TimestampMs: &ts},
	}}, &pipe)
	driverFixture.e = e
	return e
}

// fuzzStarted fuzzes method on the started test driver session.
func fuzzStarted(f *testing.F, method string, maxOK int) {
	f.Fuzz(func(t *testing.T, enc byte, own bool, body []byte) {
		driverFixture.mu.Lock()
		defer driverFixture.mu.Unlock()
		e := startedEngine(t)
		req := withSession(enc, body, e.session, own)
		a := e.rpc(t, method, enc, req)
		checkAnswer(t, method, req, a, maxOK)
		if st := e.stillAnswers(t, method); st.State == pb.State_STATE_ERROR {
			t.Logf("%s failed the application: %s", method, st.Error)
		}
	})
}

func FuzzQuery(f *testing.F) {
	rpcSeeds(f, &pb.QueryRequest{Store: "counts", Query: &pb.QueryRequest_All{All: true}, Limit: 10},
		&pb.QueryRequest{Store: "counts", Query: &pb.QueryRequest_Get{Get: []byte("k")}},
		&pb.QueryRequest{Store: "counts", Query: &pb.QueryRequest_Prefix{Prefix: []byte{}}},
		&pb.QueryRequest{Store: "counts", Query: &pb.QueryRequest_Range{Range: &pb.KeyRange{From: []byte("a"), To: []byte("z")}}},
		&pb.QueryRequest{Store: "windowed", Query: &pb.QueryRequest_WindowFetch{WindowFetch: &pb.WindowFetch{Key: []byte("k"), FromMs: 0, ToMs: 1 << 62}}},
		&pb.QueryRequest{Store: "windowed", Query: &pb.QueryRequest_WindowFetch{WindowFetch: &pb.WindowFetch{FromMs: -1 << 63, ToMs: 1<<63 - 1}}},
		&pb.QueryRequest{Store: "nope", Limit: -1})
	fuzzStarted(f, "Query", 64<<10)
}

func FuzzPipeInput(f *testing.F) {
	ts, neg, big := int64(5000), int64(-1), int64(1<<63-1)
	rpcSeeds(f, &pb.PipeInputRequest{Records: []*pb.TestRecord{{Topic: "tab", Key: []byte("k"), Value: []byte("v"), TimestampMs: &ts}}},
		&pb.PipeInputRequest{Records: []*pb.TestRecord{{Topic: "tab", Key: []byte("k"), TimestampMs: &big, Headers: []*pb.TestHeader{{Key: "h", Value: []byte("x")}}}}},
		&pb.PipeInputRequest{Records: []*pb.TestRecord{{Topic: "tab", Value: []byte("v"), TimestampMs: &neg}}},
		&pb.PipeInputRequest{Records: []*pb.TestRecord{{Topic: "in", Key: []byte("a"), Value: []byte("1"), TimestampMs: &big}, {Topic: "in", Key: []byte("a"), TimestampMs: &neg}, {Topic: "in"}}},
		&pb.PipeInputRequest{Records: []*pb.TestRecord{{Topic: "nope"}}})
	fuzzStarted(f, "PipeInput", 1024)
}

func FuzzReadOutput(f *testing.F) {
	rpcSeeds(f, &pb.ReadOutputRequest{Topic: "out"}, &pb.ReadOutputRequest{Topic: "in"}, &pb.ReadOutputRequest{Topic: ""})
	fuzzStarted(f, "ReadOutput", 64<<10)
}

func FuzzAdvanceWallClock(f *testing.F) {
	rpcSeeds(f, &pb.AdvanceWallClockRequest{Millis: 1000}, &pb.AdvanceWallClockRequest{Millis: -5},
		&pb.AdvanceWallClockRequest{Millis: 1<<63 - 1})
	fuzzStarted(f, "AdvanceWallClock", 64)
}

// FuzzRead on the started test driver session: no bundle is in flight,
// so every read is refused, naming the bundle (or the request's fault).
func FuzzRead(f *testing.F) {
	rpcSeeds(f, &pb.ReadRequest{BundleId: 1, Store: "counts", Query: &pb.ReadRequest_Get{Get: []byte("k")}},
		&pb.ReadRequest{BundleId: 1<<64 - 1, Store: "counts", Query: &pb.ReadRequest_All{All: true}, Reverse: true, Continuation: []byte{0xff}},
		&pb.ReadRequest{Store: "windowed", Query: &pb.ReadRequest_WindowFetch{WindowFetch: &pb.WindowFetch{FromMs: -1 << 63, ToMs: 1<<63 - 1}}},
		&pb.ReadRequest{Store: "nope", Query: &pb.ReadRequest_Range{Range: &pb.KeyRange{From: []byte("z"), To: []byte("a")}}})
	fuzzStarted(f, "Read", 64)
}

func FuzzQueryMetadataForKey(f *testing.F) {
	rpcSeeds(f, &pb.QueryMetadataForKeyRequest{Store: "counts", Key: []byte("k")},
		&pb.QueryMetadataForKeyRequest{Store: "windowed", Key: []byte{}},
		&pb.QueryMetadataForKeyRequest{Store: "nope"})
	fuzzStarted(f, "QueryMetadataForKey", 4<<10)
}

func FuzzStreamsMetadata(f *testing.F) {
	rpcSeeds(f, &pb.StreamsMetadataRequest{}, &pb.StreamsMetadataRequest{Store: "counts"}, &pb.StreamsMetadataRequest{Store: "nope"})
	fuzzStarted(f, "StreamsMetadata", 16<<10)
}

func FuzzPauseProcessing(f *testing.F) {
	rpcSeeds(f, &pb.PauseProcessingRequest{})
	fuzzRPC(f, "PauseProcessing", 64, nil)
}

func FuzzResumeProcessing(f *testing.F) {
	rpcSeeds(f, &pb.ResumeProcessingRequest{})
	fuzzRPC(f, "ResumeProcessing", 64, nil)
}

// FuzzCleanUpState on the unstarted session: its state directory (under
// the fuzz engine's temporary one) is deleted or was never made.
func FuzzCleanUpState(f *testing.F) {
	rpcSeeds(f, &pb.CleanUpStateRequest{})
	fuzzRPC(f, "CleanUpState", 4<<10, nil)
}

// FuzzHTTPEndpoints sends any method, path, query, Authorization and body
// to the whole engine (the protocol's paths included), which holds a
// started test driver session: no panic, no hang, an answer bounded by
// the request, and none holds the engine's token or the session's id
// (only its opener knows that).
func FuzzHTTPEndpoints(f *testing.F) {
	for _, s := range []struct {
		method, target string
		auth           uint8
		body           []byte
	}{
		{"GET", "/ui/api/status", 0, nil},
		{"GET", "/metrics", 0, nil},
		{"GET", "/describe?application.id=" + fuzzApp + "&format=svg", 0, nil},
		{"GET", "/describe?application.id=%00%01%02%03%04%05%06%07&format=json", 0, nil},
		{"GET", "/describe?format=mermaid", 1, nil},
		{"GET", "/ui/api/status", 2, nil},
		{"POST", "/" + polystreamsv1alpha1connect.EngineServiceName + "/GetState", 0, []byte(`{}`)},
		{"GET", "/" + polystreamsv1alpha1connect.EngineServiceName + "/Describe?encoding=json&message=%7B%7D", 0, nil},
		{"PUT", "/metrics", 3, []byte("x")},
	} {
		f.Add(s.method, s.target, s.auth, s.body)
	}
	f.Fuzz(func(t *testing.T, method, target string, auth uint8, body []byte) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t") || method == "" ||
			strings.ContainsAny(method, " \r\n\t/") || strings.ContainsFunc(target+method, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return // net/http refuses such a request line before a handler sees it
		}
		r, err := http.NewRequest(method, "http://engine"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		switch auth % 4 {
		case 0:
			r.Header.Set("Authorization", "Bearer "+fuzzToken)
		case 1:
			r.SetBasicAuth("ops", fuzzToken)
		case 2:
			r.Header.Set("Authorization", "Bearer "+fuzzToken[:len(fuzzToken)-1])
		}
		r.Header.Set("Content-Type", "application/json")
		driverFixture.mu.Lock()
		defer driverFixture.mu.Unlock()
		e := startedEngine(t)
		a := e.serve(t, r)
		reqSize := len(method) + len(target) + len(body)
		// /metrics, /ui/api/status and /describe answer about the whole
		// engine (the fixture's topology as SVG is the largest); the
		// rest at most what the request said, twice.
		if len(a.body) > 256<<10+2*reqSize {
			t.Fatalf("%s %q: a %d-byte answer to a %d-byte request", method, target, len(a.body), reqSize)
		}
		for _, secret := range []string{fuzzToken, e.session} {
			if bytes.Contains(a.body, []byte(secret)) && !strings.Contains(target, secret) && !bytes.Contains(body, []byte(secret)) {
				t.Fatalf("%s %q: the answer holds a secret", method, target)
			}
		}
		e.stillAnswers(t, method+" "+target)
	})
}
