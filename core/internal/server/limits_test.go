package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Bounds on what one caller can make the engine hold or say (issue 21:
// findings 1, 4, 5, 6, 7 and 10).

// brokerless serves an engine whose sessions never reach a broker: enough
// for everything before Start.
func brokerless(t *testing.T, o server.Options) (*server.Server, polystreamsv1alpha1connect.EngineServiceClient, string) {
	t.Helper()
	if o.Brokers == "" {
		o.Brokers = "127.0.0.1:1"
	}
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	srv := server.New(o)
	t.Cleanup(func() { srv.Close(context.Background()) })
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return srv, polystreamsv1alpha1connect.NewEngineServiceClient(hs.Client(), hs.URL), hs.URL
}

func openSession(t *testing.T, cl polystreamsv1alpha1connect.EngineServiceClient, appID string) string {
	t.Helper()
	resp, err := cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: appID}))
	if err != nil {
		t.Fatalf("OpenSession(%s): %v", appID, err)
	}
	return resp.Msg.SessionId
}

// Finding 1 and 7: a window definition that would make the engine
// allocate without bound, or whose retention overflows, is refused at
// Build with InvalidArgument naming the bound; the largest allowed hopping
// ratio builds.
func TestWindowDefinitionsAreBoundedAtBuild(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{})
	ctx := context.Background()
	id := openSession(t, cl, "windows")
	s, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}, KeySerde: "string"}}}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: s.Msg.Handle.Id}}}))
	if err != nil {
		t.Fatal(err)
	}
	windowed := func(op *pb.WindowedByOp) error {
		op.Input = g.Msg.Handle.Id
		_, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_WindowedBy{WindowedBy: op}}))
		return err
	}
	for _, c := range []struct {
		name string
		op   *pb.WindowedByOp
		want string
	}{
		{"size 10^12 advancing by 1 ms", &pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1e12, AdvanceMs: 1}}},
			"put each record in 1000000000000 windows; at most 10000 (advance by at least 100000000 ms)"},
		{"size and grace MaxInt64", &pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: math.MaxInt64, GraceMs: math.MaxInt64}}},
			"size_ms + grace_ms, the window store's retention, passes the largest time in milliseconds"},
		{"size 1, grace MaxInt64", &pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1, GraceMs: math.MaxInt64}}},
			"passes the largest time in milliseconds"},
		{"sliding MaxInt64/2+1", &pb.WindowedByOp{Windows: &pb.WindowedByOp_Sliding{Sliding: &pb.SlidingWindows{TimeDifferenceMs: math.MaxInt64/2 + 1}}},
			"2 * time_difference_ms + grace_ms"},
		{"session gap MaxInt64 with grace", &pb.WindowedByOp{Windows: &pb.WindowedByOp_Session{Session: &pb.SessionWindows{InactivityGapMs: math.MaxInt64, GraceMs: 1}}},
			"passes the largest time in milliseconds"},
	} {
		err := windowed(c.op)
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid_argument containing %q", c.name, err, c.want)
		}
	}
	// At the bound: a day advancing every 8.64 s is 10,000 windows a record.
	if err := windowed(&pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 86_400_000, AdvanceMs: 8_640}}}); err != nil {
		t.Errorf("10,000 windows a record: %v", err)
	}
	if err := windowed(&pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 86_400_000, AdvanceMs: 8_639}}}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("10,001 windows a record: %v, want invalid_argument", err)
	}
	// A tumbling window as large as a time can be, without grace, is
	// Kafka Streams' too (its retention is MaxInt64).
	if err := windowed(&pb.WindowedByOp{Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: math.MaxInt64}}}); err != nil {
		t.Errorf("size MaxInt64 without grace: %v", err)
	}
}

// A batch whose records fall into more windows than one pass holds goes
// through in slices, in order, and every window counts right: 200 records
// of one key in windows of 1,000 ms advancing by 1 ms (200,000 updates).
func TestHoppingWindowsOfABigBatchCountRight(t *testing.T) {
	e := newEnv(t, "events")
	h := e.open("hopping", nil)
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000, AdvanceMs: 1, GraceMs: 1 << 40}}})
	h.mustBuild(&pb.CountOp{Input: w.Id, Materialized: &pb.Materialized{StoreName: "hops"}})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 200)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Key: []byte("a"), Value: []byte("x"), Timestamp: time.UnixMilli(1000 + int64(i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Window [start, start+1000) holds the records at 1000..1199 within it.
	count := func(start int64) int64 {
		resp, err := e.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "hops",
			Query: &pb.QueryRequest_WindowFetch{WindowFetch: &pb.WindowFetch{Key: []byte("a"), FromMs: start, ToMs: start}}}))
		if err != nil || len(resp.Msg.ValueLengths) != 1 {
			return -1
		}
		return decodeLong(resp.Msg.Values)
	}
	waitFor(t, "the last record's windows", 90*time.Second, func() bool { return count(1199) == 1 })
	for start, want := range map[int64]int64{200: 200, 1000: 200, 1100: 100, 150: 150, 1: 1} {
		if got := count(start); got != want {
			t.Errorf("window at %d: count %d, want %d", start, got, want)
		}
	}
	if got := count(0); got != -1 {
		t.Errorf("window at 0 holds no record, but counts %d", got)
	}
}

