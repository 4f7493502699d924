package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
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

// committed is how many records of topic group has committed.
func (e *env) committed(group, topic string) int64 {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	offsets, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return 0
	}
	var n int64
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			n += o.At
		}
	})
	return n
}

// An engine killed with SIGKILL while it aggregates with
// emitOnWindowClose under exactly_once_v2 emits each window's final count
// exactly once, and right, across the restarts: what a killed engine emitted
// in an aborted transaction is not read (read_committed), and what it
// committed, with the close time it reached, is not emitted again.
func TestKilledEngineEmitsEachFinalWindowOnce(t *testing.T) {
	bin := engineBinary(t)
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"events", "finals"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &env{t: t, broker: b}
	stateDir := t.TempDir()
	// buildEmitOnCloseCount's windows: 10 s tumbling, 1 s grace.
	const app, keys, perRound, rounds, size = "emit-kill", 20, 100000, 4, 10000
	config := map[string]string{"commit.interval.ms": "100", "processing.guarantee": "exactly_once_v2",
		"session.timeout.ms": "6000", "polystreams.bundle.max.records": "200"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := map[string]int64{} // "key@start" -> count, for the windows that close
	produce := func(from, n int) {
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			k := fmt.Sprintf("k%02d", i%keys)
			ts := int64(i) * 50 // each key: one record a second, 10 per window
			want[fmt.Sprintf("%s@%d", k, ts/size*size)]++
			rs = append(rs, &kgo.Record{Topic: "events", Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for round := range rounds {
		produce(round*perRound, perRound)
		if round == rounds-1 {
			// Every key's last record closes all its windows but its own
			// (whose count is not wanted): every partition gets one.
			var rs []*kgo.Record
			for k := range keys {
				rs = append(rs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("k%02d", k)), Value: []byte("x"), Timestamp: time.UnixMilli(1_000_000_000)})
			}
			if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cmd, url := startEngineProcess(t, bin, b.Addr(), stateDir)
		e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
		h := e.open(app, config)
		h.buildEmitOnCloseCount()
		h.start()
		ctx, cancel := context.WithCancel(context.Background())
		go h.serve(ctx)
		if round < rounds-1 {
			before := e.committed(app, "events")
			waitFor(t, "processing to commit", 60*time.Second, func() bool { return e.committed(app, "events") > before })
			time.Sleep(time.Duration(round*100) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			cancel()
			t.Logf("round %d: killed with %d of %d inputs committed", round, e.committed(app, "events"), (round+1)*perRound)
			continue
		}
		waitFor(t, "every input to be committed", 120*time.Second, func() bool { return e.caughtUp(app, "events") })
		cancel()
		h.stop()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	got := map[string][]int64{}
	e.readTopic("finals", true, func(r *kgo.Record) {
		got[windowed(r.Key)] = append(got[windowed(r.Key)], decodeLong(r.Value))
	})
	if len(got) != len(want) {
		t.Errorf("%d windows emitted, want %d", len(got), len(want))
	}
	bad := 0
	for w, n := range want {
		if c := got[w]; len(c) != 1 || c[0] != n {
			if bad++; bad <= 10 {
				t.Errorf("window %s: emitted %v, want [%d] once", w, c, n)
			}
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("window %s emitted, but it never closed", w)
		}
	}
}
