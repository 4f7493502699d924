package topology

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// base builds stream "in" (handle 1), its groupByKey (handle 2) and count()
// (handle 3): numbers 0 (source), 1 (store) and 2 (aggregate) are taken.
func base(t *testing.T) *Builder {
	t.Helper()
	c, b := check{t}, NewBuilder()
	s := c.stream(b, "in")
	c.id(b.Count(c.id(b.GroupByKey(s, "", "", "")), nil, ""))
	return b
}

// assertUnchanged checks that b still takes number 3 and mints handle 4
// next: a refused call must change nothing.
func assertUnchanged(t *testing.T, b *Builder) {
	t.Helper()
	h, err := b.MapValues(1, fn, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != 4 || h.Node.Name != "KSTREAM-MAPVALUES-0000000003" {
		t.Errorf("after a refused call, next call made handle %d node %s; want handle 4 node KSTREAM-MAPVALUES-0000000003", h.ID, h.Node.Name)
	}
}

func TestRefusedCalls(t *testing.T) {
	const known = "(known: bytes, string, json, long, integer, double, avro, json-schema, protobuf)"
	predicate := PredicateFunc(func(k, v []byte) (bool, error) { return true, nil })
	tests := []struct {
		name string
		call func(b *Builder) error
		want string
		kind error
	}{
		{"stream without topics", func(b *Builder) error { _, err := b.Stream(StreamOptions{}); return err },
			"topology: stream names no topic; a source reads at least one", ErrInvalid},
		{"stream with an empty topic", func(b *Builder) error { _, err := b.Stream(StreamOptions{Topics: []string{"a", ""}}); return err },
			`topology: stream names topic "", which is illegal: it is empty`, ErrInvalid},
		{"stream with an illegal topic", func(b *Builder) error { _, err := b.Stream(StreamOptions{Topics: []string{"a b"}}); return err },
			`topology: stream names topic "a b", which is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'`, ErrInvalid},
		{"stream with a topic named ..", func(b *Builder) error { _, err := b.Stream(StreamOptions{Topics: []string{".."}}); return err },
			`topology: stream names topic "..", which is illegal: it cannot be "." or ".."`, ErrInvalid},
		{"stream with a too long topic", func(b *Builder) error {
			_, err := b.Stream(StreamOptions{Topics: []string{strings.Repeat("t", 250)}})
			return err
		}, `topology: stream names topic "` + strings.Repeat("t", 250) + `", which is illegal: it is longer than 249 characters`, ErrInvalid},
		{"stream naming a topic twice", func(b *Builder) error { _, err := b.Stream(StreamOptions{Topics: []string{"x", "x"}}); return err },
			`topology: stream names topic "x" twice`, ErrInvalid},
		{"stream of a topic another source reads", func(b *Builder) error { _, err := b.Stream(StreamOptions{Topics: []string{"in"}}); return err },
			`topology: stream reads topic "in", which source KSTREAM-SOURCE-0000000000 reads already`, ErrInvalid},
		{"stream with an unknown serde", func(b *Builder) error {
			_, err := b.Stream(StreamOptions{Topics: []string{"x"}, KeySerde: "xml"})
			return err
		}, `topology: stream (key serde): serde "xml" is not known ` + known, ErrInvalid},
		{"stream named like an existing node", func(b *Builder) error {
			_, err := b.Stream(StreamOptions{Topics: []string{"x"}, Name: "KSTREAM-AGGREGATE-0000000002"})
			return err
		}, `topology: stream names node "KSTREAM-AGGREGATE-0000000002", which exists already`, ErrInvalid},
		{"stream named like an existing source", func(b *Builder) error {
			_, err := b.Stream(StreamOptions{Topics: []string{"x"}, Name: "KSTREAM-SOURCE-0000000000"})
			return err
		}, `topology: stream names node "KSTREAM-SOURCE-0000000000", which exists already`, ErrInvalid},
		{"stream with an illegal name", func(b *Builder) error {
			_, err := b.Stream(StreamOptions{Topics: []string{"x"}, Name: "my source"})
			return err
		}, `topology: stream names node "my source", which is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'`, ErrInvalid},
		{"unknown handle", func(b *Builder) error { _, err := b.MapValues(7, fn, "", ""); return err },
			"topology: map_values names handle 7, which does not exist", ErrNotFound},
		{"handle 0", func(b *Builder) error { _, err := b.Filter(0, fn, ""); return err },
			"topology: filter names handle 0, which does not exist", ErrNotFound},
		{"map_values on a grouped stream", func(b *Builder) error { _, err := b.MapValues(2, fn, "", ""); return err },
			"topology: map_values needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"flat_map on a grouped stream", func(b *Builder) error { _, err := b.FlatMap(2, fn, "", "", ""); return err },
			"topology: flat_map needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"flat_map without a function", func(b *Builder) error { _, err := b.FlatMap(1, Function{}, "", "", ""); return err },
			"topology: flat_map names no function: token 0 and no native function", ErrInvalid},
		{"flat_map with an unknown key serde", func(b *Builder) error { _, err := b.FlatMap(1, fn, "xml", "", ""); return err },
			`topology: flat_map (key serde): serde "xml" is not known ` + known, ErrInvalid},
		{"map_values with a key, given a plain mapper", func(b *Builder) error {
			_, err := b.MapValuesWithKey(1, Function{Native: MapValuesFunc(func(v []byte) ([]byte, error) { return v, nil })}, "", "")
			return err
		}, "topology: map_values needs a native function of type topology.MapValuesWithKeyFunc, got topology.MapValuesFunc", ErrInvalid},
		{"print on a grouped stream", func(b *Builder) error { return b.Print(2, fn, "") },
			"topology: print needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"print with a mapper's function type", func(b *Builder) error {
			return b.Print(1, Function{Native: MapValuesFunc(func(v []byte) ([]byte, error) { return v, nil })}, "")
		}, "topology: print needs a native function of type topology.ForeachFunc, got topology.MapValuesFunc", ErrInvalid},
		{"flat_map_values with a key on a grouped stream", func(b *Builder) error { _, err := b.FlatMapValuesWithKey(2, fn, "", ""); return err },
			"topology: flat_map_values needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"count on a stream", func(b *Builder) error { _, err := b.Count(1, nil, ""); return err },
			"topology: count needs a grouped stream or a windowed stream, but handle 1 is a stream", ErrInvalid},
		{"to_stream on a stream", func(b *Builder) error { _, err := b.ToStream(1, ""); return err },
			"topology: to_stream needs a table, but handle 1 is a stream", ErrInvalid},
		{"group_by_key on a table", func(b *Builder) error { _, err := b.GroupByKey(3, "", "", ""); return err },
			"topology: group_by_key needs a stream, but handle 3 is a table", ErrInvalid},
		{"group_by on a grouped stream", func(b *Builder) error { _, err := b.GroupBy(2, fn, "", "", ""); return err },
			"topology: group_by needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"to from a table", func(b *Builder) error { return b.To(3, "out", "", "", "") },
			"topology: to needs a stream, but handle 3 is a table", ErrInvalid},
		{"foreach on a grouped stream", func(b *Builder) error { return b.Foreach(2, fn, "") },
			"topology: foreach needs a stream, but handle 2 is a grouped stream", ErrInvalid},
		{"no function", func(b *Builder) error { _, err := b.Filter(1, Function{}, ""); return err },
			"topology: filter names no function: token 0 and no native function", ErrInvalid},
		{"token and native function", func(b *Builder) error {
			_, err := b.Peek(1, Function{Token: 1, Native: ForeachFunc(func(k, v []byte) error { return nil })}, "")
			return err
		}, "topology: peek names both token 1 and a native function; give one", ErrInvalid},
		{"native function of the wrong type", func(b *Builder) error { _, err := b.MapValues(1, Function{Native: predicate}, "", ""); return err },
			"topology: map_values needs a native function of type topology.MapValuesFunc, got topology.PredicateFunc", ErrInvalid},
		{"unnamed native function type", func(b *Builder) error {
			_, err := b.FilterNot(1, Function{Native: func(k, v []byte) (bool, error) { return true, nil }}, "")
			return err
		}, "topology: filter_not needs a native function of type topology.PredicateFunc, got func([]uint8, []uint8) (bool, error)", ErrInvalid},
		{"nil native function", func(b *Builder) error {
			_, err := b.MapValues(1, Function{Native: MapValuesFunc(nil)}, "", "")
			return err
		},
			"topology: map_values names a nil native function", ErrInvalid},
		{"map_values with an unknown serde", func(b *Builder) error { _, err := b.MapValues(1, fn, "xml", ""); return err },
			`topology: map_values (value serde): serde "xml" is not known ` + known, ErrInvalid},
		{"map with an unknown key serde", func(b *Builder) error { _, err := b.Map(1, fn, "uuid", "", ""); return err },
			`topology: map (key serde): serde "uuid" is not known ` + known, ErrInvalid},
		{"select_key with an unknown serde", func(b *Builder) error { _, err := b.SelectKey(1, fn, "uuid", ""); return err },
			`topology: select_key (key serde): serde "uuid" is not known ` + known, ErrInvalid},
		{"flat_map_values with an unknown serde", func(b *Builder) error { _, err := b.FlatMapValues(1, fn, "csv", ""); return err },
			`topology: flat_map_values (value serde): serde "csv" is not known ` + known, ErrInvalid},
		{"group_by with an unknown serde", func(b *Builder) error { _, err := b.GroupBy(1, fn, "", "xml", ""); return err },
			`topology: group_by (value serde): serde "xml" is not known ` + known, ErrInvalid},
		{"group_by_key with an unknown serde", func(b *Builder) error { _, err := b.GroupByKey(1, "xml", "", ""); return err },
			`topology: group_by_key (key serde): serde "xml" is not known ` + known, ErrInvalid},
		{"group_by_key with an illegal name", func(b *Builder) error { _, err := b.GroupByKey(1, "", "", "by/user"); return err },
			`topology: group_by_key names grouped name "by/user", which is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'`, ErrInvalid},
		{"to with an unknown serde", func(b *Builder) error { return b.To(1, "out", "", "yaml", "") },
			`topology: to (value serde): serde "yaml" is not known ` + known, ErrInvalid},
		{"to without a topic", func(b *Builder) error { return b.To(1, "", "", "", "") },
			`topology: to names topic "", which is illegal: it is empty`, ErrInvalid},
		{"count materialized as strings", func(b *Builder) error { _, err := b.Count(2, &Materialized{ValueSerde: "string"}, ""); return err },
			`topology: count stores longs, but materialized names value serde "string"`, ErrInvalid},
		{"count materialized with an unknown serde", func(b *Builder) error { _, err := b.Count(2, &Materialized{KeySerde: "xml"}, ""); return err },
			`topology: count (materialized key serde): serde "xml" is not known ` + known, ErrInvalid},
		{"count with an illegal store name", func(b *Builder) error { _, err := b.Count(2, &Materialized{StoreName: "my store"}, ""); return err },
			`topology: count names store "my store", which is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'`, ErrInvalid},
		{"count with a store name in use", func(b *Builder) error {
			_, err := b.Count(2, &Materialized{StoreName: "KSTREAM-AGGREGATE-STATE-STORE-0000000001"}, "")
			return err
		}, `topology: count names store "KSTREAM-AGGREGATE-STATE-STORE-0000000001", which exists already`, ErrInvalid},
		{"count named like an existing node", func(b *Builder) error { _, err := b.Count(2, nil, "KSTREAM-SOURCE-0000000000"); return err },
			`topology: count names node "KSTREAM-SOURCE-0000000000", which exists already`, ErrInvalid},
		{"every problem at once", func(b *Builder) error { _, err := b.MapValues(9, Function{}, "xml", "a b"); return err },
			`topology: map_values names handle 9, which does not exist; map_values names no function: token 0 and no native function; ` +
				`map_values (value serde): serde "xml" is not known ` + known + `; ` +
				`map_values names node "a b", which is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'`, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base(t)
			err := tt.call(b)
			if err == nil {
				t.Fatalf("call accepted; want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(err, %v) = false", tt.kind)
			}
			assertUnchanged(t, b)
		})
	}
}

