package engine

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
)

// The broker watch's bound, on a clock of its own: 10 s without any answer
// makes the application Degraded (not 9.9 s), the state it stands for
// comes back at the first check after an answer, and each outage is
// logged and counted once. Degraded stands for Running, Rebalancing and
// Restoring, never for Created, Stopped or Failed.
func TestBrokerWatchDegradesAfterTenSilentSeconds(t *testing.T) {
	var logs bytes.Buffer
	a := &App{cfg: config.App{ApplicationID: "app", Brokers: []string{"k1:9092", "k2:9092"}}, health: &brokerHealth{},
		log: slog.New(slog.NewTextHandler(&logs, nil)), changes: []State{Created}, changed: make(chan struct{})}
	a.setState(Running)
	t0 := time.Unix(1_000_000, 0)
	a.health.lastOK.Store(t0.UnixNano())
	check := func(at time.Duration, want State) {
		t.Helper()
		a.checkBrokers(t0.Add(at))
		if st, _ := a.State(); st != want {
			t.Fatalf("%v after the last answer: %s, want %s", at, st, want)
		}
	}
	check(9900*time.Millisecond, Running)
	check(brokerSilence, Degraded)
	b := a.Brokers()
	if !b.Unreachable || !b.Since.Equal(t0) || b.Outages != 1 || !slices.Equal(b.Brokers, []string{"k1:9092", "k2:9092"}) {
		t.Errorf("Brokers() while degraded: %+v", b)
	}
	check(30*time.Second, Degraded) // still silent: no second outage
	for _, s := range []State{Rebalancing, Running} {
		a.setState(s)
		if st, _ := a.State(); st != Degraded {
			t.Errorf("%s while the brokers are unreachable: %s, want degraded", s, st)
		}
	}
	a.health.lastOK.Store(t0.Add(31 * time.Second).UnixNano())
	check(31500*time.Millisecond, Running)
	if b := a.Brokers(); b.Unreachable || b.Outages != 1 {
		t.Errorf("Brokers() once a broker answered: %+v", b)
	}
	check(41*time.Second, Degraded) // a second outage
	a.mu.Lock()
	a.state = Stopped
	a.noteLocked()
	a.mu.Unlock()
	if st, _ := a.State(); st != Stopped {
		t.Errorf("stopped while the brokers are unreachable: %s, want stopped", st)
	}
	states, _, _ := a.Changes(0)
	want := []State{Created, Running, Degraded, Running, Degraded, Stopped}
	if !slices.Equal(states, want) {
		t.Errorf("changes %v, want %v", states, want)
	}
	if b := a.Brokers(); b.Outages != 2 {
		t.Errorf("outages %d, want 2", b.Outages)
	}
	l := logs.String()
	if n := strings.Count(l, "level=WARN msg=\"brokers unreachable"); n != 2 || !strings.Contains(l, "brokers=k1:9092,k2:9092") || !strings.Contains(l, "silent.for=10s") {
		t.Errorf("%d WARNs (want 2, naming k1:9092,k2:9092, silent for 10s):\n%s", n, l)
	}
	if n := strings.Count(l, "brokers reachable again"); n != 1 {
		t.Errorf("%d recoveries logged, want 1:\n%s", n, l)
	}
}

// At DEBUG the engine's log carries its Kafka clients' own (what a stalled
// client waits for shows only there), each line at its level.
func TestKafkaClientLogAtDebug(t *testing.T) {
	var buf bytes.Buffer
	l := kgoLog{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if l.Level() != kgo.LogLevelDebug {
		t.Errorf("kgoLog level %v, want debug", l.Level())
	}
	l.Log(kgo.LogLevelWarn, "retrying", "broker", 1)
	l.Log(kgo.LogLevelDebug, "wrote Produce v13", "err", nil)
	got := buf.String()
	for _, want := range []string{`level=WARN msg="kafka client: retrying" broker=1`, `level=DEBUG msg="kafka client: wrote Produce v13" err=<nil>`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	hasLogger := func(lvl slog.Level) bool {
		a := &App{cfg: config.App{Brokers: []string{"127.0.0.1:1"}}, log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: lvl}))}
		cl, err := kgo.NewClient(a.clientOpts()...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, ok := cl.OptValue(kgo.WithLogger).(kgoLog)
		return ok
	}
	if !hasLogger(slog.LevelDebug) || hasLogger(slog.LevelInfo) {
		t.Errorf("the Kafka client's log: at DEBUG %v, at INFO %v; want it only at DEBUG", hasLogger(slog.LevelDebug), hasLogger(slog.LevelInfo))
	}
}
