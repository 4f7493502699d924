package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// TestProcessorOverTheWire runs a host processor through the server: a
// test driver session whose host declared "processors" builds
// add_state_store + process + to; the host counts per key from the
// bundle's store view and, in its stream-time punctuation, reads the store
// with the Read RPC (the engine's task answers while it waits) and forwards
// the total. A Read naming another store is InvalidArgument; one naming a
// bundle no longer in flight NotFound.
func TestProcessorOverTheWire(t *testing.T) {
	e := newEnv(t)
	h := e.openWith("proc-wire", map[string]string{"polystreams.test.driver": "true"}, "processors")
	ctx := context.Background()
	var readErrs []error
	long := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	var lastBundle uint64
	proc := procFn(func(b *pb.Bundle) *pb.BundleResult {
		lastBundle = b.Id
		res := &pb.BundleResult{BundleId: b.Id}
		op := func(kind pb.OpKind, target int32, key, value []byte, ts int64, sched uint64) {
			res.OpCounts[len(res.OpCounts)-1]++
			res.OpKinds = append(res.OpKinds, kind)
			res.OpSteps = append(res.OpSteps, 0)
			res.OpTargets = append(res.OpTargets, target)
			res.OpKeyLengths = append(res.OpKeyLengths, int32(len(key)))
			res.OpKeys = append(res.OpKeys, key...)
			if value == nil {
				res.OpValueLengths = append(res.OpValueLengths, -1)
			} else {
				res.OpValueLengths = append(res.OpValueLengths, int32(len(value)))
				res.OpValues = append(res.OpValues, value...)
			}
			res.OpTimestamps = append(res.OpTimestamps, ts)
			res.OpSchedules = append(res.OpSchedules, sched)
			if kind == pb.OpKind_OP_KIND_FORWARD {
				res.OpHeaderCounts = append(res.OpHeaderCounts, -1)
			}
		}
		for range b.Inits {
			res.OpCounts = append(res.OpCounts, 0)
			op(pb.OpKind_OP_KIND_SCHEDULE, 1, nil, nil, 1000, 1)
		}
		view := map[string][]byte{}
		v := b.Stores[0]
		ko, vo := 0, 0
		for i, kl := range v.KeyLengths {
			k := string(v.Keys[ko : ko+int(kl)])
			ko += int(kl)
			if vl := v.ValueLengths[i]; vl >= 0 {
				view[k] = v.Values[vo : vo+int(vl)]
				vo += int(vl)
			} else {
				view[k] = nil
			}
		}
		ko = 0
		for i, kl := range b.KeyLengths {
			res.OpCounts = append(res.OpCounts, 0)
			k := b.Keys[ko : ko+int(kl)]
			ko += int(kl)
			n := uint64(0)
			if old := view[string(k)]; old != nil {
				n = binary.BigEndian.Uint64(old)
			}
			view[string(k)] = long(n + 1)
			op(pb.OpKind_OP_KIND_PUT, 0, k, long(n+1), 0, 0)
			op(pb.OpKind_OP_KIND_FORWARD, 0, k, long(n+1), b.Timestamps[i], 0)
		}
		for _, a := range b.After {
			res.OpCounts = append(res.OpCounts, 0)
			_, err := h.cl.Read(ctx, connect.NewRequest(&pb.ReadRequest{SessionId: h.session, BundleId: b.Id, Store: "nope", Query: &pb.ReadRequest_All{All: true}}))
			readErrs = append(readErrs, err)
			r, err := h.cl.Read(ctx, connect.NewRequest(&pb.ReadRequest{SessionId: h.session, BundleId: b.Id, Store: "counts", Query: &pb.ReadRequest_All{All: true}}))
			if err != nil {
				res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(len(res.OpCounts) - 1), Message: err.Error(), Kind: pb.RecordFailure_KIND_PROCESSING})
				continue
			}
			total := uint64(0)
			for i := range r.Msg.KeyLengths {
				total += binary.BigEndian.Uint64(r.Msg.Values[8*i : 8*i+8])
			}
			op(pb.OpKind_OP_KIND_FORWARD, 0, []byte("total"), long(total), a.TimeMs, 0)
		}
		return res
	})
	token := h.register("count_and_total", proc)
	build := func(req *pb.BuildRequest) *pb.Handle {
		t.Helper()
		req.SessionId = h.session
		resp, err := h.cl.Build(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatalf("Build(%T): %v", req.Operation, err)
		}
		return resp.Msg.Handle
	}
	build(&pb.BuildRequest{Operation: &pb.BuildRequest_AddStateStore{AddStateStore: &pb.AddStateStoreOp{Name: "counts", Type: pb.StoreType_STORE_TYPE_KEY_VALUE, KeySerde: "string", ValueSerde: "long"}}})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	p := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Process{Process: &pb.ProcessOp{Input: s.Id, Token: token, Stores: []string{"counts"}, ValueSerde: "long"}}})
	if p.Node != "KSTREAM-PROCESSOR-0000000001" {
		t.Fatalf("process node %q", p.Node)
	}
	h.mustBuild(&pb.ToOp{Input: p.Id, Topic: "out"})
	h.start()
	done := h.serveAsync()
	h.pipe("in", "a", "x", 500)
	h.pipe("in", "b", "x", 600)
	h.pipe("in", "a", "x", 1200)
	got := h.readCounts("out")
	// 500: the punctuation (due at once, aligned to 0) reads a=1 from the
	// store after the record's put; 1200: a=2, b=1.
	if want := "a=1 total=1 b=1 a=2 total=3"; strings.Join(got, " ") != want {
		t.Errorf("out: %v, want %s", got, want)
	}
	if len(readErrs) != 2 {
		t.Fatalf("%d punctuations, want 2", len(readErrs))
	}
	if c := connect.CodeOf(readErrs[0]); c != connect.CodeInvalidArgument || !strings.Contains(readErrs[0].Error(), `declares no store "nope"`) {
		t.Errorf("Read of an undeclared store: %v (%v)", readErrs[0], c)
	}
	_, err := h.cl.Read(ctx, connect.NewRequest(&pb.ReadRequest{SessionId: h.session, BundleId: lastBundle, Store: "counts", Query: &pb.ReadRequest_All{All: true}}))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeNotFound {
		t.Errorf("Read of a bundle no longer in flight: %v", err)
	}
	h.stopServing(done)
}

