package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// fetched makes the records of one fetch of topic from "key=value@ts"
// specs, at offsets from first on.
func fetched(topic string, first int64, specs ...string) []*kgo.Record {
	var rs []*kgo.Record
	for i, s := range specs {
		kv, ts, _ := strings.Cut(s, "@")
		k, v, _ := strings.Cut(kv, "=")
		var ms int64
		fmt.Sscan(ts, &ms)
		r := &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v), Timestamp: time.UnixMilli(ms), Offset: first + int64(i)}
		if v == "" {
			r.Value = nil
		}
		rs = append(rs, r)
	}
	return rs
}

// fetch hands the task rs as one fetch of their topic that reached the
// partition's end: its lag is 0 once they are taken.
func (tk *task) fetch(rs []*kgo.Record) {
	next := rs[len(rs)-1].Offset + 1
	tk.enqueue(rs[0].Topic, rs, next, next)
}

// caughtUp makes every partition of the task whose lag is not known
// caught up (nothing on the broker), for tests of what a batch does, not
// of when it may be taken.
func (tk *task) caughtUp() {
	tk.in.mu.Lock()
	defer tk.in.mu.Unlock()
	for _, q := range tk.in.queues {
		if q.pos < 0 {
			q.pos, q.end = 0, 0
		}
	}
}

// taken is take's records.
func (in *inbox) taken(n int) []*kgo.Record {
	rs, _ := in.take(n)
	return rs
}

func names(rs []*kgo.Record) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s/%s@%d", r.Topic, r.Value, r.Timestamp.UnixMilli()))
	}
	return strings.Join(out, " ")
}

// newOrderTask is task 0_0 of topo (an App never started, no broker; its
// client has an unreachable seed and is only paused and resumed).
func newOrderTask(tb testing.TB, topo *topology.Topology, host Host, kv map[string]string) *task {
	tb.Helper()
	a := unstartedApp(tb, "order", kv, topo, host, nil)
	var err error
	if a.cl, err = kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.cl.Close)
	t := newTask(a, taskID{0, 0}, a.plans[0])
	openStores(t, a.db)
	t.restored.Store(true)
	return t
}

// The inbox keeps a queue per topic and takes the head record with the
// smallest timestamp first, as Kafka Streams' PartitionGroup.nextRecord
// (a PriorityQueue of RecordQueues by headRecordTimestamp); ties go to the
// topic first in name order. A partition's records stay in offset order
// even when their timestamps go back (b's 2 after its 8), as a
// RecordQueue's do. take(n) stops at n, and the rest comes next.
func TestInboxTakesTheEarliestHeadFirst(t *testing.T) {
	tk := newOrderTask(t, twoStreams(t, nil), nil, nil)
	tk.fetch(fetched("b", 0, "=b3@3", "=b4@4", "=b8@8", "=b2@2", "=b9@9"))
	tk.fetch(fetched("a", 0, "=a1@1", "=a4@4", "=a5@5", "=a12@12"))
	got := names(tk.in.taken(4))
	if want := "a/a1@1 b/b3@3 a/a4@4 b/b4@4"; got != want {
		t.Errorf("first take:\n got %s\nwant %s", got, want)
	}
	// A fetch arriving meanwhile joins its queue's tail: a6 waits behind
	// a12.
	tk.fetch(fetched("a", 4, "=a6@6"))
	got = names(tk.in.taken(100))
	if want := "a/a5@5 b/b8@8 b/b2@2 b/b9@9 a/a12@12 a/a6@6"; got != want {
		t.Errorf("second take:\n got %s\nwant %s", got, want)
	}
	if tk.in.n != 0 || tk.in.taken(10) != nil {
		t.Errorf("inbox holds %d records after taking all", tk.in.n)
	}
}

