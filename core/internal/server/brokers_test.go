package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Finding 8: a broker that stops answering (frozen: every request sleeps)
// is noticed within a bounded time: a WARN naming the brokers, the
// application's polystreams_brokers_unreachable gauge at 1 and its
// outage counted on /metrics and /ui; when the broker answers again the
// application says so and goes on by itself, and the counts are right.
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
	if metric(unreachable) != 0 || metric(outages) != 0 {
		t.Fatalf("before the freeze: unreachable %v, outages %v", metric(unreachable), metric(outages))
	}

	c := kfakeCluster(t, e.broker)
	wake := make(chan struct{})
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-wake:
		default:
			c.SleepControl(func() { <-wake })
		}
		return nil, nil, false
	})
	waitFor(t, "the brokers to count as unreachable", 60*time.Second, func() bool { return metric(unreachable) == 1 })
	warn := "brokers unreachable: no broker has answered"
	if l := logs.String(); !strings.Contains(l, "level=WARN msg=\""+warn) || !strings.Contains(l, "brokers="+e.broker.Addr()) {
		t.Errorf("no WARN naming the brokers:\n%s", l)
	}
	if st := e.srv.Status(); len(st.Applications) != 1 || !strings.Contains(st.Errors[len(st.Errors)-1].Message, warn) {
		t.Errorf("/ui does not show the outage: %+v", st.Errors)
	}
	close(wake)
	waitFor(t, "the brokers to answer again", 60*time.Second, func() bool { return metric(unreachable) == 0 })
	if got := metric(outages); got != 1 {
		t.Errorf("outages %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "brokers reachable again") {
		t.Errorf("no word of the recovery:\n%s", logs.String())
	}
	e.produce("lines", "b c")
	waitCounts(t, e, "word-counts", map[string]int64{"a": 2, "b": 2, "c": 1})
}
