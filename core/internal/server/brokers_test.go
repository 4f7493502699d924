package server_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"log/slog"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/observe/logging"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Finding 8: a broker that stops answering (frozen: every request sleeps)
// is noticed within a bounded time: the application turns STATE_DEGRADED
// (GetState naming the brokers and since when, the host's Exchange
// loop told of it once), a WARN names the brokers, the application's
// polystreams_brokers_unreachable gauge is 1, its state gauge says
// degraded and its outage is counted on /metrics and /ui; when the broker
// answers again the application is RUNNING again by itself, says so, and
// the counts are right.
func TestBrokerOutageIsVisibleAndRecovers(t *testing.T) {
	e, logs := newLoggedEnv(t, "lines", "word-counts")
	h := e.open("outage", map[string]string{"commit.interval.ms": "100"})
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	e.produce("lines", "a b a")
	waitCounts(t, e, "word-counts", map[string]int64{"a": 2, "b": 1})
	metric := func(series string) float64 {
		_, text := get(t, e.srv.MetricsHandler(), "/metrics")
		return sample(t, text, series)
	}
	unreachable := `polystreams_brokers_unreachable{application_id="outage"}`
	outages := `polystreams_broker_outages_total{application_id="outage"}`
	degraded := `polystreams_application_state{application_id="outage",state="degraded"}`
	if metric(unreachable) != 0 || metric(outages) != 0 || metric(degraded) != 0 {
		t.Fatalf("before the freeze: unreachable %v, outages %v, degraded %v", metric(unreachable), metric(outages), metric(degraded))
	}
	waitFor(t, "RUNNING", 60*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	if st := h.getState(); st.BrokerOutage != nil {
		t.Fatalf("RUNNING with a broker outage: %v", st.BrokerOutage)
	}

	c := kfakeCluster(t, e.broker)
	wake := make(chan struct{})
	frozen := time.Now()
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-wake:
		default:
			c.SleepControl(func() { <-wake })
		}
		return nil, nil, false
	})
	waitFor(t, "STATE_DEGRADED", 60*time.Second, func() bool { return h.getState().State == pb.State_STATE_DEGRADED })
	t.Logf("STATE_DEGRADED %v after the broker froze", time.Since(frozen).Round(100*time.Millisecond))
	st := h.getState()
	o := st.BrokerOutage
	if o == nil || !slices.Equal(o.Brokers, []string{e.broker.Addr()}) || o.Outages != 1 || o.SinceMs <= 0 || o.SinceMs > time.Now().UnixMilli() {
		t.Errorf("GetState in STATE_DEGRADED: broker_outage %v, want brokers [%s], 1 outage, a since_ms in the past", o, e.broker.Addr())
	}
	if metric(unreachable) != 1 || metric(degraded) != 1 || metric(outages) != 1 {
		t.Errorf("/metrics while degraded: unreachable %v, degraded %v, outages %v; want 1, 1, 1", metric(unreachable), metric(degraded), metric(outages))
	}
	warn := "brokers unreachable: no broker has answered"
	if l := logs.String(); !strings.Contains(l, "level=WARN msg=\""+warn) || !strings.Contains(l, "brokers="+e.broker.Addr()) {
		t.Errorf("no WARN naming the brokers:\n%s", l)
	}
	status := e.srv.Status()
	if len(status.Applications) != 1 || !strings.Contains(status.Errors[len(status.Errors)-1].Message, warn) {
		t.Errorf("/ui does not show the outage: %+v", status.Errors)
	} else if a := status.Applications[0]; a.State != "degraded" || !a.Brokers.Unreachable || !slices.Equal(a.Brokers.Addresses, []string{e.broker.Addr()}) {
		t.Errorf("/ui's application: state %q, brokers %+v; want degraded, unreachable, [%s]", a.State, a.Brokers, e.broker.Addr())
	}
	close(wake)
	waitFor(t, "the brokers to answer again", 60*time.Second, func() bool { return metric(unreachable) == 0 })
	waitFor(t, "RUNNING again", 60*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	if st := h.getState(); st.BrokerOutage != nil {
		t.Errorf("RUNNING again with a broker outage: %v", st.BrokerOutage)
	}
	if got := metric(outages); got != 1 {
		t.Errorf("outages %v, want 1", got)
	}
	if metric(degraded) != 0 {
		t.Errorf("the degraded state gauge is still 1")
	}
	e.produce("lines", "b c")
	waitCounts(t, e, "word-counts", map[string]int64{"a": 2, "b": 2, "c": 1})
	l := logs.String()
	if n := strings.Count(l, warn); n != 1 {
		t.Errorf("%d WARNs of the outage, want 1:\n%s", n, l)
	}
	if n := strings.Count(l, "brokers reachable again"); n != 1 {
		t.Errorf("%d words of the recovery, want 1:\n%s", n, l)
	}
	// The host heard of the outage once, in order, from its Exchange calls.
	h.mu.Lock()
	states := slices.Clone(h.states)
	h.mu.Unlock()
	i := slices.Index(states, pb.State_STATE_DEGRADED)
	if i < 1 || states[i-1] != pb.State_STATE_RUNNING || !slices.Contains(states[i+1:], pb.State_STATE_RUNNING) ||
		slices.Contains(states[i+1:], pb.State_STATE_DEGRADED) {
		t.Errorf("the host's Exchange calls told it of %v; want RUNNING, DEGRADED once, then RUNNING", states)
	}
}

