package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/crossing"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// aggregateOp runs reduce / aggregate over recs: each record's key aggregate is
// updated in order and forwarded as a table update (no cache: every update,
// as Kafka Streams without caching). Records with a null key or value are
// skipped, as Kafka Streams' KStreamAggregate/KStreamReduce skip them.
type aggregateOp struct{ opBase }

func newAggregateOp(t *task, s *step) operator { return &aggregateOp{baseOf(t, s, nil)} }

func (o *aggregateOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	return t.foldKept(ctx, s, t.dropNulls(recs))
}

// foldKept folds recs, none with a null key or value, in their store keys.
func (t *task) foldKept(ctx context.Context, s *step, recs []rec) ([]rec, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	tx := t.stores[s.store.Name]
	if s.hostFold {
		return t.foldHost(ctx, s, tx, recs)
	}
	return foldNative(s.node, tx, recs, t.recordFailed)
}

// dropNulls drops (and counts) records with a null key or value: an
// aggregation skips them (KStreamAggregate: "Skipping record due to null
// key or value").
func (t *task) dropNulls(recs []rec) []rec {
	for i, r := range recs {
		if r.key == nil || r.value == nil {
			kept := append(make([]rec, 0, len(recs)-1), recs[:i]...)
			for _, r := range recs[i:] {
				if r.key == nil || r.value == nil {
					t.app.dropped.Add(1)
					continue
				}
				kept = append(kept, r)
			}
			return kept
		}
	}
	return recs
}

// aggTime is the timestamp of an aggregate updated by a record at ts: the
// later of ts and the previous aggregate's, as Kafka Streams' aggregations
// since timestamped stores (KIP-258) have it.
func aggTime(ts int64, prev []byte, prevTS int64) int64 {
	if prev != nil && prevTS > ts {
		return prevTS
	}
	return ts
}