func TestErrorWrapsEveryKind(t *testing.T) {
	_, err := NewBuilder().MapValues(9, Function{}, "", "")
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrInvalid) {
		t.Errorf("error %q should wrap ErrNotFound and ErrInvalid", err)
	}
}

// TestRefusedCallBurnsNoNumber: calls that would take several numbers
// (count with a Materialized naming no store, and a repartition) take none
// when refused.
func TestRefusedCallBurnsNoNumber(t *testing.T) {
	c, b := check{t}, NewBuilder()
	s := c.stream(b, "in")
	k := c.id(b.SelectKey(s, fn, "", ""))
	g := c.id(b.GroupByKey(k, "", "", ""))
	if _, err := b.Count(g, &Materialized{ValueSerde: "double"}, ""); err == nil {
		t.Fatal("count materialized as doubles accepted")
	}
	if _, err := b.Count(g, &Materialized{KeySerde: "string"}, "bad name"); err == nil {
		t.Fatal("count with an illegal name accepted")
	}
	h, err := b.Count(g, nil, "")
	c.ok(err)
	// selectKey took 1; the refused calls took nothing: store 2, aggregate 3.
	if h.Node.Name != "KSTREAM-AGGREGATE-0000000003" || h.Node.Stores[0] != "KSTREAM-AGGREGATE-STATE-STORE-0000000002" {
		t.Errorf("count made %s with store %v", h.Node.Name, h.Node.Stores)
	}
	if h.ID != 4 {
		t.Errorf("count minted handle %d, want 4", h.ID)
	}
}