// Backpressure is per partition (Kafka Streams'
// buffered.records.per.partition): a topic whose queue reaches inboxHigh
// is paused, the other keeps fetching, and the paused one resumes once
// its queue is below half.
func TestInboxPausesAFullPartitionOnly(t *testing.T) {
	tk := newOrderTask(t, twoStreams(t, nil), nil, nil)
	high := tk.app.inboxHigh()
	var many []string
	for i := range high {
		many = append(many, fmt.Sprintf("=x@%d", 10+i))
	}
	tk.fetch(fetched("a", 0, many...))
	tk.fetch(fetched("b", 0, "=y@1", "=y@2"))
	if p := tk.app.cl.PauseFetchPartitions(nil); fmt.Sprint(p) != "map[a:[0]]" {
		t.Errorf("paused %v, want a's partition only", p)
	}
	tk.resumeIfDrained()
	if p := tk.app.cl.PauseFetchPartitions(nil); len(p) != 1 {
		t.Errorf("resumed before draining: paused %v", p)
	}
	if got := tk.in.taken(high/2 + 3); len(got) != high/2+3 || got[0].Topic != "b" || got[1].Topic != "b" {
		t.Fatalf("took %d records, first of %s", len(got), got[0].Topic)
	}
	tk.resumeIfDrained()
	if p := tk.app.cl.PauseFetchPartitions(nil); len(p) != 0 || len(tk.in.paused) != 0 {
		t.Errorf("still paused after draining below half: %v", p)
	}
}

// twoStreams is stream("a") merged with stream("b"), each record's value
// seen by a foreach into seen (nil: not looked at), and, with a host, a
// host map_values (token 1) before it.
func twoStreams(tb testing.TB, seen *[]string, host ...bool) *topology.Topology {
	tb.Helper()
	b := topology.NewBuilder()
	a, _ := b.Stream(topology.StreamOptions{Topics: []string{"a"}, KeySerde: "string", ValueSerde: "string"})
	c, _ := b.Stream(topology.StreamOptions{Topics: []string{"b"}, KeySerde: "string", ValueSerde: "string"})
	m, err := b.Merge(a.ID, c.ID, "")
	if err != nil {
		tb.Fatal(err)
	}
	if len(host) > 0 && host[0] {
		if m, err = b.MapValues(m.ID, topology.Function{Token: 1, Name: "id"}, "", ""); err != nil {
			tb.Fatal(err)
		}
	}
	if err := b.Foreach(m.ID, topology.Function{Name: "seen", Native: topology.ForeachFunc(func(_, v []byte) error {
		if seen != nil {
			*seen = append(*seen, string(v))
		}
		return nil
	})}, ""); err != nil {
		tb.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		tb.Fatal(err)
	}
	return topo
}

