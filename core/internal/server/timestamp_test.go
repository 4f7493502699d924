package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// produceAt writes one keyed record with timestamp ts (ms) to partition 0.
func (e *env) produceAt(topic, key, value string, ts int64) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ts)}
	if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// Stores keep each row's timestamp (Kafka Streams' timestamped stores): an
// aggregation forwards max(record, previous aggregate) timestamps
// (KStreamAggregate since KIP-258), its changelog records carry the row's
// timestamp, and a store restored from the changelog keeps it: after the
// state directory is deleted, an older record still yields the newer time.
func TestAggregateTimestampsSurviveRestore(t *testing.T) {
	e := newEnv(t, "events", "event-counts")
	const app = "stamps"
	run := func(ts int64, wantCount, wantTS int64, n int) {
		t.Helper()
		h := e.open(app, map[string]string{"commit.interval.ms": "100"})
		s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
		g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
		c := h.mustBuild(&pb.CountOp{Input: g.Id})
		out := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
		h.mustBuild(&pb.ToOp{Input: out.Id, Topic: "event-counts"})
		h.start()
		done := h.serveAsync()
		e.produceAt("events", "a", "x", ts)
		var last *kgo.Record
		waitFor(t, "the count's update", 30*time.Second, func() bool {
			count := 0
			e.readTopic("event-counts", false, func(r *kgo.Record) { last = r; count++ })
			return count >= n
		})
		if got := decodeLong(last.Value); got != wantCount || last.Timestamp.UnixMilli() != wantTS {
			t.Errorf("update %d: count %d at %d, want %d at %d", n, got, last.Timestamp.UnixMilli(), wantCount, wantTS)
		}
		h.stopServing(done)
		e.stopEngine()
		e.startEngine()
	}
	run(5000, 1, 5000, 1)
	run(1000, 2, 5000, 2) // older record: the aggregate keeps the later time
	changelog := app + "-" + "KSTREAM-AGGREGATE-STATE-STORE-0000000001" + "-changelog"
	var logged []int64
	e.readTopic(changelog, false, func(r *kgo.Record) { logged = append(logged, r.Timestamp.UnixMilli()) })
	if len(logged) == 0 || logged[len(logged)-1] != 5000 {
		t.Errorf("changelog %s timestamps %v, want the last at 5000 (the row's)", changelog, logged)
	}
	if err := os.RemoveAll(filepath.Join(e.stateDir, app)); err != nil {
		t.Fatal(err)
	}
	run(2000, 3, 5000, 3) // restored from the changelog with its timestamp
}
