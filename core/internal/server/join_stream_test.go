package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A stream-stream outer join end to end, the joiner in the host (one
// VALUE_JOIN bundle per batch, an absent side a null value): records of
// one key within 100 ms of each other join; a left record that joined
// nothing is emitted with null once stream time passes its window
// (Kafka 3.1+, no spurious left-only result before); the stores'
// changelogs are made with Kafka's configs, and the state survives an
// engine restart, from the local state or (state dir wiped) restored from
// the changelogs.
func TestStreamStreamJoin(t *testing.T) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) { testStreamStreamJoin(t, guarantee) })
	}
}

func testStreamStreamJoin(t *testing.T, guarantee string) {
	e := newEnv(t, "clicks", "views", "joined")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic, key, value string, ts int64) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []string {
		var got []string
		e.readTopic("joined", guarantee != "at_least_once", func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s:%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		})
		slices.Sort(got)
		return got
	}
	waitOut := func(what string, want ...string) {
		t.Helper()
		slices.Sort(want)
		var got []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = read(); slices.Equal(got, want) {
				return
			}
		}
		t.Fatalf("%s: joined holds %q, want %q", what, got, want)
	}
	session := func() (*testHost, <-chan string) {
		h := e.open("ssjoin", map[string]string{"commit.interval.ms": "100", "processing.guarantee": guarantee})
		joiner := h.register("joiner", joinFn(func(l, r []byte) ([]byte, error) {
			if l == nil {
				l = []byte("null")
			}
			if r == nil {
				r = []byte("null")
			}
			return []byte(string(l) + "+" + string(r)), nil
		}))
		views := h.mustBuild(&pb.StreamOp{Topics: []string{"views"}, KeySerde: "string", ValueSerde: "string"})
		clicks := h.mustBuild(&pb.StreamOp{Topics: []string{"clicks"}, KeySerde: "string", ValueSerde: "string"})
		j := h.mustBuild(&pb.JoinOp{Input: views.Id, Table: clicks.Id, JoinerToken: joiner, Outer: true,
			Windows: &pb.JoinWindows{BeforeMs: 100, AfterMs: 100}})
		if j.Node != "KSTREAM-MERGE-0000000006" {
			t.Errorf("join handle node %s", j.Node)
		}
		h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "joined"})
		d, err := h.cl.Describe(context.Background(), connect.NewRequest(&pb.DescribeRequest{SessionId: h.session}))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{
			"Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])",
			"Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-OUTERTHIS-0000000004-store])",
		} {
			if !strings.Contains(d.Msg.Text, w) {
				t.Errorf("describe lacks %q:\n%s", w, d.Msg.Text)
			}
		}
		h.start()
		return h, h.serveAsync()
	}
	h, done := session()
	produce("views", "k", "v1", 1000)
	produce("clicks", "k", "c1", 1050)
	waitOut("inner match", "k:v1+c1@1050")
	produce("views", "k", "v2", 2000)
	// Nothing for v2 yet: its window is open until stream time passes 2100.
	time.Sleep(500 * time.Millisecond)
	waitOut("v2 waits", "k:v1+c1@1050")
	h.stopServing(done)
	e.stopEngine()
	if guarantee == "at_least_once" {
		// The local state gone: the join's stores come back from their
		// changelogs (Kafka's window-store keys with seqnum, the shared
		// store's rows, the stream time).
		dir := filepath.Join(e.stateDir, "ssjoin")
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("no local state to wipe: %v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	e.startEngine()
	h, done = session()
	defer h.stopServing(done)
	// After the restart: c2 (2050) joins v2 from the restored store (and
	// takes it out of the shared store); v3 (3000) waits until c4 (3200)
	// moves stream time past its window (3000 + 100).
	produce("clicks", "k", "c2", 2050)
	waitOut("restored state joins", "k:v1+c1@1050", "k:v2+c2@2050")
	produce("views", "k", "v3", 3000)
	produce("clicks", "k", "c4", 3200)
	waitOut("v3 closes unjoined", "k:v1+c1@1050", "k:v2+c2@2050", "k:v3+null@3000")

	adm := kadm.NewClient(cl)
	cfgs, err := adm.DescribeTopicConfigs(context.Background(), "ssjoin-KSTREAM-OUTERTHIS-0000000004-store-changelog", "ssjoin-KSTREAM-OUTERSHARED-0000000004-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	// KAFKA-13345: a join window store's changelog is delete-only (its
	// rows are duplicates-retaining), kept for the store's retention
	// (before + after + grace) plus a day; the shared store's is a
	// compacted key-value changelog.
	for _, rc := range cfgs {
		got := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil {
				got[c.Key] = *c.Value
			}
		}
		want := map[string]string{"cleanup.policy": "delete", "retention.ms": "86400200"}
		if strings.Contains(rc.Name, "OUTERSHARED") {
			want = map[string]string{"cleanup.policy": "compact"}
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s %q, want %q", rc.Name, k, got[k], v)
			}
		}
	}
}

