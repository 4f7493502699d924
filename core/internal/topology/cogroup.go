package topology

import (
	"fmt"
	"strconv"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Cogroup (KIP-150): several grouped streams aggregated into one table, each
// with its own aggregator, into one store. Names and graph nodes follow
// Kafka Streams' CogroupedKStreamImpl and CogroupedStreamAggregateBuilder.
const (
	prefixCogroupAggregate = "COGROUPKSTREAM-AGGREGATE-" // the aggregation nodes and, with STATE-STORE-, their store
	prefixCogroupMerge     = "COGROUPKSTREAM-MERGE-"
)

// cogroup is a CogroupedKStream. Kafka's is mutable (cogroup adds a grouped
// stream to it and returns it), so every handle made from one cogroup shares
// it, its windowed forms included.
type cogroup struct {
	// streams are the grouped streams in the order they were first added
	// (Kafka's LinkedHashMap); aggs their aggregators (adding a grouped
	// stream again replaces its aggregator and keeps its place).
	streams []*entry
	aggs    map[*entry]Function
	// parents is CogroupedStreamAggregateBuilder.parentNodes: the
	// repartition each key-changed grouped stream got for this cogroup's
	// first aggregation; later ones (aggregations of the same cogroup) feed
	// from it again.
	parents map[*entry]*gnode
}

// Cogroup adds KGroupedStream.cogroup(aggregator) when input is a grouped
// stream (grouped is then 0), and CogroupedKStream.cogroup(grouped,
// aggregator) when input is a cogrouped stream. It adds no node and takes no
// name number. fn is the grouped stream's aggregator, fn(key, value,
// aggregate) -> aggregate.
func (b *Builder) Cogroup(input, grouped uint64, fn Function) (*Handle, error) {
	c := b.begin("cogroup")
	var cg *cogroup
	var g *entry
	if e := b.handles[input]; e != nil && e.cogroup != nil {
		if e.handle.Kind != KindCogroupedStream {
			c.invalid("cogroup adds to a cogrouped stream, but handle %d is a %s: add every grouped stream before windowed_by", input, e.handle.Kind)
		}
		cg = e.cogroup
		if grouped == 0 {
			c.invalid("cogroup on cogrouped stream %d names no grouped stream to add", input)
		} else {
			g = c.input(grouped, KindGroupedStream)
		}
	} else {
		g = c.input(input, KindGroupedStream)
		if grouped != 0 {
			c.invalid("cogroup on grouped stream %d names grouped stream %d too; add it to the cogrouped stream this call makes", input, grouped)
		}
	}
	c.function(fn, aggregateNative)
	if err := c.done(); err != nil {
		return nil, err
	}
	if cg == nil {
		cg = &cogroup{aggs: map[*entry]Function{}, parents: map[*entry]*gnode{}}
	}
	if _, ok := cg.aggs[g]; !ok {
		cg.streams = append(cg.streams, g)
	}
	cg.aggs[g] = fn
	first := cg.streams[0].handle
	return b.mint(&entry{
		handle:  &Handle{Kind: KindCogroupedStream, KeySerde: first.KeySerde, Node: first.Node},
		cogroup: cg,
	}), nil
}

// CogroupAggregate adds CogroupedKStream.aggregate (and the aggregate of its
// windowed forms; merger is required for session windows, refused
// otherwise): one COGROUPKSTREAM-AGGREGATE- node per grouped stream, each
// folding its stream's records with its own aggregator into one shared
// store, and a COGROUPKSTREAM-MERGE- node forwarding their updates, which
// is the table's node. A grouped stream whose key changed upstream is
// repartitioned first, through its Grouped.as topic or else through
// "<store>-repartition".
//
// Numbers are taken as CogroupedKStreamImpl takes them: the store's unless
// m names it (an absent Materialized takes one too), then sink, filter and
// source of each repartition, in the order the grouped streams were added,
// then one per aggregation node, then the merge node's. A name gives the
// nodes "<name>-cogroup-agg-<i>" and "<name>-cogroup-merge".
func (b *Builder) CogroupAggregate(input uint64, init Function, merger *Function, m *Materialized, name string) (*Handle, error) {
	c := b.begin("aggregate")
	e := b.handles[input]
	var cg *cogroup
	var w *Windows
	switch {
	case e == nil:
		c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("aggregate names handle %d, which does not exist", input)})
	case e.cogroup == nil:
		c.invalid("aggregate of a cogroup needs a cogrouped stream, but handle %d is a %s", input, e.handle.Kind)
	default:
		cg, w = e.cogroup, e.windows
	}
	c.function(init, initNative)
	switch {
	case w != nil && w.Kind == SessionWindows && merger == nil:
		c.invalid("aggregate on a session-windowed cogrouped stream needs a merger, to combine two sessions a record bridges")
	case merger != nil && (w == nil || w.Kind != SessionWindows):
		c.invalid("aggregate takes a merger only on a session-windowed stream")
	case merger != nil:
		c.function(*merger, aggregateNative)
	}
	if w != nil && w.Kind != TimeWindows && !b.FoldPrograms {
		host := init.Token != 0 || merger != nil && merger.Token != 0
		for _, g := range cg.streams {
			host = host || cg.aggs[g].Token != 0
		}
		if host {
			c.invalid("aggregate over %s with host functions needs a host that runs fold programs (host feature %q), and this session's host did not declare it: upgrade its SDK", w.Kind, "fold_programs")
		}
	}
	var mat Materialized
	if m != nil {
		mat = *m
		if mat.Retention != 0 && w == nil {
			c.invalid("aggregate: materialized retention_ms %d is for window and session stores; this aggregation has no windows", mat.Retention)
		}
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.StoreName != "" {
			c.validName("store", mat.StoreName)
		}
	}
	// Every overload passes a Materialized: one without a store name takes
	// a number for it.
	store := mat.StoreName
	if store == "" {
		store = prefixCogroupAggregate + "STATE-STORE-" + pad(c.burn())
	}
	if b.stores[store] != nil {
		c.invalid("aggregate names store %q, which exists already", store)
	}
	var retention int64
	if w != nil {
		retention = c.windowRetention(w, mat.Retention)
	}
	var streams []*entry
	if cg != nil {
		streams = cg.streams
	}
	rps := make([]repartition, len(streams))
	for i, g := range streams {
		if g.repartition {
			prefix := g.groupName
			if prefix == "" {
				prefix = store
			}
			rps[i] = c.planRepartition(prefix, cg.parents[g] != nil)
		}
	}
	aggNames := make([]string, len(streams))
	for i := range streams {
		aggNames[i] = c.suffixedName(name, "-cogroup-agg-"+strconv.Itoa(i), prefixCogroupAggregate)
	}
	mergeName := c.suffixedName(name, "-cogroup-merge", prefixCogroupMerge)
	if err := c.done(); err != nil {
		return nil, err
	}

	first := streams[0].handle
	keySerde := serde.Or(mat.KeySerde, first.KeySerde)
	valueSerde := serde.Or(mat.ValueSerde, first.ValueSerde)
	b.newStore(store, keySerde, valueSerde, mat.ChangelogConfig)
	outKey := keySerde
	if w != nil {
		st := b.stores[store]
		st.Kind, st.Windows, st.Retention = StoreWindow, w, retention
		if w.Kind == SessionWindows {
			st.Kind = StoreSession
		}
		outKey = w.KeySerde(keySerde)
	}
	aggs := make([]*gnode, len(streams))
	for i, g := range streams {
		parent, from := g.g, g.handle.Node
		if g.repartition {
			if cg.parents[g] == nil {
				cg.parents[g] = b.addRepartition(g, rps[i])
			}
			parent, from = cg.parents[g], cg.parents[g].out
		}
		fn := cg.aggs[g]
		n := &Node{
			Name: aggNames[i], Type: Processor, Op: OpAggregate, Stores: []string{store}, Fn: &fn, Init: &init, Merger: merger,
			KeySerde: outKey, ValueSerde: valueSerde, Windows: w,
		}
		b.nodes[n.Name] = n
		link(from, n)
		aggs[i] = b.add(parent, &gnode{nodes: []*Node{n}, out: n})
	}
	merge := &Node{Name: mergeName, Type: Processor, Op: OpCogroupMerge, KeySerde: outKey, ValueSerde: valueSerde, Windows: w}
	b.nodes[merge.Name] = merge
	mg := &gnode{nodes: []*Node{merge}, out: merge}
	for _, a := range aggs {
		link(a.out, merge)
		b.add(a, mg)
	}
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: outKey, ValueSerde: valueSerde, Node: merge}, g: mg}), nil
}
