package topology

import (
	"reflect"
	"strconv"
)

// Merge adds KStream.merge: one stream of the records of input and other
// (node KSTREAM-MERGE-<n>, or name). Kafka Streams merges streams of any
// serdes, leaving the result's to the defaults; records here stay bytes in
// their serdes, so both streams must carry the same serde pair. The result
// needs a repartition before an aggregation when either input does.
func (b *Builder) Merge(input, other uint64, name string) (*Handle, error) {
	c := b.begin("merge")
	in := c.input(input, KindStream)
	o := c.input(other, KindStream)
	if in != nil && o != nil && (in.handle.KeySerde != o.handle.KeySerde || in.handle.ValueSerde != o.handle.ValueSerde) {
		c.invalid("merge: handle %d carries (%s, %s) records and handle %d (%s, %s); merge streams of one key and value serde (map one first)",
			input, in.handle.KeySerde, in.handle.ValueSerde, other, o.handle.KeySerde, o.handle.ValueSerde)
	}
	nodeName := c.processorName(name, prefixMerge)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{Name: nodeName, Type: Processor, Op: OpMerge, KeySerde: in.handle.KeySerde, ValueSerde: in.handle.ValueSerde}
	b.nodes[n.Name] = n
	g := &gnode{nodes: []*Node{n}, out: n}
	// InternalStreamsBuilder.addGraphNode(parents, child): under each
	// parent in turn (a stream merged with itself has one edge).
	link(in.handle.Node, n)
	b.add(in.g, g)
	if o != in {
		link(o.handle.Node, n)
		b.add(o.g, g)
	}
	return b.mint(&entry{
		handle:      &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
		g:           g,
		repartition: in.repartition || o.repartition,
	}), nil
}

// Branch is one branch of a split: its predicate and its Branched.as name
// (empty: its number, from 1 in order).
type Branch struct {
	Predicate Function
	Name      string
}

// Split adds KStream.split with its branches, as BranchedKStreamImpl
// names them: the splitter KSTREAM-BRANCH-<n> (or name), and each branch a
// pass-through named the splitter's name followed by the branch's name, or
// its number (1, 2, ... in order; the default branch's is 0); each branch
// takes a name number. With defaultBranch, records no predicate passes go
// to a last branch (defaultName, Branched.as); without it they are dropped
// (noDefaultBranch). It returns one stream handle per branch, the default
// one last.
func (b *Builder) Split(input uint64, name string, branches []Branch, defaultBranch bool, defaultName string) ([]*Handle, error) {
	c := b.begin("split")
	in := c.input(input, KindStream)
	for i, br := range branches {
		if br.Predicate.Token == 0 && br.Predicate.Native == nil {
			c.invalid("split: branch %d names no predicate: token 0 and no native function", i+1)
			continue
		}
		c.function(br.Predicate, reflect.TypeFor[PredicateFunc]())
	}
	splitter := c.processorName(name, prefixBranch)
	child := func(given string, index int) string {
		n := splitter + strconv.Itoa(index)
		if given != "" {
			n = splitter + given
		}
		c.burn() // builder.newProcessorName(branchChildName): a number, unused
		if c.validName("branch", n) {
			c.claim(n)
		}
		return n
	}
	var names []string
	for i, br := range branches {
		names = append(names, child(br.Name, i+1))
	}
	if defaultBranch {
		names = append(names, child(defaultName, 0))
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	sn := &Node{Name: splitter, Type: Processor, Op: OpBranch, KeySerde: in.handle.KeySerde, ValueSerde: in.handle.ValueSerde}
	for _, br := range branches {
		sn.Branches = append(sn.Branches, br.Predicate)
	}
	sg := b.hang(in, sn)
	out := make([]*Handle, 0, len(names))
	for _, name := range names {
		n := &Node{Name: name, Type: Processor, Op: OpBranchChild, KeySerde: sn.KeySerde, ValueSerde: sn.ValueSerde}
		b.nodes[n.Name] = n
		link(sn, n)
		g := b.add(sg, &gnode{nodes: []*Node{n}, out: n})
		out = append(out, b.mint(&entry{
			handle:      &Handle{Kind: KindStream, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n},
			g:           g,
			repartition: in.repartition,
		}))
	}
	return out, nil
}

// Repartition adds KStream.repartition: the stream goes through the topic
// <name>-repartition (Repartitioned.as; else KSTREAM-REPARTITION-<n>, the
// only case that takes a number for the prefix) with the nodes
// <topic>-filter, -sink and -source (generated names for a generated
// prefix), and comes out of a new sub-topology. partitions is
// Repartitioned.withNumberOfPartitions (0: the partition count of the
// sub-topology writing it). Records with a null key are dropped, as the
// repartition filter drops them, unless a left join follows
// (relaxNullKeyFilters).
func (b *Builder) Repartition(input uint64, name string, partitions int32) (*Handle, error) {
	return b.RepartitionWith(input, name, partitions, nil)
}

// RepartitionWith is Repartition with Repartitioned.withStreamPartitioner
// (nil: Kafka's default partitioner).
func (b *Builder) RepartitionWith(input uint64, name string, partitions int32, partitioner *Function) (*Handle, error) {
	c := b.begin("repartition")
	if partitioner != nil {
		c.routingFn("stream partitioner", partitioner, func(f any) bool { _, ok := f.(StreamPartitionerFunc); return ok })
	}
	in := c.input(input, KindStream)
	if partitions < 0 {
		c.invalid("repartition: partitions %d is negative (0: as many as the sub-topology writing it)", partitions)
	}
	prefix := name
	if prefix == "" {
		prefix = prefixRepartition + pad(c.burn())
	} else {
		c.validName("repartition", name)
	}
	rp := c.planRepartition(prefix, false)
	if err := c.done(); err != nil {
		return nil, err
	}
	g := b.repartition(&entry{handle: in.handle, g: in.g}, rp)
	g.nodes[1].Partitions = partitions // filter, sink, source
	g.nodes[1].Partitioner = partitioner
	return b.mint(&entry{
		handle: &Handle{Kind: KindStream, KeySerde: g.out.KeySerde, ValueSerde: g.out.ValueSerde, Node: g.out},
		g:      g,
	}), nil
}