// Finding 5 and 7: application.id follows Kafka's rules for topic names,
// bundle settings are bounded, and neither error repeats what it refuses.
func TestConfigIsBoundedAndNeverEchoed(t *testing.T) {
	logs := &bytes.Buffer{}
	_, cl, _ := brokerless(t, server.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx := context.Background()
	huge := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, appID string
		config      map[string]string
		want        []string
	}{
		{"a 1 MiB application.id", huge, nil, []string{"application.id is 1048576 bytes long; at most 249"}},
		{"250 characters", strings.Repeat("a", 250), nil, []string{"application.id is 250 bytes long; at most 249"}},
		{"a character Kafka refuses", "orders*eu", nil, []string{"application.id has byte 0x2a at offset 6"}},
		{"a space", "my app", nil, []string{"application.id has byte 0x20 at offset 2"}},
		{"bundle.max.records", "bundles", map[string]string{"polystreams.bundle.max.records": "99999999999"},
			[]string{"polystreams.bundle.max.records: want an integer from 1 to 100000"}},
		{"bundle.max.bytes", "bundles", map[string]string{"polystreams.bundle.max.bytes": "0"},
			[]string{"polystreams.bundle.max.bytes: want an integer from 1 to 16777216"}},
		{"a record cache larger than the engine allows", "cache", map[string]string{"statestore.cache.max.bytes": "1073741825"},
			[]string{"statestore.cache.max.bytes: at most 1073741824 on this engine (--max-cache-bytes)"}},
		{"values not echoed", "echo", map[string]string{
			"processing.guarantee": "planted-guarantee", "commit.interval.ms": "planted-interval",
			"replication.factor": "planted-rf", "security.protocol": "planted-protocol",
			"polystreams.metrics.enabled": "planted-bool", "processing.exception.handler": "planted-handler",
			"ssl.ca.location": "/planted-ca.pem",
		}, []string{"processing.guarantee: want", "commit.interval.ms: want", "replication.factor: want",
			"security.protocol: want", "polystreams.metrics.enabled: want", "processing.exception.handler: want", "ssl.ca.location: cannot open the file"}},
		{"credentials in bootstrap.servers", "creds", map[string]string{"bootstrap.servers": "alice:planted-pw@kafka:9092"},
			[]string{"bootstrap.servers holds 'user:password@'"}},
	} {
		_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: c.appID, Config: c.config}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v, want invalid_argument", c.name, err)
			continue
		}
		msg := err.Error()
		for _, want := range c.want {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", c.name, msg, want)
			}
		}
		if strings.Contains(msg, "planted") || len(msg) > 2000 {
			t.Errorf("%s: the error repeats a value: %.300q", c.name, msg)
		}
	}
	if strings.Contains(logs.String(), "planted") || strings.Contains(logs.String(), huge[:300]) {
		t.Errorf("the log repeats a refused value:\n%.2000s", logs.String())
	}
	// At the bounds: accepted.
	if _, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: strings.Repeat("a", 249),
		Config: map[string]string{"polystreams.bundle.max.records": "100000", "polystreams.bundle.max.bytes": "16777216", "statestore.cache.max.bytes": "1073741824"}})); err != nil {
		t.Errorf("249 characters and the largest bundles: %v", err)
	}
}

// Finding 6: an error answer is never much larger than its bounds: the
// first problems and a count of the others, whatever the request held.
func TestErrorAnswersAreBounded(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{})
	ctx := context.Background()
	config := map[string]string{}
	for i := range 100_000 {
		config[fmt.Sprintf("unknown.key.%06d", i)] = "v"
	}
	_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "many", Config: config}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("100,000 unknown keys: %v", err)
	}
	msg := err.Error()
	if len(msg) > 9<<10 || !strings.Contains(msg, `config key "unknown.key.000000" is not known`) || !strings.Contains(msg, "... and 99980 more problems") {
		t.Errorf("100,000 unknown keys: a %d-byte error: %.600s ... %s", len(msg), msg, msg[max(0, len(msg)-200):])
	}

	id := openSession(t, cl, "topics")
	topics := make([]string, 100_000)
	for i := range topics {
		topics[i] = "same-topic"
	}
	_, err = cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: topics}}}))
	if err == nil {
		t.Fatal("a stream of one topic named 100,000 times was built")
	}
	if msg := err.Error(); len(msg) > 9<<10 {
		t.Errorf("a topic named 100,000 times: a %d-byte error: %.300s", len(msg), msg)
	}
	// A session id is the caller's own, but a megabyte of it is not
	// echoed whole.
	_, err = cl.GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: strings.Repeat("z", 1<<20)}))
	if connect.CodeOf(err) != connect.CodeNotFound || len(err.Error()) > 300 {
		t.Errorf("a 1 MiB session id: %.300v", err)
	}
}

