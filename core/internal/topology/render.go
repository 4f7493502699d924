package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Description is a topology as describe() shows it, structured: the form
// every rendering (text, json, mermaid, dot, svg) is made from, and the
// topology file format of `polystreams describe` (its JSON, see
// docs/observability.md). Lists are in the order describe() prints them:
// nodes by sub-tree size, topics and stores as Java's HashSets iterate.
type Description struct {
	Subtopologies []DescribedSubtopology `json:"subtopologies"`
}

// DescribedSubtopology is one sub-topology of a Description.
type DescribedSubtopology struct {
	ID int `json:"id"`
	// Global: a global table's sub-topology ("for global store (will not
	// generate tasks)").
	Global bool            `json:"global,omitempty"`
	Nodes  []DescribedNode `json:"nodes"`
}

// DescribedNode is one node of a DescribedSubtopology.
type DescribedNode struct {
	Name string `json:"name"`
	// Type is "source", "processor" or "sink".
	Type string `json:"type"`
	// Topics a source reads.
	Topics []string `json:"topics,omitempty"`
	// Pattern a source reads topics by (instead of Topics).
	Pattern string `json:"pattern,omitempty"`
	// Topic a sink writes.
	Topic string `json:"topic,omitempty"`
	// TopicExtractor: a sink's TopicNameExtractor class, when it names each
	// record's topic (Topic is then empty).
	TopicExtractor string `json:"topic_extractor,omitempty"`
	// Stores a processor uses.
	Stores       []string `json:"stores,omitempty"`
	Successors   []string `json:"successors,omitempty"`
	Predecessors []string `json:"predecessors,omitempty"`
}

// Node types of a DescribedNode.
const (
	TypeSource    = "source"
	TypeProcessor = "processor"
	TypeSink      = "sink"
)

// Description returns t as describe() shows it, structured.
func (t *Topology) Description() *Description {
	d := &Description{Subtopologies: []DescribedSubtopology{}}
	subs := slices.Clone(t.Subtopologies)
	slices.SortStableFunc(subs, func(a, b *Subtopology) int { return a.ID - b.ID })
	for _, s := range subs {
		l := s.describedLayout()
		ds := DescribedSubtopology{ID: s.ID, Nodes: []DescribedNode{}}
		for _, n := range l.nodes {
			dn := DescribedNode{Name: n.Name}
			switch n.Type {
			case Source:
				dn.Type = TypeSource
				dn.Topics = javaHashOrder(n.Topics, javaCopyCapacity(len(n.Topics)))
				dn.Pattern = n.Pattern
				dn.Successors = nameList(l.succ[n])
			case Sink:
				dn.Type, dn.Topic = TypeSink, n.Topic
				if n.TopicExtractor != nil {
					dn.TopicExtractor = n.ExtractorClass()
				}
				dn.Predecessors = nameList(l.pred[n])
			default:
				dn.Type = TypeProcessor
				stores := javaHashOrder(n.Stores, javaDefaultCapacity(len(n.Stores)))
				dn.Stores = javaHashOrder(stores, javaCopyCapacity(len(stores)))
				dn.Successors, dn.Predecessors = nameList(l.succ[n]), nameList(l.pred[n])
			}
			ds.Nodes = append(ds.Nodes, dn)
		}
		d.Subtopologies = append(d.Subtopologies, ds)
	}
	for _, g := range t.Globals {
		d.Subtopologies = append(d.Subtopologies, g.described())
	}
	slices.SortStableFunc(d.Subtopologies, func(a, b DescribedSubtopology) int { return a.ID - b.ID })
	return d
}

