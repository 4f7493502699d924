package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Table-table joins (KTable.join / leftJoin / outerJoin(KTable)), as Kafka
// Streams' KTableKTableInnerJoin, KTableKTableLeftJoin,
// KTableKTableRightJoin, KTableKTableOuterJoin and KTableKTableJoinMerger
// run them. Each side's processor gets its table's changes, looks the key
// up in the other table's store and forwards the joined change; the merge
// forwards both sides' changes (and keeps them in its store when the join
// is materialized). A joined change's timestamp is the later of the
// change's and the other side's row's (KIP-258 timestamped stores).
//
// What each side forwards for a change (new, old) of its table, the other
// table holding ov for the key (nil: none); j is the joiner, always called
// as j(this table's value, other table's value):
//   - inner: nothing when ov is nil; else (j(new, ov) or null when new is
//     null; j(old, ov) when old values are sent and old is not null). So a
//     delete on either side of a joined key forwards a tombstone.
//   - left, this side: nothing when ov, new and old are all null; else as
//     inner, with ov possibly null.
//   - left, other side (KTableKTableRightJoin): nothing when this table
//     holds nothing; else (j(this, new), j(this, old) when old values are
//     sent): the joiner is called even for a null new value.
//   - outer: nothing when ov, new and old are all null; else (j(new, ov)
//     unless both are null, j(old, ov) when old values are sent unless both
//     are null).

// compileTableJoin makes s, node n, a table-table join step.
func compileTableJoin(t *topology.Topology, s *step, n *topology.Node) error {
	s.open = newTableJoinOp
	if len(n.Stores) != 1 || t.Stores[n.Stores[0]] == nil || len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: table join %s needs the other table's store and one predecessor", n.Name)
	}
	s.table = t.Stores[n.Stores[0]]
	if err := compileGetter(s, n); err != nil {
		return err
	}
	if n.Fn.Token != 0 {
		st, err := joinerStep(n)
		if err != nil {
			return err
		}
		s.steps = []*pb.Step{st}
		s.chain = []*topology.Node{n}
		this, _ := joinSerdes(s)
		s.inKey, s.inValue = n.Predecessors[0].KeySerde, this
		s.outKey, s.outValue = n.KeySerde, n.ValueSerde
	}
	return nil
}

// joinSerdes are the value serdes of the join's this and other table: the
// step's input's and its store's, swapped on the other side.
func joinSerdes(s *step) (this, other string) {
	in := s.node.Predecessors[0].ValueSerde
	if _, reversed, _ := topology.TableJoin(s.node.Op); reversed {
		return s.otherSerde, in
	}
	return in, s.otherSerde
}

// joinCall is one joiner call: (this table's value, other table's value).
type joinCall struct {
	a, b []byte
	at   int // the change (index into changes) it is for
	old  bool
}

// tableJoinOp runs one side of a table-table join over recs, its table's
// changes.
type tableJoinOp struct{ opBase }

func newTableJoinOp(t *task, s *step) operator { return &tableJoinOp{baseOf(t, s, s.table)} }

func (o *tableJoinOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	kind, reversed, _ := topology.TableJoin(s.node.Op)
	sendOld := s.node.SendOld
	tx := o.tx
	changes := make([]rec, 0, len(recs))
	var calls []joinCall
	call := func(mine, theirs []byte, old bool) {
		c := joinCall{a: mine, b: theirs, at: len(changes), old: old}
		if reversed {
			c.a, c.b = theirs, mine
		}
		calls = append(calls, c)
	}
	keyed := make([]rec, 0, len(recs))
	ovs := make([][]byte, 0, len(recs))
	otss := make([]int64, 0, len(recs))
	for _, r := range recs {
		if r.key == nil {
			t.app.dropped.Add(1) // "Skipping record due to null key"
			continue
		}
		ov, ots, err := tx.Get(r.key)
		if err != nil {
			return nil, recordError(r, s.node.Name, err)
		}
		keyed, ovs, otss = append(keyed, r), append(ovs, ov), append(otss, ots)
	}
	// A derived other table's value is its value getter's (getter.go).
	skip, err := t.readThrough(ctx, s, keyed, ovs)
	if err != nil {
		return nil, err
	}
	for i, r := range keyed {
		if skip[i] {
			continue
		}
		ov, ots := ovs[i], otss[i]
		none := ov == nil && r.value == nil && r.old == nil
		switch kind {
		case topology.TableJoinInner, topology.TableJoinLeft:
			if ov == nil && (kind == topology.TableJoinInner || none) {
				continue
			}
			if r.value != nil {
				call(r.value, ov, false)
			}
			if sendOld && r.old != nil {
				call(r.old, ov, true)
			}
		case topology.TableJoinRight:
			if ov == nil {
				continue
			}
			call(r.value, ov, false)
			if sendOld {
				call(r.old, ov, true)
			}
		case topology.TableJoinOuter:
			if none {
				continue
			}
			if ov != nil || r.value != nil {
				call(r.value, ov, false)
			}
			if sendOld && (ov != nil || r.old != nil) {
				call(r.old, ov, true)
			}
		}
		ts := r.ts
		if ov != nil && ots > ts {
			ts = ots
		}
		changes = append(changes, rec{key: r.key, ts: ts, in: r.in})
	}
	if len(changes) == 0 {
		return nil, nil
	}
	results, failed, err := o.joinValues(ctx, changes, calls)
	if err != nil {
		return nil, err
	}
	for i, c := range calls {
		if c.old {
			changes[c.at].old = results[i]
		} else {
			changes[c.at].value = results[i]
		}
	}
	out := changes[:0]
	for i, c := range changes {
		if !failed[i] {
			out = append(out, c)
		}
	}
	return out, nil
}

