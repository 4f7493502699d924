package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/polystreams/polystreams/core/internal/crossing"
	"github.com/polystreams/polystreams/core/internal/topology"
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
	aggBytes = crossing.Stored // b holds it
	aggInit  = crossing.Init   // initializer(), run by the host
)

func bytesAgg(b []byte) agg { return agg{b: b, sym: aggBytes} }

// crossed is a as a fold program refers to it.
func (a agg) crossed() crossing.Agg { return crossing.Agg{Bytes: a.b, Fold: a.sym} }

// none says the aggregate is missing (a reduce that has folded nothing).
func (a agg) none() bool { return a.sym == aggBytes && a.b == nil }

// foldOp is one fold of a program: from base, merge merges in, then fold
// r's value in; r is record idx of the pass.
type foldOp struct {
	r      rec
	idx    int
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

// A pass writes nothing until it ends well (finish): its rows wait in
// the folder, and the window state it changes (stream time, the key
// indexes) can be put back. So a pass in which a fold failed is undone and
// run again without the failed records, once the error policy has skipped
// them (windowed.passes); under the fail policy the failure fails the batch.
type folder struct {
	t    *task
	s    *step
	tx   *storeTx
	ws   *winState
	host bool
	out  []rec
	// cur is the index of the record the pass is at; skip are the records
	// the policy skipped in an earlier pass: they only move stream time on,
	// as in Kafka Streams, which advances it before it folds.
	cur  int
	skip map[int]bool
	// The rows the pass wrote (read back before the store), its writes in
	// order; for a host pass, the program and its outputs' aggregates.
	rows    map[string]aggRow
	puts    []aggPut
	ops     []foldOp
	outAggs []outAgg
	// What undo puts back, and the records the pass dropped (counted when
	// it ends well).
	time0    int64
	store0   int64
	sessions map[string]keyIndex[session]
	starts   map[string]keyIndex[int64]
	drops    int64
}

// keyIndex is a key's entry in a window index before the pass changed it.
type keyIndex[T any] struct {
	v   []T
	had bool
}

// foldFailed is a pass that stopped on failed folds: the records (indexes
// into the pass's records) whose own fold failed.
type foldFailed struct {
	fails []failure
}

func (e *foldFailed) Error() string {
	return fmt.Sprintf("engine: %d folds failed", len(e.fails))
}

func (o *windowed) newFolder(ws *winState, skip map[int]bool) *folder {
	t, s := o.t, o.s
	return &folder{
		t: t, s: s, tx: t.stores[s.store.Name], ws: ws, host: s.hostFold, skip: skip,
		rows: map[string]aggRow{}, time0: ws.streamTime, store0: ws.storeTime,
		sessions: map[string]keyIndex[session]{}, starts: map[string]keyIndex[int64]{},
	}
}

// drop counts a record the pass drops (dropped-records).
func (f *folder) drop() { f.drops++ }

// touchSessions and touchStarts keep key's index entry before the pass
// first changes it.
func (f *folder) touchSessions(key []byte) {
	if _, ok := f.sessions[string(key)]; !ok {
		v, had := f.ws.sessions[string(key)]
		f.sessions[string(key)] = keyIndex[session]{slices.Clone(v), had}
	}
}

func (f *folder) touchStarts(key []byte) {
	if _, ok := f.starts[string(key)]; !ok {
		v, had := f.ws.starts[string(key)]
		f.starts[string(key)] = keyIndex[int64]{slices.Clone(v), had}
	}
}

// undo puts the window state back as it was before the pass.
func (f *folder) undo() {
	for k, e := range f.sessions {
		setIndex(f.ws, f.ws.sessions, k, e.v, e.had)
	}
	for k, e := range f.starts {
		setIndex(f.ws, f.ws.starts, k, e.v, e.had)
	}
	if f.ws.streamTime != f.time0 {
		f.ws.streamTime = f.time0
		f.tx.Put(metaKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(f.time0)), f.time0)
	}
	if f.ws.storeTime != f.store0 {
		f.ws.storeTime = f.store0
		f.tx.Put(storeTimeKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(f.store0)), f.store0)
	}
}

// fail stops the pass on a native fold's failure of the current record.
func (f *folder) fail(err error) error {
	return &foldFailed{fails: []failure{{index: f.cur, node: f.s.node.Name, kind: kindOf(err), err: err}}}
}