func nameList(ns []*Node) []string {
	if len(ns) == 0 {
		return nil
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// Formats Render knows.
var Formats = []string{"text", "json", "mermaid", "dot", "svg"}

// Render returns d in format: "text" (Kafka Streams' describe() text, byte
// for byte), "json", "mermaid", "dot" or "svg". "" is "text".
func (d *Description) Render(format string) (string, error) {
	switch format {
	case "", "text":
		return d.Text(), nil
	case "json":
		return d.JSON(), nil
	case "mermaid":
		return d.Mermaid(), nil
	case "dot":
		return d.Dot(), nil
	case "svg":
		return d.SVG(), nil
	}
	return "", fmt.Errorf("topology: describe format %q is not one of %s", format, strings.Join(Formats, ", "))
}

// Text is Kafka Streams' Topology.describe().toString().
func (d *Description) Text() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n ")
	for _, s := range d.Subtopologies {
		if s.Global {
			sb.WriteString("  Sub-topology: " + strconv.Itoa(s.ID) + globalSuffix + "\n")
		} else {
			sb.WriteString("  Sub-topology: " + strconv.Itoa(s.ID) + "\n")
		}
		for _, n := range s.Nodes {
			switch n.Type {
			case TypeSource:
				if n.Pattern != "" {
					sb.WriteString("    Source: " + n.Name + " (topics: " + n.Pattern + ")")
				} else {
					sb.WriteString("    Source: " + n.Name + " (topics: [" + strings.Join(n.Topics, ", ") + "])")
				}
				sb.WriteString("\n      --> " + joinNames(n.Successors))
			case TypeSink:
				if n.TopicExtractor != "" {
					sb.WriteString("    Sink: " + n.Name + " (extractor class: " + n.TopicExtractor + ")")
				} else {
					sb.WriteString("    Sink: " + n.Name + " (topic: " + n.Topic + ")")
				}
				sb.WriteString("\n      <-- " + joinNames(n.Predecessors))
			default:
				sb.WriteString("    Processor: " + n.Name + " (stores: [" + strings.Join(n.Stores, ", ") + "])")
				sb.WriteString("\n      --> " + joinNames(n.Successors))
				sb.WriteString("\n      <-- " + joinNames(n.Predecessors))
			}
			sb.WriteString("\n")
		}
		if !s.Global { // GlobalStore#toString ends with no blank line
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func joinNames(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// JSON is d as indented JSON, the topology file format.
func (d *Description) JSON() string {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // plain strings and ints: cannot fail
	}
	return string(b) + "\n"
}

// ParseDescription reads a topology file: a Description's JSON, or Kafka
// Streams' describe() text (so a JVM application's topology renders too).
func ParseDescription(data []byte) (*Description, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var d Description
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, fmt.Errorf("topology: topology file: %w", err)
		}
		return &d, d.validate()
	}
	return parseText(string(data))
}

func (d *Description) validate() error {
	var errs []error
	for _, s := range d.Subtopologies {
		for _, n := range s.Nodes {
			if n.Name == "" {
				errs = append(errs, fmt.Errorf("topology: sub-topology %d has a node without a name", s.ID))
			}
			if n.Type != TypeSource && n.Type != TypeProcessor && n.Type != TypeSink {
				errs = append(errs, fmt.Errorf("topology: node %q has type %q; want source, processor or sink", n.Name, n.Type))
			}
		}
	}
	return errors.Join(errs...)
}

// parseText reads Kafka Streams' describe() text (sub-topologies only;
// global stores are refused).
func parseText(text string) (*Description, error) {
	d := &Description{Subtopologies: []DescribedSubtopology{}}
	var sub *DescribedSubtopology
	var node *DescribedNode
	flush := func() {
		if node != nil {
			sub.Nodes = append(sub.Nodes, *node)
			node = nil
		}
	}
	edges := func(s string) []string {
		if s == "none" {
			return nil
		}
		return strings.Split(s, ", ")
	}
	inner := func(line, prefix, open string) (name, list string, ok bool) {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return "", "", false
		}
		name, list, ok = strings.Cut(rest, " ("+open)
		return name, strings.TrimSuffix(strings.TrimSuffix(list, ")"), "]"), ok
	}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		bad := func() error { return fmt.Errorf("topology: describe text line %d: cannot read %q", i+1, line) }
		switch {
		case line == "" || line == "Topologies:":
		case strings.HasPrefix(line, "Sub-topology: "):
			flush()
			id, err := strconv.Atoi(strings.Fields(strings.TrimPrefix(line, "Sub-topology: "))[0])
			if err != nil {
				return nil, bad()
			}
			d.Subtopologies = append(d.Subtopologies, DescribedSubtopology{ID: id, Global: strings.HasSuffix(line, globalSuffix), Nodes: []DescribedNode{}})
			sub = &d.Subtopologies[len(d.Subtopologies)-1]
		case sub == nil:
			return nil, bad()
		case strings.HasPrefix(line, "Source: "):
			flush()
			name, list, ok := inner(line, "Source: ", "topics: [")
			if !ok {
				// A pattern source: "Source: NAME (topics: <pattern>)".
				name, pattern, ok := strings.Cut(strings.TrimPrefix(line, "Source: "), " (topics: ")
				if !ok || !strings.HasSuffix(pattern, ")") {
					return nil, bad()
				}
				node = &DescribedNode{Name: name, Type: TypeSource, Pattern: strings.TrimSuffix(pattern, ")")}
				break
			}
			node = &DescribedNode{Name: name, Type: TypeSource, Topics: edges(list)}
		case strings.HasPrefix(line, "Processor: "):
			flush()
			name, list, ok := inner(line, "Processor: ", "stores: [")
			if !ok {
				return nil, bad()
			}
			node = &DescribedNode{Name: name, Type: TypeProcessor}
			if list != "" {
				node.Stores = strings.Split(list, ", ")
			}
		case strings.HasPrefix(line, "Sink: "):
			flush()
			name, topic, ok := inner(line, "Sink: ", "topic: ")
			if ok {
				node = &DescribedNode{Name: name, Type: TypeSink, Topic: topic}
				break
			}
			if name, class, ok := inner(line, "Sink: ", "extractor class: "); ok {
				node = &DescribedNode{Name: name, Type: TypeSink, TopicExtractor: class}
				break
			}
			return nil, bad()
		case strings.HasPrefix(line, "--> ") && node != nil:
			node.Successors = edges(strings.TrimPrefix(line, "--> "))
		case strings.HasPrefix(line, "<-- ") && node != nil:
			node.Predecessors = edges(strings.TrimPrefix(line, "<-- "))
		default:
			return nil, bad()
		}
	}
	flush()
	if len(d.Subtopologies) == 0 {
		return nil, errors.New("topology: topology file holds no sub-topology (want describe() JSON or text)")
	}
	return d, nil
}

