package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// tableJoiner joins "x" and "y" as "x+y", a null side as "null".
var tableJoiner = joinFn(func(v, o []byte) ([]byte, error) {
	s := func(b []byte) string {
		if b == nil {
			return "null"
		}
		return string(b)
	}
	return []byte(s(v) + "+" + s(o)), nil
})

// tableJoinStep is one record into a table and what each join forwards for
// it: "key=value@ts", value "null" for a tombstone.
type tableJoinStep struct {
	topic, key, value  string // value "": a tombstone
	ts                 int64
	inner, left, outer []string
}

// The update sequences of KTableKTableInnerJoin, KTableKTableLeftJoin (with
// KTableKTableRightJoin on the other side) and KTableKTableOuterJoin, with
// the record cache off (every update forwarded), on tables "ta" (this) and
// "tb" (other). Each forwarded change's timestamp is the later of the
// change's and the other side's row's (KTableKTable*Join since KIP-258:
// resultTimestamp = max). An inner join forwards a tombstone when either
// side of a joined key is deleted; a left join's other side calls the
// joiner with a null for a deleted row of the other table; a join forwards
// nothing for a change that finds nothing to join (inner: the other side
// holds nothing; left: this side holds nothing, on the other side).
func TestTableTableJoinUpdates(t *testing.T) {
	e := newEnv(t, "ta", "tb", "inner", "left", "outer")
	h := e.open("tt-joins", nil)
	joiner := h.register("joiner", tableJoiner)
	ta := h.mustBuild(&pb.TableOp{Topic: "ta", KeySerde: "string", ValueSerde: "string"})
	tb := h.mustBuild(&pb.TableOp{Topic: "tb", KeySerde: "string", ValueSerde: "string"})
	inner := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner})
	left := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Left: true, Name: "lj"})
	outer := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Outer: true, Materialized: &pb.Materialized{StoreName: "outer-joined"}})
	if inner.Kind != pb.Kind_KIND_TABLE || inner.Node != "KTABLE-MERGE-0000000006" || left.Node != "lj" || outer.Store != "outer-joined" {
		t.Fatalf("join handles: %v / %v / %v", inner, left, outer)
	}
	for topic, j := range map[string]*pb.Handle{"inner": inner, "left": left, "outer": outer} {
		s := h.mustBuild(&pb.ToStreamOp{Input: j.Id})
		h.mustBuild(&pb.ToOp{Input: s.Id, Topic: topic})
	}
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)

	steps := []tableJoinStep{
		{"ta", "k1", "a1", 10, nil, []string{"k1=a1+null@10"}, []string{"k1=a1+null@10"}},
		{"tb", "k1", "b1", 5, []string{"k1=a1+b1@10"}, []string{"k1=a1+b1@10"}, []string{"k1=a1+b1@10"}},
		{"ta", "k1", "a2", 20, []string{"k1=a2+b1@20"}, []string{"k1=a2+b1@20"}, []string{"k1=a2+b1@20"}},
		{"tb", "k2", "b2", 30, nil, nil, []string{"k2=null+b2@30"}},
		{"tb", "k1", "", 40, []string{"k1=null@40"}, []string{"k1=a2+null@40"}, []string{"k1=a2+null@40"}},
		{"ta", "k1", "", 50, nil, []string{"k1=null@50"}, []string{"k1=null@50"}},
		{"ta", "k2", "a3", 25, []string{"k2=a3+b2@30"}, []string{"k2=a3+b2@30"}, []string{"k2=a3+b2@30"}},
		{"tb", "k2", "", 60, []string{"k2=null@60"}, []string{"k2=a3+null@60"}, []string{"k2=a3+null@60"}},
	}
	want := map[string][]string{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, st := range steps {
		r := &kgo.Record{Topic: st.topic, Key: []byte(st.key), Timestamp: time.UnixMilli(st.ts)}
		if st.value != "" {
			r.Value = []byte(st.value)
		}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want["inner"] = append(want["inner"], st.inner...)
		want["left"] = append(want["left"], st.left...)
		want["outer"] = append(want["outer"], st.outer...)
		// Every step makes the outer join forward: once all three have
		// what they should, the step is processed and the next one can go
		// (records of one batch are processed topic by topic).
		var got map[string][]string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got = readJoined(e, "inner", "left", "outer")
			if len(got["inner"]) >= len(want["inner"]) && len(got["left"]) >= len(want["left"]) && len(got["outer"]) >= len(want["outer"]) || time.Now().After(deadline) {
				break
			}
		}
		for _, topic := range []string{"inner", "left", "outer"} {
			if fmt.Sprint(got[topic]) != fmt.Sprint(perKey(want[topic])) {
				t.Fatalf("after step %d (%s %s=%q@%d) %s join forwarded %v, want %v", i+1, st.topic, st.key, st.value, st.ts, topic, got[topic], want[topic])
			}
		}
	}
	// The materialized outer join is queryable: k1 deleted, k2 joined.
	resp, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "outer-joined", Query: &pb.QueryRequest_All{All: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Msg.Keys) != "k2" || string(resp.Msg.Values) != "a3+null" {
		t.Errorf("store outer-joined holds keys %q values %q, want k2 = a3+null", resp.Msg.Keys, resp.Msg.Values)
	}
}