// A batch goes through the plan in the merged order, and each topic's
// processed offset is its last record's in the batch.
func TestProcessKeepsTheMergedOrderAndOffsets(t *testing.T) {
	var seen []string
	tk := newOrderTask(t, twoStreams(t, &seen), nil, nil)
	tk.fetch(fetched("b", 10, "=b2@2", "=b3@3", "=b7@7"))
	tk.fetch(fetched("a", 20, "=a1@1", "=a5@5"))
	if err := tk.process(context.Background(), tk.in.taken(100)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != "a1 b2 b3 a5 b7" {
		t.Errorf("processed %s, want a1 b2 b3 a5 b7", got)
	}
	if a, b := tk.offsets["a"].Offset, tk.offsets["b"].Offset; a != 22 || b != 13 {
		t.Errorf("offsets a %d, b %d; want 22, 13", a, b)
	}
}

// feed gives the fetches to the task's inbox in the order given, takes
// them all as one batch and pushes it through the plan, and returns what
// it wrote to topic "out" as key=value@ts (store changes are applied, as
// a batch that succeeded applies them).
func (tk *task) feed(tb testing.TB, fetches ...[]*kgo.Record) []string {
	tb.Helper()
	for _, f := range fetches {
		tk.fetch(f)
	}
	tk.caughtUp()
	tk.begin()
	if err := tk.pushBatch(context.Background(), tk.in.taken(tk.in.n)); err != nil {
		tb.Fatal(err)
	}
	for _, tx := range tk.stores {
		if err := tx.Part.Apply(state.Writes(tx.Dirty)); err != nil {
			tb.Fatal(err)
		}
	}
	var out []string
	for _, o := range tk.out {
		if o.Topic == "out" {
			out = append(out, fmt.Sprintf("%s=%s@%d", o.Key, text(o.Value), o.Timestamp.UnixMilli()))
		}
	}
	return out
}

// A stream-table join whose stream records were fetched before the
// table's updates: each order joins the row the table holds at its
// timestamp, since the task processes the records of both topics by
// timestamp (PartitionGroup.nextRecord), not by arrival. Before, the
// orders (first in the batch) met an empty table and the inner join
// dropped both.
func TestStreamTableJoinProcessesByTimestampAcrossTopics(t *testing.T) {
	b := topology.NewBuilder()
	tbl, _ := b.Table(topology.TableOptions{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	orders, _ := b.Stream(topology.StreamOptions{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	j, err := b.Join(orders.ID, tbl.ID, topology.Function{Name: "j", Native: topology.ValueJoinerFunc(func(v, o []byte) ([]byte, error) {
		return []byte(string(v) + "+" + text(o)), nil
	})}, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(j.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	tk := newOrderTask(t, topo, nil, nil)
	got := tk.feed(t,
		fetched("orders", 0, "c1=o3@3", "c1=o7@7"),
		fetched("customers", 0, "c1=alice@2", "c1=alicia@5"))
	if want := []string{"c1=o3+alice@3", "c1=o7+alicia@7"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("joined %q, want %q", got, want)
	}
}

// A table-table join's updates, the right table's fetched first: the join
// emits the sequence of the updates in timestamp order, as Kafka Streams
// processes them (KTableKTableInnerJoin; each result stamped with the later
// of both rows). Before, all of tb's updates met an empty ta and the
// sequence was k0=X0+Y1@2, k0=X1+Y1@4.
func TestTableTableJoinProcessesByTimestampAcrossTopics(t *testing.T) {
	tk := newJoinHarness(t, topology.TableJoinOptions{}, false, nil).t
	tk.app.cl, _ = kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	t.Cleanup(tk.app.cl.Close)
	got := tk.feed(t,
		fetched("tb", 0, "k0=Y0@2", "k0=Y1@4"),
		fetched("ta", 0, "k0=X0@1", "k0=X1@3"))
	if want := []string{"k0=X0+Y0@2", "k0=X1+Y0@3", "k0=X1+Y1@4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("joined %q, want %q", got, want)
	}
}

// countingHost answers map_values bundles with the values unchanged,
// counting crossings.
type countingHost struct {
	mu       sync.Mutex
	crossing int
}

func (h *countingHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	h.crossing++
	h.mu.Unlock()
	res := &pb.BundleResult{BundleId: b.Id, ValueLengths: b.ValueLengths, Values: b.Values}
	for range b.ValueLengths {
		res.OutputCounts = append(res.OutputCounts, 1)
	}
	return res, nil
}

// The cost of timestamp order: a host operator after the merge of two
// topics crosses once per run of one topic's records in a batch. With
// timestamps alternating record by record (runs of 1) that is one
// crossing per record; with runs of 100, one per 100; one topic, one per
// bundle. Figures in docs/design/joins.md ("Order across a task's topics").
func TestHostCrossingsFollowRunsOfOneTopic(t *testing.T) {
	const n = 2000 // records per batch, both topics together
	for _, c := range []struct {
		run, want int
	}{{1, n}, {10, n / 10}, {100, n / 100}, {n, 1}} {
		host := &countingHost{}
		tk := newOrderTask(t, twoStreams(t, nil, true), host, map[string]string{"polystreams.bundle.max.records": fmt.Sprint(n)})
		var a, b []string
		for i := range n {
			if (i/c.run)%2 == 0 {
				a = append(a, fmt.Sprintf("=v@%d", i))
			} else {
				b = append(b, fmt.Sprintf("=v@%d", i))
			}
		}
		var fs [][]*kgo.Record
		if len(b) > 0 {
			fs = append(fs, fetched("b", 0, b...))
		}
		fs = append(fs, fetched("a", 0, a...))
		tk.feed(t, fs...)
		t.Logf("runs of %d: %d records, %d crossings (%.3f per record)", c.run, n, host.crossing, float64(host.crossing)/n)
		if host.crossing != c.want {
			t.Errorf("runs of %d: %d crossings, want %d", c.run, host.crossing, c.want)
		}
	}
}
