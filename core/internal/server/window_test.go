package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// windowed reads a time-windowed key (Kafka's TimeWindowedSerializer:
// inner key, then the window start as 8 bytes big-endian).
func windowed(b []byte) string {
	n := len(b) - 8
	return fmt.Sprintf("%s@%d", b[:n], int64(binary.BigEndian.Uint64(b[n:])))
}

// buildWindowedCount builds stream(events) | groupByKey | windowedBy(10 s
// tumbling, 1 s grace) | count [| suppress] | toStream | to(out).
func (h *testHost) buildWindowedCount(out string, suppress bool) {
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 10000, GraceMs: 1000}}})
	c := h.mustBuild(&pb.CountOp{Input: w.Id, Materialized: &pb.Materialized{StoreName: "per-10s"}})
	if c.KeySerde != "windowed(string,10000)" {
		h.t.Errorf("windowed count key serde %q, want windowed(string,10000)", c.KeySerde)
	}
	if suppress {
		c = h.mustBuild(&pb.SuppressOp{Input: c.Id})
	}
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
}

// windowUpdates reads topic's records as "key@start=count" in order, once
// it has n.
func (e *env) windowUpdates(topic string, n int) []string {
	e.t.Helper()
	var got []string
	waitFor(e.t, fmt.Sprintf("%d windowed updates on %s", n, topic), 30*time.Second, func() bool {
		got = got[:0]
		e.readTopic(topic, false, func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s=%d", windowed(r.Key), decodeLong(r.Value)))
		})
		return len(got) >= n
	})
	return got
}

// A tumbling windowed count (KStreamWindowAggregate): windows aligned to
// the epoch, a record at the grace boundary still counts (window end 10000
// > stream time 10500 - grace 1000), one past it is dropped for its window
// and counted in dropped_records; keys are Kafka's time-windowed bytes.
func TestTumblingWindowCountAndGrace(t *testing.T) {
	e := newEnv(t, "events", "counts")
	h := e.open("tumbling", nil)
	h.buildWindowedCount("counts", false)
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	for _, ts := range []int64{1000, 2000, 10500, 9999, 11001, 9998} {
		e.produceAt("events", "a", "x", ts)
	}
	// Windows land in partitions by key: compare each window's updates.
	want := []string{"a@0=1", "a@0=2", "a@0=3", "a@10000=1", "a@10000=2"}
	got := e.windowUpdates("counts", len(want))
	slices.SortStableFunc(got, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, '=')], b[:strings.IndexByte(b, '=')])
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("updates %v, want %v", got, want)
	}
	waitFor(t, "the late record to be counted as dropped", 30*time.Second, func() bool {
		return h.getState().DroppedRecords == 1
	})
	if got := e.windowUpdates("counts", len(want)); len(got) != len(want) {
		t.Errorf("the late record made an update: %v", got)
	}
}

// suppress(untilWindowCloses) emits each window once, when stream time
// passes its end + grace; a window whose partition has seen nothing past
// its close stays open (no output), and a restart (state from Pebble, then
// restored from the changelog) neither re-emits nor loses a window.
func TestSuppressEmitsEachWindowOnce(t *testing.T) {
	e := newEnv(t, "events", "finals")
	const app = "suppress"
	run := func(tss []int64, want []string) {
		t.Helper()
		h := e.open(app, map[string]string{"commit.interval.ms": "100"})
		h.buildWindowedCount("finals", true)
		h.start()
		done := h.serveAsync()
		for _, ts := range tss {
			e.produceAt("events", "a", "x", ts)
		}
		got := e.windowUpdates("finals", len(want))
		// Give a wrong extra output the time to show.
		waitFor(t, "the input to be processed", 30*time.Second, func() bool {
			resp, err := e.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: h.session}))
			return err == nil && resp.Msg.State == pb.State_STATE_RUNNING
		})
		time.Sleep(300 * time.Millisecond)
		got = e.windowUpdates("finals", len(want))
		if slices.Sort(got); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("final results %v, want %v", got, want)
		}
		h.stopServing(done)
		e.stopEngine()
		e.startEngine()
	}
	// 10999 keeps [0,10000) open (10000 + 1000 > 10999); 11000 closes it.
	run([]int64{1000, 2000, 10500, 10999}, nil)
	run([]int64{9999, 11000}, []string{"a@0=3"})
	if err := os.RemoveAll(filepath.Join(e.stateDir, app)); err != nil {
		t.Fatal(err)
	}
	// Restored from the changelogs: [10000,20000) holds 3, [20000,30000)
	// stays open.
	run([]int64{21000}, []string{"a@0=3", "a@10000=3"})
}
