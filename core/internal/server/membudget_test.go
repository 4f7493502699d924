package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Two applications on one engine; one holds more than its memory budget
// (polystreams.memory.max.bytes, 32 MiB) in a stream-stream join's window
// of 1 KiB rows: it fails alone, with an error naming it, the key, the
// budget and what held the memory. The other counts on, exactly, in the
// same engine process.
func TestApplicationOverItsMemoryBudgetFailsAlone(t *testing.T) {
	e := newEnv(t, "views", "clicks", "joined", "lines", "counts")

	greedy := e.open("greedy", map[string]string{"polystreams.memory.max.bytes": strconv.Itoa(32 << 20)})
	joiner := greedy.register("joiner", joinFn(func(l, r []byte) ([]byte, error) { return append(l, r...), nil }))
	views := greedy.mustBuild(&pb.StreamOp{Topics: []string{"views"}, KeySerde: "string", ValueSerde: "string"})
	clicks := greedy.mustBuild(&pb.StreamOp{Topics: []string{"clicks"}, KeySerde: "string", ValueSerde: "string"})
	// An hour either side: every view stays in the join's window.
	j := greedy.mustBuild(&pb.JoinOp{Input: views.Id, Table: clicks.Id, JoinerToken: joiner,
		Windows: &pb.JoinWindows{BeforeMs: 3_600_000, AfterMs: 3_600_000}})
	greedy.mustBuild(&pb.ToOp{Input: j.Id, Topic: "joined"})
	greedy.start()
	greedyDone := greedy.serveAsync()

	counting := e.open("counting", nil)
	counting.buildWordCount("lines", "counts")
	counting.start()
	countingDone := counting.serveAsync()
	defer counting.stopServing(countingDone)

	first, want := lines(500, 0)
	e.produce("lines", first...)
	waitCounts(t, e, "counts", want)

	// 40,000 views of 1 KiB: about 44 MB of join rows.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("views"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := []byte(strings.Repeat("v", 1024))
	for batch := range 40 {
		rs := make([]*kgo.Record, 1000)
		for i := range rs {
			n := batch*1000 + i
			rs[i] = &kgo.Record{Key: []byte("user-" + strconv.Itoa(n)), Value: value, Timestamp: time.UnixMilli(int64(1_000_000 + n))}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var ended string
	select {
	case ended = <-greedyDone:
	case <-time.After(120 * time.Second):
		t.Fatal("the application over its budget never failed")
	}
	for _, w := range []string{
		"STATE_ERROR: ",
		"engine: application greedy exceeds its memory budget: polystreams.memory.max.bytes is 33554432 (32.0 MiB) and it holds ",
		"stream-stream join windows ",
		"Pebble (block cache, memtables) 16.0 MiB",
	} {
		if !strings.Contains(ended, w) {
			t.Errorf("the application over its budget ended with %q, which lacks %q", ended, w)
		}
	}
	// GetState says the same to anyone holding the session.
	st, err := greedy.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: greedy.session}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Msg.State != pb.State_STATE_ERROR || !strings.Contains(st.Msg.Error, "exceeds its memory budget") {
		t.Errorf("GetState: %v %q", st.Msg.State, st.Msg.Error)
	}

	// The other application, in the same process, counts on exactly.
	second, more := lines(500, 3)
	e.produce("lines", second...)
	for w, n := range more {
		want[w] += n
	}
	waitCounts(t, e, "counts", want)
	st, err = counting.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: counting.session}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Msg.State != pb.State_STATE_RUNNING {
		t.Errorf("the other application is %v (%s)", st.Msg.State, st.Msg.Error)
	}
	// And the engine opens new sessions.
	e.open("after", nil)
}