// flatMap changes keys as map does (KStreamImpl.flatMap:
// keyChangingOperation): an aggregation after it repartitions, one after a
// with-key mapper does not.
func TestFlatMapMarksRepartition(t *testing.T) {
	for _, tc := range []struct {
		name        string
		op          func(b *Builder, in uint64) (*Handle, error)
		node        string
		repartition bool
	}{
		{"flat_map", func(b *Builder, in uint64) (*Handle, error) { return b.FlatMap(in, fn, "", "", "") }, "KSTREAM-FLATMAP-0000000001", true},
		{"map_values with a key", func(b *Builder, in uint64) (*Handle, error) { return b.MapValuesWithKey(in, fn, "", "") }, "KSTREAM-MAPVALUES-0000000001", false},
		{"flat_map_values with a key", func(b *Builder, in uint64) (*Handle, error) { return b.FlatMapValuesWithKey(in, fn, "", "") }, "KSTREAM-FLATMAPVALUES-0000000001", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			s, err := b.Stream(StreamOptions{Topics: []string{"in"}})
			if err != nil {
				t.Fatal(err)
			}
			h, err := tc.op(b, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if h.Node.Name != tc.node {
				t.Errorf("node %s, want %s", h.Node.Name, tc.node)
			}
			g, err := b.GroupByKey(h.ID, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Count(g.ID, nil, ""); err != nil {
				t.Fatal(err)
			}
			topo, err := b.Topology()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(topo.Subtopologies) == 2; got != tc.repartition {
				t.Errorf("%d sub-topologies; repartition %v, want %v", len(topo.Subtopologies), got, tc.repartition)
			}
		})
	}
}

func TestTopologyWithoutSource(t *testing.T) {
	_, err := NewBuilder().Topology()
	if err == nil || err.Error() != "topology: the topology has no source; call stream first" || !errors.Is(err, ErrInvalid) {
		t.Errorf("Topology() = %v", err)
	}
}

// TestNamedOperatorsBurnNumbers pins NamedInternal.orElseGenerateWithPrefix:
// a given name still takes a number (StreamsBuilderTest#
// shouldUseSpecifiedNameForToStreamWithMapper: a named toStream shifts the
// next generated name), while a named store does not (TopologyTest#
// kGroupedStreamNamedMaterializedCountShouldPreserveTopologyStructure).
func TestNamedOperatorsBurnNumbers(t *testing.T) {
	c, b := check{t}, NewBuilder()
	s := c.id(b.Stream(StreamOptions{Topics: []string{"in"}, Name: "source"}))                        // 0
	m := c.id(b.MapValues(s, fn, "", "values"))                                                       // 1
	tbl, err := b.Count(c.id(b.GroupByKey(m, "", "", "")), &Materialized{StoreName: "st"}, "counter") // 2
	c.ok(err)
	ts, err := b.ToStream(tbl.ID, "") // 3
	c.ok(err)
	if tbl.Node.Name != "counter" || ts.Node.Name != "KTABLE-TOSTREAM-0000000003" {
		t.Errorf("names: count %s, toStream %s", tbl.Node.Name, ts.Node.Name)
	}
}

func TestSerdes(t *testing.T) {
	c, b := check{t}, NewBuilder()
	s, err := b.Stream(StreamOptions{Topics: []string{"in"}, ValueSerde: "string"})
	c.ok(err)
	if s.KeySerde != "bytes" || s.ValueSerde != "string" {
		t.Errorf("stream serdes %s/%s, want bytes/string (empty is bytes)", s.KeySerde, s.ValueSerde)
	}
	mv, err := b.MapValues(s.ID, fn, "json", "")
	c.ok(err)
	f, err := b.Filter(mv.ID, fn, "")
	c.ok(err)
	if f.KeySerde != "bytes" || f.ValueSerde != "json" {
		t.Errorf("filter after map_values: %s/%s, want bytes/json", f.KeySerde, f.ValueSerde)
	}
	mp, err := b.Map(f.ID, fn, "string", "", "")
	c.ok(err)
	if mp.KeySerde != "string" || mp.ValueSerde != "json" {
		t.Errorf("map: %s/%s, want string/json (empty keeps the input's)", mp.KeySerde, mp.ValueSerde)
	}
	g, err := b.GroupByKey(mp.ID, "", "string", "")
	c.ok(err)
	if g.KeySerde != "string" || g.ValueSerde != "string" {
		t.Errorf("group_by_key: %s/%s", g.KeySerde, g.ValueSerde)
	}
	tbl, err := b.Count(g.ID, nil, "")
	c.ok(err)
	if tbl.Kind != KindTable || tbl.KeySerde != "string" || tbl.ValueSerde != "long" {
		t.Errorf("count: %v %s/%s, want table string/long", tbl.Kind, tbl.KeySerde, tbl.ValueSerde)
	}
	tbl2, err := b.Count(g.ID, &Materialized{KeySerde: "bytes", ValueSerde: "long"}, "")
	c.ok(err)
	if tbl2.KeySerde != "bytes" || tbl2.ValueSerde != "long" {
		t.Errorf("count with materialized serdes: %s/%s", tbl2.KeySerde, tbl2.ValueSerde)
	}
	ts, err := b.ToStream(tbl.ID, "")
	c.ok(err)
	c.ok(b.To(ts.ID, "out", "", "string", ""))

	topo, err := b.Topology()
	c.ok(err)
	nodes := map[string]*Node{}
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			nodes[n.Name] = n
		}
	}
	// The repartition carries the grouped serdes; the sink Produced's.
	for name, want := range map[string]string{
		"KSTREAM-SOURCE-0000000000":    "bytes/string",
		"KSTREAM-MAP-0000000003":       "string/json",
		"KSTREAM-FILTER-0000000007":    "string/string", // repartition filter
		"KSTREAM-SINK-0000000006":      "string/string",
		"KSTREAM-SOURCE-0000000008":    "string/string",
		"KSTREAM-AGGREGATE-0000000005": "string/long",
		"KSTREAM-SINK-0000000016":      "string/string",
	} {
		n := nodes[name]
		if n == nil {
			t.Errorf("no node %s", name)
			continue
		}
		if got := n.KeySerde + "/" + n.ValueSerde; got != want {
			t.Errorf("%s serdes %s, want %s", name, got, want)
		}
	}
	if st := topo.Stores["KSTREAM-AGGREGATE-STATE-STORE-0000000004"]; st == nil || st.KeySerde != "string" || st.ValueSerde != "long" ||
		st.ChangelogTopic != "KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog" {
		t.Errorf("store %+v", st)
	}
}

