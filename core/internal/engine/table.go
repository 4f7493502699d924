package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Table steps. A table's records are changes: rec.value is the new value
// (nil: the key is deleted) and rec.old the old one, when the node sends
// old values (topology.Node.SendOld). They follow Kafka Streams'
// KTableSource, KTableFilter, KTableMapValues, KTableRepartitionMap,
// KTableAggregate and KTableReduce.

// tableSourceOp upserts each record into the table's store, when it has one,
// and forwards the change. A record with a null key cannot be upserted and
// is dropped (KTableSource: "Skipping record due to null key"). A
// versioned store (versioned.go) takes each record as a version: one older
// than its history retention is not put, and not forwarded; an
// out-of-order one is put and forwarded, with the key's latest value as
// the old one (KTableSource over a versioned store, KIP-914).
type tableSourceOp struct{ opBase }

func newTableSourceOp(t *task, s *step) operator { return &tableSourceOp{baseOf(t, s, s.store)} }

func (o *tableSourceOp) process(_ context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		if r.key == nil {
			t.app.dropped.Add(1)
			continue
		}
		r.old = nil
		if tx != nil && versionedStore(tx.store) {
			p, err := tx.putVersion(t.app.eos, r.key, r.value, r.ts)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			if !p.Put {
				// RocksDBVersionedStore counts an expired put in
				// dropped-records (its expiredRecordSensor).
				t.app.dropped.Add(1)
				continue
			}
			r.old = p.Old
			out = append(out, r)
			continue
		}
		if tx != nil {
			old, _, err := tx.Get(r.key)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			r.old = old
			tx.Put(r.key, r.value, r.ts)
		}
		out = append(out, r)
	}
	return out, nil
}

// tableOut is what a table function made of one value: whether it passed
// (filter), the new value (map_values), or the new key and value (map).
type tableOut struct {
	pass       bool
	key, value []byte
	// failed: the function failed on the value and its policy skipped
	// it; the change it belongs to is skipped whole (no value is made up).
	failed bool
}

// evalTable runs the step's function over ins (key and value; never a null
// value): natively per record, or for a host function in one crossing.
func (t *task) evalTable(ctx context.Context, s *step, ins []rec) ([]tableOut, error) {
	outs := make([]tableOut, len(ins))
	if len(ins) == 0 {
		return outs, nil
	}
	n := s.node
	if n.Fn.Token == 0 {
		for i, r := range ins {
			var err error
			o := &outs[i]
			switch f := n.Fn.Native.(type) {
			case topology.PredicateFunc:
				o.pass, err = f(r.key, r.value)
				o.pass = o.pass == (n.Op != topology.OpTableFilterNot)
			case topology.MapValuesFunc:
				o.value, err = f(r.value)
			case topology.MapFunc:
				o.key, o.value, err = f(r.key, r.value)
			default:
				return nil, fmt.Errorf("engine: node %s has a native function of type %T, which does not fit its operation", n.Name, f)
			}
			if err != nil {
				if err = t.recordFailed(r, n.Name, kindOf(err), err); err != nil {
					return nil, err
				}
				o.failed = true
			}
		}
		return outs, nil
	}
	got, res, fails, err := t.crossOnce(ctx, s, ins)
	if err != nil {
		return nil, err
	}
	if err := t.applyFailures(ins, fails); err != nil {
		return nil, err
	}
	for _, f := range fails {
		outs[f.index].failed = true
	}
	j := 0
	for i, c := range res.OutputCounts {
		switch {
		case outs[i].failed:
			if c != 0 {
				return nil, fmt.Errorf("engine: host answered bundle %d for node %s with %d outputs for record %d, which failed", res.BundleId, n.Name, c, i)
			}
		case n.Op == topology.OpTableFilter || n.Op == topology.OpTableFilterNot:
			if c > 1 {
				return nil, fmt.Errorf("engine: host answered bundle %d for filter node %s with %d outputs for record %d", res.BundleId, n.Name, c, i)
			}
			outs[i].pass = c == 1
		case c != 1:
			return nil, fmt.Errorf("engine: host answered bundle %d for node %s with %d outputs for record %d; a table operator gives one", res.BundleId, n.Name, c, i)
		default:
			outs[i].key, outs[i].value = got[j].key, got[j].value
		}
		j += int(c)
	}
	return outs, nil
}

