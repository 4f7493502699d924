package server_test

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Merge, split and repartition end to end: two topics merged, split by
// host predicates in order (the second predicate sees only what the first
// did not take), a default branch, and a repartition through a topic of
// the partition count asked for.
func TestMergeSplitRepartition(t *testing.T) {
	e := newEnv(t, "a", "b", "big", "odd", "rest")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range 200 {
		rs = append(rs, &kgo.Record{Topic: "a", Key: []byte(fmt.Sprintf("k%d", i%5)), Value: long(int64(i))})
	}
	for i := range 50 {
		rs = append(rs, &kgo.Record{Topic: "b", Key: []byte(fmt.Sprintf("k%d", i%5)), Value: long(int64(1000 + i))})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	h := e.open("splits", nil)
	var oddSawBig atomic.Bool
	big := h.register("big", predicateFn(func(_, v []byte) (bool, error) { return decodeLong(v) >= 100, nil }))
	odd := h.register("odd", predicateFn(func(_, v []byte) (bool, error) {
		if decodeLong(v) >= 100 {
			oddSawBig.Store(true)
		}
		return decodeLong(v)%2 == 1, nil
	}))
	sa := h.mustBuild(&pb.StreamOp{Topics: []string{"a"}, KeySerde: "string", ValueSerde: "long"})
	sb := h.mustBuild(&pb.StreamOp{Topics: []string{"b"}, KeySerde: "string", ValueSerde: "long"})
	m := h.mustBuild(&pb.MergeOp{Input: sa.Id, Other: sb.Id})
	if m.Node != "KSTREAM-MERGE-0000000002" {
		t.Errorf("merge node %s", m.Node)
	}
	resp, err := h.cl.Build(context.Background(), connect.NewRequest(&pb.BuildRequest{SessionId: h.session, Operation: &pb.BuildRequest_Split{Split: &pb.SplitOp{
		Input: m.Id, Name: "by-size-", DefaultBranch: true, DefaultName: "rest",
		Branches: []*pb.Branch{{PredicateToken: big, Name: "big"}, {PredicateToken: odd}},
	}}}))
	if err != nil {
		t.Fatal(err)
	}
	br := resp.Msg.Branches
	if len(br) != 3 || br[0].Node != "by-size-big" || br[1].Node != "by-size-2" || br[2].Node != "by-size-rest" {
		t.Fatalf("branches %v", br)
	}
	h.mustBuild(&pb.ToOp{Input: br[0].Id, Topic: "big"})
	h.mustBuild(&pb.ToOp{Input: br[1].Id, Topic: "odd"})
	r := h.mustBuild(&pb.RepartitionOp{Input: br[2].Id, Name: "by-key", Partitions: 3})
	h.mustBuild(&pb.ToOp{Input: r.Id, Topic: "rest"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)

	values := func(topic string) []int64 {
		var out []int64
		e.readTopic(topic, false, func(r *kgo.Record) { out = append(out, decodeLong(r.Value)) })
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	var want [3][]int64
	for i := range 200 {
		switch {
		case i >= 100:
			want[0] = append(want[0], int64(i))
		case i%2 == 1:
			want[1] = append(want[1], int64(i))
		default:
			want[2] = append(want[2], int64(i))
		}
	}
	for i := range 50 {
		want[0] = append(want[0], int64(1000+i))
	}
	waitFor(t, "every branch's records", 30*time.Second, func() bool {
		return fmt.Sprint(values("big"), values("odd"), values("rest")) == fmt.Sprint(want[0], want[1], want[2])
	})
	if oddSawBig.Load() {
		t.Error("the second predicate saw a record the first one took")
	}
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	d, err := adm.ListTopics(context.Background(), "splits-by-key-repartition")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d["splits-by-key-repartition"].Partitions); n != 3 {
		t.Errorf("repartition topic has %d partitions, want 3 (Repartitioned.withNumberOfPartitions)", n)
	}
}
