package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/kafkatest"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

func (h *testHost) buildGlobalTable(op *pb.GlobalTableOp) (*pb.Handle, error) {
	resp, err := h.cl.Build(context.Background(), connect.NewRequest(&pb.BuildRequest{SessionId: h.session, Operation: &pb.BuildRequest_GlobalTable{GlobalTable: op}}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.Handle, nil
}

func (e *env) createTopic(name string, partitions int32) {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), partitions, 1, nil, name); err != nil {
		e.t.Fatal(err)
	}
}

// produceTo writes key=value records to explicit partitions.
func (e *env) produceTo(topic string, partition int32, kvs ...string) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(k), Value: []byte(v)}
		if v == "<tombstone>" {
			r.Value = nil
		}
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

func (h *testHost) queryAll(store string) map[string]string {
	h.t.Helper()
	resp, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: store, Query: &pb.QueryRequest_All{All: true}}))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	ko, vo := 0, 0
	for i, kl := range resp.Msg.KeyLengths {
		vl := resp.Msg.ValueLengths[i]
		out[string(resp.Msg.Keys[ko:ko+int(kl)])] = string(resp.Msg.Values[vo : vo+int(vl)])
		ko, vo = ko+int(kl), vo+int(vl)
	}
	return out
}

// buildGlobalJoin builds, in h, global_table(products) and
// stream(orders) joined with it (inner to "enriched", left to
// "all-orders"): the order's value "<product>/<n>" maps to the product key.
func buildGlobalJoin(t *testing.T, h *testHost) {
	t.Helper()
	mapper := h.register("product-of", keyFn(func(_, v []byte) ([]byte, error) {
		p, _, _ := strings.Cut(string(v), "/")
		return []byte(p), nil
	}))
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) {
		if o == nil {
			return []byte(string(v) + ":none"), nil
		}
		return []byte(string(v) + ":" + string(o)), nil
	}))
	g, err := h.buildGlobalTable(&pb.GlobalTableOp{Topic: "products", KeySerde: "string", ValueSerde: "string", Materialized: &pb.Materialized{StoreName: "products-store"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != pb.Kind_KIND_GLOBAL_TABLE || g.Store != "products-store" || g.Node != "KTABLE-SOURCE-0000000001" {
		t.Errorf("global table handle %v", g)
	}
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	inner := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner})
	if inner.Node != "KSTREAM-LEFTJOIN-0000000003" || inner.Kind != pb.Kind_KIND_STREAM {
		t.Errorf("inner global join handle %v: Kafka names it KSTREAM-LEFTJOIN- too", inner)
	}
	h.mustBuild(&pb.ToOp{Input: inner.Id, Topic: "enriched"})
	left := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner, Left: true})
	h.mustBuild(&pb.ToOp{Input: left.Id, Topic: "all-orders"})
}

