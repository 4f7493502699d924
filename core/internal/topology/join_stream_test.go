package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var hour = &JoinWindows{Before: 3_600_000, After: 3_600_000}

// stream(topic).join(stream(other-topic), joiner, JoinWindows) as Kafka
// prints it: Kafka's StreamsGraphTest golden expectedJoinedTopology (two
// KSTREAM-WINDOWED- nodes 2 and 3, KSTREAM-JOINTHIS-4 reading the other
// side's store and vice versa, KSTREAM-MERGE-6; JOINOTHER prints before
// JOINTHIS), byte for byte.
func TestStreamStreamJoinDescribe(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "topic")
	o := c.stream(b, "other-topic")
	c.id(b.StreamJoin(s, o, fn, StreamJoinOptions{Windows: hour}))
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n" +
		"      --> KSTREAM-WINDOWED-0000000002\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [other-topic])\n" +
		"      --> KSTREAM-WINDOWED-0000000003\n" +
		"    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n" +
		"      --> KSTREAM-JOINTHIS-0000000004\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Processor: KSTREAM-WINDOWED-0000000003 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n" +
		"      --> KSTREAM-JOINOTHER-0000000005\n" +
		"      <-- KSTREAM-SOURCE-0000000001\n" +
		"    Processor: KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n" +
		"      --> KSTREAM-MERGE-0000000006\n" +
		"      <-- KSTREAM-WINDOWED-0000000003\n" +
		"    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n" +
		"      --> KSTREAM-MERGE-0000000006\n" +
		"      <-- KSTREAM-WINDOWED-0000000002\n" +
		"    Processor: KSTREAM-MERGE-0000000006 (stores: [])\n" +
		"      --> none\n" +
		"      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005\n\n"
	if got := describe(t, b); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
	// The window stores keep size + grace (JoinWindows.size() = before +
	// after) and log to windowed changelogs.
	st := b.stores["KSTREAM-JOINTHIS-0000000004-store"]
	if st == nil || st.Kind != StoreJoinWindow || st.Retention != 7_200_000 || st.ChangelogTopic != "KSTREAM-JOINTHIS-0000000004-store-changelog" {
		t.Errorf("this store: %+v", st)
	}
}

// Kafka's StreamsBuilderTest
// shouldUseGeneratedStoreNamesForLeftJoinOperationBetweenKStreamAndKStream:
// StreamJoined.withName names the processors (<name>-this-windowed, ...,
// -outer-other-join for a left join's other side) but not the stores, and
// the names still take their numbers (JOINTHIS 4, OUTEROTHER 5); the
// shared store takes the this-join's number.
func TestStreamStreamLeftJoinNames(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "one")
	o := c.stream(b, "two")
	c.id(b.StreamJoin(s, o, fn, StreamJoinOptions{Kind: JoinLeft, Windows: hour, Name: "op"}))
	stores := slices.Sorted(func(yield func(string) bool) {
		for n := range b.stores {
			if !yield(n) {
				return
			}
		}
	})
	want := []string{"KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store", "KSTREAM-OUTERSHARED-0000000004-store"}
	if !slices.Equal(stores, want) {
		t.Errorf("stores %v, want %v", stores, want)
	}
	for _, n := range []string{"op-this-windowed", "op-other-windowed", "op-this-join", "op-outer-other-join", "op-merge"} {
		if b.nodes[n] == nil {
			t.Errorf("no node %s", n)
		}
	}
	if got := b.nodes["op-this-join"].Stores; !slices.Equal(got, []string{"KSTREAM-OUTEROTHER-0000000005-store", "KSTREAM-OUTERSHARED-0000000004-store"}) {
		t.Errorf("this join's stores %v", got)
	}
}

// An outer join is OUTERTHIS / OUTEROTHER, its shared store
// KSTREAM-OUTERSHARED-<outer this number>; StreamJoined.withStoreName
// names the stores <name>-outer-this-join-store, -outer-other-join-store,
// -outer-shared-join-store (KStreamImplJoin.join and
// buildOuterJoinWindowStoreName).
func TestStreamStreamOuterJoinNames(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	j, err := b.StreamJoin(c.stream(b, "l"), c.stream(b, "r"), fn, StreamJoinOptions{Kind: JoinOuter, Windows: hour})
	c.ok(err)
	d := describe(t, b)
	for _, w := range []string{
		"Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])",
		"Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [KSTREAM-OUTERTHIS-0000000004-store, KSTREAM-OUTERSHARED-0000000004-store])",
	} {
		if !strings.Contains(d, w) {
			t.Errorf("describe lacks %q:\n%s", w, d)
		}
	}
	if j.Node.Name != "KSTREAM-MERGE-0000000006" {
		t.Errorf("handle node %s", j.Node.Name)
	}
	b = NewBuilder()
	c.id(b.StreamJoin(c.stream(b, "l"), c.stream(b, "r"), fn, StreamJoinOptions{Kind: JoinOuter, Windows: hour, StoreName: "st"}))
	for _, n := range []string{"st-outer-this-join-store", "st-outer-other-join-store", "st-outer-shared-join-store"} {
		if b.stores[n] == nil {
			t.Errorf("no store %s", n)
		}
	}
	if b.stores["st-outer-shared-join-store"].Kind != StoreJoinOuter {
		t.Errorf("shared store kind %v", b.stores["st-outer-shared-join-store"].Kind)
	}
}