// TestAssembly checks what the runtime reads besides describe(): kinds, ops,
// functions, internal topics, sources and stores of each sub-topology.
func TestAssembly(t *testing.T) {
	c, b := check{t}, NewBuilder()
	native := SelectKeyFunc(func(k, v []byte) ([]byte, error) { return v, nil })
	w := c.id(b.FlatMapValues(c.stream(b, "lines"), fn, "", ""))
	g, err := b.GroupBy(w, Function{Native: native, Name: "word"}, "string", "", "")
	c.ok(err)
	if g.Kind != KindGroupedStream || g.Node.Op != OpSelectKey {
		t.Errorf("group_by handle %+v", g)
	}
	tbl, err := b.Count(g.ID, &Materialized{StoreName: "counts"}, "")
	c.ok(err)
	topo, err := b.Topology()
	c.ok(err)
	if len(topo.Subtopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2", len(topo.Subtopologies))
	}
	s0, s1 := topo.Subtopologies[0], topo.Subtopologies[1]
	if s0.ID != 0 || s1.ID != 1 || len(s0.Sources) != 1 || s0.Sources[0].Topics[0] != "lines" || s0.Sources[0].Internal {
		t.Errorf("sub-topology 0: %+v", s0)
	}
	src := s1.Sources[0]
	if src.Name != "counts-repartition-source" || !src.Internal || src.Topics[0] != "counts-repartition" || src.Subtopology != 1 {
		t.Errorf("repartition source %+v", src)
	}
	var sink, filter, keySelect *Node
	for _, n := range s0.Nodes {
		switch n.Name {
		case "counts-repartition-sink":
			sink = n
		case "counts-repartition-filter":
			filter = n
		case "KSTREAM-KEY-SELECT-0000000002":
			keySelect = n
		}
	}
	if sink == nil || sink.Type != Sink || !sink.Internal || sink.Topic != "counts-repartition" {
		t.Errorf("repartition sink %+v", sink)
	}
	if filter == nil || filter.Op != OpRepartitionFilter || filter.Fn != nil {
		t.Errorf("repartition filter %+v", filter)
	}
	if keySelect == nil || keySelect.Fn == nil || keySelect.Fn.Name != "word" || keySelect.Fn.Native == nil {
		t.Errorf("key selector %+v", keySelect)
	}
	agg := src.Successors[0]
	if agg != s1.Nodes[1] || agg.Op != OpCount || agg.Stores[0] != "counts" || agg.Predecessors[0] != src {
		t.Errorf("aggregate %+v", agg)
	}
	if topo.Stores["counts"].ChangelogTopic != "counts-changelog" {
		t.Errorf("store %+v", topo.Stores["counts"])
	}
	if tbl.Node.Subtopology != 1 {
		t.Errorf("builder node's Subtopology = %d, want 1", tbl.Node.Subtopology)
	}
	// The snapshot does not share nodes with the builder.
	if agg == tbl.Node {
		t.Error("Topology returned the builder's own node")
	}
}

