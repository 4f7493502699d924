package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// caughtUp reports whether group has committed every record of topic.
func (e *env) caughtUp(group, topic string) bool {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		c, found := committed.Lookup(topic, o.Partition)
		ok = ok && found && c.At >= o.Offset
	})
	return ok
}

// emitOnCloseCount builds stream(events) | groupByKey | windowedBy(10 s
// tumbling, 1 s grace) | emitStrategy(onWindowClose) | count | toStream |
// to(finals).
func (h *testHost) buildEmitOnCloseCount() {
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 10000, GraceMs: 1000}}})
	w = h.mustBuild(&pb.EmitStrategyOp{Input: w.Id, Strategy: pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_CLOSE})
	if w.Kind != pb.Kind_KIND_WINDOWED_STREAM {
		h.t.Errorf("emit_strategy made a %v, want a windowed stream", w.Kind)
	}
	c := h.mustBuild(&pb.CountOp{Input: w.Id})
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "finals"})
}

// emitOnWindowClose (KIP-825) under exactly_once_v2 emits each window's
// final count once, when stream time passes its end + grace, and never an
// update; across a clean restart (state in Pebble) and a restart with the
// state directory gone (restored from the changelog, whose close-time row
// says what was emitted) it neither emits a window again nor loses one.
// Kafka Streams keeps the last emitted close time in the task's processor
// metadata for the same reason (AbstractKStreamTimeWindowAggregateProcessor
// #init: processorMetadataForKey).
func TestEmitOnWindowCloseAcrossRestarts(t *testing.T) {
	e := newEnv(t, "events", "finals")
	const app = "emit-final"
	run := func(tss []int64, want []string) {
		t.Helper()
		h := e.open(app, map[string]string{"commit.interval.ms": "100", "processing.guarantee": "exactly_once_v2"})
		h.buildEmitOnCloseCount()
		h.start()
		done := h.serveAsync()
		for _, ts := range tss {
			e.produceAt("events", "a", "x", ts)
		}
		waitFor(t, "every input to be committed", 120*time.Second, func() bool { return e.caughtUp(app, "events") })
		var got []string
		e.readTopic("finals", true, func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s=%d@%d", windowed(r.Key), decodeLong(r.Value), r.Timestamp.UnixMilli()))
		})
		// Windowed keys land in partitions by window: compare sorted.
		if slices.Sort(got); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("final results %v, want %v", got, want)
		}
		h.stopServing(done)
		e.stopEngine()
		e.startEngine()
	}
	// 10999 keeps [0,10000) open (10000 + 1000 > 10999): nothing at all.
	run([]int64{1000, 2000, 10500, 10999}, nil)
	// 9999 still counts in [0,10000); 11000 closes it: 3, stamped 9999.
	run([]int64{9999, 11000}, []string{"a@0=3@9999"})
	// After a restart, 12000 closes nothing new, and [0,10000) is not
	// emitted again.
	run([]int64{12000}, []string{"a@0=3@9999"})
	if err := os.RemoveAll(filepath.Join(e.stateDir, app)); err != nil {
		t.Fatal(err)
	}
	// Restored from the changelog: [10000,20000) closes with 4 records,
	// [0,10000) is still not emitted again; 1000 is too late and dropped.
	run([]int64{1000, 21000}, []string{"a@0=3@9999", "a@10000=4@12000"})
}
