package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// nativeOp is a stateless operator whose function is Go (map_values,
// filter, flat_map_values, flat_map, map, select_key, peek, foreach, print of the Go API):
// it runs in the engine, record by record, with no crossing.
type nativeOp struct{ opBase }

func newNativeOp(t *task, s *step) operator { return &nativeOp{baseOf(t, s, nil)} }

func (o *nativeOp) process(_ context.Context, recs []rec) ([]rec, error) {
	return runNative(o.s.node, recs, o.t.recordFailed)
}

// runNative runs a Go function node per record; a record whose function
// fails goes to failed (recordFailed: nil skips it).
func runNative(n *topology.Node, recs []rec, failed func(rec, string, failKind, error) error) ([]rec, error) {
	if f, ok := n.Fn.Native.(topology.FlatMapValuesFunc); ok {
		return flatMapValuesNative(n, f, recs, failed)
	}
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		var err error
		switch f := n.Fn.Native.(type) {
		case topology.MapValuesFunc:
			var v []byte
			if v, err = f(r.value); err == nil {
				r.value = v
				out = append(out, r)
			}
		case topology.PredicateFunc:
			var keep bool
			if keep, err = f(r.key, r.value); err == nil && keep == (n.Op != topology.OpFilterNot) {
				out = append(out, r)
			}
		case topology.MapValuesWithKeyFunc:
			var v []byte
			if v, err = f(r.key, r.value); err == nil {
				r.value = v
				out = append(out, r)
			}
		case topology.FlatMapValuesWithKeyFunc:
			var vs [][]byte
			if vs, err = f(r.key, r.value); err == nil {
				for _, v := range vs {
					out = append(out, rec{key: r.key, value: v, ts: r.ts, in: r.in})
				}
			}
		case topology.FlatMapFunc:
			var kvs []topology.KeyValue
			if kvs, err = f(r.key, r.value); err == nil {
				for _, kv := range kvs {
					out = append(out, rec{key: kv.Key, value: kv.Value, ts: r.ts, in: r.in})
				}
			}
		case topology.MapFunc:
			var k, v []byte
			if k, v, err = f(r.key, r.value); err == nil {
				r.key, r.value = k, v
				out = append(out, r)
			}
		case topology.SelectKeyFunc:
			var k []byte
			if k, err = f(r.key, r.value); err == nil {
				r.key = k
				out = append(out, r)
			}
		case topology.ForeachFunc:
			if err = f(r.key, r.value); err == nil && n.Op == topology.OpPeek {
				out = append(out, r)
			}
		default:
			return nil, fmt.Errorf("engine: node %s has a native function of type %T, which does not fit its operation", n.Name, f)
		}
		if err != nil {
			if err = failed(r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// flatMapValuesNative is runNative for flat_map_values: every record's
// values first, then the output at its full size, since a slice of recs
// grown record by record copies them (and their pointers, under the
// garbage collector's write barrier) each time it grows.
func flatMapValuesNative(n *topology.Node, f topology.FlatMapValuesFunc, recs []rec, failed func(rec, string, failKind, error) error) ([]rec, error) {
	values := make([][][]byte, len(recs))
	total := 0
	for i, r := range recs {
		vs, err := f(r.value)
		if err != nil {
			if err = failed(r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
			continue
		}
		values[i] = vs
		total += len(vs)
	}
	out := make([]rec, 0, total)
	for i, r := range recs {
		for _, v := range values[i] {
			out = append(out, rec{key: r.key, value: v, ts: r.ts, in: r.in})
		}
	}
	return out, nil
}
