package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// anotherWith starts another engine on e's broker with opts (its broker and
// state directory filled in), logging to logs.
func (e *env) anotherWith(opts server.Options, logs io.Writer) *env {
	e.t.Helper()
	o := &env{t: e.t, broker: e.broker, stateDir: e.t.TempDir()}
	opts.Brokers, opts.StateDir = e.broker.Addr(), o.stateDir
	opts.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, os.Stderr), nil))
	o.srv = server.New(opts)
	mux := http.NewServeMux()
	mux.Handle(o.srv.Handler())
	mux.Handle("/metrics", o.srv.MetricsHandler())
	o.http = httptest.NewServer(mux)
	o.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, o.http.URL)
	e.t.Cleanup(o.stopEngine)
	return o
}

// Tasks whose operators have no host attached: an engine's tasks cross to
// the host of the session that started them, on that engine; when that
// host dies (stops calling Exchange), the tasks' bundles wait and their
// partitions stay with this instance. The engine says so in its log
// (naming the application, the bundles waiting and when the session
// expires) and in /metrics (polystreams_host_bundles_waiting,
// polystreams_host_idle_seconds); when the session expires, the
// application stops and leaves the group, and the other instance takes the
// tasks over: every count is still exact (exactly_once_v2).
func TestHostlessTasksAreReportedAndMoveOnWhenTheSessionExpires(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	var logs lockedBuffer
	a := e.anotherWith(server.Options{SessionTimeout: 15 * time.Second}, &logs)
	config := eosConfig()
	want := map[string]int64{}
	// Lines go round-robin to every partition (keyless records would go
	// to one, maybe none of a's), so that a's tasks have host work.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("lines"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	feed := func(n, offset int) {
		ls, w := lines(n, offset)
		for k, v := range w {
			want[k] += v
		}
		rs := make([]*kgo.Record, len(ls))
		for i, l := range ls {
			rs[i] = &kgo.Record{Value: []byte(l)}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	feed(1000, 0)
	ha := a.open("hostless", config)
	ha.buildWordCount("lines", "word-counts")
	ha.start()
	ctx, cancel := context.WithCancel(context.Background())
	go ha.serve(ctx)
	hb := e.open("hostless", config)
	hb.buildWordCount("lines", "word-counts")
	hb.start()
	doneB := hb.serveAsync()
	waitExactlyOnce(t, e, "word-counts", want)
	// a's host dies: nothing calls a's session any more.
	cancel()
	feed(1000, 1000)
	waitFor(t, "a's engine to report its stalled tasks", 30*time.Second, func() bool {
		return strings.Contains(logs.String(), "no host is taking bundles")
	})
	line := logs.String()[strings.Index(logs.String(), "no host is taking bundles"):]
	line = line[:strings.IndexByte(line, '\n')]
	for _, want := range []string{"application.id=hostless", "bundles.waiting=", "session.expires.in="} {
		if !strings.Contains(line, want) {
			t.Errorf("the stall's log line lacks %q: %s", want, line)
		}
	}
	resp, err := http.Get(a.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "polystreams_host_bundles_waiting{") && strings.HasSuffix(l, " 0") {
			t.Errorf("/metrics shows no bundles waiting: %s", l)
		}
	}
	if !strings.Contains(string(body), "polystreams_host_bundles_waiting{") || !strings.Contains(string(body), "polystreams_host_idle_seconds{") {
		t.Errorf("/metrics lacks polystreams_host_bundles_waiting or polystreams_host_idle_seconds")
	}
	_, status := get(t, a.srv.StatusHandler(), "/ui/api/status")
	if !strings.Contains(status, `"stalled":true`) {
		t.Errorf("/ui/api/status does not show the stall: %s", status)
	}
	// The session expires; a's application leaves the group and b counts
	// the rest, exactly once.
	waitExactlyOnceWhile(t, e, "word-counts", want, doneB)
	hb.stopServing(doneB)
}

// GetState tells the host's own program what the log, /metrics and /ui
// tell an operator (docs/scale-out.md): a session whose host workers stop
// calling Exchange while its tasks have bundles for them reports the
// bundles waiting, how long no worker called, and, after 5 s, that the
// host is stalled, while the state stays running. A host that exchanges
// reports none of it: nothing waits once its answers are in, and a worker
// waiting in Exchange for bundles is not idle however long it waits.
func TestGetStateReportsAHostThatStopsExchanging(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	h := e.open("stallstate", nil)
	h.buildWordCount("lines", "word-counts")
	if st := h.getState(); st.BundlesWaiting != 0 || st.HostIdleMs != 0 || st.HostStalled {
		t.Errorf("before Start: bundles_waiting=%d host_idle_ms=%d host_stalled=%v, want none", st.BundlesWaiting, st.HostIdleMs, st.HostStalled)
	}
	h.start()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _, _, _ = h.serve(ctx) }()
	ls, want := lines(500, 0)
	e.produce("lines", ls...)
	waitCounts(t, e, "word-counts", want)
	if st := h.getState(); st.State != pb.State_STATE_RUNNING || st.BundlesWaiting != 0 || st.HostStalled {
		t.Errorf("a serving host, its input counted: %v bundles_waiting=%d host_stalled=%v, want running with none", st.State, st.BundlesWaiting, st.HostStalled)
	}
	cancel()
	<-served
	// A worker waiting in Exchange for bundles that do not come is serving
	// the session: the host is not idle while it waits. (The worker of
	// serve, which has heard of every state change: a new worker would be
	// told of them at once rather than wait.)
	waitFor(t, "the host to be idle", 10*time.Second, func() bool { return h.getState().HostIdleMs >= 500 })
	exchanged := make(chan struct{})
	go func() {
		defer close(exchanged)
		_, _ = h.cl.Exchange(context.Background(), connect.NewRequest(&pb.ExchangeRequest{SessionId: h.session, WorkerId: "go-test", MaxBundles: 1, WaitMs: 5000}))
	}()
	time.Sleep(time.Second)
	st := h.getState()
	select {
	case <-exchanged:
		t.Fatal("the worker's Exchange returned before its 5 s wait: nothing to check the idle time against")
	default:
	}
	if st.HostIdleMs != 0 {
		t.Errorf("host_idle_ms=%d while a worker waits in Exchange, want 0", st.HostIdleMs)
	}
	<-exchanged
	// The host stops exchanging; records come, and their bundles wait.
	ls, more := lines(500, 500)
	for k, v := range more {
		want[k] += v
	}
	e.produce("lines", ls...)
	waitFor(t, "GetState to report the stalled host", 30*time.Second, func() bool { return h.getState().HostStalled })
	st = h.getState()
	if st.State != pb.State_STATE_RUNNING || st.BundlesWaiting == 0 || st.HostIdleMs < 5000 {
		t.Errorf("a stalled host: %v bundles_waiting=%d host_idle_ms=%d, want running, bundles waiting, no Exchange for 5 s or more", st.State, st.BundlesWaiting, st.HostIdleMs)
	}
	// The host comes back: the bundles are answered, the stall is over.
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)
	if st := h.getState(); st.BundlesWaiting != 0 || st.HostStalled {
		t.Errorf("the host back, its input counted: bundles_waiting=%d host_stalled=%v, want none", st.BundlesWaiting, st.HostStalled)
	}
	h.stopServing(done)
}
