package topology

import (
	"math"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Stream-stream joins (KStream.join / leftJoin / outerJoin(KStream,
// ValueJoiner, JoinWindows, StreamJoined)), named as KStreamImplJoin names
// them: a KSTREAM-WINDOWED- processor per side that keeps the side's
// records in its window store, a join processor per side that looks the
// other side's store up (KSTREAM-JOINTHIS- / -JOINOTHER-; a side that
// keeps its unmatched records is -OUTERTHIS- / -OUTEROTHER-) and a
// KSTREAM-MERGE- of both. Left and outer joins share a store of the
// records that joined nothing yet (KSTREAM-OUTERSHARED-<n>-store, <n> the
// this-join processor's number), from which they are emitted once their
// window closed (KAFKA-10847, Kafka 3.1).
const (
	prefixWindowed    = "KSTREAM-WINDOWED-"
	prefixJoinThis    = "KSTREAM-JOINTHIS-"
	prefixJoinOther   = "KSTREAM-JOINOTHER-"
	prefixOuterThis   = "KSTREAM-OUTERTHIS-"
	prefixOuterOther  = "KSTREAM-OUTEROTHER-"
	prefixOuterShared = "KSTREAM-OUTERSHARED-"
	storeSuffix       = "-store"
)

// JoinKind is the kind of a stream-stream join.
type JoinKind int

const (
	JoinInner JoinKind = iota
	JoinLeft
	JoinOuter
)

func (k JoinKind) op() string {
	switch k {
	case JoinLeft:
		return "left_join"
	case JoinOuter:
		return "outer_join"
	}
	return "join"
}

// JoinWindows are a stream-stream join's windows, in milliseconds: a
// record at ts joins the other stream's records at [ts - Before, ts +
// After] (the other stream's records see the mirrored window); Grace is
// how long after a window's end late records are still joined (KIP-633).
type JoinWindows struct {
	Before, After, Grace int64
}

// Size is JoinWindows.size(): before + after.
func (w JoinWindows) Size() int64 { return w.Before + w.After }

// Retention is the window stores' retention: size + grace.
func (w JoinWindows) Retention() int64 { return w.Size() + w.Grace }

// StreamJoin is what a stream-stream join processor (Op OpStreamJoin)
// needs: its windows, its side and the stores it uses.
type StreamJoin struct {
	Windows JoinWindows
	Kind    JoinKind
	// Left: the processor joins the left (this) stream's records, else
	// the right (other) stream's.
	Left bool
	// Outer: this side's records that join nothing are emitted with a null
	// other value once their window closed (left join: the left side;
	// outer join: both).
	Outer bool
	// OwnStore is the window store of this side's records (written by its
	// KSTREAM-WINDOWED- node), OtherStore the other side's (looked up);
	// SharedStore the left/outer join's store of unmatched records ("" for
	// an inner join).
	OwnStore, OtherStore, SharedStore string
	// The serdes of the left and the right stream's values: a joiner
	// always gets (left value, right value).
	LeftValueSerde, RightValueSerde string
}

// StreamJoinOptions are Builder.StreamJoin's options.
type StreamJoinOptions struct {
	Kind JoinKind
	// Windows are required (nil is refused).
	Windows *JoinWindows
	// ValueSerde is the joined values' (default: the left stream's).
	ValueSerde string
	// Name is StreamJoined.withName: it names the processors
	// (<name>-this-windowed, ...) and the repartition topics
	// (<name>-left-repartition, <name>-right-repartition).
	Name string
	// StoreName is StreamJoined.withStoreName: the stores are
	// <store name>-this-join-store, ... instead of generated names.
	StoreName string
}

// StreamJoin adds a stream-stream join of input (this, the left stream) and
// other (the right stream), as KStreamImpl.doJoin and KStreamImplJoin.join
// build it. A stream whose key changed upstream is repartitioned first
// (this side through "<name>-left" or its node's name, then the other
// through "<name>-right" or its node's name). Numbers are taken in Kafka's
// order: the repartitions', this side's windowed node, the other's, this
// join processor, the other, the merge; the stores take none (their names
// derive from the join processors' generated names).
func (b *Builder) StreamJoin(input, other uint64, joiner Function, o StreamJoinOptions) (*Handle, error) {
	op := o.Kind.op()
	c := b.begin(op)
	in := c.input(input, KindStream)
	ot := c.input(other, KindStream)
	c.joiner(&joiner, in, ot, &o.ValueSerde, "")
	c.serde("value", o.ValueSerde)
	var w JoinWindows
	switch {
	case o.Windows == nil:
		c.invalid("%s of stream handles %d and %d needs join windows (JoinWindows): a stream-stream join is windowed", op, input, other)
	default:
		w = *o.Windows
		if w.Grace < 0 {
			c.invalid("%s: join windows grace_ms %d: the grace period must not be negative", op, w.Grace)
		}
		if w.Size() < 0 {
			c.invalid("%s: join windows before_ms %d and after_ms %d make an empty window: before_ms + after_ms must not be negative", op, w.Before, w.After)
		}
		// The stores keep records for before + after + grace: each part
		// and the sum must fit in int64 (Kafka Streams refuses a negative
		// retention, which is what an overflowing sum becomes).
		if w.Before > math.MaxInt64/4 || w.After > math.MaxInt64/4 || w.Before < math.MinInt64/4 || w.After < math.MinInt64/4 ||
			w.Grace > math.MaxInt64/2 {
			c.invalid("%s: join windows before_ms %d, after_ms %d and grace_ms %d: before_ms and after_ms must be within ±%d and grace_ms at most %d, so that the stores' retention (before + after + grace) is a time in milliseconds",
				op, w.Before, w.After, w.Grace, int64(math.MaxInt64/4), int64(math.MaxInt64/2))
		}
	}
	if in != nil && ot != nil && in.handle.KeySerde != ot.handle.KeySerde {
		c.invalid("%s: stream handle %d has %s keys and stream handle %d %s keys; join streams of one key serde", op, input, in.handle.KeySerde, other, ot.handle.KeySerde)
	}
	if o.Name != "" {
		c.validName("name", o.Name)
	}
	if o.StoreName != "" {
		c.validName("store", o.StoreName)
	}
	// KStreamImpl.doJoin: repartitionForJoin of each key-changed side.
	var rpThis, rpOther repartition
	if in != nil && in.repartition {
		prefix := in.handle.Node.Name
		if o.Name != "" {
			prefix = o.Name + "-left"
		}
		rpThis = c.planRepartition(prefix, false)
	}
	if ot != nil && ot.repartition {
		prefix := ot.handle.Node.Name
		if o.Name != "" {
			prefix = o.Name + "-right"
		}
		rpOther = c.planRepartition(prefix, false)
	}
	leftOuter, rightOuter := o.Kind != JoinInner, o.Kind == JoinOuter
	thisSuffix, otherSuffix := "-this-join", "-other-join"
	thisPrefix, otherPrefix := prefixJoinThis, prefixJoinOther
	if rightOuter {
		thisSuffix, thisPrefix = "-outer-this-join", prefixOuterThis
	}
	if leftOuter {
		otherSuffix, otherPrefix = "-outer-other-join", prefixOuterOther
	}
	thisWindowed := c.suffixedName(o.Name, "-this-windowed", prefixWindowed)
	otherWindowed := c.suffixedName(o.Name, "-other-windowed", prefixWindowed)
	thisGenerated := thisPrefix + pad(c.burn())
	otherGenerated := otherPrefix + pad(c.burn())
	thisName, otherName := thisGenerated, otherGenerated
	if o.Name != "" {
		thisName, otherName = o.Name+thisSuffix, o.Name+otherSuffix
		c.validName("node", thisName)
		c.validName("node", otherName)
	}
	c.claim(thisName)
	c.claim(otherName)
	mergeName := c.suffixedName(o.Name, "-merge", prefixMerge)

	thisStore, otherStore := thisGenerated+storeSuffix, otherGenerated+storeSuffix
	if o.StoreName != "" {
		thisStore, otherStore = o.StoreName+thisSuffix+storeSuffix, o.StoreName+otherSuffix+storeSuffix
	}
	shared := ""
	if leftOuter {
		// KStreamImplJoin.buildOuterJoinWindowStoreName.
		switch {
		case o.StoreName != "" && rightOuter:
			shared = o.StoreName + "-outer-shared-join" + storeSuffix
		case o.StoreName != "":
			shared = o.StoreName + "-left-shared-join" + storeSuffix
		default:
			shared = prefixOuterShared + thisGenerated[len(thisPrefix):] + storeSuffix
		}
	}
	for _, s := range []string{thisStore, otherStore, shared} {
		if s != "" && b.stores[s] != nil {
			c.invalid("%s names store %q, which exists already", op, s)
		}
	}
	if err := c.done(); err != nil {
		return nil, err
	}

	thisG, thisFrom := in.g, in.handle.Node
	if in.repartition {
		thisG = b.repartition(&entry{handle: in.handle, g: in.g}, rpThis)
		thisFrom = thisG.out
	}
	otherG, otherFrom := ot.g, ot.handle.Node
	if ot.repartition {
		otherG = b.repartition(&entry{handle: ot.handle, g: ot.g}, rpOther)
		otherFrom = otherG.out
	}
	key := in.handle.KeySerde
	lv, rv := in.handle.ValueSerde, ot.handle.ValueSerde
	out := serde.Or(o.ValueSerde, lv)
	for _, s := range []struct {
		name, value string
	}{{thisStore, lv}, {otherStore, rv}} {
		b.newStore(s.name, key, s.value, nil)
		st := b.stores[s.name]
		st.Kind, st.Retention, st.JoinWindows = StoreJoinWindow, w.Retention(), &w
	}
	if shared != "" {
		b.newStore(shared, key, lv, nil)
		st := b.stores[shared]
		st.Kind, st.Retention, st.JoinWindows = StoreJoinOuter, w.Retention(), &w
	}
	sj := func(left bool) *StreamJoin {
		j := &StreamJoin{Windows: w, Kind: o.Kind, Left: left, SharedStore: shared, LeftValueSerde: lv, RightValueSerde: rv}
		if left {
			j.Outer, j.OwnStore, j.OtherStore = leftOuter, thisStore, otherStore
		} else {
			j.Outer, j.OwnStore, j.OtherStore = rightOuter, otherStore, thisStore
		}
		return j
	}
	withShared := func(stores ...string) []string {
		if shared != "" {
			stores = append(stores, shared)
		}
		return stores
	}
	tw := &Node{Name: thisWindowed, Type: Processor, Op: OpJoinWindow, Stores: []string{thisStore}, KeySerde: key, ValueSerde: lv}
	ow := &Node{Name: otherWindowed, Type: Processor, Op: OpJoinWindow, Stores: []string{otherStore}, KeySerde: key, ValueSerde: rv}
	tj := &Node{Name: thisName, Type: Processor, Op: OpStreamJoin, Stores: withShared(otherStore), Fn: &joiner, Join: sj(true), KeySerde: key, ValueSerde: out}
	oj := &Node{Name: otherName, Type: Processor, Op: OpStreamJoin, Stores: withShared(thisStore), Fn: &joiner, Join: sj(false), KeySerde: key, ValueSerde: out}
	mg := &Node{Name: mergeName, Type: Processor, Op: OpMerge, KeySerde: key, ValueSerde: out}
	for _, n := range []*Node{tw, ow, tj, oj, mg} {
		b.nodes[n.Name] = n
	}
	link(thisFrom, tw)
	link(otherFrom, ow)
	link(tw, tj)
	link(ow, oj)
	link(tj, mg)
	link(oj, mg)
	b.add(thisG, &gnode{nodes: []*Node{tw}, out: tw})
	b.add(otherG, &gnode{nodes: []*Node{ow}, out: ow})
	// StreamStreamJoinNode writes this join, the other, then the merge;
	// InternalStreamsBuilder.addGraphNode(parents, child) adds it under
	// each parent in turn.
	jg := &gnode{nodes: []*Node{tj, oj, mg}, out: mg, relaxedNullKeyJoin: leftOuter || rightOuter}
	b.add(thisG, jg)
	b.add(otherG, jg)
	return b.mint(&entry{handle: &Handle{Kind: KindStream, KeySerde: key, ValueSerde: out, Node: mg}, g: jg}), nil
}
