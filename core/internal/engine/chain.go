package engine

import (
	"context"
	"sync"
)

// chainOp is a fused chain of stateless host operators (map_values,
// filter, flat_map_values, map, select_key, peek, foreach whose functions
// live in a host): one crossing per bundle for the whole chain (host.go).
type chainOp struct{ opBase }

func newChainOp(t *task, s *step) operator { return &chainOp{baseOf(t, s, nil)} }

// process sends recs through the chain: split into bundles bounded by
// count and bytes, all in flight at once, answers reassembled in order.
func (o *chainOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	bounds := t.bundleBounds(len(recs), func(i int) int { return len(recs[i].key) + len(recs[i].value) })
	chunks := make([][]rec, len(bounds)-1)
	for i := range chunks {
		chunks[i] = recs[bounds[i]:bounds[i+1]]
	}
	if len(chunks) == 1 {
		out, _, fails, err := t.crossOnce(ctx, s, chunks[0])
		if err != nil {
			return nil, err
		}
		if err := t.applyFailures(chunks[0], fails); err != nil {
			return nil, err
		}
		return out, nil
	}
	outs := make([][]rec, len(chunks))
	fails := make([][]failure, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer t.app.recoverInto(&errs[i], "crossing of node "+s.node.Name)
			outs[i], _, fails[i], errs[i] = t.crossOnce(ctx, s, c)
		}()
	}
	wg.Wait()
	var out []rec
	for i := range chunks {
		// The first failing chunk in record order names the failure; the
		// policy sees failed records in record order.
		if errs[i] != nil {
			return nil, errs[i]
		}
		if err := t.applyFailures(chunks[i], fails[i]); err != nil {
			return nil, err
		}
		out = append(out, outs[i]...)
	}
	return out, nil
}
