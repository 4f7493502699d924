package topology

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Describe returns Kafka Streams' Topology.describe().toString() for t, byte
// for byte.
//
// Kafka's text depends on details of its Java implementation
// (InternalTopologyBuilder.describeSubtopology and TopologyDescription), which
// this file reproduces rather than approximates:
//   - Nodes are printed ordered by the size of the sub-tree below them
//     (descending), then by name.
//   - Successor and predecessor lists are java.util.TreeSets ordered by the
//     same comparator, but filled while the sizes are still growing, so a
//     list is not always sorted by the final sizes. Which order results
//     depends on the order the edges are connected, which is the iteration
//     order of a java.util.HashMap keyed by node name.
//   - Topics and stores are printed as java.util.HashSets print.
//
// Describe is safe for concurrent use.
func (t *Topology) Describe() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n ")
	subs := slices.Clone(t.Subtopologies)
	slices.SortStableFunc(subs, func(a, b *Subtopology) int { return a.ID - b.ID })
	globals := slices.Clone(t.Globals)
	slices.SortStableFunc(globals, func(a, b *GlobalStore) int { return a.ID - b.ID })
	for _, s := range subs {
		// TopologyDescription.toString interleaves the global stores by id.
		for len(globals) > 0 && globals[0].ID < s.ID {
			globals[0].describe(&sb)
			globals = globals[1:]
		}
		l := s.describedLayout()
		sb.WriteString("  Sub-topology: ")
		sb.WriteString(strconv.Itoa(s.ID))
		sb.WriteString("\n")
		for _, n := range l.nodes {
			sb.WriteString("    ")
			writeNode(&sb, n, l)
			sb.WriteString("\n")
		}
		sb.WriteString("\n")
	}
	for _, g := range globals {
		g.describe(&sb)
	}
	return sb.String()
}

// DescribedEdges returns n's successors and predecessors in the order
// describe() prints them, which is not always the order of n.Successors
// (the order Kafka Streams forwards in). n must be a node of s.
func (s *Subtopology) DescribedEdges(n *Node) (successors, predecessors []*Node) {
	l := s.describedLayout()
	return l.succ[n], l.pred[n]
}

func (s *Subtopology) describedLayout() *layout {
	if s.layout != nil {
		return s.layout
	}
	return layoutOf(s.Nodes)
}

func writeNode(sb *strings.Builder, n *Node, l *layout) {
	switch n.Type {
	case Source:
		// Source.toString: the topic set is a HashSet copied from the
		// source's topic list.
		if n.Pattern != "" {
			// Source.toString prints the Pattern (its pattern string) when
			// the source has no topics.
			sb.WriteString("Source: " + n.Name + " (topics: " + n.Pattern + ")")
		} else {
			topics := javaHashOrder(n.Topics, javaCopyCapacity(len(n.Topics)))
			sb.WriteString("Source: " + n.Name + " (topics: [" + strings.Join(topics, ", ") + "])")
		}
		sb.WriteString("\n      --> " + nodeNames(l.succ[n]))
	case Sink:
		if n.TopicExtractor != nil {
			sb.WriteString("Sink: " + n.Name + " (extractor class: " + n.ExtractorClass() + ")")
		} else {
			sb.WriteString("Sink: " + n.Name + " (topic: " + n.Topic + ")")
		}
		sb.WriteString("\n      <-- " + nodeNames(l.pred[n]))
	default:
		// The store set is a HashSet copied from the processor's HashSet of
		// store names, in the order they were connected.
		stores := javaHashOrder(n.Stores, javaDefaultCapacity(len(n.Stores)))
		stores = javaHashOrder(stores, javaCopyCapacity(len(stores)))
		sb.WriteString("Processor: " + n.Name + " (stores: [" + strings.Join(stores, ", ") + "])")
		sb.WriteString("\n      --> " + nodeNames(l.succ[n]))
		sb.WriteString("\n      <-- " + nodeNames(l.pred[n]))
	}
}