// Finding 5: the sessions of an engine are bounded, and a session opened
// but never started expires (here after 10 x a 100 ms session timeout).
func TestSessionsAreBoundedAndExpire(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{MaxSessions: 3, SessionTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	ids := []string{openSession(t, cl, "a"), openSession(t, cl, "b"), openSession(t, cl, "c")}
	_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "d"}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "the engine holds 3 sessions, its most (--max-sessions)") {
		t.Errorf("a fourth session: %v, want resource_exhausted", err)
	}
	// A host that restarts replaces its own session, full or not.
	ids[2] = openSession(t, cl, "c")
	waitFor(t, "never-started sessions to expire", 60*time.Second, func() bool {
		for _, id := range ids {
			if _, err := cl.GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: id})); connect.CodeOf(err) != connect.CodeNotFound {
				// Asking keeps it alive: wait without asking.
				time.Sleep(2 * time.Second)
				return false
			}
		}
		return true
	})
	openSession(t, cl, "d")
}

// A stopped session stays known until it expires (answering STATE_STOPPED)
// but no longer counts toward the bound: an engine that ran many short
// applications one after another (a test suite) is not full of finished ones.
func TestStoppedSessionsDoNotCountTowardTheBound(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{MaxSessions: 2})
	ctx := context.Background()
	for i := range 5 {
		id := openSession(t, cl, fmt.Sprintf("app-%d", i))
		if _, err := cl.Stop(ctx, connect.NewRequest(&pb.StopRequest{SessionId: id})); err != nil {
			t.Fatalf("Stop app-%d: %v", i, err)
		}
	}
	openSession(t, cl, "x")
	openSession(t, cl, "y")
	_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "z"}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a third open session: %v, want resource_exhausted", err)
	}
}

// Finding 4: a request body larger than the bound is refused before it is
// buffered: a 1 GiB body with its Content-Length is answered without
// reading it, and one without (chunked) is cut off at the bound. The
// engine's allocations while refusing stay far below the body.
func TestLargeRequestBodiesAreRefusedUnread(t *testing.T) {
	_, _, url := brokerless(t, server.Options{MaxRequestBytes: 4 << 20})
	post := func(chunked bool) (int, string, uint64) {
		t.Helper()
		body := io.LimitReader(zeros{}, 1<<30)
		req, err := http.NewRequest("POST", url+"/polystreams.v1alpha1.EngineService/OpenSession", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/proto")
		if !chunked {
			req.ContentLength = 1 << 30
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp, err := http.DefaultClient.Do(req)
		runtime.ReadMemStats(&after)
		if err != nil {
			// The engine may close the connection while the client still
			// writes: the refusal is then all the client sees.
			return 0, err.Error(), after.TotalAlloc - before.TotalAlloc
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), after.TotalAlloc - before.TotalAlloc
	}
	code, body, alloc := post(false)
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"code":"resource_exhausted"`) || !strings.Contains(body, "request body of 1073741824 bytes is larger than configured max 4194304") {
		t.Errorf("1 GiB with Content-Length: %d %s", code, body)
	}
	// The client's writes and the test's own allocations count too: the
	// bound is far below the 1 GiB body and below the 4 MiB request bound.
	if alloc > 2<<20 {
		t.Errorf("refusing a 1 GiB body with Content-Length allocated %d bytes", alloc)
	}
	code, body, alloc = post(true)
	if code != 0 && (code != http.StatusTooManyRequests || !strings.Contains(body, "resource_exhausted")) {
		t.Errorf("1 GiB chunked: %d %s", code, body)
	}
	if alloc > 64<<20 {
		t.Errorf("refusing a 1 GiB chunked body allocated %d bytes", alloc)
	}
	// Sixteen at once: together they may hold the bound (4 MiB), not 16
	// times it; each is refused. The peak of the live heap (sampled, with
	// the collector made eager) is what they cost at once; the total
	// allocated would count the bodies read one after another too.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	live := func() uint64 {
		metrics.Read(heap)
		return heap[0].Value.Uint64()
	}
	runtime.GC()
	base, peak := live(), uint64(0)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak = max(peak, live())
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	refused := make(chan bool, 16)
	for range 16 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url+"/polystreams.v1alpha1.EngineService/OpenSession", io.LimitReader(zeros{}, 1<<30))
			req.Header.Set("Content-Type", "application/proto")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				refused <- true
				return
			}
			resp.Body.Close()
			refused <- resp.StatusCode == http.StatusTooManyRequests
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(refused)
	for r := range refused {
		if !r {
			t.Error("one of sixteen 1 GiB chunked bodies was not refused")
		}
	}
	if peak-base > 40<<20 {
		t.Errorf("refusing sixteen 1 GiB chunked bodies at once took the live heap %d bytes above where it was", peak-base)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
