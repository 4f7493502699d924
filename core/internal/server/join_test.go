package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Stream-table joins end to end (KStreamKTableJoin): each order is joined
// with its customer's name as the table holds it when the order is
// processed; an inner join drops orders of unknown customers, a left join
// joins them with null. A key-changed stream is repartitioned first.
func TestStreamTableJoin(t *testing.T) {
	e := newEnv(t, "customers", "orders", "enriched", "all-orders")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for c := range 5 {
		rs = append(rs, &kgo.Record{Topic: "customers", Key: []byte(fmt.Sprintf("c%d", c)), Value: []byte(fmt.Sprintf("name%d", c))})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// With the record cache on: a join forwards every record, whatever the
	// cache holds (it is no aggregation).
	h := e.open("joins", map[string]string{"statestore.cache.max.bytes": "10485760"})
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) {
		if o == nil {
			return []byte(string(v) + ":none"), nil
		}
		return []byte(string(v) + ":" + string(o)), nil
	}))
	byCustomer := h.register("by-customer", keyFn(func(_, v []byte) ([]byte, error) { return v[:strings.IndexByte(string(v), '/')], nil }))
	tbl := h.mustBuild(&pb.TableOp{Topic: "customers", KeySerde: "string", ValueSerde: "string"})
	orders := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	keyed := h.mustBuild(&pb.SelectKeyOp{Input: orders.Id, Token: byCustomer})
	inner := h.mustBuild(&pb.JoinOp{Input: keyed.Id, Table: tbl.Id, JoinerToken: joiner})
	h.mustBuild(&pb.ToOp{Input: inner.Id, Topic: "enriched"})
	left := h.mustBuild(&pb.JoinOp{Input: keyed.Id, Table: tbl.Id, JoinerToken: joiner, Left: true, Name: "all"})
	if left.Node != "all" {
		t.Errorf("named left join node %s", left.Node)
	}
	h.mustBuild(&pb.ToOp{Input: left.Id, Topic: "all-orders"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	// The table first (the orders are processed after it: same tasks).
	waitFor(t, "the table's rows", 30*time.Second, func() bool {
		rows, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "customers-STATE-STORE-0000000000", Query: &pb.QueryRequest_All{All: true}}))
		return err == nil && len(rows.Msg.KeyLengths) == 5
	})
	rs = rs[:0]
	want, wantAll := map[string]bool{}, map[string]bool{}
	for i := range 40 {
		c := i % 7 // c5, c6: no such customer
		v := fmt.Sprintf("c%d/order%d", c, i)
		rs = append(rs, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprint(i)), Value: []byte(v)})
		if c < 5 {
			want[v+fmt.Sprintf(":name%d", c)] = true
			wantAll[v+fmt.Sprintf(":name%d", c)] = true
		} else {
			wantAll[v+":none"] = true
		}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	read := func(topic string) map[string]bool {
		got := map[string]bool{}
		e.readTopic(topic, false, func(r *kgo.Record) { got[string(r.Value)] = true })
		return got
	}
	var got, gotAll map[string]bool
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, gotAll = read("enriched"), read("all-orders"); fmt.Sprint(got) == fmt.Sprint(want) && fmt.Sprint(gotAll) == fmt.Sprint(wantAll) {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotAll) != fmt.Sprint(wantAll) {
		t.Errorf("inner join gave %d records %v,\nwant %d %v;\nleft join gave %d %v,\nwant %d %v", len(got), keys(got), len(want), keys(want), len(gotAll), keys(gotAll), len(wantAll), keys(wantAll))
	}
}

// Joining topics of different partition counts is refused when the
// application starts, naming both topics and their counts.
func TestStreamTableJoinRefusesTopicsNotCoPartitioned(t *testing.T) {
	e := newEnv(t, "orders", "out")
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, "customers"); err != nil {
		t.Fatal(err)
	}
	h := e.open("copartition", nil)
	joiner := h.register("joiner", joinFn(func(v, o []byte) ([]byte, error) { return v, nil }))
	tbl := h.mustBuild(&pb.TableOp{Topic: "customers"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"orders"}})
	j := h.mustBuild(&pb.JoinOp{Input: s.Id, Table: tbl.Id, JoinerToken: joiner})
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
	for _, w := range []string{"KSTREAM-JOIN-0000000004", `"orders" has 4`, `"customers" has 3`} {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
}
