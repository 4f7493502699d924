package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/observe/logging"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Finding 2: two applications on one engine cannot control each other.
// Everything a client of the engine can read about other sessions (/ui's
// status, /metrics, /describe, the engine's log and its recent errors)
// names them by a label, never by their id; a call naming any of those
// labels, or anything else but the id the opener got, is refused as
// not found; and after all of it the other application still runs.
func TestApplicationsCannotControlEachOther(t *testing.T) {
	e, logs := newLoggedEnv(t, "orders-in", "orders-out", "payments-in", "payments-out")

	orders, payments := e.open("orders", nil), e.open("payments", nil)
	for _, h := range []*testHost{orders, payments} {
		app := map[*testHost]string{orders: "orders", payments: "payments"}[h]
		h.buildWordCount(app+"-in", app+"-out")
		h.start()
		done := h.serveAsync()
		defer h.stopServing(done)
	}
	e.produce("orders-in", "a b a")
	waitCounts(t, e, "orders-out", map[string]int64{"a": 2, "b": 1})
	// A warning that names a session: the replaced one's.
	stale := e.open("stale", nil)
	e.open("stale", nil)

	// What the payments application's client (or anyone reaching the
	// engine) can read.
	get := func(path string) string {
		resp, err := http.Get(e.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return sb.String()
	}
	status := get("/ui/api/status")
	readable := map[string]string{
		"/ui/api/status": status, "/metrics": get("/metrics"),
		"/describe": get("/describe?application.id=orders"), "log": logs.String(),
	}
	for what, text := range readable {
		for _, id := range []string{orders.session, payments.session, stale.session} {
			if strings.Contains(text, id) {
				t.Errorf("%s shows a session id, the capability to control its application", what)
			}
		}
	}
	var st server.Status
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, a := range st.Applications {
		if a.Session == "" {
			t.Errorf("status: application %s has no session label", a.ApplicationID)
		}
		labels = append(labels, a.Session)
	}
	if len(labels) != 3 || !strings.Contains(logs.String(), "session replaced") {
		t.Fatalf("status shows %d sessions, want 3 (orders, payments, stale); the log: %s", len(labels), logs.String())
	}

	// Every call on a session, with each label or a guess, is refused.
	ctx := context.Background()
	for _, id := range append(labels, "", "orders", strings.Repeat("0", 32)) {
		calls := map[string]error{}
		_, calls["Query"] = e.cl.Query(ctx, connect.NewRequest(&pb.QueryRequest{SessionId: id, Store: "KSTREAM-AGGREGATE-STATE-STORE-0000000003", Query: &pb.QueryRequest_All{All: true}}))
		_, calls["Describe"] = e.cl.Describe(ctx, connect.NewRequest(&pb.DescribeRequest{SessionId: id}))
		_, calls["GetMetrics"] = e.cl.GetMetrics(ctx, connect.NewRequest(&pb.GetMetricsRequest{SessionId: id}))
		_, calls["GetState"] = e.cl.GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: id}))
		_, calls["Exchange"] = e.cl.Exchange(ctx, connect.NewRequest(&pb.ExchangeRequest{SessionId: id, WorkerId: "intruder"}))
		_, calls["Build"] = e.cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"orders-out"}}}}))
		_, calls["Stop"] = e.cl.Stop(ctx, connect.NewRequest(&pb.StopRequest{SessionId: id}))
		for call, err := range calls {
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("%s with session %q: %v, want not_found", call, id, err)
			}
		}
	}

	// Knowing the application.id is not enough either: a session for
	// orders while its host serves it is refused, not a replacement.
	_, err := e.cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "orders"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "whose host is serving it") {
		t.Errorf("OpenSession for the live orders application: %v, want failed_precondition", err)
	}

	// The orders application runs on, and its own client controls it.
	if got := orders.getState(); got.State != pb.State_STATE_RUNNING {
		t.Errorf("orders: %v, want running", got.State)
	}
	e.produce("orders-in", "b")
	waitCounts(t, e, "orders-out", map[string]int64{"a": 2, "b": 2})
	if _, err := e.cl.GetMetrics(ctx, connect.NewRequest(&pb.GetMetricsRequest{SessionId: orders.session})); err != nil {
		t.Errorf("orders' own GetMetrics: %v", err)
	}
}

// newLoggedEnv is newEnv with the engine's log (debug level, with /ui's
// recent warnings) kept, and /metrics, /describe and /ui/api/status
// served beside the protocol.
func newLoggedEnv(t *testing.T, topics ...string) (*env, *lockedBuffer) {
	t.Helper()
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Partitions: 2, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log, recent, err := logging.New(logs, "text", slog.LevelDebug)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	e.srv = server.New(server.Options{Brokers: b.Addr(), StateDir: e.stateDir, Logger: log, Recent: recent, SessionTimeout: time.Minute})
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	mux.Handle("/metrics", e.srv.MetricsHandler())
	mux.Handle("/describe", e.srv.DescribeHandler())
	mux.Handle("/ui/api/status", e.srv.StatusHandler())
	e.http = httptest.NewServer(mux)
	e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, e.http.URL)
	t.Cleanup(func() {
		e.stopEngine()
		b.Close()
	})
	return e, logs
}