// TestTopologyIsASnapshot: describe before and after more calls.
func TestTopologyIsASnapshot(t *testing.T) {
	c, b := check{t}, NewBuilder()
	s := c.stream(b, "in")
	before, err := b.Topology()
	c.ok(err)
	text := before.Describe()
	c.ok(b.To(s, "out", "", "", ""))
	after, err := b.Topology()
	c.ok(err)
	if before.Describe() != text || len(before.Subtopologies[0].Nodes) != 1 {
		t.Error("a later call changed an earlier Topology")
	}
	if !strings.Contains(after.Describe(), "Sink: KSTREAM-SINK-0000000001 (topic: out)") {
		t.Errorf("later Topology lacks the sink:\n%s", after.Describe())
	}
}

func TestHandleIsACopy(t *testing.T) {
	c, b := check{t}, NewBuilder()
	h, err := b.Stream(StreamOptions{Topics: []string{"in"}})
	c.ok(err)
	h.Kind = KindTable
	if _, err := b.MapValues(h.ID, fn, "", ""); err != nil {
		t.Errorf("changing a returned handle changed the builder: %v", err)
	}
}

var repartitionSink = regexp.MustCompile(`Sink: .*-repartition`)

// RepartitionTopicNamingTest#shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedStream:
// aggregations of one named grouped stream share its repartition (the
// numbers are burnt again, the nodes reused).
func TestNamedGroupedStreamSharesItsRepartition(t *testing.T) {
	c, b := check{t}, NewBuilder()
	k := c.id(b.SelectKey(c.stream(b, "topic"), fn, "", ""))
	g := c.id(b.GroupByKey(k, "", "", "grouping"))
	c.ok(b.To(c.id(b.ToStream(c.id(b.Count(g, nil, "")), "")), "output-one", "", "", ""))
	second, err := b.Count(g, nil, "")
	c.ok(err)
	c.ok(b.To(c.id(b.ToStream(second.ID, "")), "output-two", "", "", ""))
	text := describe(t, b)
	if n := len(repartitionSink.FindAllString(text, -1)); n != 1 || !strings.Contains(text, "grouping-repartition") {
		t.Errorf("%d repartition sinks, want 1 (grouping-repartition):\n%s", n, text)
	}
	// count 1: store 2, aggregate 3, repartition 4-6; toStream 7, sink 8;
	// count 2: store 9, aggregate 10, repartition 11-13 (burnt).
	if !strings.Contains(text, "Source: grouping-repartition-source (topics: [grouping-repartition])\n"+
		"      --> KSTREAM-AGGREGATE-0000000003, KSTREAM-AGGREGATE-0000000010\n") {
		t.Errorf("both aggregates should read the one repartition:\n%s", text)
	}
}