// foldNative folds recs with a Go (or built-in) reducer or aggregator; a
// record whose call fails goes to failed (recordFailed: nil skips it, and
// its key's aggregate stays as it was).
func foldNative(n *topology.Node, tx *storeTx, recs []rec, failed func(rec, string, failKind, error) error) ([]rec, error) {
	out := make([]rec, 0, len(recs))
	var failedIn map[*kgo.Record]bool
	for _, r := range recs {
		cur, curTS, err := tx.Get(r.storeKey())
		if err != nil {
			return nil, recordError(r, n.Name, err)
		}
		agg := cur
		switch f := n.Fn.Native.(type) {
		case topology.ReduceFunc:
			if agg == nil {
				agg = r.value // the first value becomes the aggregate, no call
			} else {
				agg, err = f(agg, r.value)
			}
		case topology.AggregateFunc:
			if agg == nil {
				init, ok := n.Init.Native.(topology.InitializerFunc)
				if !ok {
					return nil, fmt.Errorf("engine: node %s has no native initializer", n.Name)
				}
				if agg, err = init(); err != nil {
					err = fmt.Errorf("initializer: %w", err)
					break
				}
			}
			agg, err = f(r.key, r.value, agg)
		default:
			return nil, fmt.Errorf("engine: node %s has a native function of type %T, which does not fold", n.Name, f)
		}
		if err == nil && agg == nil {
			err = errors.New("the aggregate is null")
		}
		if err != nil {
			// A windowed fold folds a record into each of its windows: it
			// fails (and is dead-lettered) once.
			if failedIn[r.in] {
				continue
			}
			if err = failed(r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
			if failedIn == nil {
				failedIn = map[*kgo.Record]bool{}
			}
			failedIn[r.in] = true
			continue
		}
		ts := aggTime(r.ts, cur, curTS)
		tx.Put(r.storeKey(), agg, ts)
		out = append(out, rec{key: r.key, skey: r.skey, value: agg, old: cur, ts: ts, in: r.in})
	}
	return out, nil
}

// foldHost sends one fold bundle: the records grouped by key (first
// appearance order), each group's current aggregate once, then its values in
// order. One crossing however many values a hot key has. For a table fold
// each value is a change: its old value rides beside it, and the new one
// may be null.
func (t *task) foldHost(ctx context.Context, s *step, tx *storeTx, recs []rec) ([]rec, error) {
	table := s.node.Sub != nil
	sc := foldScratches.Get().(*foldScratch)
	index := sc.index()
	groups := sc.groups[:0]
	prev := sc.prev[:0] // each group's aggregate before its next value
	defer func() { sc.release(groups, prev) }()
	for i, r := range recs {
		g, ok := index[string(r.storeKey())]
		if !ok {
			agg, aggTS, err := tx.Get(r.storeKey())
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			g = len(groups)
			index[string(r.storeKey())] = g
			groups = appendGroup(groups, r.key, agg)
			prev = append(prev, row{Value: agg, TS: aggTS})
		}
		groups[g].Members = append(groups[g].Members, i)
	}
	b, order, groupOf := crossing.EncodeFold(s.crossingChain(), crossing.FoldOptions{
		Topic: recs[0].in.Topic, Partition: t.id.partition, Table: table,
		FinalOnly: s.cached, // the record cache keeps only each key's last update
		// A windowed fold repeats each record in every window it falls
		// into; a host that takes value_refs gets each record once.
		ValueRefs: s.node.Windows != nil && t.app.cfg.FoldValueRefs,
	}, groups, len(recs), func(i int) crossing.FoldValue {
		r := &recs[i]
		return crossing.FoldValue{Value: r.value, Old: r.old, Offset: r.in.Offset, Timestamp: r.ts, Input: r.in, Headers: headersOfRec(r)}
	})
	res, err := t.app.host.Process(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("engine: task %s: fold bundle for node %s: %w", t.id, s.node.Name, err)
	}
	// The answer is one output (the aggregate after it) per value, in the
	// bundle's value order, or with final_only possibly only each group's
	// last; decodeResult checks it against that order.
	inOrder := slices.Grow(sc.inOrder[:0], len(order))[:len(order)]
	sc.inOrder = inOrder
	for j, i := range order {
		inOrder[j] = recs[i]
	}
	aggs, fails, err := decodeResult(s, inOrder, res)
	if err != nil {
		return nil, err
	}
	// A value that failed has no aggregate (output count 0) and leaves its
	// group's aggregate as it was before it: the host folds the group's next
	// value into that one.
	if len(fails) > 0 {
		if err := t.applyFailures(inOrder, fails); err != nil {
			return nil, err
		}
	}
	failedAt, err := crossing.CheckFold(s.crossingChain(), b, groupOf, len(groups), res)
	if err != nil {
		return nil, err
	}
	// Each value's aggregate, or for one skipped (final_only) the time the
	// next one starts from.
	has := make([]bool, len(recs))
	skipped := make([]bool, len(groups)) // the group's last update was not sent
	out := make([]rec, len(recs))
	k := 0
	for j, c := range res.OutputCounts {
		g := groupOf[j]
		if failedAt[j] {
			continue
		}
		if c == 0 {
			// An intermediate aggregate, not sent: it exists (a stream
			// fold's aggregate is never null) and moves the time on; the
			// group's next update still replaces the one before the bundle.
			ts := aggTime(inOrder[j].ts, empty, prev[g].TS)
			if prev[g].Value == nil {
				ts = inOrder[j].ts
			}
			skipped[g], prev[g].TS = true, ts
			continue
		}
		a := aggs[k]
		k++
		if a.value == nil && !table {
			return nil, recordError(inOrder[j], s.node.Name, errors.New("the host returned a null aggregate"))
		}
		if skipped[g] {
			a.ts = max(a.ts, prev[g].TS)
		} else {
			a.ts = aggTime(a.ts, prev[g].Value, prev[g].TS)
		}
		a.old, prev[g], skipped[g] = prev[g].Value, row{Value: a.value, TS: a.ts}, false
		out[order[j]], has[order[j]] = a, true
		tx.Put(a.storeKey(), a.value, a.ts) // values in order: the last one per key stays
	}
	if k == len(recs) {
		return out, nil
	}
	kept := out[:0]
	for i, r := range out {
		if has[i] {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// foldScratch is what foldHost works in, reused from bundle to bundle: the
// index of each store key's group, the groups (their member lists keep
// their arrays), each group's aggregate before the bundle, and the records
// in the bundle's value order. Allocated anew for each bundle, they were
// ~40% of the engine's allocations in a host-folded exactly-once sum
// (BenchmarkProcessHostReduce, docs/performance.md). They come from a pool
// rather than from the task, so that an engine holds as many as fold at
// once, not one per task (each keeps the arrays of the largest bundle it
// served).
var foldScratches = sync.Pool{New: func() any { return new(foldScratch) }}

type foldScratch struct {
	keys    map[string]int
	groups  []crossing.FoldGroup
	prev    []row
	inOrder []rec
}

func (sc *foldScratch) index() map[string]int {
	if sc.keys == nil {
		sc.keys = map[string]int{}
	}
	return sc.keys
}

// release takes back the groups and aggregates the bundle grew (however
// far it got), drops what they point into and returns sc to the pool.
func (sc *foldScratch) release(groups []crossing.FoldGroup, prev []row) {
	sc.groups, sc.prev = groups, prev
	clear(sc.keys)
	for i := range sc.groups {
		sc.groups[i].Key, sc.groups[i].Agg, sc.groups[i].Members = nil, nil, sc.groups[i].Members[:0]
	}
	clear(sc.prev)
	clear(sc.inOrder)
	foldScratches.Put(sc)
}

// appendGroup appends a group of key with aggregate agg and no members yet,
// reusing the member array of the group that was there in an earlier bundle.
func appendGroup(groups []crossing.FoldGroup, key, agg []byte) []crossing.FoldGroup {
	if len(groups) < cap(groups) {
		groups = groups[:len(groups)+1]
		g := &groups[len(groups)-1]
		g.Key, g.Agg, g.Members = key, agg, g.Members[:0]
		return groups
	}
	return append(groups, crossing.FoldGroup{Key: key, Agg: agg})
}