func (e *env) values(topic string) map[string]string {
	got := map[string]string{}
	e.readTopic(topic, false, func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
	return got
}

func waitValues(t *testing.T, e *env, topic string, want map[string]string) {
	t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = e.values(topic); fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
	t.Errorf("%s holds %v,\nwant %v", topic, got, want)
}

// A stream of 1 partition joined with a global table of 3 (no
// co-partitioning: every instance holds every partition of the global
// topic): the global store is queryable by name with the rows of all 3
// partitions; orders join the product their value names, keep their own
// key, and see an update of the global table made after the store caught
// up. The inner join drops orders of unknown products; the left join
// joins them with null.
func TestStreamGlobalTableJoin(t *testing.T) {
	e := newEnv(t, "enriched", "all-orders")
	e.createTopic("products", 3)
	e.createTopic("orders", 1)
	for p := range int32(3) {
		e.produceTo("products", p, fmt.Sprintf("p%d=name%d", p, p), fmt.Sprintf("p%d=name%d", p+3, p+3))
	}
	h := e.open("global-join", nil)
	buildGlobalJoin(t, h)
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	wantRows := map[string]string{"p0": "name0", "p1": "name1", "p2": "name2", "p3": "name3", "p4": "name4", "p5": "name5"}
	waitFor(t, "the global store's rows", 30*time.Second, func() bool { return fmt.Sprint(h.queryAll("products-store")) == fmt.Sprint(wantRows) })
	waitFor(t, "STATE_RUNNING", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	var kvs []string
	want, wantAll := map[string]string{}, map[string]string{}
	for i := range 20 {
		p := i % 8 // p6, p7: no such product
		kvs = append(kvs, fmt.Sprintf("o%d=p%d/%d", i, p, i))
		if p < 6 {
			want[fmt.Sprint("o", i)] = fmt.Sprintf("p%d/%d:name%d", p, i, p)
			wantAll[fmt.Sprint("o", i)] = want[fmt.Sprint("o", i)]
		} else {
			wantAll[fmt.Sprint("o", i)] = fmt.Sprintf("p%d/%d:none", p, i)
		}
	}
	e.produceTo("orders", 0, kvs...)
	waitValues(t, e, "enriched", want)
	waitValues(t, e, "all-orders", wantAll)

	// An update (and a new product, and a tombstone) reaches the store
	// while running, and the orders after it.
	e.produceTo("products", 1, "p1=renamed1")
	e.produceTo("products", 2, "p7=name7", "p2=<tombstone>")
	waitFor(t, "the update in the global store", 30*time.Second, func() bool {
		rows := h.queryAll("products-store")
		_, has2 := rows["p2"]
		return rows["p1"] == "renamed1" && rows["p7"] == "name7" && !has2
	})
	e.produceTo("orders", 0, "o100=p1/100", "o101=p7/101", "o102=p2/102")
	want["o100"], want["o101"] = "p1/100:renamed1", "p7/101:name7"
	wantAll["o100"], wantAll["o101"], wantAll["o102"] = "p1/100:renamed1", "p7/101:name7", "p2/102:none"
	waitValues(t, e, "enriched", want)
	waitValues(t, e, "all-orders", wantAll)
	// As in Kafka Streams the topic is the store's changelog: no
	// "-changelog" topic is made for it.
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	topics, err := adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(topics.Names(), func(n string) bool { return strings.Contains(n, "products-store") }) {
		t.Errorf("topics %v: a global store has no changelog topic", topics.Names())
	}
}

// After a restart the global store is restored before any order is
// processed: orders waiting in their topic while the engine was down are
// all joined with the products written meanwhile, with no order joined
// against a store still restoring. Under exactly_once_v2 the global
// consumer reads read_committed. A second restart resumes from the
// checkpoint; one without the state directory restores from the topic.
func TestGlobalTableRestoredBeforeProcessing(t *testing.T) {
	e := newEnv(t, "enriched", "all-orders")
	e.createTopic("products", 3)
	e.createTopic("orders", 1)
	e.produceTo("products", 0, "p0=name0")
	want := map[string]string{}
	var orders []string
	run := func(round int) {
		t.Helper()
		var release func()
		if round == 2 && !kafkatest.Enabled() {
			// The global consumer's fetches are held: the application
			// stays Restoring, and no order is processed (kfake's request
			// interception; against real Kafka the round restores ungated).
			release = e.gateRestore("products")
		}
		h := e.open("global-restart", map[string]string{"processing.guarantee": "exactly_once_v2", "commit.interval.ms": "100"})
		buildGlobalJoin(t, h)
		h.start()
		done := h.serveAsync()
		if release != nil {
			waitFor(t, "STATE_RESTORING", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_RESTORING })
			time.Sleep(500 * time.Millisecond)
			before := len(e.values("all-orders"))
			if st := h.getState(); st.State != pb.State_STATE_RESTORING || before != len(want)-len(orders) {
				t.Errorf("while the global store restores: state %v, %d orders joined; want STATE_RESTORING and %d", st.State, before, len(want)-len(orders))
			}
			release()
		}
		waitValues(t, e, "all-orders", want)
		h.stopServing(done)
		e.stopEngine()
		e.startEngine()
	}
	run(0)
	// While the engine is down: many products (spread over 3 partitions),
	// then orders for each of them.
	for round := 1; round <= 3; round++ {
		for p := range int32(3) {
			var kvs []string
			for i := range 200 {
				kvs = append(kvs, fmt.Sprintf("r%dp%d-%d=name-%d-%d-%d", round, p, i, round, p, i))
			}
			e.produceTo("products", p, kvs...)
		}
		orders = orders[:0]
		for p := range 3 {
			for i := 0; i < 200; i += 20 {
				o := fmt.Sprintf("o%d-%d-%d", round, p, i)
				orders = append(orders, fmt.Sprintf("%s=r%dp%d-%d/x", o, round, p, i))
				want[o] = fmt.Sprintf("r%dp%d-%d/x:name-%d-%d-%d", round, p, i, round, p, i)
			}
		}
		e.produceTo("orders", 0, orders...)
		if round == 3 {
			if err := os.RemoveAll(filepath.Join(e.stateDir, "global-restart")); err != nil {
				t.Fatal(err)
			}
		}
		run(round)
	}
}

// Bad input is refused naming the offender, and the session survives: a
// global table over a topic that does not exist (at Start), a key mapper
// token never registered, a global join without a key mapper, a key
// mapper for a join with a plain table.
func TestGlobalTableBadInput(t *testing.T) {
	e := newEnv(t, "orders", "customers", "out")
	h := e.open("global-bad", nil)
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	mapper := h.register("mapper", keyFn(func(k, _ []byte) ([]byte, error) { return k, nil }))
	g, err := h.buildGlobalTable(&pb.GlobalTableOp{Topic: "no-such-topic"})
	if err != nil {
		t.Fatal(err)
	}
	tbl := h.mustBuild(&pb.TableOp{Topic: "customers"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}})
	for _, tc := range []struct {
		op   *pb.JoinOp
		code connect.Code
		want string
	}{
		{&pb.JoinOp{Input: s.Id, Table: g.Id, KeyMapperToken: 99, JoinerToken: joiner}, connect.CodeNotFound, "token 99 is not registered"},
		{&pb.JoinOp{Input: s.Id, Table: g.Id, JoinerToken: joiner}, connect.CodeInvalidArgument, fmt.Sprintf("handle %d is a global table: joining it needs a key mapper (key_mapper_token)", g.Id)},
		{&pb.JoinOp{Input: s.Id, Table: tbl.Id, KeyMapperToken: mapper, JoinerToken: joiner}, connect.CodeInvalidArgument, fmt.Sprintf("key_mapper_token %d is for joins with a global table, but handle %d is a table", mapper, tbl.Id)},
		{&pb.JoinOp{Input: s.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner, Outer: true}, connect.CodeInvalidArgument, "inner or left, not outer"},
		{&pb.JoinOp{Input: g.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner}, connect.CodeInvalidArgument, fmt.Sprintf("join needs a stream, but handle %d is a global table", g.Id)},
	} {
		_, err := h.build(tc.op)
		if connect.CodeOf(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%v): %v; want %v naming %q", tc.op, err, tc.code, tc.want)
		}
	}
	j := h.mustBuild(&pb.JoinOp{Input: s.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner})
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "out"})
	_, err = h.cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h.session}))
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		done := h.serveAsync()
		waitFor(t, "the application to fail", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_ERROR })
		msg = h.getState().Error
		h.stopServing(done)
	}
	if !strings.Contains(msg, `topic "no-such-topic" of global table KTABLE-SOURCE-0000000002`) {
		t.Errorf("Start: %q does not name the global table's missing topic", msg)
	}
}