// RepartitionTopicNamingTest#shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopics.
func TestUnnamedGroupedStreamRepartitionsPerAggregation(t *testing.T) {
	c, b := check{t}, NewBuilder()
	g := c.id(b.GroupByKey(c.id(b.SelectKey(c.stream(b, "topic"), fn, "", "")), "", "", ""))
	c.id(b.Count(g, nil, ""))
	c.id(b.Count(g, nil, ""))
	if n := len(repartitionSink.FindAllString(describe(t, b), -1)); n != 2 {
		t.Errorf("%d repartition sinks, want 2", n)
	}
}

// RepartitionTopicNamingTest#shouldFailWithSameRepartitionTopicName: two
// grouped streams may not use one repartition name. Kafka refuses at
// build(); the builder refuses the aggregation that would reuse it.
func TestSameRepartitionNameTwiceIsRefused(t *testing.T) {
	c, b := check{t}, NewBuilder()
	for i, topic := range []string{"topic", "topicII"} {
		g := c.id(b.GroupByKey(c.id(b.SelectKey(c.stream(b, topic), fn, "", "")), "", "", "grouping"))
		_, err := b.Count(g, nil, "")
		if i == 0 {
			c.ok(err)
			continue
		}
		want := `topology: count names node "grouping-repartition-filter", which exists already; ` +
			`count names node "grouping-repartition-sink", which exists already; ` +
			`count names node "grouping-repartition-source", which exists already; ` +
			`count's repartition topic "grouping-repartition" is read by source grouping-repartition-source already`
		if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
			t.Errorf("second count: %v\nwant: %s", err, want)
		}
	}
}