// TestVersionedStoreBuildRefusals: a versioned store needs its history
// retention (AddStateStoreOp.versioned), which another store type refuses;
// each refusal is InvalidArgument naming the store.
func TestVersionedStoreBuildRefusals(t *testing.T) {
	e := newEnv(t)
	h := e.openWith("proc-versioned-build", map[string]string{"polystreams.test.driver": "true"}, "processors")
	ctx := context.Background()
	for _, c := range []struct {
		op   *pb.AddStateStoreOp
		want string
	}{
		{&pb.AddStateStoreOp{Name: "h", Type: pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE}, `versioned store "h" has no history retention`},
		{&pb.AddStateStoreOp{Name: "k", Type: pb.StoreType_STORE_TYPE_KEY_VALUE, Versioned: &pb.VersionedStore{HistoryRetentionMs: 10}}, `store "k" is a key-value store; a history retention`},
		{&pb.AddStateStoreOp{Name: "n", Type: pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE, Versioned: &pb.VersionedStore{HistoryRetentionMs: -1}}, `history retention -1 ms; it cannot be negative`},
	} {
		_, err := h.cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: h.session, Operation: &pb.BuildRequest_AddStateStore{AddStateStore: c.op}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddStateStore(%v): %v, want InvalidArgument %q", c.op, err, c.want)
		}
	}
	if _, err := h.cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: h.session, Operation: &pb.BuildRequest_AddStateStore{AddStateStore: &pb.AddStateStoreOp{
		Name: "ok", Type: pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE, KeySerde: "string", ValueSerde: "string", Versioned: &pb.VersionedStore{HistoryRetentionMs: 60_000},
	}}})); err != nil {
		t.Errorf("a versioned store with its history retention: %v", err)
	}
}
