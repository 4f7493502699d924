package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// derivedTable adds table(topic) → filter (values holding an "e") →
// map_values (upper case; fails on "BEE"'s source "bee"), neither keeping a
// store, and returns the derived table's handle.
func derivedTable(tb testing.TB, b *topology.Builder, topic string) uint64 {
	tb.Helper()
	must := func(h *topology.Handle, err error) uint64 {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return h.ID
	}
	hasE := topology.Function{Name: "has_e", Native: topology.PredicateFunc(func(_, v []byte) (bool, error) { return bytes.Contains(v, []byte("e")), nil })}
	upper := topology.Function{Name: "upper", Native: topology.MapValuesFunc(func(v []byte) ([]byte, error) {
		if string(v) == "bee" {
			return nil, errors.New("no bees")
		}
		return bytes.ToUpper(v), nil
	})}
	t := must(b.Table(topology.TableOptions{Topic: topic, KeySerde: "string", ValueSerde: "string"}))
	return must(b.TableMapValues(must(b.TableFilter(t, hasE, nil, "")), upper, "", nil, ""))
}

var getterJoiner = topology.Function{Name: "j", Native: topology.ValueJoinerFunc(func(v, o []byte) ([]byte, error) {
	return []byte(text(v) + "|" + text(o)), nil
})}

// A stream left-joined with a table derived by store-less filter and
// map_values reads it through their value getter (KTableFilter#view,
// KTableMapValues#view): the table's current row, null where the filter
// drops it, mapped on lookup; a getter that fails skips the stream record
// under log_and_continue.
func TestStreamTableJoinReadsThroughValueGetter(t *testing.T) {
	b := topology.NewBuilder()
	tbl := derivedTable(t, b, "colours")
	s, err := b.Stream(topology.StreamOptions{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	j, err := b.Join(s.ID, tbl, getterJoiner, true, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(j.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := j.Node.Stores; len(got) != 1 || got[0] != "colours-STATE-STORE-0000000000" {
		t.Errorf("join reads stores %q, want the source table's", got)
	}
	if len(j.Node.Getter) != 2 || j.Node.Getter[0].Op != topology.OpTableFilter || j.Node.Getter[1].Op != topology.OpTableMapValues {
		t.Errorf("join's getter chain: %v", j.Node.Getter)
	}
	newHarness(t, b, map[string]string{"processing.exception.handler": "log_and_continue"}).run(t, []joinStep{
		{"orders", "apple", "o1", 1, []string{"apple=o1|null@1"}},
		{"colours", "apple", "red", 2, nil},
		{"orders", "apple", "o2", 3, []string{"apple=o2|RED@3"}},
		{"colours", "apple", "black", 4, nil}, // filtered out: reads as null
		{"orders", "apple", "o3", 5, []string{"apple=o3|null@5"}},
		{"colours", "apple", "green", 6, nil},
		{"orders", "apple", "o4", 7, []string{"apple=o4|GREEN@7"}},
		{"colours", "apple", "", 8, nil},
		{"orders", "apple", "o5", 9, []string{"apple=o5|null@9"}},
		{"colours", "apple", "bee", 10, nil}, // the mapper fails (skipped) here and on lookup
		{"orders", "apple", "o6", 11, nil},
	})
}

// Both sides of a table-table join derived by store-less operators: each
// join processor reads the other side through its value getter, from the
// source table's store materialized for it.
func TestTableJoinReadsThroughValueGetter(t *testing.T) {
	b := topology.NewBuilder()
	l := derivedTable(t, b, "ta")
	r := derivedTable(t, b, "tb")
	j, err := b.TableJoin(l, r, getterJoiner, topology.TableJoinOptions{Outer: true})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := b.ToStream(j.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(ts.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	this, other := j.Node.Predecessors[0], j.Node.Predecessors[1]
	if this.Stores[0] != "tb-STATE-STORE-0000000005" || other.Stores[0] != "ta-STATE-STORE-0000000000" {
		t.Errorf("join processors read %q and %q, want the other source table's store", this.Stores, other.Stores)
	}
	newHarness(t, b, nil).run(t, []joinStep{
		{"ta", "k", "red", 1, []string{"k=RED|null@1"}},
		{"tb", "k", "blue", 2, []string{"k=RED|BLUE@2"}},
		{"ta", "k", "green", 3, []string{"k=GREEN|BLUE@3"}},
		{"tb", "k", "mint", 4, []string{"k=GREEN|null@4"}}, // filtered out: a tombstone downstream, joined with null
		{"ta", "k", "teal", 5, []string{"k=TEAL|null@5"}},
		{"tb", "k", "beige", 6, []string{"k=TEAL|BEIGE@6"}},
	})
}

// A join of a table whose value getter reaches no store (a filter of an
// unmaterialized join result) is refused, naming the table.
func TestJoinOfStorelessGetterRefused(t *testing.T) {
	b := topology.NewBuilder()
	l := derivedTable(t, b, "ta")
	r := derivedTable(t, b, "tb")
	j, err := b.TableJoin(l, r, getterJoiner, topology.TableJoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Stream(topology.StreamOptions{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(s.ID, j.ID, getterJoiner, false, "", ""); err == nil || !strings.Contains(err.Error(), "KTABLE-MERGE-") || !strings.Contains(err.Error(), "keeps no store") {
		t.Errorf("join of an unmaterialized join result: %v", err)
	}
}