// readJoined reads topics as "key=value@ts" lines (value "null" for a
// tombstone): key k1's in order, then k2's.
func readJoined(e *env, topics ...string) map[string][]string {
	got := map[string][]string{}
	for _, topic := range topics {
		byKey := map[string][]string{}
		e.readTopic(topic, false, func(r *kgo.Record) {
			v := "null"
			if r.Value != nil {
				v = string(r.Value)
			}
			byKey[string(r.Key)] = append(byKey[string(r.Key)], fmt.Sprintf("%s=%s@%d", r.Key, v, r.Timestamp.UnixMilli()))
		})
		// Keys land in different partitions, so only each key's order is
		// known.
		got[topic] = append(byKey["k1"], byKey["k2"]...)
	}
	return got
}

// perKey is lines of keys k1 and k2 ordered as readJoined orders them.
func perKey(lines []string) []string {
	var k1, k2 []string
	for _, l := range lines {
		if strings.HasPrefix(l, "k1=") {
			k1 = append(k1, l)
		} else {
			k2 = append(k2, l)
		}
	}
	return append(k1, k2...)
}

// Table-table joins of topics of different partition counts are refused
// when the application starts, naming the join (its merge node), both
// topics and their counts (Kafka Streams' co-partitioning TopologyException).
func TestTableTableJoinRefusesTopicsNotCoPartitioned(t *testing.T) {
	e := newEnv(t, "ta", "out")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, "tb"); err != nil {
		t.Fatal(err)
	}
	h := e.open("tt-copartition", nil)
	joiner := h.register("joiner", tableJoiner)
	ta := h.mustBuild(&pb.TableOp{Topic: "ta"})
	tb := h.mustBuild(&pb.TableOp{Topic: "tb"})
	j := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Left: true})
	h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: j.Id}).Id, Topic: "out"})
	_, err = h.cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h.session}))
	var msg string
	if err != nil {
		msg = err.Error()
	} else {
		done := h.serveAsync()
		waitFor(t, "the application to fail", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_ERROR })
		msg = h.getState().Error
		h.stopServing(done)
	}
	for _, w := range []string{"KTABLE-MERGE-0000000006", `"ta" has 4`, `"tb" has 3`, "write both tables with one partition count"} {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
}

