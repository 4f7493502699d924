package topology

import (
	"fmt"
	"html"
	"slices"
	"strings"
)

// SVG geometry, in pixels. Names are set in an 11px monospace font, so a
// box's width follows from its label's length without measuring text.
const (
	svgCharW   = 6.7
	svgBoxH    = 36
	svgRowGap  = 44
	svgColGap  = 24
	svgPad     = 20
	svgTitleH  = 26
	svgSubGap  = 30
	svgMinBoxW = 110
)

// svgItem is one box of the picture: a node, a topic or a store.
type svgItem struct {
	kind  string // "source", "processor", "sink", "topic", "store"
	name  string
	layer int
	order float64
	x, y  float64 // top left
	w     float64
}

type svgEdge struct {
	from, to *svgItem
	store    bool // a processor's store: dashed, no arrow
}

// svgBlock is one sub-topology's part of the picture: its boxes and edges,
// laid out in its own frame of w by h.
type svgBlock struct {
	id    int
	items []*svgItem
	edges []svgEdge
	w, h  float64
}

// SVG is d drawn as a standalone SVG image, laid out here (no external
// tool): each sub-topology a column of layers, topics above its sources and
// below its sinks, stores beside their processors. Every node is a <g> with
// class "ps-node" and data-node set to its name, holding an empty
// <text class="ps-stat"> that a live page (the engine's /ui) fills in.
func (d *Description) SVG() string {
	var blocks []*svgBlock
	for _, s := range d.Subtopologies {
		blocks = append(blocks, svgLayout(s))
	}
	totalW, totalH := float64(svgSubGap), 0.0
	for _, b := range blocks {
		totalW += b.w + svgSubGap
		totalH = max(totalH, b.h)
	}
	totalH += 2 * svgSubGap / 2
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" class="ps-topology" width="%s" height="%s" viewBox="0 0 %s %s" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="11">`+"\n",
		svgNum(totalW), svgNum(totalH), svgNum(totalW), svgNum(totalH))
	sb.WriteString(`<defs><marker id="ps-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>` + "\n")
	sb.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")
	ox := float64(svgSubGap)
	for _, b := range blocks {
		b.draw(&sb, ox, float64(svgSubGap)/2)
		ox += b.w + svgSubGap
	}
	sb.WriteString("</svg>\n")
	return sb.String()
}

// svgLayout lays sub-topology s out: its boxes in layers, ordered within
// each, and placed.
func svgLayout(s DescribedSubtopology) *svgBlock {
	b := &svgBlock{id: s.ID}
	b.addItems(s)
	rows := b.rows()
	svgOrder(rows, b.preds())
	b.place(rows)
	return b
}