// Mermaid is d as a Mermaid flowchart: a subgraph per sub-topology, topics
// as parallelograms, stores as cylinders.
func (d *Description) Mermaid() string {
	var sb strings.Builder
	sb.WriteString("flowchart TB\n")
	ids := map[string]string{}
	id := func(kind, name string) string {
		k := kind + ":" + name
		if v, ok := ids[k]; ok {
			return v
		}
		v := kind[:1] + strconv.Itoa(len(ids))
		ids[k] = v
		return v
	}
	label := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"` }
	var edges []string
	declared := map[string]bool{}
	declare := func(line, key string) {
		if !declared[key] {
			declared[key] = true
			sb.WriteString(line)
		}
	}
	for _, s := range d.Subtopologies {
		fmt.Fprintf(&sb, "  subgraph sub%d[%s]\n", s.ID, label("Sub-topology: "+strconv.Itoa(s.ID)))
		for _, n := range s.Nodes {
			nid := id("node", n.Name)
			switch n.Type {
			case TypeSource, TypeSink:
				fmt.Fprintf(&sb, "    %s([%s])\n", nid, label(n.Name))
			default:
				fmt.Fprintf(&sb, "    %s[%s]\n", nid, label(n.Name))
			}
			for _, st := range n.Stores {
				sid := id("store", st)
				declare(fmt.Sprintf("    %s[(%s)]\n", sid, label(st)), sid)
				edges = append(edges, fmt.Sprintf("  %s -.- %s\n", nid, sid))
			}
			for _, succ := range n.Successors {
				edges = append(edges, fmt.Sprintf("  %s --> %s\n", nid, id("node", succ)))
			}
		}
		sb.WriteString("  end\n")
	}
	for _, s := range d.Subtopologies {
		for _, n := range s.Nodes {
			for _, t := range n.sourceTopics() {
				tid := id("topic", t)
				declare(fmt.Sprintf("  %s[/%s/]\n", tid, label(t)), tid)
				edges = append(edges, fmt.Sprintf("  %s --> %s\n", tid, id("node", n.Name)))
			}
			if n.Type == TypeSink {
				tid := id("topic", n.sinkTopic())
				declare(fmt.Sprintf("  %s[/%s/]\n", tid, label(n.sinkTopic())), tid)
				edges = append(edges, fmt.Sprintf("  %s --> %s\n", id("node", n.Name), tid))
			}
		}
	}
	for _, e := range edges {
		sb.WriteString(e)
	}
	return sb.String()
}

