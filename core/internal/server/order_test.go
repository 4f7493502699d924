package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A stream-table join whose stream records were produced (so fetched)
// before the table's updates: each order joins the row the table held at
// the order's timestamp, as Kafka Streams' PartitionGroup.nextRecord
// processes a task's partitions by head timestamp. The linger keeps the
// task waiting until both topics' records are buffered.
func TestStreamTableJoinByTimestampEndToEnd(t *testing.T) {
	e := newEnv(t, "customers", "orders", "enriched")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := func(topic, k, v string, ms int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v), Timestamp: time.UnixMilli(ms)}
	}
	if err := cl.ProduceSync(context.Background(), at("orders", "c1", "o3", 3), at("orders", "c1", "o7", 7)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), at("customers", "c1", "alice", 2), at("customers", "c1", "alicia", 5)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	h := e.open("order", map[string]string{"polystreams.bundle.linger.ms": "1000"})
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return []byte(string(v) + "+" + string(o)), nil }))
	tbl := h.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	j := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: tbl.Id, JoinerToken: joiner})
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "enriched"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	want := "[c1=o3+alice@3 c1=o7+alicia@7]"
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got = nil
		e.readTopic("enriched", false, func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		})
		if len(got) >= 2 {
			break
		}
	}
	if fmt.Sprint(got) != want {
		t.Errorf("enriched %v, want %s", got, want)
	}
}
