package engine

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// tableTransformValuesOp is KTableTransformValues (KTable.transformValues):
// the transformer runs as a fixed-key processor (inner: a Go processor or
// a host processor bundle, with init, close, stores and punctuation as
// any processor's) that forwards one value per record it is given. Per
// change it is given the new value (null too: a tombstone is transformed)
// and, when the node sends old values and keeps no store, then the old one
// (null too), in that order, as Kafka Streams calls transform. A
// materialized node puts the new value in its store (a null one deletes)
// and takes the old value from it instead. Every change is forwarded (no
// both-null skip, unlike KTableMapValues), with the input change's
// timestamp and record context. A record the policy skips after its
// transformer failed skips its change.
type tableTransformValuesOp struct {
	opBase
	inner operator
}

func newTableTransformValuesOp(t *task, s *step) operator {
	// The inner processor sees a fixed-key processor node connected to the
	// transformer's stores only (not the node's own).
	n := *s.node
	n.Op, n.Stores, n.TableStore = topology.OpProcessValues, s.node.TransformerStores(), ""
	is := *s
	is.node, is.store = &n, nil
	o := &tableTransformValuesOp{opBase: baseOf(t, s, s.store)}
	if len(s.steps) > 0 {
		o.inner = newHostProcessOp(t, &is)
	} else {
		o.inner = newProcessOp(t, &is)
	}
	return o
}

func (o *tableTransformValuesOp) revive() { o.inner.(reviver).revive() }

func (o *tableTransformValuesOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	s, tx := o.s, o.tx
	computeOld := s.node.SendOld && tx == nil
	// Each value the transformer gets has a record context of its own, so
	// that what it forwards names the value it came from.
	ins := make([]rec, 0, len(recs))
	at := map[*kgo.Record]int{}
	for _, r := range recs {
		n := 1
		if computeOld {
			n = 2
		}
		for j := range n {
			in := kgo.Record{Partition: -1, Offset: -1}
			if r.in != nil {
				in = *r.in
			}
			v := r.value
			if j == 1 {
				v = r.old
			}
			at[&in] = len(ins)
			ins = append(ins, rec{key: r.key, value: v, ts: r.ts, in: &in, headers: r.headers, ownHeaders: r.ownHeaders})
		}
	}
	fwd, err := o.inner.process(ctx, ins)
	if err != nil {
		return nil, err
	}
	vals := make([][]byte, len(ins))
	got := make([]bool, len(ins))
	for _, f := range fwd {
		i, ok := at[f.in]
		if !ok {
			return nil, fmt.Errorf("engine: transform_values node %s forwarded a record for no value it was given (a value transformer returns one value per call)", s.node.Name)
		}
		if got[i] {
			return nil, fmt.Errorf("engine: transform_values node %s forwarded two values for the record at %s; a value transformer returns one value per call", s.node.Name, recordAt(ins[i]))
		}
		got[i], vals[i] = true, f.value
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for _, r := range recs {
		nv, ok := vals[j], got[j]
		j++
		var ov []byte
		if computeOld {
			ov, ok = vals[j], ok && got[j]
			j++
		}
		if !ok {
			continue // the transformer failed and the policy skipped the record
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
		out = append(out, rec{key: r.key, value: nv, old: ov, ts: r.ts, in: r.in, headers: r.headers, ownHeaders: r.ownHeaders})
	}
	return out, nil
}

// recordAt names where r came from.
func recordAt(r rec) string {
	if r.in == nil {
		return "an unknown offset"
	}
	return fmt.Sprintf("%s/%d@%d", r.in.Topic, r.in.Partition, r.in.Offset)
}
