package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The generator's cases pass the runner's validator, cover every shape,
// and one seed always makes the same cases.
func TestFuzzGeneratesValidCases(t *testing.T) {
	sch := testSchema(t)
	gen := func(seed uint64) []string {
		g := &fuzzGen{r: rand.New(rand.NewPCG(seed, 1))}
		var out []string
		for range 300 {
			c, err := fuzzCase(g.gen(), fmt.Sprintf("fuzz_%d", g.n), "a random case", sch)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range shrinkCandidates(c, sch) {
				if k.raw == nil {
					t.Fatalf("%s: an unparsed shrink candidate", c.Name)
				}
			}
			out = append(out, string(c.raw))
		}
		return out
	}
	a, b := gen(7), gen(7)
	ops := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 made two different case %d:\n%s\n%s", i, a[i], b[i])
		}
		var c Case
		if err := json.Unmarshal([]byte(a[i]), &c); err != nil {
			t.Fatal(err)
		}
		for _, st := range c.Topology {
			ops[st.Op] = true
			if st.Windows != nil {
				ops["window:"+st.Windows.Type] = true
			}
		}
	}
	for _, op := range []string{"map_values", "filter", "flat_map_values", "select_key", "map", "group_by", "group_by_key",
		"count", "reduce", "aggregate", "window:time", "window:session", "suppress", "emit_strategy", "table", "join", "left_join"} {
		if !ops[op] {
			t.Errorf("300 random cases have no %s", op)
		}
	}
}

func TestFuzzDiff(t *testing.T) {
	c := &Case{Expect: Expect{Outputs: []Output{{Topic: "out", Key: "string", Value: "long"}}}}
	rec := func(k string, v byte, ts int64) *kgo.Record {
		return &kgo.Record{Key: []byte(k), Value: []byte{0, 0, 0, 0, 0, 0, 0, v}, Timestamp: time.UnixMilli(ts)}
	}
	run := func(recs ...*kgo.Record) *fuzzRun {
		return &fuzzRun{outputs: map[string][]*kgo.Record{"out": recs}}
	}
	if d := fuzzDiff(c, run(rec("a", 1, 5), rec("b", 2, 6)), run(rec("a", 1, 5), rec("b", 2, 6))); d != nil {
		t.Errorf("equal outputs differ: %v", d)
	}
	for name, got := range map[string]*fuzzRun{
		"order":     run(rec("b", 2, 6), rec("a", 1, 5)),
		"value":     run(rec("a", 1, 5), rec("b", 3, 6)),
		"timestamp": run(rec("a", 1, 5), rec("b", 2, 7)),
		"missing":   run(rec("a", 1, 5)),
		"refused":   {refused: "step 1"},
		"failure":   {failure: "in/0@1"},
	} {
		if d := fuzzDiff(c, run(rec("a", 1, 5), rec("b", 2, 6)), got); len(d) == 0 {
			t.Errorf("%s: no difference found", name)
		}
	}
	n1, n2 := int64(1), int64(2)
	w, g := run(), run()
	w.dropped, g.dropped = &n1, &n2
	if d := fuzzDiff(c, w, g); len(d) != 1 {
		t.Errorf("dropped records: want one difference, got %v", d)
	}
}
