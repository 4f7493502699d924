package engine

import (
	"context"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// branchOp is KStreamBranch (KStream.split): each record goes to the
// first branch whose predicate it passes, else to the default branch when
// there is one, else nowhere. A predicate sees only the records no earlier
// one took, as in Kafka Streams; a host predicate crosses once per batch
// (per bundle of records) with them. A record whose predicate fails goes to
// no branch: the processing policy has it (recordFailed).
type branchOp struct{ opBase }

func newBranchOp(t *task, s *step) operator { return &branchOp{baseOf(t, s, nil)} }

// process pushes each branch its records, in branch order, and forwards
// nothing to all children.
func (o *branchOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	routed, err := o.route(ctx, recs)
	if err != nil {
		return nil, err
	}
	for i, c := range o.s.next {
		if err := o.t.push(ctx, c, routed[i]); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// route returns the records of each branch, in s.next's order.
func (o *branchOp) route(ctx context.Context, recs []rec) ([][]rec, error) {
	t, s := o.t, o.s
	n := s.node
	routed := make([][]rec, len(s.next))
	rest := recs
	for i, p := range n.Branches {
		if len(rest) == 0 {
			break
		}
		pass := make([]outcome, len(rest))
		if f, ok := p.Native.(topology.PredicateFunc); ok {
			for j, r := range rest {
				ok, err := f(r.key, r.value)
				switch {
				case err != nil:
					if err := t.recordFailed(r, n.Name, kindOf(err), err); err != nil {
						return nil, err
					}
					pass[j] = failed
				case ok:
					pass[j] = passed
				}
			}
		} else if err := o.predicate(ctx, s.preds[i], rest, pass); err != nil {
			return nil, err
		}
		var kept []rec
		for j, r := range rest {
			switch pass[j] {
			case passed:
				routed[i] = append(routed[i], r)
			case notPassed:
				kept = append(kept, r)
			}
		}
		rest = kept
	}
	if len(s.next) > len(n.Branches) {
		routed[len(n.Branches)] = rest
	}
	return routed, nil
}

// outcome is what a predicate made of a record.
type outcome uint8

const (
	notPassed outcome = iota
	passed
	failed // skipped under the policy
)

// predicate runs a host predicate (a one-step filter chain) over recs in
// bundles (bundleBounds), setting each record's outcome.
func (o *branchOp) predicate(ctx context.Context, ps *step, recs []rec, pass []outcome) error {
	t := o.t
	bounds := t.bundleBounds(len(recs), func(i int) int { return len(recs[i].key) + len(recs[i].value) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		_, res, fails, err := t.crossOnce(ctx, ps, recs[start:end])
		if err != nil {
			return err
		}
		if err := t.applyFailures(recs[start:end], fails); err != nil {
			return err
		}
		for i, c := range res.OutputCounts {
			if c > 0 {
				pass[start+i] = passed
			}
		}
		for _, f := range fails {
			pass[start+f.index] = failed
		}
	}
	return nil
}