// Dot is d as a Graphviz digraph: a cluster per sub-topology, topics as
// parallelograms, stores as cylinders.
func (d *Description) Dot() string {
	var sb strings.Builder
	q := func(s string) string { return strconv.Quote(s) }
	sb.WriteString("digraph topology {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n")
	declared := map[string]bool{}
	var edges []string
	for _, s := range d.Subtopologies {
		fmt.Fprintf(&sb, "  subgraph cluster_%d {\n    label=%s;\n", s.ID, q("Sub-topology: "+strconv.Itoa(s.ID)))
		for _, n := range s.Nodes {
			shape := "box, style=rounded"
			if n.Type == TypeProcessor {
				shape = "box"
			}
			fmt.Fprintf(&sb, "    %s [shape=%s];\n", q(n.Name), shape)
			for _, st := range n.Stores {
				if !declared["store:"+st] {
					declared["store:"+st] = true
					fmt.Fprintf(&sb, "    %s [label=%s, shape=cylinder];\n", q("store:"+st), q(st))
				}
				edges = append(edges, fmt.Sprintf("  %s -> %s [style=dashed, arrowhead=none];\n", q(n.Name), q("store:"+st)))
			}
			for _, succ := range n.Successors {
				edges = append(edges, fmt.Sprintf("  %s -> %s;\n", q(n.Name), q(succ)))
			}
		}
		sb.WriteString("  }\n")
	}
	topic := func(t string) {
		if !declared["topic:"+t] {
			declared["topic:"+t] = true
			fmt.Fprintf(&sb, "  %s [label=%s, shape=parallelogram];\n", q("topic:"+t), q(t))
		}
	}
	for _, s := range d.Subtopologies {
		for _, n := range s.Nodes {
			for _, t := range n.sourceTopics() {
				topic(t)
				edges = append(edges, fmt.Sprintf("  %s -> %s;\n", q("topic:"+t), q(n.Name)))
			}
			if n.Type == TypeSink {
				topic(n.sinkTopic())
				edges = append(edges, fmt.Sprintf("  %s -> %s;\n", q(n.Name), q("topic:"+n.sinkTopic())))
			}
		}
	}
	for _, e := range edges {
		sb.WriteString(e)
	}
	sb.WriteString("}\n")
	return sb.String()
}

// sinkTopic is what graphs show as a sink's topic: its topic, or its
// TopicNameExtractor's class.
func (n *DescribedNode) sinkTopic() string {
	if n.TopicExtractor != "" {
		return "extractor class: " + n.TopicExtractor
	}
	return n.Topic
}

// sourceTopics are what a source node reads, for pictures: its topics, or
// its pattern as one topic.
func (n *DescribedNode) sourceTopics() []string {
	if n.Pattern != "" {
		return append(slices.Clone(n.Topics), n.Pattern)
	}
	return n.Topics
}
