package topology

import (
	"fmt"
	"reflect"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Foreign-key table-table join (KIP-213), named and wired as Kafka Streams'
// KTableImpl.doJoinOnForeignKey builds it, so that the two tables need not
// be co-partitioned:
//
//	left table ──> SUBSCRIPTION-REGISTRATION processor ──> registration topic (keyed by foreign key)
//	registration topic ──> receive (subscription store) ──> subscription join (right table's store) ─┐
//	right table ──> foreign join (prefix scan of the subscription store) ────────────────────────────┴─> response topic (keyed by left key)
//	response topic ──> resolver (left table's store; stale answers dropped) ──> result table
//
// The registration topic has the right table's partition count and the
// response topic the left table's (copartitionSources).
const (
	prefixFKJoin         = "KTABLE-FK-JOIN-"
	prefixFKStore        = prefixFKJoin + "SUBSCRIPTION-STATE-STORE-"
	prefixFKRegistration = prefixFKJoin + "SUBSCRIPTION-REGISTRATION-"
	prefixFKResponse     = prefixFKJoin + "SUBSCRIPTION-RESPONSE-"
	prefixFKProcessor    = prefixFKJoin + "SUBSCRIPTION-PROCESSOR-"
	prefixFKResolver     = prefixFKJoin + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
	prefixFKOutput       = prefixFKJoin + "OUTPUT-"
	prefixTableSink      = "KTABLE-SINK-"
	fkTopicSuffix        = "-topic"
)

// FKJoin is what the nodes of one foreign-key join share.
type FKJoin struct {
	// Left: a left join (every left row has a result; the joiner gets nil
	// for a missing right value).
	Left bool
	// Stores: the left table's, the right table's and the subscriptions'.
	LeftStore, RightStore, SubscriptionStore string
	// Serdes: the left table's key and value, the right table's key (the
	// extracted foreign key's) and value.
	LeftKeySerde, LeftValueSerde, RightKeySerde, RightValueSerde string
}

// ForeignKeyJoin adds KTable.join(other, foreignKeyExtractor, joiner
// [, TableJoined.as(name)] [, Materialized]) (left: KTable.leftJoin):
// extractor maps a left value to a key of the right table (a
// MapValuesFunc or host function; nil means no foreign key), joiner joins
// the left value with the right one (a ValueJoinerFunc or host function).
// valueSerde is the result's (default: m's value serde, else the left
// table's). Both tables are read through their value getter (a table
// derived by store-less filter, filter_not or map_values from the store of
// the table it derives from), their table sources materialized; a table
// whose getter reaches no store is refused.
func (b *Builder) ForeignKeyJoin(input, other uint64, extractor, joiner Function, left bool, m *Materialized, valueSerde, name string) (*Handle, error) {
	op := "join"
	if left {
		op = "left_join"
	}
	c := b.begin(op)
	lt := c.fkTable(op, "left", input)
	rt := c.fkTable(op, "right", other)
	c.function(extractor, reflect.TypeFor[MapValuesFunc]())
	c.serde("value", valueSerde)
	if name != "" {
		c.validName("name", name)
	}
	var mat Materialized
	if m != nil {
		mat = *m
		if mat.Retention != 0 {
			c.invalid("%s: materialized retention_ms %d is for window and session stores; a join's result is a key-value table", op, mat.Retention)
		}
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.StoreName != "" && c.validName("store", mat.StoreName) && b.stores[mat.StoreName] != nil {
			c.invalid("%s names store %q, which exists already", op, mat.StoreName)
		}
	}
	c.joiner(&joiner, lt, rt, &valueSerde, mat.ValueSerde)
	// Numbers in doJoinOnForeignKey's order (NamedInternal.suffixWithOrElseGet
	// burns one even for a given name).
	regTopic := c.fkName(name, "-subscription-registration", prefixFKRegistration, false) + fkTopicSuffix
	sendName := c.fkName(name, "-subscription-registration-processor", prefixFKRegistration, true)
	regSinkName := c.fkName(name, "-subscription-registration-sink", prefixTableSink, true)
	regSourceName := c.fkName(name, "-subscription-registration-source", prefixTableSource, true)
	subStore := c.fkName(name, "-subscription-store", prefixFKStore, false)
	receiveName := c.fkName(name, "-subscription-receive", prefixFKProcessor, true)
	subJoinName := c.fkName(name, "-subscription-join-foreign", prefixFKProcessor, true)
	foreignName := c.fkName(name, "-foreign-join-subscription", prefixFKProcessor, true)
	respTopic := c.fkName(name, "-subscription-response", prefixFKResponse, false) + fkTopicSuffix
	respSinkName := c.fkName(name, "-subscription-response-sink", prefixTableSink, true)
	respSourceName := c.fkName(name, "-subscription-response-source", prefixTableSource, true)
	resolverName := c.fkName(name, "-subscription-response-resolver", prefixFKResolver, true)
	resultName := c.fkName(name, "-result", prefixFKOutput, true)
	outputStore := mat.StoreName
	if outputStore == "" {
		// MaterializedInternal(materialized, builder, FK_JOIN_OUTPUT_NAME)
		// names a store even when none is made; it exists only when an
		// operator downstream needs old values (KTableSource).
		outputStore = fmt.Sprintf("%sSTATE-STORE-%010d", prefixFKOutput, c.burn())
	}
	for _, t := range []string{regTopic, respTopic} {
		c.validName("topic", t)
		if src, ok := b.topics[t]; ok {
			c.invalid("%s's internal topic %q is read by source %s already", op, t, src)
		}
	}
	if b.stores[subStore] != nil {
		c.invalid("%s names store %q, which exists already", op, subStore)
	}
	if err := c.done(); err != nil {
		return nil, err
	}

	ln, rn := lt.handle.Node, rt.handle.Node
	b.sendOldValues(rn)
	b.sendOldValues(ln)
	b.materialize(getterRoot(ln))
	b.materialize(getterRoot(rn))
	leftStore, leftGetter := valueGetter(ln)
	rightStore, rightGetter := valueGetter(rn)
	fk := &FKJoin{
		Left: left, LeftStore: leftStore, RightStore: rightStore, SubscriptionStore: subStore,
		LeftKeySerde: lt.handle.KeySerde, LeftValueSerde: lt.handle.ValueSerde,
		RightKeySerde: rt.handle.KeySerde, RightValueSerde: rt.handle.ValueSerde,
	}
	b.newStore(subStore, serde.Bytes, serde.Bytes, nil)
	rk, lk := fk.RightKeySerde, fk.LeftKeySerde
	resultValue := serde.Or(valueSerde, serde.Or(mat.ValueSerde, lt.handle.ValueSerde))
	send := &Node{Name: sendName, Type: Processor, Op: OpFKSend, Fn: &extractor, FK: fk, KeySerde: rk, ValueSerde: serde.Bytes}
	regSink := &Node{Name: regSinkName, Type: Sink, Topic: regTopic, Internal: true, KeySerde: rk, ValueSerde: serde.Bytes}
	regSource := &Node{Name: regSourceName, Type: Source, Topics: []string{regTopic}, Internal: true, Copartitioned: true, KeySerde: rk, ValueSerde: serde.Bytes}
	receive := &Node{Name: receiveName, Type: Processor, Op: OpFKReceive, Stores: []string{subStore}, FK: fk, KeySerde: rk, ValueSerde: serde.Bytes}
	subJoin := &Node{Name: subJoinName, Type: Processor, Op: OpFKSubscriptionJoin, Stores: []string{fk.RightStore}, Getter: rightGetter, FK: fk, KeySerde: lk, ValueSerde: serde.Bytes}
	foreign := &Node{Name: foreignName, Type: Processor, Op: OpFKForeignJoin, Stores: []string{subStore}, FK: fk, KeySerde: lk, ValueSerde: serde.Bytes}
	respSink := &Node{Name: respSinkName, Type: Sink, Topic: respTopic, Internal: true, FK: fk, KeySerde: lk, ValueSerde: serde.Bytes}
	respSource := &Node{Name: respSourceName, Type: Source, Topics: []string{respTopic}, Internal: true, Copartitioned: true, KeySerde: lk, ValueSerde: serde.Bytes}
	resolver := &Node{Name: resolverName, Type: Processor, Op: OpFKResolve, Fn: &joiner, Stores: []string{fk.LeftStore}, Getter: leftGetter, FK: fk, KeySerde: lk, ValueSerde: resultValue}
	result := &Node{Name: resultName, Type: Processor, Op: OpFKOutput, FK: fk, KeySerde: serde.Or(mat.KeySerde, lk), ValueSerde: resultValue}
	result.pendingStore, result.pendingConfig = outputStore, mat.ChangelogConfig
	if mat.StoreName != "" {
		b.materialize(result)
	}
	for _, n := range []*Node{send, regSink, regSource, receive, subJoin, foreign, respSink, respSource, resolver, result} {
		b.nodes[n.Name] = n
	}
	b.topics[regTopic], b.topics[respTopic] = regSource.Name, respSource.Name
	link(ln, send)
	link(send, regSink)
	link(regSource, receive)
	link(receive, subJoin)
	link(subJoin, respSink)
	link(rn, foreign)
	link(foreign, respSink)
	link(respSource, resolver)
	link(resolver, result)

	// Graph nodes in doJoinOnForeignKey's order; the response sink has two
	// parents and is added under both (its build priority is the second's).
	gSend := b.add(lt.g, &gnode{nodes: []*Node{send}, out: send})
	gRegSink := b.add(gSend, &gnode{nodes: []*Node{regSink}, out: regSink})
	gRegSource := b.add(gRegSink, &gnode{nodes: []*Node{regSource}, out: regSource})
	gReceive := b.add(gRegSource, &gnode{nodes: []*Node{receive}, out: receive})
	gSubJoin := b.add(gReceive, &gnode{nodes: []*Node{subJoin}, out: subJoin})
	gForeign := b.add(rt.g, &gnode{nodes: []*Node{foreign}, out: foreign})
	gRespSink := b.add(gSubJoin, &gnode{nodes: []*Node{respSink}, out: respSink})
	b.add(gForeign, gRespSink)
	gRespSource := b.add(gRespSink, &gnode{nodes: []*Node{respSource}, out: respSource})
	gResolver := b.add(gRespSource, &gnode{nodes: []*Node{resolver}, out: resolver})
	gResult := b.add(gResolver, &gnode{nodes: []*Node{result}, out: result})
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: result.KeySerde, ValueSerde: result.ValueSerde, Node: result}, g: gResult}), nil
}

