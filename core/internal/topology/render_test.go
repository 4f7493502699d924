package topology

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the goldens of TestRenderGoldens in testdata/render")

// renderCases are topologies whose every rendering is pinned by a golden
// file in testdata/render/<name>.<format>.
var renderCases = []struct {
	name  string
	build func(c check, b *Builder)
}{{
	// Word count: a repartition splits it in two sub-topologies.
	name: "wordcount",
	build: func(c check, b *Builder) {
		s := c.id(b.Stream(StreamOptions{Topics: []string{"lines"}, ValueSerde: "string"}))
		w := c.id(b.FlatMapValues(s, fn, "", ""))
		g := c.id(b.GroupBy(w, fn, "string", "", ""))
		n := c.id(b.Count(g, nil, ""))
		c.ok(b.To(c.id(b.ToStream(n, "")), "word-counts", "", "", ""))
	},
}, {
	// A TopicNameExtractor's sink: the graphs show its class for a topic.
	name: "extractor",
	build: func(c check, b *Builder) {
		s := c.stream(b, "orders")
		c.ok(b.ToRouted(s, "", "", "", "", Routing{TopicExtractor: &Function{Token: 9, Name: "byRegion"}, Partitioner: &Function{Token: 10}}))
	},
}, {
	// A branching source: describe order differs from forwarding order.
	name: "branch",
	build: func(c check, b *Builder) {
		s := c.stream(b, "in", "in-2")
		c.id(b.Peek(s, fn, ""))
		m := c.id(b.MapValues(s, fn, "", ""))
		c.ok(b.To(c.id(b.Filter(m, fn, "")), "out", "", "", ""))
		c.ok(b.Foreach(m, fn, "the-sink.v1"))
	},
}, {
	// A table grouped and counted: a store per table operator.
	name: "table",
	build: func(c check, b *Builder) {
		t := c.id(b.Table(TableOptions{Topic: "users", KeySerde: "string", ValueSerde: "string", Materialized: &Materialized{StoreName: "users-store"}}))
		f := c.id(b.TableFilter(t, fn, nil, ""))
		g := c.id(b.TableGroupBy(f, fn, "string", "string", ""))
		c.id(b.TableCount(g, &Materialized{StoreName: "by-region"}, ""))
	},
}}

func TestRenderGoldens(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			c, b := check{t}, NewBuilder()
			tc.build(c, b)
			topo, err := b.Topology()
			c.ok(err)
			d := topo.Description()
			for _, format := range Formats {
				got, err := d.Render(format)
				c.ok(err)
				path := filepath.Join("testdata", "render", tc.name+"."+format)
				if *rewrite {
					c.ok(os.MkdirAll(filepath.Dir(path), 0o755))
					c.ok(os.WriteFile(path, []byte(got), 0o644))
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./core/internal/topology -run TestRenderGoldens -rewrite)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s\n%s", format, path, diffLines(got, string(want)))
				}
			}
		})
	}
}

// TestRenderTextIsDescribe: the text rendering of a Description is
// describe() itself, and a topology file in either form reads back to the
// same Description.
func TestRenderTextIsDescribe(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			c, b := check{t}, NewBuilder()
			tc.build(c, b)
			topo, err := b.Topology()
			c.ok(err)
			d := topo.Description()
			if got, want := d.Text(), topo.Describe(); got != want {
				t.Errorf("Description().Text() differs from Describe()\n%s", diffLines(got, want))
			}
			for _, form := range []string{d.Text(), d.JSON()} {
				back, err := ParseDescription([]byte(form))
				c.ok(err)
				if !reflect.DeepEqual(back, d) {
					t.Errorf("ParseDescription(%.20q...) = %+v, want %+v", form, back, d)
				}
			}
		})
	}
}

func TestParseDescriptionErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"subtopologies":[{"id":0,"nodes":[{"name":"a","type":"widget"}]}]}`, `node "a" has type "widget"`},
		{`{"subtopologies":[],"extra":1}`, `unknown field "extra"`},
		{"Topologies:\n   Sub-topology: 0\n    Gadget: x\n", `line 3: cannot read "Gadget: x"`},
		{"hello", `line 1: cannot read "hello"`},
		{"", "holds no sub-topology"},
	} {
		_, err := ParseDescription([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDescription(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	if _, err := (&Description{}).Render("png"); err == nil || !strings.Contains(err.Error(), `"png" is not one of text, json, mermaid, dot, svg`) {
		t.Errorf("Render(png) = %v", err)
	}
}

// TestRenderEscapes: names read from a topology file may hold any
// character; each format quotes them.
func TestRenderEscapes(t *testing.T) {
	d := &Description{Subtopologies: []DescribedSubtopology{{ID: 0, Nodes: []DescribedNode{
		{Name: `a"<&>`, Type: TypeSource, Topics: []string{`t"<`}},
	}}}}
	for format, want := range map[string]string{
		"svg":     `data-node="a&#34;&lt;&amp;&gt;"`,
		"mermaid": `n0(["a#quot;<&>"])`,
		"dot":     `"a\"<&>" [shape=box, style=rounded]`,
	} {
		got, err := d.Render(format)
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("%s rendering lacks %s:\n%s", format, want, got)
		}
	}
}
