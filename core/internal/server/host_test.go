package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// testHost is a host written in Go over the wire protocol, as an SDK is:
// it serves bundles with Go functions registered under tokens. Functions
// work on raw bytes (the test topologies use bytes/string serdes).
type testHost struct {
	t       *testing.T
	cl      polystreamsv1alpha1connect.EngineServiceClient
	session string

	mu    sync.Mutex
	funcs map[uint32]any
	// bundles counts bundles served, records the records in them, joins
	// the OPERATION_VALUE_JOIN bundles.
	bundles, records, joins int
	// states: the states serve heard of, each change once, in order.
	states []pb.State
}

type (
	reduceFn    func(agg, v []byte) ([]byte, error)
	aggFn       func(k, v, agg []byte) ([]byte, error)
	initFn      func() ([]byte, error)
	valueFn     func(v []byte) ([]byte, error)
	predicateFn func(k, v []byte) (bool, error)
	flatFn      func(v []byte) ([][]byte, error)
	keyFn       func(k, v []byte) ([]byte, error)
	kvFn        func(k, v []byte) ([]byte, []byte, error)
	joinFn      func(v, other []byte) ([]byte, error)
	// procFn answers a processor bundle whole (processor_test.go).
	procFn func(b *pb.Bundle) *pb.BundleResult
)

func (h *testHost) register(name string, fn any) uint32 {
	h.t.Helper()
	resp, err := h.cl.RegisterFunction(context.Background(), connect.NewRequest(&pb.RegisterFunctionRequest{SessionId: h.session, Name: name}))
	if err != nil {
		h.t.Fatalf("RegisterFunction(%s): %v", name, err)
	}
	h.mu.Lock()
	h.funcs[resp.Msg.Token] = fn
	h.mu.Unlock()
	return resp.Msg.Token
}

// serve runs the Exchange loop until the session stops or fails; it returns
// the final state and error text.
func (h *testHost) serve(ctx context.Context) (pb.State, string, error) {
	var results []*pb.BundleResult
	for {
		resp, err := h.cl.Exchange(ctx, connect.NewRequest(&pb.ExchangeRequest{
			SessionId: h.session, WorkerId: "go-test", Results: results, MaxBundles: 4, WaitMs: 200,
		}))
		if err != nil {
			return 0, "", err
		}
		m := resp.Msg
		h.mu.Lock()
		if n := len(h.states); n == 0 || h.states[n-1] != m.State {
			h.states = append(h.states, m.State)
		}
		h.mu.Unlock()
		if m.State == pb.State_STATE_STOPPED || m.State == pb.State_STATE_ERROR {
			return m.State, m.Error, nil
		}
		results = results[:0]
		for _, b := range m.Bundles {
			results = append(results, h.run(b))
		}
	}
}

func (h *testHost) run(b *pb.Bundle) *pb.BundleResult {
	h.mu.Lock()
	h.bundles++
	h.records += len(b.ValueLengths)
	h.mu.Unlock()
	if len(b.Steps) == 1 && b.Steps[0].Operation == pb.Operation_OPERATION_PROCESS {
		h.mu.Lock()
		f, _ := h.funcs[b.Steps[0].Token].(procFn)
		h.mu.Unlock()
		if f != nil {
			return f(b)
		}
	}
	res := &pb.BundleResult{BundleId: b.Id}
	if len(b.Steps) == 1 && (b.Steps[0].Operation == pb.Operation_OPERATION_REDUCE || b.Steps[0].Operation == pb.Operation_OPERATION_AGGREGATE) {
		h.fold(b, res)
		return res
	}
	if len(b.Steps) == 1 && b.Steps[0].Operation == pb.Operation_OPERATION_VALUE_JOIN {
		h.mu.Lock()
		h.joins++
		h.mu.Unlock()
		h.join(b, res)
		return res
	}
	keysChange := false
	for _, s := range b.Steps {
		if s.Operation == pb.Operation_OPERATION_MAP || s.Operation == pb.Operation_OPERATION_SELECT_KEY {
			keysChange = true
		}
	}
	ko, vo := 0, 0
	col := func(buf []byte, off *int, l int32) []byte {
		if l < 0 {
			return nil
		}
		v := buf[*off : *off+int(l)]
		*off += int(l)
		return v
	}
	put := func(lens *[]int32, buf *[]byte, v []byte) {
		if v == nil {
			*lens = append(*lens, -1)
			return
		}
		*lens = append(*lens, int32(len(v)))
		*buf = append(*buf, v...)
	}
	for i := range b.KeyLengths {
		k := col(b.Keys, &ko, b.KeyLengths[i])
		v := col(b.Values, &vo, b.ValueLengths[i])
		type kv struct{ k, v []byte }
		cur := []kv{{k, v}}
		var failed error
		failedStep := 0
		for si, s := range b.Steps {
			h.mu.Lock()
			fn := h.funcs[s.Token]
			h.mu.Unlock()
			var next []kv
			for _, r := range cur {
				var err error
				switch s.Operation {
				case pb.Operation_OPERATION_MAP_VALUES:
					var nv []byte
					if nv, err = fn.(valueFn)(r.v); err == nil {
						next = append(next, kv{r.k, nv})
					}
				case pb.Operation_OPERATION_FILTER, pb.Operation_OPERATION_FILTER_NOT:
					var keep bool
					if keep, err = fn.(predicateFn)(r.k, r.v); err == nil && keep == (s.Operation == pb.Operation_OPERATION_FILTER) {
						next = append(next, r)
					}
				case pb.Operation_OPERATION_FLAT_MAP_VALUES:
					var vs [][]byte
					if vs, err = fn.(flatFn)(r.v); err == nil {
						for _, nv := range vs {
							next = append(next, kv{r.k, nv})
						}
					}
				case pb.Operation_OPERATION_MAP:
					var nk, nv []byte
					if nk, nv, err = fn.(kvFn)(r.k, r.v); err == nil {
						next = append(next, kv{nk, nv})
					}
				case pb.Operation_OPERATION_SELECT_KEY:
					var nk []byte
					if nk, err = fn.(keyFn)(r.k, r.v); err == nil {
						next = append(next, kv{nk, r.v})
					}
				default:
					err = fmt.Errorf("test host: operation %v not supported", s.Operation)
				}
				if err != nil {
					failed, failedStep = err, si
					break
				}
			}
			if failed != nil {
				break
			}
			cur = next
		}
		if failed != nil {
			res.OutputCounts = append(res.OutputCounts, 0)
			kind := pb.RecordFailure_KIND_PROCESSING
			if errors.Is(failed, errUndecodable) {
				kind = pb.RecordFailure_KIND_DESERIALIZATION
			}
			res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(i), Step: int32(failedStep), Message: "Error: " + failed.Error(), Kind: kind})
			continue
		}
		res.OutputCounts = append(res.OutputCounts, int32(len(cur)))
		for _, r := range cur {
			put(&res.ValueLengths, &res.Values, r.v)
			if keysChange {
				put(&res.KeyLengths, &res.Keys, r.k)
			}
		}
	}
	return res
}