// nodeNames joins names with ", ", or says none.
func nodeNames(ns []*Node) string {
	if len(ns) == 0 {
		return "none"
	}
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

// layout is how describe() orders one sub-topology.
type layout struct {
	nodes      []*Node
	succ, pred map[*Node][]*Node
}

// dnode is a node as InternalTopologyBuilder.AbstractNode describes it.
type dnode struct {
	n          *Node
	size       int // of the sub-tree rooted here, as updateSize counts it
	succ, pred treeSet
}

// layoutOf reproduces InternalTopologyBuilder.describeSubtopology for the
// nodes of one sub-topology (their seq must be set).
func layoutOf(nodes []*Node) *layout {
	ds := make(map[*Node]*dnode, len(nodes))
	list := make([]*dnode, 0, len(nodes))
	for _, n := range nodes {
		d := &dnode{n: n, size: 1}
		d.succ.cmp, d.pred.cmp = compareDescribed, compareDescribed
		ds[n] = d
		list = append(list, d)
	}
	// The node group is a HashSet filled in write order, copied into the
	// HashMap nodesByName; both have the capacity a default HashMap grows to,
	// so names in one bucket keep the write order.
	slices.SortStableFunc(list, func(a, b *dnode) int { return a.n.seq - b.n.seq })
	capacity := javaDefaultCapacity(len(list))
	slices.SortStableFunc(list, func(a, b *dnode) int { return javaBucket(a.n.Name, capacity) - javaBucket(b.n.Name, capacity) })

	// Connect each node to its predecessors, growing the sizes upstream as
	// edges are added; the TreeSets compare with the sizes of the moment.
	for _, d := range list {
		for _, p := range d.n.Predecessors {
			pd := ds[p]
			if pd == nil {
				continue // not in this sub-topology
			}
			d.pred.add(pd)
			pd.succ.add(d)
			updateSize(pd, d.size)
		}
	}

	// The sub-topology's own TreeSet is filled after all sizes are final,
	// so it is simply sorted.
	slices.SortFunc(list, compareDescribed)
	l := &layout{succ: make(map[*Node][]*Node, len(list)), pred: make(map[*Node][]*Node, len(list))}
	for _, d := range list {
		l.nodes = append(l.nodes, d.n)
		l.succ[d.n] = d.succ.nodes()
		l.pred[d.n] = d.pred.nodes()
	}
	return l
}

func updateSize(d *dnode, delta int) {
	d.size += delta
	d.pred.each(func(p *dnode) { updateSize(p, delta) })
}

// compareDescribed is InternalTopologyBuilder.NodeComparator: bigger
// sub-trees first, then by name (Java's String.compareTo).
func compareDescribed(a, b *dnode) int {
	if a == b {
		return 0
	}
	if a.size != b.size {
		return b.size - a.size
	}
	return javaCompare(a.n.Name, b.n.Name)
}

// treeSet is a java.util.TreeSet (a TreeMap's red-black tree), kept exact
// because its comparator's keys change after insertion: the in-order
// sequence then depends on the tree's shape, hence on its balancing.
type treeSet struct {
	root *rbNode
	cmp  func(a, b *dnode) int
}

type rbNode struct {
	key                 *dnode
	left, right, parent *rbNode
	black               bool
}

// add is TreeMap.put: descend comparing with the current keys, attach a
// leaf, rebalance (fixAfterInsertion).
func (t *treeSet) add(k *dnode) {
	if t.root == nil {
		t.root = &rbNode{key: k, black: true}
		return
	}
	p := t.root
	for {
		c := t.cmp(k, p.key)
		switch {
		case c == 0:
			return
		case c < 0 && p.left != nil:
			p = p.left
		case c > 0 && p.right != nil:
			p = p.right
		default:
			e := &rbNode{key: k, parent: p}
			if c < 0 {
				p.left = e
			} else {
				p.right = e
			}
			t.fix(e)
			return
		}
	}
}

func (t *treeSet) fix(x *rbNode) {
	x.black = false
	for x != nil && x != t.root && !x.parent.black {
		if parentOf(x) == leftOf(parentOf(parentOf(x))) {
			y := rightOf(parentOf(parentOf(x)))
			if !isBlack(y) {
				setBlack(parentOf(x), true)
				setBlack(y, true)
				setBlack(parentOf(parentOf(x)), false)
				x = parentOf(parentOf(x))
			} else {
				if x == rightOf(parentOf(x)) {
					x = parentOf(x)
					t.rotateLeft(x)
				}
				setBlack(parentOf(x), true)
				setBlack(parentOf(parentOf(x)), false)
				t.rotateRight(parentOf(parentOf(x)))
			}
		} else {
			y := leftOf(parentOf(parentOf(x)))
			if !isBlack(y) {
				setBlack(parentOf(x), true)
				setBlack(y, true)
				setBlack(parentOf(parentOf(x)), false)
				x = parentOf(parentOf(x))
			} else {
				if x == leftOf(parentOf(x)) {
					x = parentOf(x)
					t.rotateRight(x)
				}
				setBlack(parentOf(x), true)
				setBlack(parentOf(parentOf(x)), false)
				t.rotateLeft(parentOf(parentOf(x)))
			}
		}
	}
	t.root.black = true
}

func (t *treeSet) rotateLeft(p *rbNode) {
	if p == nil {
		return
	}
	r := p.right
	p.right = r.left
	if r.left != nil {
		r.left.parent = p
	}
	r.parent = p.parent
	switch {
	case p.parent == nil:
		t.root = r
	case p.parent.left == p:
		p.parent.left = r
	default:
		p.parent.right = r
	}
	r.left = p
	p.parent = r
}

func (t *treeSet) rotateRight(p *rbNode) {
	if p == nil {
		return
	}
	l := p.left
	p.left = l.right
	if l.right != nil {
		l.right.parent = p
	}
	l.parent = p.parent
	switch {
	case p.parent == nil:
		t.root = l
	case p.parent.right == p:
		p.parent.right = l
	default:
		p.parent.left = l
	}
	l.right = p
	p.parent = l
}

// Java's null-safe helpers: a missing node is black and has no relatives.
func isBlack(p *rbNode) bool { return p == nil || p.black }
func parentOf(p *rbNode) *rbNode {
	if p == nil {
		return nil
	}
	return p.parent
}
func leftOf(p *rbNode) *rbNode {
	if p == nil {
		return nil
	}
	return p.left
}
func rightOf(p *rbNode) *rbNode {
	if p == nil {
		return nil
	}
	return p.right
}
func setBlack(p *rbNode, black bool) {
	if p != nil {
		p.black = black
	}
}

// each visits the keys in order.
func (t *treeSet) each(f func(*dnode)) {
	var walk func(*rbNode)
	walk = func(p *rbNode) {
		if p == nil {
			return
		}
		walk(p.left)
		f(p.key)
		walk(p.right)
	}
	walk(t.root)
}

func (t *treeSet) nodes() []*Node {
	var ns []*Node
	t.each(func(d *dnode) { ns = append(ns, d.n) })
	return ns
}

// javaHashOrder returns items (distinct strings, in insertion order) in the
// iteration order of a java.util.HashSet of the given table capacity:
// bucket by bucket, insertion order within a bucket. (A bucket turned into a
// tree, at 8 or more names in one bucket, is not reproduced.)
func javaHashOrder(items []string, capacity int) []string {
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b string) int { return javaBucket(a, capacity) - javaBucket(b, capacity) })
	return out
}

// javaBucket is HashMap's bucket index for a String key: its hashCode,
// spread (h ^ h>>>16), masked by the capacity.
func javaBucket(s string, capacity int) int {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	spread := uint32(h) ^ uint32(h)>>16
	return int(spread & uint32(capacity-1))
}

// javaDefaultCapacity is the table size of a HashMap created empty that
// holds n keys: 16, doubled whenever n exceeds three quarters of it.
func javaDefaultCapacity(n int) int {
	c := 16
	for n > c/4*3 {
		c *= 2
	}
	return c
}

// javaCopyCapacity is the table size of new HashSet<>(collection of n) on
// JDK 17: tableSizeFor(max((int)(n/.75f)+1, 16)). (JDK 19 and later size it
// as HashMap.newHashMap(max(n, 12)), which differs only for n = 12·2^k.)
func javaCopyCapacity(n int) int {
	want := max(int(float32(n)/0.75)+1, 16)
	return 1 << bits.Len(uint(want-1))
}

// javaCompare is String.compareTo: by UTF-16 code units.
func javaCompare(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}