// svgLayers returns the layer of each node of s: the longest path from a
// source (sources are layer 1, their topics layer 0).
func svgLayers(s DescribedSubtopology) map[string]int {
	nodes := map[string]*DescribedNode{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	layer := map[string]int{}
	var depth func(name string, seen map[string]bool) int
	depth = func(name string, seen map[string]bool) int {
		if l, ok := layer[name]; ok {
			return l
		}
		n := nodes[name]
		l := 1
		if n != nil && !seen[name] {
			seen[name] = true
			for _, p := range n.Predecessors {
				if nodes[p] != nil {
					l = max(l, depth(p, seen)+1)
				}
			}
		}
		layer[name] = l
		return l
	}
	for _, n := range s.Nodes {
		depth(n.Name, map[string]bool{})
	}
	return layer
}

// add adds a box of kind for name in layer l.
func (b *svgBlock) add(kind, name string, l int) *svgItem {
	it := &svgItem{kind: kind, name: name, layer: l}
	it.w = max(svgMinBoxW, float64(len(name))*svgCharW+24)
	b.items = append(b.items, it)
	return it
}

// addItems adds s's nodes, then the topics they read and write and the
// stores they use, with the edges between them.
func (b *svgBlock) addItems(s DescribedSubtopology) {
	layer := svgLayers(s)
	byName := map[string]*svgItem{}
	for _, n := range s.Nodes {
		byName[n.Name] = b.add(n.Type, n.Name, layer[n.Name])
	}
	topics := map[string]*svgItem{}
	stores := map[string]*svgItem{}
	for _, n := range s.Nodes {
		it := byName[n.Name]
		for _, t := range n.sourceTopics() {
			ti := topics["in:"+t]
			if ti == nil {
				ti = b.add("topic", t, 0)
				topics["in:"+t] = ti
			}
			b.edges = append(b.edges, svgEdge{from: ti, to: it})
		}
		if n.Type == TypeSink {
			ti := topics["out:"+n.sinkTopic()]
			if ti == nil {
				ti = b.add("topic", n.sinkTopic(), it.layer+1)
				topics["out:"+n.sinkTopic()] = ti
			}
			b.edges = append(b.edges, svgEdge{from: it, to: ti})
		}
		for _, succ := range n.Successors {
			if to := byName[succ]; to != nil {
				b.edges = append(b.edges, svgEdge{from: it, to: to})
			}
		}
		for _, st := range n.Stores {
			si := stores[st]
			if si == nil {
				si = b.add("store", st, it.layer)
				si.order = 1e9 // after the nodes of its layer
				stores[st] = si
			}
			b.edges = append(b.edges, svgEdge{from: it, to: si, store: true})
		}
	}
}

// rows returns the items by layer, as listed (their first order).
func (b *svgBlock) rows() [][]*svgItem {
	nLayers := 0
	for _, it := range b.items {
		nLayers = max(nLayers, it.layer+1)
	}
	rows := make([][]*svgItem, nLayers)
	for i, it := range b.items {
		if it.order == 0 {
			it.order = float64(i)
		}
		rows[it.layer] = append(rows[it.layer], it)
	}
	return rows
}

// preds returns each item's predecessors (store edges left out).
func (b *svgBlock) preds() map[*svgItem][]*svgItem {
	preds := map[*svgItem][]*svgItem{}
	for _, e := range b.edges {
		if !e.store {
			preds[e.to] = append(preds[e.to], e.from)
		}
	}
	return preds
}

// svgOrder orders each layer's items by the mean position of their
// predecessors (one barycentre pass, top down), then as listed.
func svgOrder(rows [][]*svgItem, preds map[*svgItem][]*svgItem) {
	for l, row := range rows {
		if l > 0 {
			for _, it := range row {
				if ps := preds[it]; len(ps) > 0 && it.kind != "store" {
					sum := 0.0
					for _, p := range ps {
						sum += p.order
					}
					it.order = sum / float64(len(ps))
				}
			}
		}
		slices.SortStableFunc(row, func(a, b *svgItem) int {
			switch {
			case a.order < b.order:
				return -1
			case a.order > b.order:
				return 1
			}
			return 0
		})
		for i, it := range row {
			if it.kind != "store" {
				it.order = float64(i)
			}
		}
	}
}

// place sets the items' positions, rows centred in the block, and the
// block's size.
func (b *svgBlock) place(rows [][]*svgItem) {
	widths := make([]float64, len(rows))
	for l, row := range rows {
		for i, it := range row {
			if i > 0 {
				widths[l] += svgColGap
			}
			widths[l] += it.w
		}
		b.w = max(b.w, widths[l])
	}
	b.w += 2 * svgPad
	for l, row := range rows {
		x := (b.w - widths[l]) / 2
		for _, it := range row {
			it.x, it.y = x, svgTitleH+svgPad/2+float64(l)*(svgBoxH+svgRowGap)
			x += it.w + svgColGap
		}
	}
	b.h = svgTitleH + svgPad + float64(len(rows))*(svgBoxH+svgRowGap) - svgRowGap
}

// svgNum formats v with at most one decimal, without trailing zeros.
func svgNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

// draw writes the block at (ox, oy): its frame, title, edges and boxes.
func (b *svgBlock) draw(sb *strings.Builder, ox, oy float64) {
	f := svgNum
	fmt.Fprintf(sb, `<g class="ps-subtopology" data-subtopology="%d" transform="translate(%s,%s)">`+"\n", b.id, f(ox), f(oy))
	fmt.Fprintf(sb, `<rect class="ps-frame" width="%s" height="%s" rx="8" fill="#f7f7f9" stroke="#c8c8d0"/>`+"\n", f(b.w), f(b.h))
	fmt.Fprintf(sb, `<text x="%s" y="17" font-weight="bold" fill="#333">Sub-topology: %d</text>`+"\n", f(svgPad/2), b.id)
	for _, e := range b.edges {
		e.draw(sb)
	}
	for _, it := range b.items {
		it.draw(sb)
	}
	sb.WriteString("</g>\n")
}

// draw writes the edge: a dashed line to a store, else a curve with an
// arrow.
func (e svgEdge) draw(sb *strings.Builder) {
	f := svgNum
	if e.store {
		y := e.from.y + svgBoxH/2
		fmt.Fprintf(sb, `<path class="ps-edge ps-store-edge" d="M %s %s L %s %s" stroke="#6a9a6a" stroke-dasharray="4 3" fill="none"/>`+"\n",
			f(e.from.x+e.from.w), f(y), f(e.to.x), f(y))
		return
	}
	x1, y1 := e.from.x+e.from.w/2, e.from.y+svgBoxH
	x2, y2 := e.to.x+e.to.w/2, e.to.y
	ym := (y1 + y2) / 2
	fmt.Fprintf(sb, `<path class="ps-edge" d="M %s %s C %s %s, %s %s, %s %s" stroke="#555" fill="none" marker-end="url(#ps-arrow)"/>`+"\n",
		f(x1), f(y1), f(x1), f(ym), f(x2), f(ym), f(x2), f(y2))
}

// draw writes the box: a topic's parallelogram, a store's cylinder, or a
// node's rectangle, with their label and, for nodes and stores, the empty
// stat a live page fills in.
func (it *svgItem) draw(sb *strings.Builder) {
	f, esc := svgNum, html.EscapeString
	x, y, w, h := it.x, it.y, it.w, float64(svgBoxH)
	cx := x + w/2
	switch it.kind {
	case "topic":
		fmt.Fprintf(sb, `<g class="ps-topic" data-topic="%s"><polygon points="%s,%s %s,%s %s,%s %s,%s" fill="#fdf3dc" stroke="#b89a4a"/>`,
			esc(it.name), f(x+8), f(y), f(x+w), f(y), f(x+w-8), f(y+h), f(x), f(y+h))
		fmt.Fprintf(sb, `<text x="%s" y="%s" text-anchor="middle" fill="#5a4a1a">%s</text></g>`+"\n", f(cx), f(y+h/2+4), esc(it.name))
	case "store":
		fmt.Fprintf(sb, `<g class="ps-store" data-store="%s"><path d="M %s %s a %s 5 0 0 0 %s 0 v %s a %s 5 0 0 1 %s 0 z M %s %s a %s 5 0 0 0 %s 0" fill="#e7f3e7" stroke="#6a9a6a"/>`,
			esc(it.name), f(x), f(y+5), f(w/2), f(w), f(h-10), f(w/2), f(-w), f(x), f(y+5), f(w/2), f(w))
		fmt.Fprintf(sb, `<text x="%s" y="%s" text-anchor="middle" fill="#2a4a2a">%s</text>`, f(cx), f(y+h/2+3), esc(it.name))
		fmt.Fprintf(sb, `<text class="ps-stat" data-store="%s" x="%s" y="%s" text-anchor="middle" font-size="9" fill="#2a4a2a"></text></g>`+"\n", esc(it.name), f(cx), f(y+h-4))
	default:
		fill, rx := "#ffffff", 2
		if it.kind != TypeProcessor {
			fill, rx = "#e6eef9", 12
		}
		fmt.Fprintf(sb, `<g class="ps-node ps-%s" data-node="%s"><rect x="%s" y="%s" width="%s" height="%s" rx="%d" fill="%s" stroke="#46608a"/>`,
			it.kind, esc(it.name), f(x), f(y), f(w), f(h), rx, fill)
		fmt.Fprintf(sb, `<text x="%s" y="%s" text-anchor="middle" fill="#1a2a4a">%s</text>`, f(cx), f(y+15), esc(it.name))
		fmt.Fprintf(sb, `<text class="ps-stat" data-node="%s" x="%s" y="%s" text-anchor="middle" font-size="10" fill="#a04010"></text></g>`+"\n", esc(it.name), f(cx), f(y+29))
	}
}