var (
	errBoom = errors.New("boom")
	// errUndecodable fails a record as a host's serde would: the test host
	// reports it as a deserialization failure.
	errUndecodable = errors.New("does not decode")
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fold serves a fold bundle: groups of values per key, each folded into the
// group's aggregate; one aggregate per value comes back. A table fold's
// values are changes: the subtractor removes the old value first, and the
// new one may be null.
func (h *testHost) fold(b *pb.Bundle, res *pb.BundleResult) {
	if len(b.FoldBases) > 0 {
		h.program(b, res)
		return
	}
	st := b.Steps[0]
	h.mu.Lock()
	fn, init, sub := h.funcs[st.Token], h.funcs[st.InitializerToken], h.funcs[st.SubtractorToken]
	h.mu.Unlock()
	ko, ao, vo, oo, j := 0, 0, 0, 0, 0
	for g, size := range b.GroupSizes {
		key := b.Keys[ko : ko+int(b.KeyLengths[g])]
		ko += int(b.KeyLengths[g])
		var agg []byte
		if l := b.AggregateLengths[g]; l >= 0 {
			agg = b.Aggregates[ao : ao+int(l)]
			ao += int(l)
		}
		type outcome struct {
			agg    []byte
			failed bool
		}
		var outs []outcome
		for range size {
			var v []byte
			if b.ValueRefs != nil {
				v = refValue(b, int(b.ValueRefs[j]))
			} else if l := b.ValueLengths[j]; l >= 0 {
				v = b.Values[vo : vo+int(l)]
				vo += int(l)
			}
			var err error
			before := agg // a value that fails leaves the aggregate as it was
			if st.SubtractorToken != 0 {
				if l := b.OldValueLengths[j]; l >= 0 {
					old := b.OldValues[oo : oo+int(l)]
					oo += int(l)
					if agg != nil && st.Operation == pb.Operation_OPERATION_REDUCE {
						agg, err = sub.(reduceFn)(agg, old)
					} else if agg != nil {
						agg, err = sub.(aggFn)(key, old, agg)
					}
				}
			}
			switch {
			case err != nil:
			case v == nil: // a table change that only removes
			case st.Operation == pb.Operation_OPERATION_REDUCE && agg == nil:
				agg = v
			case st.Operation == pb.Operation_OPERATION_REDUCE:
				agg, err = fn.(reduceFn)(agg, v)
			default:
				if agg == nil {
					agg, err = init.(initFn)()
				}
				if err == nil {
					agg, err = fn.(aggFn)(key, v, agg)
				}
			}
			if err != nil {
				agg = before
				outs = append(outs, outcome{failed: true})
				res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(j), Message: "Error: " + err.Error()})
			} else {
				outs = append(outs, outcome{agg: agg})
			}
			j++
		}
		// With final_only, only the group's last aggregate: the one after
		// its last value that did not fail.
		last := len(outs) - 1
		for last >= 0 && outs[last].failed {
			last--
		}
		for i, o := range outs {
			switch {
			case o.failed:
				res.OutputCounts = append(res.OutputCounts, 0)
			case b.FinalOnly && i < last:
				res.OutputCounts = append(res.OutputCounts, 0) // not the group's last
			case o.agg == nil:
				res.OutputCounts = append(res.OutputCounts, 1)
				res.ValueLengths = append(res.ValueLengths, -1)
			default:
				res.OutputCounts = append(res.OutputCounts, 1)
				res.ValueLengths = append(res.ValueLengths, int32(len(o.agg)))
				res.Values = append(res.Values, o.agg...)
			}
		}
	}
}

