package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// countOp is KStream.groupBy(...).count(): KStreamAggregate counting into
// its store, each update forwarded (or cached). Records with a null key
// or value are dropped and counted, as for every aggregation.
type countOp struct{ opBase }

func newCountOp(t *task, s *step) operator { return &countOp{baseOf(t, s, s.store)} }

func (o *countOp) process(_ context.Context, recs []rec) ([]rec, error) {
	return count(o.s, o.tx, o.t.dropNulls(recs))
}

// count is KStreamAggregate counting: each record adds one to its key's
// count (in its store key), forwarded as an update.
func count(s *step, tx *storeTx, recs []rec) ([]rec, error) {
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		sk := r.storeKey()
		cur, curTS, err := tx.Get(sk)
		if err != nil {
			return nil, recordError(r, s.node.Name, err)
		}
		var n int64
		if cur != nil {
			if n, err = serde.DecodeLong(cur); err != nil {
				return nil, recordError(r, s.node.Name, fmt.Errorf("store %s holds a bad count: %w", s.store.Name, err))
			}
		}
		v := serde.AppendLong(make([]byte, 0, 8), n+1)
		ts := aggTime(r.ts, cur, curTS)
		tx.Put(sk, v, ts)
		out = append(out, rec{key: r.key, skey: r.skey, value: v, old: cur, ts: ts, in: r.in})
	}
	return out, nil
}