// Bad joins fail their Build call, naming what is wrong, and leave the
// session usable.
func TestTableTableJoinRefusals(t *testing.T) {
	e := newEnv(t)
	h := e.open("tt-refusals", nil)
	joiner := h.register("joiner", tableJoiner)
	ta := h.mustBuild(&pb.TableOp{Topic: "ta"})
	tb := h.mustBuild(&pb.TableOp{Topic: "tb"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"s"}})
	grouped := h.mustBuild(&pb.GroupByOp{Input: tb.Id, Token: h.register("kv", kvFn(func(k, v []byte) ([]byte, []byte, error) { return k, v, nil }))})
	for _, tt := range []struct {
		name string
		op   *pb.JoinOp
		code connect.Code
		want []string
	}{
		{"outer stream-table join", &pb.JoinOp{Input: s.Id, Table: ta.Id, JoinerToken: joiner, Outer: true}, connect.CodeInvalidArgument,
			[]string{"Build(join)", "stream handle 3 with table handle 1", "outer joins are for stream-stream and table-table joins"}},
		{"windows on a table-table join", &pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Windows: &pb.JoinWindows{BeforeMs: 10, AfterMs: 10}}, connect.CodeInvalidArgument,
			[]string{"table handle 1 with handle 2", "windows are for stream-stream joins"}},
		{"key mapper and store name on a table-table join", &pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, KeyMapperToken: joiner, StoreName: "st"}, connect.CodeInvalidArgument,
			[]string{"key_mapper_token 1 is for stream-global-table joins", `store_name "st" is StreamJoined's`}},
		{"a grouped table", &pb.JoinOp{Input: ta.Id, Table: grouped.Id, JoinerToken: joiner}, connect.CodeInvalidArgument,
			[]string{"join needs a table, but handle 4 is a grouped table"}},
		{"left and outer", &pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Left: true, Outer: true}, connect.CodeInvalidArgument,
			[]string{"left and outer are exclusive"}},
		{"unregistered joiner", &pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: 99, Outer: true}, connect.CodeNotFound,
			[]string{"Build(join): token 99 is not registered"}},
	} {
		_, err := h.build(tt.op)
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != tt.code {
			t.Errorf("%s: got %v, want code %v", tt.name, err, tt.code)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(ce.Message(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, ce.Message(), w)
			}
		}
	}
	// The session goes on: a good join is built after the refusals, named
	// as if they had not happened (refused calls take no numbers).
	j := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner})
	if j.Node != "KTABLE-MERGE-0000000008" {
		t.Errorf("join after refusals: node %s", j.Node)
	}
}

