package engine

import "context"

// passOp forwards its records as they come: to_stream, merge, a split's
// branches, the join-window marker of a stream-stream join, and a
// repartition filter that keeps null keys (a join downstream joins them
// with null).
type passOp struct{}

func newPassOp(*task, *step) operator { return passOp{} }

func (passOp) process(_ context.Context, recs []rec) ([]rec, error) { return recs, nil }

// dropNullKeyOp is the filter before a repartition sink: a record with a
// null key is not repartitioned.
type dropNullKeyOp struct{}

func newDropNullKeyOp(*task, *step) operator { return dropNullKeyOp{} }

func (dropNullKeyOp) process(_ context.Context, recs []rec) ([]rec, error) {
	for i, r := range recs {
		if r.key == nil {
			// Copied only from the first null key on: most batches have
			// none, and go on as they came.
			out := append(make([]rec, 0, len(recs)-1), recs[:i]...)
			for _, r := range recs[i+1:] {
				if r.key != nil {
					out = append(out, r)
				}
			}
			return out, nil
		}
	}
	return recs, nil
}