// secondEngine starts another engine on e's broker, with its own state
// directory: another instance of an application.
func (e *env) secondEngine() polystreamsv1alpha1connect.EngineServiceClient {
	e.t.Helper()
	srv := server.New(server.Options{Brokers: e.broker.Addr(), StateDir: e.t.TempDir()})
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	hs := httptest.NewServer(mux)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Close(ctx)
		hs.Close()
	})
	return polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, hs.URL)
}

// Two instances of one application: the stream's partitions are divided
// between them, but each holds every row of the global table (every
// partition of its topic), so each joins its orders whatever product they
// name; an update reaches both.
func TestGlobalTableOnEveryInstance(t *testing.T) {
	e := newEnv(t, "enriched", "all-orders")
	e.createTopic("products", 3)
	e.createTopic("orders", 4)
	for p := range int32(3) {
		e.produceTo("products", p, fmt.Sprintf("p%d=name%d", p, p), fmt.Sprintf("p%d=name%d", p+3, p+3))
	}
	h1 := e.open("global-two", nil)
	second := *e
	second.cl = e.secondEngine()
	h2 := second.open("global-two", nil)
	wantRows := map[string]string{"p0": "name0", "p1": "name1", "p2": "name2", "p3": "name3", "p4": "name4", "p5": "name5"}
	var dones []<-chan string
	for _, h := range []*testHost{h1, h2} {
		buildGlobalJoin(t, h)
		h.start()
		dones = append(dones, h.serveAsync())
	}
	defer func() {
		for i, h := range []*testHost{h1, h2} {
			h.stopServing(dones[i])
		}
	}()
	for i, h := range []*testHost{h1, h2} {
		waitFor(t, fmt.Sprintf("instance %d's global store", i+1), 30*time.Second, func() bool {
			return fmt.Sprint(h.queryAll("products-store")) == fmt.Sprint(wantRows)
		})
	}
	// Both instances own stream partitions once the group settles.
	waitFor(t, "both instances running", 30*time.Second, func() bool {
		return h1.getState().State == pb.State_STATE_RUNNING && h2.getState().State == pb.State_STATE_RUNNING
	})
	e.produceTo("products", 2, "p2=renamed2")
	for i, h := range []*testHost{h1, h2} {
		waitFor(t, fmt.Sprintf("the update on instance %d", i+1), 30*time.Second, func() bool { return h.queryAll("products-store")["p2"] == "renamed2" })
	}
	want := map[string]string{}
	for p := range int32(4) {
		var kvs []string
		for i := range 6 {
			o := fmt.Sprintf("o%d-%d", p, i)
			kvs = append(kvs, fmt.Sprintf("%s=p%d/%d", o, i, p))
			name := fmt.Sprintf("name%d", i)
			if i == 2 {
				name = "renamed2"
			}
			want[o] = fmt.Sprintf("p%d/%d:%s", i, p, name)
		}
		e.produceTo("orders", p, kvs...)
	}
	waitValues(t, e, "all-orders", want)
}