// A Grouped name ending in "-repartition" is the topic itself, and a store
// name that looks generated keeps generated repartition node names
// (KStreamImpl.createRepartitionedSource).
func TestRepartitionNamingEdges(t *testing.T) {
	c, b := check{t}, NewBuilder()
	g := c.id(b.GroupByKey(c.id(b.Map(c.stream(b, "a"), fn, "", "", "")), "", "", "by-user-repartition"))
	c.id(b.Count(g, nil, ""))
	g2 := c.id(b.GroupByKey(c.id(b.Map(c.stream(b, "b"), fn, "", "", "")), "", "", ""))
	c.id(b.Count(g2, &Materialized{StoreName: "KSTREAM-MINE-0000000042"}, ""))
	text := describe(t, b)
	for _, want := range []string{
		"Sink: by-user-repartition-sink (topic: by-user-repartition)\n",
		"Source: by-user-repartition-source (topics: [by-user-repartition])\n",
		// stream 7, map 8, aggregate 9, then sink 10, filter 11, source 12.
		"Sink: KSTREAM-SINK-0000000010 (topic: KSTREAM-MINE-0000000042-repartition)\n",
		"Processor: KSTREAM-FILTER-0000000011 (stores: [])\n",
		"Source: KSTREAM-SOURCE-0000000012 (topics: [KSTREAM-MINE-0000000042-repartition])\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("describe() lacks %q:\n%s", want, text)
		}
	}
}

