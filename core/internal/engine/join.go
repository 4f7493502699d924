package engine

import (
	"context"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// joinOp is KStreamKTableJoin: each stream record is joined with the value
// its key has in the table now (read from the table's store, through its
// value getter when the table is derived: getter.go), the record's
// timestamp kept. A versioned table (versioned.go) answers with the
// version valid at the stream record's timestamp instead (KIP-914). A
// record with a null value is dropped (counted); one with a null key is
// dropped by an inner join and joined with null by a left join (KIP-962);
// an inner join drops a record whose key the table does not hold (not
// counted: it is no error). A host joiner crosses once per bundle, the
// table values beside the stream values.
type joinOp struct{ opBase }

func newJoinOp(t *task, s *step) operator { return &joinOp{baseOf(t, s, s.table)} }

func (o *joinOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	if s.mapper != nil {
		return o.globalJoin(ctx, recs) // global.go
	}
	left := s.node.Op == topology.OpLeftJoin
	tx := o.tx
	versioned := versionedStore(s.table)
	keep := make([]rec, 0, len(recs))
	others := make([][]byte, 0, len(recs))
	for _, r := range recs {
		if r.value == nil || r.key == nil && !left {
			t.app.dropped.Add(1) // "Skipping record due to null join key or value"
			continue
		}
		var other []byte
		switch {
		case r.key != nil && versioned:
			// KIP-914: the version valid at the stream record's time.
			v, ok, err := tx.getVersion(r.key, false, r.ts)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			if ok {
				other = v.Value
			}
		case r.key != nil:
			v, _, err := tx.Get(r.key)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			other = v
		}
		keep, others = append(keep, r), append(others, other)
	}
	// A derived table's value is its value getter's (getter.go).
	skip, err := t.readThrough(ctx, s, keep, others)
	if err != nil {
		return nil, err
	}
	j := 0
	for i, r := range keep {
		if skip[i] || others[i] == nil && !left {
			continue
		}
		keep[j], others[j] = r, others[i]
		j++
	}
	keep, others = keep[:j], others[:j]
	return o.joinWithOthers(ctx, keep, others)
}

// joinWithOthers joins each kept stream record's value with its other value
// (nil: none) by the step's joiner, keeping the record's key and timestamp:
// a native joiner record by record, a host joiner once per bundle. A
// joiner that fails a record fails it under the error policy.
func (o *joinOp) joinWithOthers(ctx context.Context, keep []rec, others [][]byte) ([]rec, error) {
	t, s := o.t, o.s
	if len(keep) == 0 {
		return nil, nil
	}
	if f, ok := s.node.Fn.Native.(topology.ValueJoinerFunc); ok {
		out := make([]rec, 0, len(keep))
		for i, r := range keep {
			v, err := f(r.value, others[i])
			if err != nil {
				if err := t.recordFailed(r, s.node.Name, kindOf(err), err); err != nil {
					return nil, err
				}
				continue
			}
			out = append(out, rec{key: r.key, value: v, ts: r.ts, in: r.in})
		}
		return out, nil
	}
	var out []rec
	bounds := t.bundleBounds(len(keep), func(i int) int { return len(keep[i].value) + len(others[i]) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		got, err := o.crossJoin(ctx, keep[start:end], others[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// crossJoin sends one bundle of a host joiner: the stream records, and
// each one's table value in the other_values column.
func (o *joinOp) crossJoin(ctx context.Context, recs []rec, others [][]byte) ([]rec, error) {
	t, s := o.t, o.s
	b := encodeBundle(s, recs)
	b.OtherValueSerde = s.otherSerde
	b.OtherValueLengths = make([]int32, len(others))
	for i, o := range others {
		b.OtherValueLengths[i] = length(o)
		b.OtherValues = append(b.OtherValues, o...)
	}
	out, _, fails, err := t.cross(ctx, s, recs, b)
	if err != nil {
		return nil, err
	}
	if err := t.applyFailures(recs, fails); err != nil {
		return nil, err
	}
	return out, nil
}