// A broker that goes down (closed, nothing listening) and comes back on
// its address after the application turned degraded, under
// exactly_once_v2: STATE_DEGRADED while it is away, one WARN naming it,
// one outage counted, back to RUNNING by itself, and every count committed
// exactly once. Runs against kfake and, with POLYSTREAMS_TEST_BROKER=kafka,
// against Apache Kafka (stopped and started again on its data).
func TestBrokerDownDegradesAndRecovers(t *testing.T) {
	dataDir := t.TempDir()
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"lines", "word-counts"}, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	logs := startLoggedEngine(e)
	t.Cleanup(func() {
		e.stopEngine()
		e.broker.Close()
	})
	r := startFaultRun(t, e, "down")
	r.feed(200)
	waitFor(t, "RUNNING", 60*time.Second, func() bool { return r.h.getState().State == pb.State_STATE_RUNNING })
	waitFor(t, "processing", 60*time.Second, func() bool { return r.processed() > 0 })

	e.broker.Close()
	down := time.Now()
	waitFor(t, "STATE_DEGRADED", 60*time.Second, func() bool { return r.h.getState().State == pb.State_STATE_DEGRADED })
	t.Logf("STATE_DEGRADED %v after the broker went down", time.Since(down).Round(100*time.Millisecond))
	if o := r.h.getState().BrokerOutage; o == nil || !slices.Equal(o.Brokers, []string{addr}) || o.Outages != 1 {
		t.Errorf("broker_outage %v, want brokers [%s], 1 outage", o, addr)
	}
	if e.broker, err = startBroker(broker.Options{Addr: addr, Partitions: 4, DataDir: dataDir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "RUNNING again", 120*time.Second, func() bool { return r.h.getState().State == pb.State_STATE_RUNNING })
	r.feed(200)
	r.check() // exactly once; the session never ended
	_, text := get(t, e.srv.MetricsHandler(), "/metrics")
	if got := sample(t, text, `polystreams_broker_outages_total{application_id="down"}`); got != 1 {
		t.Errorf("outages %v, want 1", got)
	}
	l := logs.String()
	warn := "brokers unreachable: no broker has answered"
	if n := strings.Count(l, warn); n != 1 || !strings.Contains(l, "brokers="+addr) {
		t.Errorf("%d WARNs of the outage naming %s, want 1:\n%s", n, addr, l)
	}
	// Closed connections end the group membership at once: the
	// application may be REBALANCING when the silence makes it DEGRADED.
	r.h.mu.Lock()
	states := slices.Clone(r.h.states)
	r.h.mu.Unlock()
	i := slices.Index(states, pb.State_STATE_DEGRADED)
	if i < 1 || !slices.Contains(states[:i], pb.State_STATE_RUNNING) || !slices.Contains(states[i+1:], pb.State_STATE_RUNNING) ||
		slices.Contains(states[i+1:], pb.State_STATE_DEGRADED) {
		t.Errorf("the host's Exchange calls told it of %v; want RUNNING, then DEGRADED once, then RUNNING", states)
	}
	t.Logf("states the host heard of: %v", states)
}

// startLoggedEngine starts e's engine against e.broker, as newLoggedEnv
// does: its log (debug level, with /ui's recent warnings) is returned.
func startLoggedEngine(e *env) *lockedBuffer {
	e.t.Helper()
	logs := &lockedBuffer{}
	log, recent, err := logging.New(logs, "text", slog.LevelDebug)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = server.New(server.Options{Brokers: e.broker.Addr(), StateDir: e.stateDir, Logger: log, Recent: recent, SessionTimeout: time.Minute})
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	mux.Handle("/metrics", e.srv.MetricsHandler())
	e.http = httptest.NewServer(mux)
	e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, e.http.URL)
	return logs
}