// joinValues runs the joiner over calls: natively, or for a host joiner in
// bundles of OPERATION_VALUE_JOIN (this values in values, other values in
// other_values; -1 length for null). It returns each call's result and
// which changes failed (the policy skipped them: the whole change is
// skipped, no value made up).
func (o *tableJoinOp) joinValues(ctx context.Context, changes []rec, calls []joinCall) ([][]byte, []bool, error) {
	t, s := o.t, o.s
	results := make([][]byte, len(calls))
	failed := make([]bool, len(changes))
	if len(calls) == 0 {
		return results, failed, nil
	}
	if f, ok := s.node.Fn.Native.(topology.ValueJoinerFunc); ok {
		for i, c := range calls {
			if failed[c.at] {
				continue
			}
			v, err := f(c.a, c.b)
			if err != nil {
				failed[c.at] = true
				if err := t.recordFailed(changes[c.at], s.node.Name, kindOf(err), err); err != nil {
					return nil, nil, err
				}
				continue
			}
			results[i] = v
		}
		return results, failed, nil
	}
	_, otherSerde := joinSerdes(s)
	bounds := t.bundleBounds(len(calls), func(i int) int { return len(calls[i].a) + len(calls[i].b) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		recs := make([]rec, end-start)
		for i, c := range calls[start:end] {
			ch := changes[c.at]
			recs[i] = rec{key: ch.key, value: c.a, ts: ch.ts, in: ch.in}
		}
		b := encodeBundle(s, recs)
		b.OtherValueSerde, b.OtherValueLengths = otherSerde, make([]int32, end-start)
		for i, c := range calls[start:end] {
			b.OtherValueLengths[i] = length(c.b)
			b.OtherValues = append(b.OtherValues, c.b...)
		}
		out, res, fails, err := t.cross(ctx, s, recs, b)
		if err != nil {
			return nil, nil, err
		}
		if err := t.applyFailures(recs, fails); err != nil {
			return nil, nil, err
		}
		for _, f := range fails {
			failed[calls[start+f.index].at] = true
		}
		k := 0
		for i, n := range res.OutputCounts {
			switch {
			case n > 1:
				return nil, nil, fmt.Errorf("engine: host answered bundle %d for join node %s with %d outputs for record %d; a joiner gives one", res.BundleId, s.node.Name, n, i)
			case n == 1:
				results[start+i] = out[k].value
				k++
			case !failed[calls[start+i].at]:
				return nil, nil, fmt.Errorf("engine: host answered bundle %d for join node %s with no output for record %d, which did not fail; a joiner gives one", res.BundleId, s.node.Name, i)
			}
		}
	}
	return results, failed, nil
}

// tableMergeOp is KTableKTableJoinMerger: it forwards both join processors'
// changes; a materialized join keeps each in its store first (the change's
// old value is then the store's).
type tableMergeOp struct{ opBase }

func newTableMergeOp(t *task, s *step) operator { return &tableMergeOp{baseOf(t, s, s.store)} }

func (o *tableMergeOp) process(_ context.Context, recs []rec) ([]rec, error) {
	s := o.s
	if s.store == nil {
		return recs, nil
	}
	tx := o.tx
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		old, _, err := tx.Get(r.key)
		if err != nil {
			return nil, recordError(r, s.node.Name, err)
		}
		tx.Put(r.key, r.value, r.ts)
		r.old = old
		out = append(out, r)
	}
	return out, nil
}

// isTableJoin reports whether op is one side of a table-table join.
func isTableJoin(op topology.Op) bool {
	_, _, ok := topology.TableJoin(op)
	return ok
}

// feedsTableJoin reports whether s forwards to one side of a table-table
// join, directly or through store-less table operators (filter,
// filter_not, map_values: the join's other side reads s's store through
// their value getter). Such a step does not hold its updates in the record
// cache: the join's other side looks keys up in s's store, which a cache
// would leave ahead of what s has forwarded, and a change of both sides in one cache
// interval would then be joined twice (once per side) with old values that
// were never forwarded, so a downstream aggregation would count it twice.
func feedsTableJoin(s *step) bool {
	for _, n := range s.next {
		// As compile makes them: a tableJoinOp, or a store-less
		// tableTransformOp that forwards to one.
		nd := n.node
		if nd.FK != nil || nd.Windows != nil {
			continue
		}
		if isTableJoin(nd.Op) || tableOps[nd.Op] != 0 && nd.Op != topology.OpTableSelect && n.store == nil && feedsTableJoin(n) {
			return true
		}
	}
	return false
}
