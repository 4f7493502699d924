package server_test

import (
	"context"
	"fmt"
	"maps"
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

// The foreign-key table-table join end to end (KIP-213; Kafka's
// KTableKTableForeignKeyJoinIntegrationTest covers the same cases): orders
// (3 partitions) name their customer (5 partitions), so the tables are not
// co-partitioned and every answer travels through the subscription
// registration and response topics. Inner and left join run side by side.
func TestForeignKeyJoin(t *testing.T) {
	testForeignKeyJoin(t, nil)
}

// With the record cache on, the tables' and the result's updates wait in
// the cache until a commit; the results are the same.
func TestForeignKeyJoinCached(t *testing.T) {
	testForeignKeyJoin(t, map[string]string{"statestore.cache.max.bytes": "10485760", "commit.interval.ms": "100"})
}

func testForeignKeyJoin(t *testing.T, config map[string]string) {
	e := newEnv(t, "fk-inner", "fk-left")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for topic, parts := range map[string]int32{"orders": 3, "customers": 5} {
		if _, err := adm.CreateTopic(context.Background(), parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic string, kvs ...string) {
		t.Helper()
		var rs []*kgo.Record
		for i := 0; i < len(kvs); i += 2 {
			r := &kgo.Record{Topic: topic, Key: []byte(kvs[i])}
			if kvs[i+1] != "<nil>" {
				r.Value = []byte(kvs[i+1])
			}
			rs = append(rs, r)
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	h := e.open("fkjoin", config)
	// An order's value is "<customer>|<item>"; "none" is no customer.
	customerOf := h.register("customer-of", valueFn(func(v []byte) ([]byte, error) {
		c, _, _ := strings.Cut(string(v), "|")
		if c == "none" {
			return nil, nil
		}
		return []byte(c), nil
	}))
	joiner := h.register("joiner", joinFn(func(order, customer []byte) ([]byte, error) {
		if customer == nil {
			return []byte(string(order) + "+null"), nil
		}
		return []byte(string(order) + "+" + string(customer)), nil
	}))
	orders := h.mustBuild(&pb.TableOp{Topic: "orders", KeySerde: "string", ValueSerde: "string"})
	customers := h.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	inner := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: customers.Id, ForeignKeyToken: customerOf, JoinerToken: joiner})
	if inner.Kind != pb.Kind_KIND_TABLE || inner.Node != "KTABLE-FK-JOIN-OUTPUT-0000000018" {
		t.Errorf("inner join handle %v", inner)
	}
	h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: inner.Id}).Id, Topic: "fk-inner"})
	left := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: customers.Id, ForeignKeyToken: customerOf, JoinerToken: joiner, Left: true,
		Name: "all", Materialized: &pb.Materialized{StoreName: "all-orders"}})
	if left.Node != "all-result" || left.Store != "all-orders" {
		t.Errorf("left join handle %v", left)
	}
	h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: left.Id}).Id, Topic: "fk-left"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)

	// The internal topics take the partition counts of the sides they are
	// co-partitioned with: registration the customers', response the orders'.
	waitFor(t, "internal topics", 30*time.Second, func() bool {
		d, err := adm.ListTopics(context.Background())
		if err != nil {
			return false
		}
		want := map[string]int{
			"fkjoin-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic":    5,
			"fkjoin-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic":        3,
			"fkjoin-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog": 5,
			"fkjoin-all-subscription-registration-topic":                          5,
			"fkjoin-all-subscription-response-topic":                              3,
			"fkjoin-all-subscription-store-changelog":                             5,
			"fkjoin-orders-STATE-STORE-0000000000-changelog":                      3,
			"fkjoin-customers-STATE-STORE-0000000003-changelog":                   5,
			"fkjoin-all-orders-changelog":                                         3,
		}
		for topic, n := range want {
			if len(d[topic].Partitions) != n {
				return false
			}
		}
		return true
	})

	// records reads a topic's (key, value) records, in order per key.
	records := func(topic string) map[string][]string {
		got := map[string][]string{}
		e.readTopic(topic, false, func(r *kgo.Record) {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			got[string(r.Key)] = append(got[string(r.Key)], v)
		})
		return got
	}
	last := func(all map[string][]string) map[string]string {
		out := map[string]string{}
		for k, vs := range all {
			out[k] = vs[len(vs)-1]
		}
		return out
	}
	// expect waits until the last value of each key named is as wanted in
	// both outputs.
	expect := func(phase string, wantInner, wantLeft map[string]string) {
		t.Helper()
		var gi, gl map[string]string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			gi, gl = last(records("fk-inner")), last(records("fk-left"))
			if sub(gi, wantInner) && sub(gl, wantLeft) {
				return
			}
		}
		t.Fatalf("%s: inner join's last values %v, want %v;\nleft join's %v, want %v", phase, gi, wantInner, gl, wantLeft)
	}

	// 1. Orders whose customer exists join; those of unknown customers (c5)
	// join nothing in the inner join and null in the left one.
	produce("customers", "c0", "n0", "c1", "n1", "c2", "n2", "c3", "n3", "c4", "n4")
	var rs []string
	for i := range 12 {
		rs = append(rs, fmt.Sprintf("o%d", i), fmt.Sprintf("c%d|i%d", i%6, i))
	}
	produce("orders", rs...)
	wantInner, wantLeft := map[string]string{}, map[string]string{}
	for i := range 12 {
		o, v := fmt.Sprintf("o%d", i), fmt.Sprintf("c%d|i%d", i%6, i)
		if i%6 < 5 {
			wantInner[o] = fmt.Sprintf("%s+n%d", v, i%6)
			wantLeft[o] = wantInner[o]
		} else {
			wantLeft[o] = v + "+null"
		}
	}
	expect("first joins", wantInner, wantLeft)
	if got := records("fk-inner"); got["o5"] != nil || got["o11"] != nil {
		t.Errorf("inner join emitted orders of an unknown customer: %v %v", got["o5"], got["o11"])
	}

	// 2. A customer's update re-joins every order referencing it.
	produce("customers", "c1", "N1")
	for _, o := range []string{"o1", "o7"} {
		wantInner[o] = strings.Replace(wantInner[o], "+n1", "+N1", 1)
		wantLeft[o] = wantInner[o]
	}
	expect("customer update", wantInner, wantLeft)

	// 3. An order moving to another customer unsubscribes from the old one:
	// the old customer's later updates no longer reach it.
	produce("orders", "o1", "c2|i1")
	wantInner["o1"], wantLeft["o1"] = "c2|i1+n2", "c2|i1+n2"
	expect("foreign key change", wantInner, wantLeft)
	produce("customers", "c1", "NN1")
	wantInner["o7"], wantLeft["o7"] = "c1|i7+NN1", "c1|i7+NN1"
	expect("old customer's update", wantInner, wantLeft)
	for _, topic := range []string{"fk-inner", "fk-left"} {
		for _, v := range records(topic)["o1"] {
			if strings.Contains(v, "NN1") {
				t.Errorf("%s: o1 left customer c1 but got its update: %v", topic, records(topic)["o1"])
			}
		}
	}

	// 4. A deleted order is a tombstone in both joins.
	produce("orders", "o2", "<nil>")
	wantInner["o2"], wantLeft["o2"] = "<nil>", "<nil>"
	expect("order delete", wantInner, wantLeft)

	// 5. A deleted customer: the inner join's results are tombstones, the
	// left join's are joined with null.
	produce("customers", "c3", "<nil>")
	wantInner["o3"], wantLeft["o3"] = "<nil>", "c3|i3+null"
	wantInner["o9"], wantLeft["o9"] = "<nil>", "c3|i9+null"
	expect("customer delete", wantInner, wantLeft)

	// 6. A null foreign key joins nothing: the inner join's old result is
	// removed, the left join joins with null.
	produce("orders", "o4", "none|i4")
	wantInner["o4"], wantLeft["o4"] = "<nil>", "none|i4+null"
	expect("null foreign key", wantInner, wantLeft)

	// 7. Quick changes: the answer for the intermediate value arrives after
	// the order changed again, and its hash no longer matches: it is
	// dropped, never emitted (ResponseJoinProcessorSupplier's hash check).
	produce("orders", "o0", "c2|mid", "o0", "c4|final")
	wantInner["o0"], wantLeft["o0"] = "c4|final+n4", "c4|final+n4"
	expect("quick changes", wantInner, wantLeft)
	for _, topic := range []string{"fk-inner", "fk-left"} {
		for _, v := range records(topic)["o0"] {
			if strings.Contains(v, "mid") {
				t.Errorf("%s: o0 emitted its intermediate value's stale join: %v", topic, records(topic)["o0"])
			}
		}
	}

	// The materialized left join is queryable.
	rows, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "all-orders", Query: &pb.QueryRequest_All{All: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows.Msg.KeyLengths); n != 11 { // o2 deleted
		t.Errorf("store all-orders holds %d rows, want 11", n)
	}
}