// fkTable looks up one side of a foreign-key join: a key-value table whose
// value getter reads a store (its own, one a table source can keep, or the
// one of the table it is derived from by store-less operators).
func (c *call) fkTable(op, side string, id uint64) *entry {
	e := c.b.handles[id]
	switch {
	case e == nil:
		c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("%s names handle %d, which does not exist", op, id)})
		return nil
	case e.handle.Kind != KindTable:
		c.invalid("%s with a foreign key joins a table with a table, but the %s handle %d is a %s", op, side, id, e.handle.Kind)
		return nil
	}
	n := e.handle.Node
	if _, _, _, windowed := serde.ParseWindowed(e.handle.KeySerde); windowed {
		c.invalid("%s with a foreign key: %s table handle %d (%s) is windowed; a foreign-key join joins key-value tables", op, side, id, n.Name)
		return nil
	}
	if store, _ := valueGetter(n); store == "" {
		c.invalid("%s with a foreign key: %s table handle %d (%s) %s", op, side, id, n.Name, noStore(n))
		return nil
	}
	return e
}

// fkName is NamedInternal.suffixWithOrElseGet: name+suffix, else prefix
// and the next number (taken either way). node: the name is a node's,
// which must be unique.
func (c *call) fkName(name, suffix, prefix string, node bool) string {
	if node {
		return c.suffixedName(name, suffix, prefix)
	}
	n := c.burn()
	if name != "" {
		return name + suffix
	}
	return fmt.Sprintf("%s%010d", prefix, n)
}