// A join's result is an ordinary table, here with the record cache on:
// regrouped and counted (the merge and both join processors then send old
// values, so each change moves a row from one group to another), and, once
// materialized, joined with a stream and queried.
func TestTableTableJoinResultDownstreamWithCache(t *testing.T) {
	e := newEnv(t, "ta", "tb", "orders", "by-other", "enriched")
	h := e.open("tt-downstream", map[string]string{"statestore.cache.max.bytes": "10485760", "commit.interval.ms": "100"})
	joiner := h.register("joiner", tableJoiner)
	ta := h.mustBuild(&pb.TableOp{Topic: "ta", KeySerde: "string", ValueSerde: "string"})
	tb := h.mustBuild(&pb.TableOp{Topic: "tb", KeySerde: "string", ValueSerde: "string"})
	left := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Left: true})
	// Group by the other table's part: "a1+b1" counts under "b1".
	byOther := h.register("by-other", kvFn(func(k, v []byte) ([]byte, []byte, error) {
		return v[strings.IndexByte(string(v), '+')+1:], v, nil
	}))
	g := h.mustBuild(&pb.GroupByOp{Input: left.Id, Token: byOther})
	cnt := h.mustBuild(&pb.CountOp{Input: g.Id})
	h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: cnt.Id}).Id, Topic: "by-other"})
	inner := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Materialized: &pb.Materialized{StoreName: "inner-store"}})
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	enriched := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: inner.Id, JoinerToken: joiner})
	h.mustBuild(&pb.ToOp{Input: enriched.Id, Topic: "enriched"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)

	produce := func(rs ...*kgo.Record) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(topic, k, v string) *kgo.Record {
		r := &kgo.Record{Topic: topic, Key: []byte(k)}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	query := func() string {
		resp, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "inner-store", Query: &pb.QueryRequest_All{All: true}}))
		if err != nil {
			t.Fatal(err)
		}
		return string(resp.Msg.Keys) + "=" + string(resp.Msg.Values)
	}
	produce(rec("ta", "k1", "a1"), rec("ta", "k2", "a2"), rec("ta", "k3", "a3"), rec("tb", "k1", "b1"), rec("tb", "k2", "b2"))
	waitFor(t, "k1 and k2 joined in inner-store", 30*time.Second, func() bool { return len(query()) == len("k1k2=a1+b1a2+b2") })
	produce(rec("tb", "k2", ""))
	waitFor(t, "k2 deleted from inner-store", 30*time.Second, func() bool { return query() == "k1=a1+b1" })
	var counts map[string]int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if counts = e.lastCounts("by-other"); counts["b1"] == 1 && counts["null"] == 2 && counts["b2"] == 0 {
			break
		}
	}
	if counts["b1"] != 1 || counts["null"] != 2 || counts["b2"] != 0 {
		t.Errorf("left join rows counted by other side: %v, want b1 1, null 2 (k2, k3), b2 0 or none", counts)
	}
	produce(rec("orders", "k1", "o1"), rec("orders", "k2", "o2"), rec("orders", "k3", "o3"))
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(got) == 0; time.Sleep(100 * time.Millisecond) {
		got = got[:0]
		e.readTopic("enriched", false, func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	time.Sleep(300 * time.Millisecond) // anything more would show by now
	got = got[:0]
	e.readTopic("enriched", false, func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	if fmt.Sprint(got) != "[k1=o1+a1+b1]" {
		t.Errorf("orders joined with the inner join's table: %v, want [k1=o1+a1+b1]", got)
	}
}

// A joiner that fails fails its change whole: under fail (the default) the
// application stops naming the join processor and the record; under
// log_and_continue the change is skipped (no half-joined value is made up)
// and the next ones are joined.
func TestTableTableJoinerFailure(t *testing.T) {
	failing := joinFn(func(v, o []byte) ([]byte, error) {
		if string(v) == "bad" || string(o) == "bad" {
			return nil, fmt.Errorf("joiner refuses %q and %q", v, o)
		}
		return tableJoiner(v, o)
	})
	build := func(h *testHost) {
		joiner := h.register("joiner", failing)
		ta := h.mustBuild(&pb.TableOp{Topic: "ta", KeySerde: "string", ValueSerde: "string"})
		tb := h.mustBuild(&pb.TableOp{Topic: "tb", KeySerde: "string", ValueSerde: "string"})
		j := h.mustBuild(&pb.JoinOp{Input: ta.Id, Table: tb.Id, JoinerToken: joiner, Outer: true})
		h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: j.Id}).Id, Topic: "out"})
	}
	produce := func(e *env, rs ...*kgo.Record) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for _, r := range rs {
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("fail", func(t *testing.T) {
		e := newEnv(t, "ta", "tb", "out")
		h := e.open("tt-joiner-fails", nil)
		build(h)
		h.start()
		done := h.serveAsync()
		produce(e, &kgo.Record{Topic: "tb", Key: []byte("k1"), Value: []byte("bad")})
		var msg string
		select {
		case msg = <-done: // the host's loop ends with the application
		case <-time.After(30 * time.Second):
			t.Fatal("the application did not fail within 30s")
		}
		for _, w := range []string{"STATE_ERROR", "KTABLE-JOINOTHER-0000000008", "tb/", `joiner refuses "" and "bad"`} {
			if !strings.Contains(msg, w) {
				t.Errorf("failure %q does not say %q", msg, w)
			}
		}
	})
	t.Run("log_and_continue", func(t *testing.T) {
		e := newEnv(t, "ta", "tb", "out")
		h := e.open("tt-joiner-skips", map[string]string{"processing.exception.handler": "log_and_continue"})
		build(h)
		h.start()
		done := h.serveAsync()
		defer h.stopServing(done)
		produce(e, &kgo.Record{Topic: "ta", Key: []byte("k1"), Value: []byte("bad")})
		produce(e, &kgo.Record{Topic: "ta", Key: []byte("k2"), Value: []byte("a2")})
		var got []string
		waitFor(t, "k2 joined", 30*time.Second, func() bool {
			got = readJoined(e, "out")["out"]
			return len(got) > 0
		})
		time.Sleep(200 * time.Millisecond) // anything more would show by now
		if got = readJoined(e, "out")["out"]; len(got) != 1 || !strings.HasPrefix(got[0], "k2=a2+null@") {
			t.Errorf("outputs %v, want only k2's", got)
		}
		if d := h.droppedRecords(); d != 1 {
			t.Errorf("dropped_records %d, want 1", d)
		}
	})
}
