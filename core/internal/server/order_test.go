package server_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/polystreams/polystreams/core/internal/kafkatest"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A stream-table join whose stream records were produced (so fetched)
// before the table's updates: each order joins the row the table held at
// the order's timestamp, as Kafka Streams' PartitionGroup.nextRecord
// processes a task's partitions by head timestamp; it waits until both
// topics' records are fetched (max.task.idle.ms 0), whatever the order of
// the fetches.
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
	h := e.open("order", nil)
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

// A co-partitioned stream-table join started after both topics were
// filled, the table first: every event joins its table row, as Kafka
// Streams' default max.task.idle.ms = 0 gives (a task waits until each of
// its partitions has buffered records or is fetched to its end before it
// picks the next record by timestamp). The table holds more than one
// fetch's worth per partition (4 MiB of rows per partition; a fetch brings
// at most max.partition.fetch.bytes, 1 MiB, of a partition), so without
// the wait the events, fetched with the table's first part and stamped
// after all of it, were joined to a partial table: lost, not a matter of
// timing. The rows are written in a transaction, so each table partition
// ends with a transaction marker, which the consumer must count in its
// position. Left join: an event that missed its row comes out with
// "none", so a loss is seen as soon as every event is processed.
//
// On kfake the table's fetches are held back (holdFetches) until the
// engine asks the broker for the table partitions' offsets (the lag of a
// partition it has fetched nothing of) or writes an output: the events are
// then surely fetched first, and an engine that does not wait joins them
// all to an empty table. Against Apache Kafka the fetches are as they
// come.
func TestStreamTableJoinReadsTheTableBeforeLaterEventsAtStartup(t *testing.T) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) {
			const keys, rowBytes = 4000, 4 << 10
			e := newEnv(t, "rates", "events", "joined")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			txn, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.TransactionalID("rates-writer"), kgo.DefaultProduceTopic("rates"))
			if err != nil {
				t.Fatal(err)
			}
			defer txn.Close()
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("x", rowBytes)
			var rows []*kgo.Record
			for k := range keys {
				rows = append(rows, &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "r%d|%s", k, pad), Timestamp: time.UnixMilli(int64(1000 + k))})
			}
			if err := txn.ProduceSync(ctx, rows...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("events"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			committed := guarantee == "exactly_once_v2"
			// run writes an event per key, stamped after every row, starts
			// the application and checks that every event so far joined
			// its row.
			run := func(round int) {
				var events []*kgo.Record
				for k := range keys {
					events = append(events, &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "e%d.%d", round, k), Timestamp: time.UnixMilli(int64(1_000_000*(round+1) + k))})
				}
				if err := cl.ProduceSync(ctx, events...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				h := e.open("startup-join", map[string]string{"processing.guarantee": guarantee})
				joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) {
					if o == nil {
						return []byte(string(v) + ":none"), nil
					}
					return []byte(string(v) + ":" + string(o[:bytes.IndexByte(o, '|')])), nil
				}))
				tbl := h.mustBuild(&pb.TableOp{Topic: "rates", KeySerde: "string", ValueSerde: "string"})
				stream := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
				j := h.mustBuild(&pb.JoinOp{Input: stream.Id, Table: tbl.Id, JoinerToken: joiner, Left: true})
				h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "joined"})
				h.start()
				done := h.serveAsync()
				defer h.stopServing(done)
				want := (round + 1) * keys
				var got map[string]bool
				waitFor(t, "an output per event", time.Minute, func() bool {
					got = map[string]bool{}
					e.readTopic("joined", committed, func(r *kgo.Record) { got[string(r.Value)] = true })
					return len(got) >= want
				})
				var lost []string
				for r := range round + 1 {
					for k := range keys {
						if v := fmt.Sprintf("e%d.%d:r%d", r, k, k); !got[v] {
							lost = append(lost, v)
						}
					}
				}
				if len(lost) > 0 || len(got) != want {
					t.Errorf("round %d: %d of %d events did not join their table row (%d outputs), e.g. %v", round, len(lost), want, len(got), lost[:min(len(lost), 5)])
				}
				// Each event was taken once its table partition, all read,
				// was empty: enforced processing, as Kafka Streams counts it
				// (a batch processed again, under exactly_once_v2 after an
				// aborted transaction, counts again).
				_, text := get(t, e.srv.MetricsHandler(), "/metrics")
				n := sample(t, text, `polystreams_enforced_processing_total{application_id="startup-join"}`)
				if n < keys || !committed && n != keys {
					t.Errorf("round %d: enforced processing counted %v records, want %d", round, n, keys)
				}
			}
			if !kafkatest.Enabled() {
				holdFetches(t, e, "rates", "joined")
			}
			run(0)
			// Restarted: the table's partitions are committed at their
			// ends (at_least_once: at the transaction marker, which the
			// consumer then fetches; exactly_once_v2: past it), and its
			// rows come back from the changelog: the new events join them.
			run(1)
		})
	}
}

// holdFetches makes the kfake broker behind e leave topic out of every
// fetch (each then a full fetch, outside any fetch session, so that the
// partitions left out are asked for again) until someone lists topic's
// end offsets or writes to out.
func holdFetches(t *testing.T, e *env, topic, out string) {
	t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	details, err := adm.ListTopics(context.Background(), topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("holdFetches: metadata of %s: %v %v", topic, err, details[topic].Err)
	}
	id := details[topic].ID
	var held atomic.Bool
	held.Store(true)
	c := kfakeCluster(t, e.broker)
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range req.(*kmsg.ListOffsetsRequest).Topics {
			// The end offset (-1), not the consumer's reset to the start
			// (-2) of a partition with no committed offset.
			if rt.Topic == topic && slices.ContainsFunc(rt.Partitions, func(p kmsg.ListOffsetsRequestTopicPartition) bool { return p.Timestamp == -1 }) {
				held.Store(false)
			}
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range req.(*kmsg.ProduceRequest).Topics {
			if rt.Topic == out {
				held.Store(false)
			}
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !held.Load() {
			return nil, nil, false
		}
		f := req.(*kmsg.FetchRequest)
		f.SessionID, f.SessionEpoch = 0, -1
		f.Topics = slices.DeleteFunc(f.Topics, func(rt kmsg.FetchRequestTopic) bool { return rt.Topic == topic || rt.TopicID == id })
		return nil, nil, false
	})
}