// A host slower than its input: the application's bundles wait for its
// budget instead of piling up in the engine (Kafka Streams' producer and
// fetcher wait the same way); it does not fail, and its results are exact.
// The host holds every bundle it gets until the engine has no more to
// give, so what it holds at once is what the engine had in flight.
func TestSlowHostWaitsWithinTheBudget(t *testing.T) {
	e := newEnv(t, "big", "big-out")
	const budget = 40 << 20
	h := e.open("slow", map[string]string{
		"polystreams.memory.max.bytes": strconv.Itoa(budget),
		"polystreams.bundle.max.bytes": strconv.Itoa(256 << 10),
	})
	id := h.register("id", valueFn(func(v []byte) ([]byte, error) { return v, nil }))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"big"}, ValueSerde: "bytes"})
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: id})
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "big-out"})

	// 2,000 records of 32 KiB: 64 MiB, more than the budget.
	const records = 2000
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("big"), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range records {
		v := make([]byte, 32<<10)
		copy(v, fmt.Sprintf("record %d", i))
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.start()

	served, most := 0, 0
	var held []*pb.Bundle
	heldBytes := func() int {
		n := 0
		for _, b := range held {
			n += len(b.Keys) + len(b.Values)
		}
		return n
	}
	for deadline := time.Now().Add(180 * time.Second); served < records; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records served", served, records)
		}
		resp, err := h.cl.Exchange(context.Background(), connect.NewRequest(&pb.ExchangeRequest{
			SessionId: h.session, WorkerId: "slow", MaxBundles: 1000, WaitMs: 50,
		}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Msg.State == pb.State_STATE_ERROR || resp.Msg.State == pb.State_STATE_STOPPED {
			t.Fatalf("the application ended: %v %s", resp.Msg.State, resp.Msg.Error)
		}
		if len(resp.Msg.Bundles) > 0 {
			held = append(held, resp.Msg.Bundles...)
			continue // more, while the engine has them
		}
		if len(held) == 0 {
			continue
		}
		most = max(most, heldBytes())
		results := make([]*pb.BundleResult, len(held))
		for i, b := range held {
			results[i] = h.run(b)
			served += len(b.ValueLengths)
		}
		held = held[:0]
		if _, err := h.cl.Exchange(context.Background(), connect.NewRequest(&pb.ExchangeRequest{
			SessionId: h.session, WorkerId: "slow", Results: results,
		})); err != nil {
			t.Fatal(err)
		}
	}
	// One bundle goes beyond the budget at most (one is always sent).
	if most > budget+256<<10 {
		t.Errorf("the host held %d bytes of bundles at once; the budget is %d", most, budget)
	}
	t.Logf("the host held at most %.1f MiB of bundles at once", float64(most)/(1<<20))
	done := h.serveAsync()
	got := map[string]bool{}
	waitFor(t, "every record mapped", 60*time.Second, func() bool {
		e.readTopic("big-out", false, func(r *kgo.Record) { got[string(r.Key)] = strings.HasPrefix(string(r.Value), "record "+string(r.Key)) })
		return len(got) == records
	})
	for k, ok := range got {
		if !ok {
			t.Errorf("record %s came out changed", k)
		}
	}
	h.stopServing(done)
}

// polystreams.memory.max.bytes is the engine's --max-app-memory unless a
// session sets less; more, or less than the smallest budget, is refused.
func TestMemoryBudgetIsBoundedAtOpenSession(t *testing.T) {
	_, cl, _ := brokerless(t, server.Options{MaxAppMemory: 64 << 20})
	ctx := context.Background()
	resp, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "default"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Msg.Config["polystreams.memory.max.bytes"]; got != strconv.Itoa(64<<20) {
		t.Errorf("a session that sets none gets %q, want the engine's --max-app-memory", got)
	}
	resp, err = cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "less",
		Config: map[string]string{"polystreams.memory.max.bytes": strconv.Itoa(40 << 20)}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Msg.Config["polystreams.memory.max.bytes"]; got != strconv.Itoa(40<<20) {
		t.Errorf("a session that sets 40 MiB gets %q", got)
	}
	for value, want := range map[string]string{
		strconv.Itoa(128 << 20): "polystreams.memory.max.bytes: at most 67108864 on this engine (--max-app-memory)",
		"1000":                  "polystreams.memory.max.bytes: want an integer from 33554432",
	} {
		_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "more",
			Config: map[string]string{"polystreams.memory.max.bytes": value}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want invalid_argument saying %q", value, err, want)
		}
	}
	_, err = cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "typo",
		Config: map[string]string{"polystreams.memory.max.byte": "67108864"}}))
	if err == nil || !strings.Contains(err.Error(), "did you mean polystreams.memory.max.bytes?") {
		t.Errorf("a typo: %v", err)
	}
}
