package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// tableFnStep sets up s to run table operator n's function (filter,
// filter_not, map_values, group_by's select) with evalTable: a host
// function crosses as a one-step chain (reading metadata when it asked:
// readMetadata); a native one needs nothing.
func tableFnStep(s *step, n *topology.Node) error {
	if n.Fn.Token == 0 {
		return nil
	}
	md, err := readMetadata(n, n.Fn)
	if err != nil {
		return err
	}
	s.chain = []*topology.Node{n}
	s.steps = []*pb.Step{{Token: n.Fn.Token, Operation: tableOps[n.Op], Node: n.Name, Metadata: md}}
	s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
	s.outKey, s.outValue = n.KeySerde, n.ValueSerde
	s.keysChange = n.Op == topology.OpTableSelect
	return nil
}

// compileGetter gives join step s its table's value getter (n.Getter): one
// step per store-less table operator the value read passes through, and
// the serde of the values it makes.
func compileGetter(s *step, n *topology.Node) error {
	s.otherSerde = s.table.ValueSerde
	for _, g := range n.Getter {
		if tableOps[g.Op] == 0 || g.Op == topology.OpTableSelect || len(g.Predecessors) != 1 || g.Fn == nil {
			return fmt.Errorf("engine: join %s reads its table through node %s, which is no filter, filter_not or map_values", n.Name, g.Name)
		}
		gs := &step{node: g}
		if err := tableFnStep(gs, g); err != nil {
			return err
		}
		s.getters = append(s.getters, gs)
		s.otherSerde = g.ValueSerde
	}
	return nil
}

// getterHost reports whether s's value getter runs a host function.
func (s *step) getterHost() bool {
	for _, g := range s.getters {
		if len(g.steps) > 0 {
			return true
		}
	}
	return false
}

// readThrough passes the values read from s's table for recs (vals[i] for
// recs[i]'s key; nil: none) through s's value getter, as Kafka's
// KTableFilter and KTableMapValues value getters do on lookup: a filter
// that does not pass makes the value null, a mapper maps it, a null value
// stays null. Each operator runs natively record by record or, for a host
// function, in one crossing for all of recs. skip[i] is set when a getter
// function failed on record i's value and the processing policy skipped
// the record (the join drops it).
func (t *task) readThrough(ctx context.Context, s *step, recs []rec, vals [][]byte) (skip []bool, err error) {
	skip = make([]bool, len(recs))
	if len(s.getters) == 0 {
		return skip, nil
	}
	at := make([]int, 0, len(recs))
	ins := make([]rec, 0, len(recs))
	for _, g := range s.getters {
		at, ins = at[:0], ins[:0]
		for i, v := range vals {
			if v != nil && !skip[i] {
				at = append(at, i)
				ins = append(ins, rec{key: recs[i].key, value: v, ts: recs[i].ts, in: recs[i].in})
			}
		}
		if len(ins) == 0 {
			return skip, nil
		}
		res, err := t.evalTable(ctx, g, ins)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			switch o := res[j]; {
			case o.failed:
				skip[i], vals[i] = true, nil
			case g.node.Op == topology.OpTableMapValues:
				vals[i] = o.value
			case !o.pass:
				vals[i] = nil
			}
		}
	}
	return skip, nil
}
