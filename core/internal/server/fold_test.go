package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

func long(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeLong(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// produceLongs writes n records: key k<i%keys>, value i as a long, and
// returns each key's sum.
func (e *env) produceLongs(topic string, n, keys int) map[string]int64 {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	sums := map[string]int64{}
	var rs []*kgo.Record
	for i := range n {
		k := fmt.Sprintf("k%d", i%keys)
		sums[k] += int64(i)
		rs = append(rs, &kgo.Record{Key: []byte(k), Value: long(int64(i))})
	}
	rs = append(rs, &kgo.Record{Key: []byte("k0")}, &kgo.Record{Value: long(1000)}) // skipped: null value, null key
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
	return sums
}

// Sums per key three ways — a host reducer, a host aggregator and the
// built-in sum — must all equal the sums computed here; a hot key (one key
// for every record) crosses in bundles, not per record.
func TestReduceAndAggregateFoldPerBundle(t *testing.T) {
	cases := []struct {
		name  string
		keys  int
		build func(h *testHost, grouped uint64) *pb.Handle
	}{
		{"host reduce", 10, func(h *testHost, g uint64) *pb.Handle {
			sum := h.register("sum", reduceFn(func(a, v []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
			return h.mustBuildOp(&pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: g, Token: sum}})
		}},
		{"host reduce, one hot key", 1, func(h *testHost, g uint64) *pb.Handle {
			sum := h.register("sum", reduceFn(func(a, v []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
			return h.mustBuildOp(&pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: g, Token: sum}})
		}},
		{"host aggregate", 10, func(h *testHost, g uint64) *pb.Handle {
			zero := h.register("zero", initFn(func() ([]byte, error) { return long(0), nil }))
			add := h.register("add", aggFn(func(_, v, a []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
			return h.mustBuildOp(&pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: g, InitializerToken: zero, AggregatorToken: add, Materialized: &pb.Materialized{ValueSerde: "long"}}})
		}},
		{"built-in sum", 10, func(h *testHost, g uint64) *pb.Handle {
			return h.mustBuildOp(&pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: g, Builtin: pb.Reducer_REDUCER_SUM}})
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, out := fmt.Sprintf("amounts-%d", i), fmt.Sprintf("sums-%d", i)
			e := newEnv(t, in, out)
			want := e.produceLongs(in, 4000, c.keys)
			h := e.open(fmt.Sprintf("fold-%d", i), nil)
			s := h.mustBuild(&pb.StreamOp{Topics: []string{in}, KeySerde: "string", ValueSerde: "long"})
			g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
			table := c.build(h, g.Id)
			ts := h.mustBuild(&pb.ToStreamOp{Input: table.Id})
			h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
			h.start()
			done := h.serveAsync()
			waitCounts(t, e, out, want)
			h.stop()
			if got := <-done; !strings.HasPrefix(got, "STATE_STOPPED") {
				t.Fatalf("ended with %q", got)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if strings.HasPrefix(c.name, "built-in") && h.bundles != 0 {
				t.Errorf("a built-in reduce crossed %d bundles; it must never cross", h.bundles)
			}
			if strings.HasPrefix(c.name, "host") && (h.records != 4000 || h.bundles*10 > h.records) {
				t.Errorf("%d records in %d bundles: a fold must cross once per bundle, not per record", h.records, h.bundles)
			}
		})
	}
}

func (h *testHost) mustBuildOp(op any) *pb.Handle {
	h.t.Helper()
	req := &pb.BuildRequest{SessionId: h.session}
	switch o := op.(type) {
	case *pb.BuildRequest_Reduce:
		req.Operation = o
	case *pb.BuildRequest_Aggregate:
		req.Operation = o
	}
	resp, err := h.cl.Build(context.Background(), connectReq(req))
	if err != nil {
		h.t.Fatalf("Build: %v", err)
	}
	return resp.Msg.Handle
}