// When a named grouped stream's shared repartition is added again, Kafka
// gives it a new build priority, so it is written after siblings made in
// between: forwarding order (Node.Successors) follows the write order.
func TestSuccessorsFollowWriteOrder(t *testing.T) {
	c, b := check{t}, NewBuilder()
	k := c.id(b.SelectKey(c.stream(b, "in"), fn, "", ""))
	g := c.id(b.GroupByKey(k, "", "", "g"))
	c.id(b.Count(g, nil, ""))
	c.ok(b.To(k, "x", "", "", ""))
	c.id(b.Count(g, nil, ""))
	topo, err := b.Topology()
	c.ok(err)
	var sel *Node
	for _, n := range topo.Subtopologies[0].Nodes {
		if n.Name == "KSTREAM-KEY-SELECT-0000000001" {
			sel = n
		}
	}
	if got := names(sel.Successors); got != "KSTREAM-SINK-0000000007, g-repartition-filter" {
		t.Errorf("key selector forwards to %s", got)
	}
}

// A Schema Registry serde is a topic's format: sources and sinks take it,
// and carry json between them; any other operator refuses it.
func TestRegistrySerdeIsATopicFormat(t *testing.T) {
	b := NewBuilder()
	h, err := b.Stream(StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "avro"})
	if err != nil {
		t.Fatal(err)
	}
	if h.ValueSerde != "json" || h.Node.ValueWire != "avro" || h.Node.KeyWire != "" {
		t.Fatalf("source: handle value serde %q, node value wire %q, key wire %q; want json, avro, none", h.ValueSerde, h.Node.ValueWire, h.Node.KeyWire)
	}
	schema := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	if err := b.To(h.ID, "out", "", "avro("+schema+")", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GroupByKey(h.ID, "", "avro", ""); err == nil || !strings.Contains(err.Error(), `serde "avro" is a topic's format`) {
		t.Fatalf("group_by_key with avro: %v", err)
	}
	if _, err := b.Stream(StreamOptions{Topics: []string{"in2"}, ValueSerde: `avro({"type":"nope"})`}); err == nil || !strings.Contains(err.Error(), "does not parse as Avro") {
		t.Fatalf("a schema that does not parse: %v", err)
	}
}