// Bad stream-stream joins fail their Build call with named errors; the
// session survives. Sides of different partition counts are refused at
// Start, naming the join, both topics and their counts.
func TestStreamStreamJoinRefusals(t *testing.T) {
	e := newEnv(t, "a", "b", "t", "out")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, "c"); err != nil {
		t.Fatal(err)
	}
	h := e.open("ssbad", nil)
	tok := h.register("j", joinFn(func(l, r []byte) ([]byte, error) { return l, nil }))
	a := h.mustBuild(&pb.StreamOp{Topics: []string{"a"}})
	b := h.mustBuild(&pb.StreamOp{Topics: []string{"b"}})
	tbl := h.mustBuild(&pb.TableOp{Topic: "t"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: a.Id})
	w := &pb.JoinWindows{BeforeMs: 10, AfterMs: 10}
	for _, c := range []struct {
		name string
		op   *pb.JoinOp
		code connect.Code
		want []string
	}{
		{"no windows", &pb.JoinOp{Input: a.Id, Table: b.Id, JoinerToken: tok}, connect.CodeInvalidArgument, []string{"join of stream handles", "needs join windows"}},
		{"windows for a stream-table join", &pb.JoinOp{Input: a.Id, Table: tbl.Id, JoinerToken: tok, Windows: w}, connect.CodeInvalidArgument, []string{"windows are for stream-stream joins", fmt.Sprintf("handle %d", tbl.Id), "table"}},
		{"negative grace", &pb.JoinOp{Input: a.Id, Table: b.Id, JoinerToken: tok, Windows: &pb.JoinWindows{BeforeMs: 10, GraceMs: -5}}, connect.CodeInvalidArgument, []string{"grace_ms -5"}},
		{"empty window", &pb.JoinOp{Input: a.Id, Table: b.Id, JoinerToken: tok, Outer: true, Windows: &pb.JoinWindows{BeforeMs: -30, AfterMs: 10}}, connect.CodeInvalidArgument, []string{"outer_join", "before_ms -30 and after_ms 10 make an empty window"}},
		{"grouped stream", &pb.JoinOp{Input: g.Id, Table: b.Id, JoinerToken: tok, Windows: w}, connect.CodeInvalidArgument, []string{"needs a stream", fmt.Sprintf("handle %d is a grouped stream", g.Id)}},
		{"left and outer", &pb.JoinOp{Input: a.Id, Table: b.Id, JoinerToken: tok, Left: true, Outer: true, Windows: w}, connect.CodeInvalidArgument, []string{"left and outer are exclusive"}},
		{"unregistered joiner", &pb.JoinOp{Input: a.Id, Table: b.Id, JoinerToken: 99, Windows: w}, connect.CodeNotFound, []string{"token 99"}},
	} {
		_, err := h.build(c.op)
		if connect.CodeOf(err) != c.code {
			t.Errorf("%s: code %v (%v), want %v", c.name, connect.CodeOf(err), err, c.code)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			}
		}
	}
	c := h.mustBuild(&pb.StreamOp{Topics: []string{"c"}})
	j := h.mustBuild(&pb.JoinOp{Input: a.Id, Table: c.Id, JoinerToken: tok, Windows: w})
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "out"})
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
	if !strings.Contains(msg, "KSTREAM-JOIN") || !strings.Contains(msg, `"a" has 4`) || !strings.Contains(msg, `"c" has 3`) {
		t.Errorf("co-partitioning refusal %q does not name the join and both topics' counts", msg)
	}
}

// Two key-changed streams of topics with different partition counts join
// through two repartition topics, which take the larger count of their
// writers so that they are co-partitioned (Kafka Streams'
// CopartitionedTopicsEnforcer); the records then meet in one task.
func TestStreamStreamJoinOfTwoRepartitionedStreams(t *testing.T) {
	e := newEnv(t, "a", "joined")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, "c"); err != nil {
		t.Fatal(err)
	}
	h := e.open("ssrekey", map[string]string{"commit.interval.ms": "100"})
	joiner := h.register("joiner", joinFn(func(l, r []byte) ([]byte, error) { return []byte(string(l) + "+" + string(r)), nil }))
	byValue := h.register("by-value", keyFn(func(_, v []byte) ([]byte, error) { return v[:1], nil }))
	a := h.mustBuild(&pb.SelectKeyOp{Input: h.mustBuild(&pb.StreamOp{Topics: []string{"a"}, KeySerde: "string", ValueSerde: "string"}).Id, Token: byValue})
	c := h.mustBuild(&pb.SelectKeyOp{Input: h.mustBuild(&pb.StreamOp{Topics: []string{"c"}, KeySerde: "string", ValueSerde: "string"}).Id, Token: byValue})
	j := h.mustBuild(&pb.JoinOp{Input: a.Id, Table: c.Id, JoinerToken: joiner, Windows: &pb.JoinWindows{BeforeMs: 60_000, AfterMs: 60_000, GraceMs: 60_000}})
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "joined"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	want := map[string]bool{}
	for i, k := range "pqrstuvw" {
		rs = append(rs,
			&kgo.Record{Topic: "a", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%cL", k)), Timestamp: time.UnixMilli(1000)},
			&kgo.Record{Topic: "c", Key: []byte(fmt.Sprint(i * 7)), Value: []byte(fmt.Sprintf("%cR", k)), Timestamp: time.UnixMilli(1000)})
		want[fmt.Sprintf("%cL+%cR", k, k)] = true
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(got) < len(want); time.Sleep(100 * time.Millisecond) {
		e.readTopic("joined", false, func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("joined %v, want %v", keys(got), keys(want))
	}
	parts, err := adm.ListTopics(context.Background(), "ssrekey-KSTREAM-KEY-SELECT-0000000001-repartition", "ssrekey-KSTREAM-KEY-SELECT-0000000003-repartition")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range parts.Sorted() {
		if len(d.Partitions) != 4 {
			t.Errorf("%s has %d partitions, want 4 (the larger writer's)", d.Topic, len(d.Partitions))
		}
	}
	if len(parts) != 2 {
		t.Errorf("repartition topics: %v", parts.Names())
	}
}
