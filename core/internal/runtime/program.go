package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Folds over session and sliding windows. Which windows a record makes,
// updates and merges, and which aggregate each fold starts from, depend on
// times only; so the engine runs Kafka Streams' algorithm itself and the
// folds are all that is the user's. A folder runs them: native functions
// (and count) at once; host functions as the steps of a fold program
// (Bundle.fold_bases), whose aggregates are symbols until the host has
// answered the whole batch's program in one crossing. The pass then writes
// and forwards the aggregates the symbols stand for, in the pass's order
// (docs/design/windows.md).

// agg is an aggregate during a pass: bytes (nil: none), the initializer's
// (to be made by the host), or the output of the program's fold sym.
type agg struct {
	b   []byte
	sym int32
}

const (
	aggBytes = -1 // b holds it
	aggInit  = -2 // initializer(), run by the host
)

func bytesAgg(b []byte) agg { return agg{b: b, sym: aggBytes} }

// none says the aggregate is missing (a reduce that has folded nothing).
func (a agg) none() bool { return a.sym == aggBytes && a.b == nil }

// foldOp is one fold of a program: from base, merge merges in, then fold
// r's value in.
type foldOp struct {
	r      rec
	base   agg
	merges []agg
}

type aggRow struct {
	a  agg
	ts int64
}

type aggPut struct {
	key []byte
	row aggRow
}

// outAgg is the value and old value of the pass's output out[i].
type outAgg struct {
	i          int
	value, old agg
}

type folder struct {
	t    *task
	s    *step
	tx   *storeTx
	host bool
	out  []rec
	// A host pass: the program, the rows it wrote (read back before the
	// store), its writes in order, and its outputs' aggregates.
	ops     []foldOp
	rows    map[string]aggRow
	puts    []aggPut
	outAggs []outAgg
}

func (t *task) newFolder(s *step) *folder {
	f := &folder{t: t, s: s, tx: t.stores[s.store.Name], host: s.hostFold}
	if f.host {
		f.rows = map[string]aggRow{}
	}
	return f
}

// get reads a store row: nil (none) when absent.
func (f *folder) get(sk []byte) (agg, int64, error) {
	if f.host {
		if r, ok := f.rows[string(sk)]; ok {
			return r.a, r.ts, nil
		}
	}
	v, ts, err := f.tx.get(sk)
	return bytesAgg(v), ts, err
}

// put writes a store row (a none aggregate deletes it).
func (f *folder) put(sk []byte, a agg, ts int64) {
	if !f.host {
		f.tx.put(sk, a.b, ts)
		return
	}
	f.rows[string(sk)] = aggRow{a, ts}
	f.puts = append(f.puts, aggPut{sk, aggRow{a, ts}})
}

// emit forwards r with value and old value.
func (f *folder) emit(r rec, value, old agg) {
	if f.host {
		f.outAggs = append(f.outAggs, outAgg{len(f.out), value, old})
	} else {
		r.value, r.old = value.b, old.b
	}
	f.out = append(f.out, r)
}

// init is the aggregate a fold starts from when it has no window's:
// count's 0, reduce's none, aggregate's initializer().
func (f *folder) init() (agg, error) {
	if f.host {
		if f.s.node.Op == topology.OpReduce {
			return agg{sym: aggBytes}, nil
		}
		return agg{sym: aggInit}, nil
	}
	b, err := sessionInit(f.s.node)
	return bytesAgg(b), err
}

// fold merges merges into base, then folds r's value in: session windows
// merge the sessions a record joins into a fresh aggregate (Kafka Streams'
// order), sliding windows fold into a window's aggregate or a copy of one.
func (f *folder) fold(r rec, base agg, merges []agg) (agg, error) {
	if f.host {
		f.ops = append(f.ops, foldOp{r, base, merges})
		return agg{sym: int32(len(f.ops) - 1)}, nil
	}
	n, a := f.s.node, base.b
	var err error
	for _, m := range merges {
		if a, err = sessionMerge(n, r.key, a, m.b); err != nil {
			return agg{}, fmt.Errorf("merger: %w", err)
		}
	}
	if a, err = sessionAdd(n, r, a); err != nil {
		return agg{}, err
	}
	if a == nil {
		return agg{}, errors.New("the aggregate is null")
	}
	return bytesAgg(a), nil
}

// finish ends the pass: for a host pass, runs the program in one crossing
// and writes and forwards what the symbols stand for.
func (f *folder) finish(ctx context.Context) ([]rec, error) {
	if !f.host || len(f.ops) == 0 && len(f.puts) == 0 {
		return f.out, nil
	}
	outs, err := f.run(ctx)
	if err != nil {
		return nil, err
	}
	resolve := func(a agg) []byte {
		if a.sym >= 0 {
			return outs[a.sym]
		}
		return a.b // aggInit is only ever a fold's base
	}
	for _, p := range f.puts {
		f.tx.put(p.key, resolve(p.row.a), p.row.ts)
	}
	for _, o := range f.outAggs {
		f.out[o.i].value, f.out[o.i].old = resolve(o.value), resolve(o.old)
	}
	return f.out, nil
}

