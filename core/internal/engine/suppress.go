package engine

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// suppressOp is KTableSuppressProcessor with untilWindowCloses: it keeps
// each window's latest update and forwards it, once, when its stream time
// (the largest timestamp of the updates it received) reaches the window's
// end plus grace. A tombstone takes the window's pending update away. Its
// buffer is in memory, and in its store.
type suppressOp struct {
	opBase
	ws *winState // nil: load on next use
}

func newSuppressOp(t *task, s *step) operator { return &suppressOp{opBase: baseOf(t, s, s.store)} }

func (o *suppressOp) revive() { o.ws = nil }

// state returns the suppression's state, loading it on first use: the
// stream time and the buffer.
func (o *suppressOp) state() (*winState, error) {
	return o.t.winStateOf(&o.ws, o.tx, func(ws *winState) error {
		t, tx := o.t, o.tx
		ws.pending = map[string]rec{}
		err := tx.part.ScanRange(nil, metaKey, func(k, v []byte, ts int64) error {
			bk := string(k)
			// The update's input record is gone: errors name the buffer.
			in := &kgo.Record{Topic: tx.changelog, Partition: t.id.partition, Offset: -1}
			ws.pending[bk] = rec{key: append([]byte(nil), k[8:]...), value: append([]byte(nil), v...), ts: ts, in: in}
			ws.bytes += pendingBytes(bk, v)
			ws.order = append(ws.order, bk)
			return nil
		})
		if err != nil {
			return fmt.Errorf("engine: task %s: loading suppression buffer %s: %w", t.id, tx.store.Name, err)
		}
		heap.Init(&ws.order)
		return nil
	})
}

// memoryHeld counts the suppression buffer (budget.go).
func (o *suppressOp) memoryHeld(held *[memComponents]int64) {
	if o.ws != nil {
		held[memSuppress] += o.ws.bytes
	}
}

func (o *suppressOp) process(_ context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	w := s.node.Windows
	ws, err := o.state()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		end, err := windowEnd(w, r.key)
		if err != nil {
			if err = t.recordFailed(r, s.node.Name, kindDeserialization, fmt.Errorf("key is not windowed: %w", err)); err != nil {
				return nil, err
			}
			continue
		}
		ws.advance(tx, r.ts)
		bk := bufferKey(end, r.key)
		if old, ok := ws.pending[string(bk)]; ok {
			ws.bytes -= pendingBytes(string(bk), old.value)
		}
		if r.value == nil {
			delete(ws.pending, string(bk))
			tx.put(bk, nil, r.ts)
			continue
		}
		if _, ok := ws.pending[string(bk)]; !ok {
			heap.Push(&ws.order, string(bk))
		}
		r.old = nil
		ws.pending[string(bk)] = r
		ws.bytes += pendingBytes(string(bk), r.value)
		tx.put(bk, r.value, r.ts)
	}
	// Emit what closed: end + grace <= stream time (for a session, end +
	// gap + grace: KTableImpl's window grace of a session aggregation).
	grace := w.Grace
	if w.Kind == topology.SessionWindows {
		grace += w.Size
	}
	var out []rec
	for len(ws.order) > 0 {
		bk := ws.order[0]
		if int64(binary.BigEndian.Uint64([]byte(bk[:8])))+grace > ws.streamTime {
			break
		}
		heap.Pop(&ws.order)
		r, ok := ws.pending[bk]
		if !ok {
			continue // deleted, or a second entry of a key emitted already
		}
		delete(ws.pending, bk)
		ws.bytes -= pendingBytes(bk, r.value)
		tx.put([]byte(bk), nil, r.ts)
		out = append(out, r)
	}
	return out, nil
}

// keyHeap orders buffer keys: by window end, then windowed key.
type keyHeap []string

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