// Key-changed sides are repartitioned first, this side then the other
// (KStreamImpl.doJoin's repartitionForJoin), through topics named after
// the sides' nodes, or <name>-left / <name>-right; the join's sub-topology
// reads both repartition topics.
func TestStreamStreamJoinRepartitions(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.id(b.SelectKey(c.stream(b, "a"), fn, "", ""))
	o := c.id(b.SelectKey(c.stream(b, "b"), fn, "", ""))
	c.id(b.StreamJoin(s, o, fn, StreamJoinOptions{Windows: hour}))
	d := describe(t, b)
	for _, w := range []string{
		"Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-KEY-SELECT-0000000001-repartition)",
		"Sink: KSTREAM-SINK-0000000007 (topic: KSTREAM-KEY-SELECT-0000000003-repartition)",
		"Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-KEY-SELECT-0000000001-repartition])\n      --> KSTREAM-WINDOWED-0000000010",
		"Source: KSTREAM-SOURCE-0000000009 (topics: [KSTREAM-KEY-SELECT-0000000003-repartition])\n      --> KSTREAM-WINDOWED-0000000011",
		"Processor: KSTREAM-JOINTHIS-0000000012 (stores: [KSTREAM-JOINOTHER-0000000013-store])",
	} {
		if !strings.Contains(d, w) {
			t.Errorf("describe lacks %q:\n%s", w, d)
		}
	}
	b = NewBuilder()
	s = c.id(b.SelectKey(c.stream(b, "a"), fn, "", ""))
	c.id(b.StreamJoin(s, c.stream(b, "b"), fn, StreamJoinOptions{Windows: hour, Name: "j"}))
	if d := describe(t, b); !strings.Contains(d, "Sink: j-left-repartition-sink (topic: j-left-repartition)") {
		t.Errorf("named repartition missing:\n%s", d)
	}
}

func TestStreamStreamJoinRefusals(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.id(b.Stream(StreamOptions{Topics: []string{"a"}, KeySerde: "string"}))
	o := c.id(b.Stream(StreamOptions{Topics: []string{"b"}, KeySerde: "string"}))
	longs := c.id(b.Stream(StreamOptions{Topics: []string{"c"}, KeySerde: "long"}))
	g := c.id(b.GroupByKey(s, "", "", ""))
	join := func(in, other uint64, o StreamJoinOptions) error {
		_, err := b.StreamJoin(in, other, fn, o)
		return err
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"no windows", join(s, o, StreamJoinOptions{}), "join of stream handles 1 and 2 needs join windows"},
		{"negative grace", join(s, o, StreamJoinOptions{Windows: &JoinWindows{Before: 10, After: 10, Grace: -1}}), "grace_ms -1: the grace period must not be negative"},
		{"empty window", join(s, o, StreamJoinOptions{Kind: JoinLeft, Windows: &JoinWindows{Before: -20, After: 10}}), "left_join: join windows before_ms -20 and after_ms 10 make an empty window"},
		{"grouped stream", join(s, g, StreamJoinOptions{Windows: hour}), "join needs a stream, but handle 4 is a grouped stream"},
		{"key serdes", join(s, longs, StreamJoinOptions{Windows: hour}), "stream handle 1 has string keys and stream handle 3 long keys"},
		{"store exists", func() error {
			if err := join(s, o, StreamJoinOptions{Windows: hour, StoreName: "x"}); err != nil {
				return err
			}
			return join(s, o, StreamJoinOptions{Kind: JoinOuter, Windows: hour, StoreName: "x", Name: "other"})
		}(), ""},
	} {
		if tt.want == "" {
			if tt.err != nil {
				t.Errorf("%s: %v", tt.name, tt.err)
			}
			continue
		}
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) || !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: %v; want it to say %q", tt.name, tt.err, tt.want)
		}
	}
	// The same store name twice (inner join's -this-join-store).
	if err := join(s, o, StreamJoinOptions{Windows: hour, StoreName: "x", Name: "third"}); err == nil || !strings.Contains(err.Error(), `names store "x-this-join-store", which exists already`) {
		t.Errorf("duplicate store: %v", err)
	}
}