// tableTransformOp is KTableFilter / KTableMapValues: the function applies to
// the new value and, when the node sends old values, to the old one; a
// node with a store of its own (Materialized.as) takes the old value from
// that store instead, its predecessor sending none (computeOldValue). A
// filtered-out value becomes null; a change whose both values are null is
// not forwarded when old values are sent (Kafka: "unnecessary to forward
// here"), and is otherwise (a tombstone downstream).
type tableTransformOp struct{ opBase }

func newTableTransformOp(t *task, s *step) operator { return &tableTransformOp{baseOf(t, s, s.store)} }

func (o *tableTransformOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	// computeOld: the old value is the function's of the predecessor's
	// old value (a materialized node reads its own store instead).
	computeOld := s.node.SendOld && tx == nil
	var ins []rec
	for _, r := range recs {
		if r.value != nil {
			ins = append(ins, r)
		}
		if computeOld && r.old != nil {
			ins = append(ins, rec{key: r.key, value: r.old, ts: r.ts, in: r.in})
		}
	}
	res, err := t.evalTable(ctx, s, ins)
	if err != nil {
		return nil, err
	}
	filter := s.node.Op != topology.OpTableMapValues
	apply := func(v []byte, o tableOut) []byte {
		if filter {
			if o.pass {
				return v
			}
			return nil
		}
		return o.value
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for _, r := range recs {
		var nv, ov []byte
		skip := false
		if r.value != nil {
			nv, skip = apply(r.value, res[j]), res[j].failed
			j++
		}
		if computeOld && r.old != nil {
			ov, skip = apply(r.old, res[j]), skip || res[j].failed
			j++
		}
		if skip {
			continue
		}
		if tx != nil {
			if s.node.SendOld {
				old, _, err := tx.Get(r.key)
				if err != nil {
					return nil, recordError(r, s.node.Name, err)
				}
				ov = old
			}
			tx.Put(r.key, nv, r.ts)
		}
		if s.node.SendOld && nv == nil && ov == nil {
			continue
		}
		out = append(out, rec{key: r.key, value: nv, old: ov, ts: r.ts, in: r.in})
	}
	return out, nil
}

// tableSelectOp is KTableRepartitionMap (KTable.groupBy): each change's old
// and new value are mapped to the grouped table's (key, value); a pair with
// a null key or value is skipped. When both map to one key, one change
// carries both; otherwise the old pair is forwarded first, as a removal,
// then the new one.
type tableSelectOp struct{ opBase }

func newTableSelectOp(t *task, s *step) operator { return &tableSelectOp{baseOf(t, s, nil)} }

func (o *tableSelectOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	var ins []rec
	for _, r := range recs {
		if r.value != nil {
			ins = append(ins, r)
		}
		if r.old != nil {
			ins = append(ins, rec{key: r.key, value: r.old, ts: r.ts, in: r.in})
		}
	}
	res, err := t.evalTable(ctx, s, ins)
	if err != nil {
		return nil, err
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for _, r := range recs {
		var np, op *tableOut
		skip := false
		if r.value != nil {
			if o := &res[j]; o.key != nil && o.value != nil {
				np = o
			}
			skip = res[j].failed
			j++
		}
		if r.old != nil {
			if o := &res[j]; o.key != nil && o.value != nil {
				op = o
			}
			skip = skip || res[j].failed
			j++
		}
		switch {
		case skip:
		case np != nil && op != nil && string(np.key) == string(op.key):
			out = append(out, rec{key: np.key, value: np.value, old: op.value, ts: r.ts, in: r.in})
		default:
			if op != nil {
				out = append(out, rec{key: op.key, old: op.value, ts: r.ts, in: r.in})
			}
			if np != nil {
				out = append(out, rec{key: np.key, value: np.value, ts: r.ts, in: r.in})
			}
		}
	}
	return out, nil
}

// tableFoldOp is KTableAggregate / KTableReduce (count is an aggregate that
// adds and takes away one): per change, in order, the subtractor removes
// the old value from the key's aggregate (when both exist), then the adder
// adds the new value (to the initializer's aggregate, or for reduce by
// becoming the aggregate, when there is none). The aggregate is stored (a
// null one deletes the key) and forwarded with the one it replaced.
type tableFoldOp struct{ opBase }

func newTableFoldOp(t *task, s *step) operator { return &tableFoldOp{baseOf(t, s, s.store)} }

func (o *tableFoldOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	kept := recs[:0:0]
	for _, r := range recs {
		if r.key == nil {
			t.app.dropped.Add(1)
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return nil, nil
	}
	tx := o.tx
	if s.hostFold {
		return t.foldHost(ctx, s, tx, kept)
	}
	n := s.node
	out := make([]rec, 0, len(kept))
	for _, r := range kept {
		cur, curTS, err := tx.Get(r.key)
		if err != nil {
			return nil, recordError(r, n.Name, err)
		}
		agg := cur
		if agg, err = tableFoldOne(n, r, agg); err != nil {
			if err = t.recordFailed(r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
			continue
		}
		ts := aggTime(r.ts, cur, curTS)
		tx.Put(r.key, agg, ts)
		out = append(out, rec{key: r.key, value: agg, old: cur, ts: ts, in: r.in})
	}
	return out, nil
}

func tableFoldOne(n *topology.Node, r rec, agg []byte) ([]byte, error) {
	var err error
	if n.Op == topology.OpTableCount {
		var c int64
		if agg != nil {
			if c, err = serde.DecodeLong(agg); err != nil {
				return nil, fmt.Errorf("store %s holds a bad count: %w", n.Stores[0], err)
			}
		}
		if r.old != nil && agg != nil {
			c--
		}
		if r.value != nil {
			c++
		} else if agg == nil {
			return nil, nil
		}
		return serde.AppendLong(make([]byte, 0, 8), c), nil
	}
	if r.old != nil && agg != nil {
		switch f := n.Sub.Native.(type) {
		case topology.ReduceFunc:
			agg, err = f(agg, r.old)
		case topology.AggregateFunc:
			agg, err = f(r.key, r.old, agg)
		default:
			return nil, fmt.Errorf("engine: node %s has a native subtractor of type %T", n.Name, f)
		}
		if err != nil {
			return nil, fmt.Errorf("subtractor: %w", err)
		}
	}
	if r.value == nil {
		return agg, nil
	}
	switch f := n.Fn.Native.(type) {
	case topology.ReduceFunc:
		if agg == nil {
			return r.value, nil
		}
		agg, err = f(agg, r.value)
	case topology.AggregateFunc:
		if agg == nil {
			init, ok := n.Init.Native.(topology.InitializerFunc)
			if !ok {
				return nil, fmt.Errorf("engine: node %s has no native initializer", n.Name)
			}
			if agg, err = init(); err != nil {
				return nil, fmt.Errorf("initializer: %w", err)
			}
		}
		agg, err = f(r.key, r.value, agg)
	default:
		return nil, fmt.Errorf("engine: node %s has a native adder of type %T", n.Name, f)
	}
	if err == nil && agg == nil {
		err = errors.New("the adder returned a null aggregate")
	}
	return agg, err
}

// Changes on a grouped table's repartition topic are encoded as Kafka
// Streams' ChangedSerializer lays them out: the old value alone followed by
// a 0 byte, the new value alone followed by a 1 byte, or both as a 4-byte
// big-endian length of the new value, the new value, the old value and a 2
// byte. A change with neither is never written.
const (
	changeOld  = 0
	changeNew  = 1
	changeBoth = 2
)

func encodeChange(nv, ov []byte) []byte {
	switch {
	case nv == nil:
		return append(append(make([]byte, 0, len(ov)+1), ov...), changeOld)
	case ov == nil:
		return append(append(make([]byte, 0, len(nv)+1), nv...), changeNew)
	}
	b := make([]byte, 0, 4+len(nv)+len(ov)+1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(nv)))
	b = append(append(append(b, nv...), ov...), changeBoth)
	return b
}

func decodeChange(b []byte) (nv, ov []byte, err error) {
	if len(b) == 0 {
		return nil, nil, errors.New("a change needs at least its flag byte")
	}
	body := b[: len(b)-1 : len(b)-1]
	switch b[len(b)-1] {
	case changeOld:
		return nil, body, nil
	case changeNew:
		return body, nil, nil
	case changeBoth:
		if len(body) < 4 {
			return nil, nil, fmt.Errorf("a change of both values is %d bytes, too short for its length", len(b))
		}
		l := binary.BigEndian.Uint32(body)
		if int64(l) > int64(len(body)-4) {
			return nil, nil, fmt.Errorf("a change says its new value is %d bytes, but %d follow", l, len(body)-4)
		}
		return body[4 : 4+l : 4+l], body[4+l:], nil
	}
	return nil, nil, fmt.Errorf("a change ends in flag %d; want 0, 1 or 2", b[len(b)-1])
}
