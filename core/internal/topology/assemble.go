package topology

import (
	"container/heap"
	"slices"
)

// Topology returns the topology built so far, as a snapshot that later
// builder calls do not change; it may be called any number of times. It
// numbers sub-topologies as Kafka Streams does (in the order their first
// nodes are written), lists each sub-topology's nodes in describe() order,
// and orders each node's successors as Kafka Streams forwards to them (the
// order the children are written, which is the order they were made except
// when a named grouped stream's shared repartition is added again). It
// also sets Subtopology on the builder's nodes.
func (b *Builder) Topology() (*Topology, error) {
	if len(b.roots) == 0 {
		return nil, &callError{problems: []problem{{ErrInvalid, "the topology has no source; call stream first"}}}
	}
	order := b.writeOrder()
	copies := make(map[*Node]*Node, len(order))
	for i, n := range order {
		n.seq = i
		cp := *n
		cp.Topics, cp.Stores = slices.Clone(n.Topics), slices.Clone(n.Stores)
		copies[n] = &cp
	}
	for _, n := range order {
		cp := copies[n]
		succ := slices.Clone(n.Successors)
		slices.SortStableFunc(succ, func(x, y *Node) int { return x.seq - y.seq })
		cp.Successors, cp.Predecessors = nil, nil
		for _, s := range succ {
			cp.Successors = append(cp.Successors, copies[s])
		}
		for _, p := range n.Predecessors {
			cp.Predecessors = append(cp.Predecessors, copies[p])
		}
	}
	relaxNullKeyFilters(b.roots, copies)

	// Sub-topologies are the connected parts of the graph (InternalTopology-
	// Builder's nodeGrouper unites each node with its predecessors, and the
	// users of a store, but a count's store has one user). makeNodeGroups
	// numbers them in the order their first nodes were written.
	root := map[*Node]*Node{}
	var find func(n *Node) *Node
	find = func(n *Node) *Node {
		r, ok := root[n]
		if !ok || r == n {
			return n
		}
		r = find(r)
		root[n] = r
		return r
	}
	storeUser := map[string]*Node{}
	for _, n := range order {
		for _, p := range n.Predecessors {
			if a, b := find(n), find(p); a != b {
				root[a] = b
			}
		}
		// A store's users (a table and the stream joined with it) are
		// one sub-topology.
		for _, s := range n.Stores {
			if u, ok := storeUser[s]; !ok {
				storeUser[s] = n
			} else if a, b := find(n), find(u); a != b {
				root[a] = b
			}
		}
	}
	t := &Topology{Stores: make(map[string]*Store, len(b.stores))}
	// A global table's nodes are a sub-topology of their own, numbered
	// with the others (makeNodeGroups numbers every node group) but
	// described as a global store and given no tasks.
	ids := map[*Node]int{}
	subs := map[int]*Subtopology{}
	globals := map[int]*GlobalStore{}
	for _, n := range order {
		r := find(n)
		id, ok := ids[r]
		if !ok {
			id = len(ids)
			ids[r] = id
			if n.global {
				globals[id] = &GlobalStore{ID: id}
				t.Globals = append(t.Globals, globals[id])
			} else {
				subs[id] = &Subtopology{ID: id}
				t.Subtopologies = append(t.Subtopologies, subs[id])
			}
		}
		cp := copies[n]
		n.Subtopology, cp.Subtopology = id, id
		if g := globals[id]; g != nil {
			g.add(cp, b.stores)
			continue
		}
		sub := subs[id]
		sub.Nodes = append(sub.Nodes, cp)
		if cp.Type == Source {
			sub.Sources = append(sub.Sources, cp)
		}
	}
	for _, sub := range t.Subtopologies {
		sub.layout = layoutOf(sub.Nodes)
		sub.Nodes = slices.Clone(sub.layout.nodes)
	}
	for name, s := range b.stores {
		cp := *s
		t.Stores[name] = &cp
	}
	return t, nil
}

// writeOrder is the order in which Kafka Streams writes nodes into its
// InternalTopologyBuilder (InternalStreamsBuilder.buildAndOptimizeTopology):
// graph nodes are taken from a priority queue by build priority, starting
// from the root's children, and each is written once, the first time it is
// taken.
func (b *Builder) writeOrder() []*Node {
	q := &byPrio{}
	for _, g := range b.roots {
		heap.Push(q, g)
	}
	written := map[*gnode]bool{}
	var order []*Node
	for q.Len() > 0 {
		g := heap.Pop(q).(*gnode)
		if !written[g] {
			written[g] = true
			order = append(order, g.nodes...)
		}
		for _, ch := range g.children {
			heap.Push(q, ch)
		}
	}
	return order
}

type byPrio []*gnode

func (q byPrio) Len() int           { return len(q) }
func (q byPrio) Less(i, j int) bool { return q[i].prio < q[j].prio }
func (q byPrio) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *byPrio) Push(x any)        { *q = append(*q, x.(*gnode)) }
func (q *byPrio) Pop() any {
	old := *q
	g := old[len(old)-1]
	*q = old[:len(old)-1]
	return g
}

// relaxNullKeyFilters is InternalStreamsBuilder.rewriteRepartitionNodes
// (Kafka 3.7+, KIP-962): a repartition's filter drops null-key records
// unless a join that joins them with null (a graph node labelled
// NULL_KEY_RELAXED_JOIN) is downstream of it, however far
// (NodesWithRelaxedNullKeyJoinDownstream); then it passes every record
// and marks the copy of its filter in copies KeepNullKeys. The filter
// stays in the topology either way, so describe() does not change.
func relaxNullKeyFilters(roots []*gnode, copies map[*Node]*Node) {
	relaxed := map[*gnode]bool{} // visited: whether a relaxed join is below
	var visit func(g *gnode) bool
	visit = func(g *gnode) bool {
		if r, ok := relaxed[g]; ok {
			return r
		}
		r := false
		for _, c := range g.children {
			// Every child is visited: Kafka's traversal goes on past the
			// first hit.
			if visit(c) || c.relaxedNullKeyJoin {
				r = true
			}
		}
		relaxed[g] = r
		return r
	}
	for _, g := range roots {
		visit(g)
	}
	for g, r := range relaxed {
		if r && len(g.nodes) > 0 && g.nodes[0].Op == OpRepartitionFilter {
			copies[g.nodes[0]].KeepNullKeys = true
		}
	}
}