// sub reports whether got holds every key of want with its value.
func sub(got, want map[string]string) bool {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			return false
		}
	}
	return true
}

// Bad foreign-key joins are refused naming the offender; the session
// survives and builds the next call.
func TestForeignKeyJoinRefused(t *testing.T) {
	e := newEnv(t, "l", "r", "s")
	h := e.open("fkbad", nil)
	fn := h.register("f", valueFn(func(v []byte) ([]byte, error) { return v, nil }))
	j := h.register("j", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	l := h.mustBuild(&pb.TableOp{Topic: "l"})
	r := h.mustBuild(&pb.TableOp{Topic: "r"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"s"}})
	for _, tc := range []struct {
		op   *pb.JoinOp
		code connect.Code
		want string
	}{
		{&pb.JoinOp{Input: s.Id, Table: r.Id, ForeignKeyToken: fn, JoinerToken: j}, connect.CodeInvalidArgument, "left handle 3 is a stream"},
		{&pb.JoinOp{Input: l.Id, Table: r.Id, ForeignKeyToken: fn, JoinerToken: j, Windows: &pb.JoinWindows{BeforeMs: 10, AfterMs: 10}}, connect.CodeInvalidArgument, "foreign_key_token 1 makes a foreign-key table-table join, which takes no windows"},
		{&pb.JoinOp{Input: l.Id, Table: r.Id, ForeignKeyToken: 77, JoinerToken: j}, connect.CodeNotFound, "token 77 is not registered"},
		{&pb.JoinOp{Input: l.Id, Table: r.Id, ForeignKeyToken: fn, JoinerToken: 78}, connect.CodeNotFound, "token 78 is not registered"},
	} {
		_, err := h.build(tc.op)
		if connect.CodeOf(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("JoinOp %v: err %v, want %v %q", tc.op, err, tc.code, tc.want)
		}
	}
	// Nothing was taken: the next join gets the numbers a first one would.
	ok := h.mustBuild(&pb.JoinOp{Input: l.Id, Table: r.Id, ForeignKeyToken: fn, JoinerToken: j})
	if ok.Node != "KTABLE-FK-JOIN-OUTPUT-0000000019" {
		t.Errorf("join after refusals: node %s", ok.Node)
	}
}