// run sends the program and returns each fold's aggregate, by fold index.
// Folds are grouped by key (first appearance), in pass order within a key;
// a fold only refers to earlier folds of its key.
func (f *folder) run(ctx context.Context) ([][]byte, error) {
	if len(f.ops) == 0 {
		return nil, nil
	}
	s, t := f.s, f.t
	index := map[string]int{}
	var groups [][]int
	for i, op := range f.ops {
		g, ok := index[string(op.r.key)]
		if !ok {
			g = len(groups)
			index[string(op.r.key)] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	n := len(f.ops)
	b := &pb.Bundle{
		Steps: s.steps, KeySerde: s.inKey, ValueSerde: s.inValue,
		OutputKeySerde: s.outKey, OutputValueSerde: s.outValue, AggregateSerde: s.outValue,
		Topic: f.ops[0].r.in.Topic, Partition: t.id.partition,
		GroupSizes:  make([]int32, len(groups)),
		KeyLengths:  make([]int32, len(groups)),
		ValueRefs:   make([]int32, 0, n),
		FoldBases:   make([]int32, 0, n),
		MergeCounts: make([]int32, 0, n),
	}
	pos := make([]int32, n)      // fold index -> its place in the bundle
	order := make([]rec, 0, n)   // the bundle's folds' records
	byPlace := make([]int, 0, n) // place -> fold index
	for g, members := range groups {
		key := f.ops[members[0]].r.key
		b.GroupSizes[g] = int32(len(members))
		b.KeyLengths[g] = int32(len(key))
		b.Keys = append(b.Keys, key...)
		for _, i := range members {
			pos[i] = int32(len(byPlace))
			byPlace = append(byPlace, i)
			order = append(order, f.ops[i].r)
		}
	}
	// The pool: every stored aggregate a fold starts from or merges.
	for _, i := range byPlace {
		op := f.ops[i]
		for _, a := range append([]agg{op.base}, op.merges...) {
			if a.sym == aggBytes && a.b != nil {
				b.AggregateLengths = append(b.AggregateLengths, int32(len(a.b)))
				b.Aggregates = append(b.Aggregates, a.b...)
			}
		}
	}
	pool, nextPool := int32(len(b.AggregateLengths)), int32(0)
	ref := func(a agg) int32 {
		switch {
		case a.sym >= 0:
			return pool + pos[a.sym]
		case a.sym == aggBytes && a.b != nil:
			nextPool++
			return nextPool - 1
		}
		return -1 // the initializer's, or none
	}
	recIndex := make(map[*kgo.Record]int32, n)
	for _, i := range byPlace {
		op := f.ops[i]
		b.FoldBases = append(b.FoldBases, ref(op.base))
		b.MergeCounts = append(b.MergeCounts, int32(len(op.merges)))
		for _, m := range op.merges {
			b.MergeRefs = append(b.MergeRefs, ref(m))
		}
		r := op.r
		j, seen := recIndex[r.in]
		if !seen {
			j = int32(len(recIndex))
			recIndex[r.in] = j
			b.ValueLengths = append(b.ValueLengths, length(r.value))
			b.Values = append(b.Values, r.value...)
			b.Offsets = append(b.Offsets, r.in.Offset)
			b.Timestamps = append(b.Timestamps, r.ts)
		}
		b.ValueRefs = append(b.ValueRefs, j)
	}
	res, err := t.app.host.Process(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("runtime: task %s: fold program for node %s: %w", t.id, s.node.Name, err)
	}
	aggs, fails, err := decodeResult(s, order, res)
	if err != nil {
		return nil, err
	}
	if len(fails) > 0 {
		// A program's folds refer to each other's outputs, so a failed
		// fold cannot be skipped alone: for now a failure fails the batch
		// whatever the error policy (docs/errors.md). To skip, the pass
		// would run again without the failed records.
		f := fails[0]
		return nil, recordError(order[f.index], f.node, f.err)
	}
	for i, c := range res.OutputCounts {
		if c != 1 {
			return nil, fmt.Errorf("runtime: host answered fold program %d for node %s with an output count of %d for fold %d; a fold program gives one aggregate per fold", res.BundleId, s.node.Name, c, i)
		}
	}
	outs := make([][]byte, n)
	for place, a := range aggs {
		if a.value == nil {
			return nil, recordError(order[place], s.node.Name, errors.New("the host returned a null aggregate"))
		}
		outs[byPlace[place]] = a.value
	}
	return outs, nil
}