// get reads a store row: nil (none) when absent.
func (f *folder) get(sk []byte) (agg, int64, error) {
	if r, ok := f.rows[string(sk)]; ok {
		return r.a, r.ts, nil
	}
	v, ts, err := f.tx.Get(sk)
	return bytesAgg(v), ts, err
}

// put writes a store row (a none aggregate deletes it) when the pass ends.
func (f *folder) put(sk []byte, a agg, ts int64) {
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
		f.ops = append(f.ops, foldOp{r: r, idx: f.cur, base: base, merges: merges})
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

// finish ends the pass: for a host pass, runs the program in one crossing;
// then writes and forwards what the symbols stand for. A *foldFailed
// error names the records whose folds failed; nothing is written then.
func (f *folder) finish(ctx context.Context) ([]rec, error) {
	outs, err := f.run(ctx)
	if err != nil {
		return nil, err
	}
	f.t.app.dropped.Add(f.drops)
	resolve := func(a agg) []byte {
		if a.sym >= 0 {
			return outs[a.sym]
		}
		return a.b // aggInit is only ever a fold's base
	}
	for _, p := range f.puts {
		f.tx.Put(p.key, resolve(p.row.a), p.row.ts)
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
	folds := make([]crossing.Fold, len(f.ops))
	for i, op := range f.ops {
		folds[i] = crossing.Fold{Key: op.r.key, Value: op.r.value, Offset: op.r.in.Offset, Timestamp: op.r.ts, Input: op.r.in, Base: op.base.crossed(), Headers: headersOfRec(&op.r)}
		if len(op.merges) > 0 {
			folds[i].Merges = make([]crossing.Agg, len(op.merges))
			for j, m := range op.merges {
				folds[i].Merges[j] = m.crossed()
			}
		}
	}
	p := crossing.NewProgram(s.crossingChain(), f.ops[0].r.in.Topic, t.id.partition, folds)
	res, err := t.app.host.Process(ctx, p.Bundle)
	if err != nil {
		return nil, fmt.Errorf("engine: task %s: fold program for node %s: %w", t.id, s.node.Name, err)
	}
	outs, fails, err := p.Decode(res)
	var null *crossing.NullAggregate
	if errors.As(err, &null) {
		return nil, recordError(f.ops[null.Fold].r, s.node.Name, err)
	}
	if err != nil {
		return nil, err
	}
	if len(fails) > 0 {
		// The records to skip are those of the folds that failed on
		// their own.
		own := failuresOf(fails)
		for i := range own {
			own[i].index = f.ops[own[i].index].idx
		}
		return nil, &foldFailed{fails: own}
	}
	return outs, nil
}

// passes runs pass over recs (a session or sliding pass) until one
// ends well: a pass in which folds failed is undone, the failed records go
// to the error policy (the fail policy fails the batch), and the pass runs
// again skipping them. Each failed pass skips at least one more record.
// Then the windows past retention expire.
func (o *windowed) passes(ctx context.Context, recs []rec, pass func(f *folder, recs []rec) error) ([]rec, error) {
	t, s := o.t, o.s
	ws, err := o.state()
	if err != nil {
		return nil, err
	}
	skip := map[int]bool{}
	for {
		f := o.newFolder(ws, skip)
		err := pass(f, recs)
		var out []rec
		if err == nil {
			if out, err = f.finish(ctx); err == nil {
				if err := o.agg.expire(ws, o.tx, s.store); err != nil {
					return nil, err
				}
				return out, nil
			}
		}
		var ff *foldFailed
		if !errors.As(err, &ff) {
			return nil, err
		}
		f.undo()
		slices.SortFunc(ff.fails, func(a, b failure) int { return a.index - b.index })
		if skip[ff.fails[0].index] && len(ff.fails) == 1 {
			return nil, fmt.Errorf("engine: node %s: record %d failed again after it was skipped", s.node.Name, ff.fails[0].index)
		}
		for _, fl := range ff.fails {
			if skip[fl.index] {
				continue
			}
			skip[fl.index] = true
			if err := t.recordFailed(recs[fl.index], fl.node, fl.kind, fl.err); err != nil {
				return nil, err
			}
		}
	}
}