// After a restart with the local state gone, every store of the join comes
// back from its changelog: the subscription store (a customer's update
// still reaches its orders) and the left table's (an order's foreign key
// change still unsubscribes the old customer).
func TestForeignKeyJoinRestoresItsStores(t *testing.T) {
	e := newEnv(t, "fk-out")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for topic, parts := range map[string]int32{"orders": 3, "customers": 5} {
		if _, err := adm.CreateTopic(context.Background(), parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produce := func(topic string, kvs ...string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := 0; i < len(kvs); i += 2 {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	await := func(want map[string]string) {
		t.Helper()
		var got map[string]string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			got = map[string]string{}
			e.readTopic("fk-out", false, func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
			if sub(got, want) {
				return
			}
		}
		t.Fatalf("fk-out's last values %v, want %v", got, want)
	}
	run := func(phase func()) {
		h := e.open("fkrestore", map[string]string{"commit.interval.ms": "100"})
		fk := h.register("fk", valueFn(func(v []byte) ([]byte, error) { return v, nil }))
		j := h.register("j", joinFn(func(v, o []byte) ([]byte, error) { return []byte(string(v) + ":" + string(o)), nil }))
		orders := h.mustBuild(&pb.TableOp{Topic: "orders", KeySerde: "string", ValueSerde: "string"})
		customers := h.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
		joined := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: customers.Id, ForeignKeyToken: fk, JoinerToken: j})
		h.mustBuild(&pb.ToOp{Input: h.mustBuild(&pb.ToStreamOp{Input: joined.Id}).Id, Topic: "fk-out"})
		h.start()
		done := h.serveAsync()
		phase()
		h.stop()
		<-done
		e.stopEngine()
		e.startEngine()
	}
	run(func() {
		produce("customers", "c1", "Ann", "c2", "Bob")
		produce("orders", "o1", "c1", "o2", "c1")
		await(map[string]string{"o1": "c1:Ann", "o2": "c1:Ann"})
	})
	if err := os.RemoveAll(filepath.Join(e.stateDir, "fkrestore")); err != nil {
		t.Fatal(err)
	}
	run(func() {
		produce("orders", "o2", "c2")
		await(map[string]string{"o2": "c2:Bob"})
		produce("customers", "c1", "ANN")
		await(map[string]string{"o1": "c1:ANN", "o2": "c2:Bob"})
	})
}
