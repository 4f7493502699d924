package topology

import (
	"errors"
	"strings"
	"testing"
)

// proc is a native processor supplier, enough for topology tests.
var proc = Function{Name: "p", Native: NewProcessorFunc(func() NativeProcessor { return nil })}

// TestDescribeProcessor compares describe() of Processor API topologies
// with what Kafka Streams 4.1.1 prints for the same calls (a Java program
// against kafka-streams-4.1.1.jar calling StreamsBuilder.addStateStore,
// KStream.process / processValues, Topology.addSource / addProcessor /
// addSink / addStateStore and printing describe()).
func TestDescribeProcessor(t *testing.T) {
	c := check{t}
	kv := func(name string) StoreBuilder {
		return StoreBuilder{Name: name, Type: StoreTypeKeyValue, KeySerde: "string", ValueSerde: "long"}
	}
	t.Run("process then processValues", func(t *testing.T) {
		b := NewBuilder()
		c.ok(b.AddStateStore(kv("counts")))
		s := c.stream(b, "input")
		p := c.id(b.Process(s, proc, ProcessOptions{Stores: []string{"counts"}}))
		v := c.id(b.Process(p, proc, ProcessOptions{ValuesOnly: true}))
		c.ok(b.To(v, "output", "", "", ""))
		want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-PROCESSOR-0000000001
    Processor: KSTREAM-PROCESSOR-0000000001 (stores: [counts])
      --> KSTREAM-PROCESSVALUES-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-PROCESSVALUES-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-PROCESSOR-0000000001
    Sink: KSTREAM-SINK-0000000003 (topic: output)
      <-- KSTREAM-PROCESSVALUES-0000000002

`
		if got := describe(t, b); got != want {
			t.Errorf("describe:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("a shared store joins sub-topologies; a given name takes no number", func(t *testing.T) {
		b := NewBuilder()
		c.ok(b.AddStateStore(kv("shared")))
		c.ok(b.AddStateStore(StoreBuilder{Name: "win", Type: StoreTypeWindow, KeySerde: "string", ValueSerde: "long", Retention: 600000, WindowSize: 60000}))
		a := c.id(b.Process(c.stream(b, "a"), proc, ProcessOptions{Name: "pa", Stores: []string{"shared", "win"}}))
		c.ok(b.To(a, "out-a", "", "", ""))
		c.id(b.Process(c.stream(b, "b"), proc, ProcessOptions{Stores: []string{"shared"}}))
		want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> pa
    Source: KSTREAM-SOURCE-0000000002 (topics: [b])
      --> KSTREAM-PROCESSOR-0000000003
    Processor: pa (stores: [shared, win])
      --> KSTREAM-SINK-0000000001
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-PROCESSOR-0000000003 (stores: [shared])
      --> none
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000001 (topic: out-a)
      <-- pa

`
		if got := describe(t, b); got != want {
			t.Errorf("describe:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("Topology API", func(t *testing.T) {
		b := NewBuilder()
		c.ok(b.AddSource("src", []string{"in1", "in2"}, "", "", ""))
		c.ok(b.AddProcessor("count", proc, []string{"src"}, nil, "", ""))
		c.ok(b.AddStateStore(kv("store"), "count"))
		c.ok(b.AddProcessor("route", proc, []string{"count"}, nil, "", ""))
		c.ok(b.AddSink("sink-a", "out-a", []string{"route"}, "", ""))
		c.ok(b.AddSink("sink-b", "out-b", []string{"route", "count"}, "", ""))
		c.ok(b.AddSource("src2", []string{"other"}, "", "", ""))
		c.ok(b.AddProcessor("p2", proc, []string{"src2"}, nil, "", ""))
		want := `Topologies:
   Sub-topology: 0
    Source: src (topics: [in2, in1])
      --> count
    Processor: count (stores: [store])
      --> route, sink-b
      <-- src
    Processor: route (stores: [])
      --> sink-a, sink-b
      <-- count
    Sink: sink-a (topic: out-a)
      <-- route
    Sink: sink-b (topic: out-b)
      <-- route, count

  Sub-topology: 1
    Source: src2 (topics: [other])
      --> p2
    Processor: p2 (stores: [])
      --> none
      <-- src2

`
		if got := describe(t, b); got != want {
			t.Errorf("describe:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestProcessorBuildErrors: each refused call names the node, store or
// parent at fault (docs/design/processor.md, Errors) and changes nothing.
func TestProcessorBuildErrors(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	c.ok(b.AddStateStore(StoreBuilder{Name: "s", Type: StoreTypeKeyValue}))
	s := c.stream(b, "in")
	for _, tc := range []struct {
		name string
		err  error
		kind error
		want string
	}{
		{"unknown store", func() error { _, err := b.Process(s, proc, ProcessOptions{Stores: []string{"t"}}); return err }(), ErrInvalid,
			`process: node KSTREAM-PROCESSOR-0000000001 names store "t", which no add_state_store added`},
		{"store twice", b.AddStateStore(StoreBuilder{Name: "s", Type: StoreTypeKeyValue}), ErrInvalid, `names store "s", which exists already`},
		{"no store type", b.AddStateStore(StoreBuilder{Name: "u"}), ErrInvalid, `store "u" has no type`},
		{"window smaller than retention", b.AddStateStore(StoreBuilder{Name: "w", Type: StoreTypeWindow, WindowSize: 10, Retention: 5}), ErrInvalid, `keeps rows 5 ms, less than its window size 10 ms`},
		{"store for unknown processor", b.AddStateStore(StoreBuilder{Name: "x", Type: StoreTypeKeyValue}, "nope"), ErrNotFound, `names processor "nope", which does not exist`},
		{"unknown parent", b.AddProcessor("p", proc, []string{"nope"}, nil, "", ""), ErrNotFound, `add_processor: node "p" names parent "nope", which does not exist`},
		{"no parent", b.AddSink("k", "out", nil, "", ""), ErrInvalid, `add_sink: node "k" names no parent`},
		{"name twice", b.AddSource("KSTREAM-SOURCE-0000000000", []string{"other"}, "", "", ""), ErrInvalid, `names node "KSTREAM-SOURCE-0000000000", which exists already`},
		{"topic read twice", b.AddSource("src", []string{"in"}, "", "", ""), ErrInvalid, `source "src" reads topic "in", which source KSTREAM-SOURCE-0000000000 reads already`},
		{"process_values key serde", func() error {
			_, err := b.Process(s, proc, ProcessOptions{ValuesOnly: true, KeySerde: "string"})
			return err
		}(), ErrInvalid, "process_values keeps the input's keys"},
	} {
		if tc.err == nil || !errors.Is(tc.err, tc.kind) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, tc.err, tc.kind, tc.want)
		}
	}
	c.ok(b.AddSink("sink", "out", []string{"KSTREAM-SOURCE-0000000000"}, "", ""))
	if err := b.AddProcessor("after-sink", proc, []string{"sink"}, nil, "", ""); err == nil || !strings.Contains(err.Error(), `names parent "sink", which is a sink`) {
		t.Errorf("parent sink: %v", err)
	}
	// The refused calls took no number: the next processor is 0000000001.
	h := c.id(b.Process(s, proc, ProcessOptions{Stores: []string{"s"}}))
	_ = h
	if !strings.Contains(describe(t, b), "KSTREAM-PROCESSOR-0000000001 (stores: [s])") {
		t.Errorf("describe after refused calls:\n%s", describe(t, b))
	}
}

// TestHostProcessorNeedsFeature: a host supplier is refused, naming the
// node and the feature, unless the session's host declared "processors".
func TestHostProcessorNeedsFeature(t *testing.T) {
	c := check{t}
	b := NewBuilder()
	s := c.stream(b, "in")
	host := Function{Token: 3, Name: "p"}
	_, err := b.Process(s, host, ProcessOptions{})
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `node KSTREAM-PROCESSOR-0000000001 runs host processor (token 3)`) || !strings.Contains(err.Error(), `"processors"`) {
		t.Fatalf("without the feature: %v", err)
	}
	b.HostProcessors = true
	c.id(b.Process(s, host, ProcessOptions{}))
}