// program runs a fold program (Bundle.fold_bases): each fold value starts
// from the aggregate its base names (-1: the initializer's, or none for
// reduce; then the aggregates pool; then earlier outputs), merges its
// merge operands in (the merger; for reduce the reducer), then folds its
// value in. A failed value fails the values that refer to it.
func (h *testHost) program(b *pb.Bundle, res *pb.BundleResult) {
	st := b.Steps[0]
	h.mu.Lock()
	fn, init, merger := h.funcs[st.Token], h.funcs[st.InitializerToken], h.funcs[st.MergerToken]
	h.mu.Unlock()
	reduce := st.Operation == pb.Operation_OPERATION_REDUCE
	var pool [][]byte
	off := 0
	for _, l := range b.AggregateLengths {
		pool = append(pool, b.Aggregates[off:off+int(l)])
		off += int(l)
	}
	outs := make([][]byte, len(b.FoldBases))
	resolve := func(r int32) ([]byte, error) {
		switch {
		case r == -1 && reduce:
			return nil, nil
		case r == -1:
			return init.(initFn)()
		case int(r) < len(pool):
			return pool[r], nil
		}
		if out := outs[int(r)-len(pool)]; out != nil {
			return out, nil
		}
		return nil, fmt.Errorf("depends on fold value %d, which failed", int(r)-len(pool))
	}
	ko, j, m := 0, 0, 0
	for g, size := range b.GroupSizes {
		key := b.Keys[ko : ko+int(b.KeyLengths[g])]
		ko += int(b.KeyLengths[g])
		for range size {
			v := refValue(b, int(b.ValueRefs[j]))
			agg, err := resolve(b.FoldBases[j])
			for _, r := range b.MergeRefs[m : m+int(b.MergeCounts[j])] {
				var other []byte
				if err == nil {
					other, err = resolve(r)
				}
				switch {
				case err != nil:
				case reduce && agg == nil:
					agg = other
				case reduce:
					agg, err = fn.(reduceFn)(agg, other)
				default:
					agg, err = merger.(aggFn)(key, agg, other)
				}
			}
			m += int(b.MergeCounts[j])
			switch {
			case err != nil:
			case reduce && agg == nil:
				agg = v
			case reduce:
				agg, err = fn.(reduceFn)(agg, v)
			default:
				agg, err = fn.(aggFn)(key, v, agg)
			}
			if err != nil {
				res.OutputCounts = append(res.OutputCounts, 0)
				res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(j), Message: "Error: " + err.Error()})
			} else {
				outs[j] = agg
				res.OutputCounts = append(res.OutputCounts, 1)
				res.ValueLengths = append(res.ValueLengths, int32(len(agg)))
				res.Values = append(res.Values, agg...)
			}
			j++
		}
	}
}

// join runs a ValueJoiner bundle: value i with other value i.
func (h *testHost) join(b *pb.Bundle, res *pb.BundleResult) {
	h.mu.Lock()
	fn := h.funcs[b.Steps[0].Token].(joinFn)
	h.mu.Unlock()
	vo, oo := 0, 0
	col := func(buf []byte, off *int, l int32) []byte {
		if l < 0 {
			return nil
		}
		*off += int(l)
		return buf[*off-int(l) : *off]
	}
	for i := range b.ValueLengths {
		v := col(b.Values, &vo, b.ValueLengths[i])
		o := col(b.OtherValues, &oo, b.OtherValueLengths[i])
		out, err := fn(v, o)
		if err != nil {
			res.OutputCounts = append(res.OutputCounts, 0)
			res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(i), Message: "Error: " + err.Error()})
			continue
		}
		res.OutputCounts = append(res.OutputCounts, 1)
		res.ValueLengths = append(res.ValueLengths, int32(len(out)))
		res.Values = append(res.Values, out...)
	}
}

// refValue is record i's value in a bundle with value_refs (nil: null).
func refValue(b *pb.Bundle, i int) []byte {
	off := 0
	for _, l := range b.ValueLengths[:i] {
		off += max(int(l), 0)
	}
	if l := b.ValueLengths[i]; l >= 0 {
		return b.Values[off : off+int(l)]
	}
	return nil
}

func connectReq[T any](m *T) *connect.Request[T] { return connect.NewRequest(m) }
