package streams_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/polystreams/polystreams/core/streams"
)

// A Go program's state listener hears every change, in order: Created ->
// Rebalancing -> Restoring -> Running, then Degraded while the broker is
// frozen (no request answered), Running again by itself once it answers,
// and Stopped at the end; records go through before and after.
func TestOnStateChangeHearsDegradedWhileTheBrokerIsFrozen(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	b := streams.NewBuilder()
	s, err := b.Stream([]string{"in"})
	must(err)
	m, err := s.MapValues(func(v []byte) ([]byte, error) { return []byte(strings.ToUpper(string(v))), nil })
	must(err)
	must(m.To("out"))
	app, err := streams.New(b, streams.Config{ApplicationID: "frozen", Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)

	var mu sync.Mutex
	var heard [][2]streams.State // {new, old}
	app.OnStateChange(func(newState, oldState streams.State) {
		mu.Lock()
		heard = append(heard, [2]streams.State{newState, oldState})
		mu.Unlock()
	})
	last := func() streams.State {
		mu.Lock()
		defer mu.Unlock()
		if len(heard) == 0 {
			return streams.Created
		}
		return heard[len(heard)-1][0]
	}
	waitState := func(want streams.State) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for last() != want {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("never %s; heard %v", want, heard)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(app.Start(ctx))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out"))
	must(err)
	defer cl.Close()
	read := func(want string) {
		t.Helper()
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte(want)}).FirstErr())
		for {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("reading out for %q: %v", want, err)
			}
			got := ""
			fs.EachRecord(func(r *kgo.Record) { got = string(r.Value) })
			if got == strings.ToUpper(want) {
				return
			}
		}
	}
	read("before")
	waitState(streams.Running)
	if o, ok := app.BrokerOutage(); ok {
		t.Errorf("BrokerOutage() = %+v while running", o)
	}

	wake := make(chan struct{})
	cluster.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		select {
		case <-wake:
		default:
			cluster.SleepControl(func() { <-wake })
		}
		return nil, nil, false
	})
	waitState(streams.Degraded)
	if st, err := app.State(); st != streams.Degraded || err != nil {
		t.Errorf("State() = %s, %v while the broker is frozen; want degraded", st, err)
	}
	if o, ok := app.BrokerOutage(); !ok || !slices.Equal(o.Brokers, []string{brokers}) || o.Outages != 1 || o.Since.IsZero() || o.Since.After(time.Now()) {
		t.Errorf("BrokerOutage() = %+v, %v while degraded; want brokers [%s], 1 outage, a since in the past", o, ok, brokers)
	}
	close(wake)
	waitState(streams.Running)
	if o, ok := app.BrokerOutage(); ok {
		t.Errorf("BrokerOutage() = %+v once running again", o)
	}
	read("after")
	must(app.Stop(ctx))
	waitState(streams.Stopped)

	mu.Lock()
	defer mu.Unlock()
	var states []streams.State
	for i, h := range heard {
		if i > 0 && h[1] != heard[i-1][0] || i == 0 && h[1] != streams.Created {
			t.Errorf("change %d: %s -> %s does not follow %v", i, h[1], h[0], heard[:i])
		}
		states = append(states, h[0])
	}
	i := slices.Index(states, streams.Degraded)
	if i < 0 || slices.Index(states[i+1:], streams.Degraded) >= 0 || !slices.Contains(states[:i], streams.Running) || !slices.Contains(states[i+1:], streams.Running) {
		t.Errorf("heard %v; want running, degraded once, running", states)
	}
	if states[len(states)-1] != streams.Stopped {
		t.Errorf("heard %v; want stopped last", states)
	}
}