// A record of a global table's topic that does not decode as its serde
// fails the application (the default deserialization policy), naming the
// topic, partition, offset and source node.
func TestGlobalTableUndecodableRecordFailsNamingIt(t *testing.T) {
	e := newEnv(t, "out")
	e.createTopic("rates", 2)
	e.createTopic("orders", 1)
	e.produceTo("rates", 1, "eur=12345678", "usd=abc")
	h := e.open("global-undecodable", nil)
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	mapper := h.register("mapper", keyFn(func(k, _ []byte) ([]byte, error) { return k, nil }))
	g, err := h.buildGlobalTable(&pb.GlobalTableOp{Topic: "rates", KeySerde: "string", ValueSerde: "long"})
	if err != nil {
		t.Fatal(err)
	}
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string"})
	j := h.mustBuild(&pb.JoinOp{Input: s.Id, Table: g.Id, KeyMapperToken: mapper, JoinerToken: joiner})
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "out"})
	h.start()
	done := h.serveAsync()
	waitFor(t, "the application to fail", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_ERROR })
	msg := h.getState().Error
	for _, w := range []string{"rates/1@1", "KSTREAM-SOURCE-0000000001", "value does not decode as long"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if got := <-done; !strings.HasPrefix(got, "STATE_ERROR") {
		t.Errorf("host loop ended with %q", got)
	}
}
