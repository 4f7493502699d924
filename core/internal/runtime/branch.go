package runtime

import (
	"context"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// branch is KStreamBranch (KStream.split): each record goes to the first
// branch whose predicate it passes, else to the default branch when there
// is one, else nowhere. A predicate sees only the records no earlier one
// took, as in Kafka Streams; a host predicate crosses once per batch (per
// bundle of records) with them. A record whose predicate fails goes to no
// branch: the processing policy has it (recordFailed). It returns the
// records of each branch, in s.next's order.
func (t *task) branch(ctx context.Context, s *step, recs []rec) ([][]rec, error) {
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
		} else if err := t.predicate(ctx, s.preds[i], rest, pass); err != nil {
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
func (t *task) predicate(ctx context.Context, ps *step, recs []rec, pass []outcome) error {
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
