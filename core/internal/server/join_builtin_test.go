package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A stream-table join with the built-in joiner pair runs in the engine:
// the session serves zero bundles, and the output is the JSON array
// [order, customer] (left join: null for an unknown customer), as
// KStreamKTableJoinProcessor calls the joiner with a null table value in
// a left join. Built-ins change no node names: the topology describes as
// it does with a host joiner.
func TestBuiltinJoinerStreamTableNoCrossing(t *testing.T) {
	e := newEnv(t, "customers", "orders", "enriched", "all-orders")
	e.produceTo("customers", 0, "c1=ann", "c2=bob")
	h := e.open("builtin-join", nil)
	tbl := h.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	inner := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: tbl.Id, BuiltinJoiner: pb.Joiner_JOINER_PAIR})
	if inner.ValueSerde != "json" || inner.Node != "KSTREAM-JOIN-0000000004" {
		t.Errorf("pair join handle %v: want json values and Kafka's node name", inner)
	}
	h.mustBuild(&pb.ToOp{Input: inner.Id, Topic: "enriched"})
	left := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: tbl.Id, BuiltinJoiner: pb.Joiner_JOINER_PAIR, Left: true})
	h.mustBuild(&pb.ToOp{Input: left.Id, Topic: "all-orders"})
	describe := func(h interface {
		Describe(context.Context, *connect.Request[pb.DescribeRequest]) (*connect.Response[pb.DescribeResponse], error)
	}, session string) string {
		resp, err := h.Describe(context.Background(), connect.NewRequest(&pb.DescribeRequest{SessionId: session}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.String()
	}
	withBuiltin := describe(h.cl, h.session)

	// The same topology with a host joiner describes alike.
	hh := e.open("host-join", nil)
	joiner := hh.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	tbl2 := hh.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	orders2 := hh.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	hh.mustBuild(&pb.ToOp{Input: hh.mustBuild(&pb.JoinOp{Input: orders2.Id, Table: tbl2.Id, JoinerToken: joiner}).Id, Topic: "enriched"})
	hh.mustBuild(&pb.ToOp{Input: hh.mustBuild(&pb.JoinOp{Input: orders2.Id, Table: tbl2.Id, JoinerToken: joiner, Left: true}).Id, Topic: "all-orders"})
	if withHost := describe(hh.cl, hh.session); withHost != withBuiltin {
		t.Errorf("a built-in joiner changed the description:\n%s\nwith a host joiner:\n%s", withBuiltin, withHost)
	}

	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	waitFor(t, "the table's rows", 30*time.Second, func() bool { return len(h.queryAll("customers-STATE-STORE-0000000000")) == 2 })
	var kvs []string
	want, wantAll := map[string]string{}, map[string]string{}
	for i := range 300 {
		c := fmt.Sprint("c", i%3+1) // c3: no such customer
		kvs = append(kvs, fmt.Sprintf("%s=order%d", c, i))
		name := map[string]string{"c1": `"ann"`, "c2": `"bob"`, "c3": "null"}[c]
		wantAll[c] = fmt.Sprintf(`["order%d",%s]`, i, name)
		if c != "c3" {
			want[c] = wantAll[c]
		}
	}
	e.produceTo("orders", 0, kvs...)
	waitValues(t, e, "enriched", want)
	waitValues(t, e, "all-orders", wantAll)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bundles != 0 {
		t.Errorf("a built-in joiner crossed %d bundles (%d records); it must never cross", h.bundles, h.records)
	}
}

// A stream-global-table join with a host key mapper and the built-in
// joiner this: the key mapper crosses in bundles (OPERATION_SELECT_KEY),
// the joiner never (no OPERATION_VALUE_JOIN bundle). As in
// KStreamGlobalKTableJoin, an inner join drops a record whose mapped key
// the global table does not hold.
func TestBuiltinJoinerGlobalTable(t *testing.T) {
	e := newEnv(t, "enriched")
	e.createTopic("products", 2)
	e.createTopic("orders", 1)
	e.produceTo("products", 0, "p0=apple")
	e.produceTo("products", 1, "p1=pear")
	h := e.open("builtin-global", nil)
	mapper := h.register("product-of", keyFn(func(_, v []byte) ([]byte, error) {
		p, _, _ := strings.Cut(string(v), "/")
		return []byte(p), nil
	}))
	g, err := h.buildGlobalTable(&pb.GlobalTableOp{Topic: "products", KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	j := h.mustBuild(&pb.JoinOp{Input: orders.Id, Table: g.Id, KeyMapperToken: mapper, BuiltinJoiner: pb.Joiner_JOINER_OTHER})
	if j.ValueSerde != "string" {
		t.Errorf("other's result serde %q, want the global table's (string)", j.ValueSerde)
	}
	h.mustBuild(&pb.ToOp{Input: j.Id, Topic: "enriched"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	waitFor(t, "STATE_RUNNING", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	e.produceTo("orders", 0, "o1=p1/2", "o2=p9/1", "o3=p0/5")
	waitValues(t, e, "enriched", map[string]string{"o1": "pear", "o3": "apple"})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.joins != 0 || h.bundles == 0 {
		t.Errorf("%d bundles, %d of them joins: the key mapper crosses, a built-in joiner never", h.bundles, h.joins)
	}
}

// JoinOp names one joiner: both or neither is refused naming the fields;
// pair over a side of serde bytes is refused naming the side, its handle
// and serde; a value serde other than the built-in's result is refused.
func TestBuiltinJoinerRefusals(t *testing.T) {
	e := newEnv(t, "a", "b")
	h := e.open("builtin-refusals", nil)
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	raw := h.mustBuild(&pb.TableOp{Topic: "a", KeySerde: "string"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"b"}, KeySerde: "string", ValueSerde: "long"})
	for _, c := range []struct {
		name string
		op   *pb.JoinOp
		want []string
	}{
		{"both", &pb.JoinOp{Input: s.Id, Table: raw.Id, JoinerToken: joiner, BuiltinJoiner: pb.Joiner_JOINER_PAIR}, []string{"invalid_argument", fmt.Sprintf("joiner_token %d and builtin_joiner JOINER_PAIR; give one", joiner)}},
		{"neither", &pb.JoinOp{Input: s.Id, Table: raw.Id}, []string{"invalid_argument", "join names no joiner; give joiner_token"}},
		{"pair over bytes", &pb.JoinOp{Input: s.Id, Table: raw.Id, BuiltinJoiner: pb.Joiner_JOINER_PAIR}, []string{"invalid_argument", fmt.Sprintf("built-in joiner pair cannot read the other side, handle %d (%s)", raw.Id, raw.Node), "bytes values have no JSON form"}},
		{"serde differs", &pb.JoinOp{Input: s.Id, Table: raw.Id, BuiltinJoiner: pb.Joiner_JOINER_THIS, ValueSerde: "string"}, []string{"invalid_argument", "built-in joiner this makes long values, but the value serde is string"}},
		{"unknown", &pb.JoinOp{Input: s.Id, Table: raw.Id, BuiltinJoiner: 99}, []string{"invalid_argument", "builtin_joiner 99 is not known"}},
	} {
		_, err := h.build(c.op)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", c.name, err, w)
			}
		}
	}
	// The session lives on: a good join builds.
	if j := h.mustBuild(&pb.JoinOp{Input: s.Id, Table: raw.Id, BuiltinJoiner: pb.Joiner_JOINER_THIS}); j.ValueSerde != "long" {
		t.Errorf("this keeps the stream's serde, got %q", j.ValueSerde)
	}
}
