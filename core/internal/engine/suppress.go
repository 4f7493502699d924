package engine

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// suppressOp is KTableSuppressProcessor over an in-memory time-ordered
// buffer (InMemoryTimeOrderedKeyValueChangeBuffer). Each update is buffered
// at a buffer time: its window's end (untilWindowCloses) or, for a key not
// buffered yet, its own timestamp (untilTimeLimit; a key keeps its place
// while it stays buffered: "non-resetting semantics"). After each update it
// forwards, oldest buffer time first (then key bytes), every key whose
// buffer time + limit <= the node's stream time (the largest timestamp it
// received), the limit being the windows' grace (plus the gap for
// sessions) or the time limit; then, when the buffer holds more than
// BufferConfig's records or bytes, it forwards the oldest early
// (emitEarlyWhenFull) or fails the record (shutDownWhenFull; the
// processing error policy applies, as Kafka Streams hands the
// StreamsException to its ProcessingExceptionHandler). A forwarded update
// carries its latest timestamp and headers. untilWindowCloses drops a
// window's tombstone (its pending update goes); untilTimeLimit buffers and
// forwards tombstones.
//
// The buffer is in memory and in its store: untilWindowCloses keeps each
// pending value under end(8) ‖ windowed key, untilTimeLimit each pending
// entry (entryValue) under bufferTime(8) ‖ key.
type suppressOp struct {
	opBase
	sup *topology.Suppression
	ws  *winState // nil: load on next use
	buf *suppressBuffer
}

// suppressBuffer is a suppression's pending updates.
type suppressBuffer struct {
	pending map[string]*buffered // by buffer key
	// index is untilTimeLimit's buffer key of each key (untilWindowCloses
	// derives it from the windowed key).
	index map[string]string
	// size is what the entries count as for BufferConfig.maxBytes
	// (computeRecordSize).
	size int64
}

// buffered is one key's pending update.
type buffered struct {
	r rec // the latest update; value nil: a tombstone (untilTimeLimit)
	// prior is the old value of the key's first buffered update; priorIsOld
	// is set while r.old is that same value (the key's first update), which
	// Kafka Streams counts once.
	prior      []byte
	priorIsOld bool
	size       int64
	// held is what the entry counts for the memory budget (pendingBytes
	// of what its store row holds).
	held int64
}

func newSuppressOp(t *task, s *step) operator {
	return &suppressOp{opBase: baseOf(t, s, s.store), sup: s.node.Suppress}
}

func (o *suppressOp) revive() { o.ws, o.buf = nil, nil }

// state returns the suppression's state, loading it on first use: the
// stream time and the buffer.
func (o *suppressOp) state() (*winState, error) {
	return o.t.winStateOf(&o.ws, o.tx, func(ws *winState) error {
		t, tx := o.t, o.tx
		b := &suppressBuffer{pending: map[string]*buffered{}, index: map[string]string{}}
		err := tx.Part.ScanRange(nil, metaKey, func(k, v []byte, ts int64) error {
			bk := string(k)
			var e *buffered
			if o.sup.FinalResults() {
				// The update's input record is gone: errors name the buffer.
				in := &kgo.Record{Topic: tx.changelog, Partition: t.id.partition, Offset: -1}
				e = &buffered{r: rec{key: append([]byte(nil), k[8:]...), value: append([]byte(nil), v...), ts: ts, in: in}}
			} else {
				var err error
				if e, err = decodeEntry(k[8:], v, ts); err != nil {
					return fmt.Errorf("entry at buffer time %d: %w", int64(binary.BigEndian.Uint64(k)), err)
				}
				b.index[bk[8:]] = bk
			}
			e.size, e.held = bufferedSize(e), pendingBytes(bk, v)
			b.pending[bk] = e
			b.size += e.size
			ws.bytes += e.held
			ws.order = append(ws.order, bk)
			return nil
		})
		if err != nil {
			return fmt.Errorf("engine: task %s: loading suppression buffer %s: %w", t.id, tx.store.Name, err)
		}
		heap.Init(&ws.order)
		o.buf = b
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
	t, s := o.t, o.s
	ws, err := o.state()
	if err != nil {
		return nil, err
	}
	limit := o.sup.TimeLimit
	if o.sup.FinalResults() {
		// Emit what closed: end + grace <= stream time (for a session, end
		// + gap + grace: KTableImpl's window grace of a session
		// aggregation).
		w := s.node.Windows
		limit = w.Grace
		if w.Kind == topology.SessionWindows {
			limit += w.Size
		}
	}
	var out []rec
	for _, r := range recs {
		if o.sup.FinalResults() {
			end, err := windowEnd(s.node.Windows, r.key)
			if err != nil {
				if err = t.recordFailed(r, s.node.Name, kindDeserialization, fmt.Errorf("key is not windowed: %w", err)); err != nil {
					return nil, err
				}
				continue
			}
			ws.advance(o.tx, r.ts)
			o.bufferWindow(ws, end, r)
		} else {
			ws.advance(o.tx, r.ts)
			o.bufferTimed(ws, r)
		}
		// enforceConstraints: what expired, then what does not fit.
		expiry := ws.streamTime - limit // as Kafka: no overflow for a limit of math.MaxInt64
		for len(ws.order) > 0 && int64(binary.BigEndian.Uint64([]byte(ws.order[0][:8]))) <= expiry {
			out = o.evict(ws, out)
		}
		if !o.overCapacity() {
			continue
		}
		if !o.sup.ShutDown {
			for o.overCapacity() && len(ws.order) > 0 {
				out = o.evict(ws, out)
			}
			continue
		}
		full := fmt.Errorf("suppression %s: its buffer (store %s) exceeded its max capacity (shutDownWhenFull). Currently [%d/%d] records and [%d/%d] bytes",
			s.node.Name, o.tx.store.Name, len(o.buf.pending), o.sup.MaxRecords, o.buf.size, o.sup.MaxBytes)
		if err := t.recordFailed(r, s.node.Name, kindProcessing, full); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (o *suppressOp) overCapacity() bool {
	return int64(len(o.buf.pending)) > o.sup.MaxRecords || o.buf.size > o.sup.MaxBytes
}

// bufferWindow buffers r, an update of the window ending at end: it
// replaces the window's pending update; a tombstone takes it away.
func (o *suppressOp) bufferWindow(ws *winState, end int64, r rec) {
	bk := string(bufferKey(end, r.key))
	old, had := o.buf.pending[bk]
	if had {
		o.drop(ws, bk, old)
	}
	if r.value == nil {
		o.tx.Put([]byte(bk), nil, r.ts)
		return
	}
	e := &buffered{r: r, prior: r.old, priorIsOld: true}
	if had {
		e.prior, e.priorIsOld = old.prior, false
	} else {
		heap.Push(&ws.order, bk)
	}
	o.add(ws, bk, e, r.value)
	o.tx.Put([]byte(bk), r.value, r.ts)
}

// bufferTimed buffers r under untilTimeLimit: a key already buffered keeps
// its buffer time and its prior value; a new one is buffered at r's time.
func (o *suppressOp) bufferTimed(ws *winState, r rec) {
	k := string(r.key)
	e := &buffered{r: r, prior: r.old, priorIsOld: true}
	bk, had := o.buf.index[k]
	if had {
		old := o.buf.pending[bk]
		o.drop(ws, bk, old)
		e.prior, e.priorIsOld = old.prior, false
	} else {
		bk = string(bufferKey(r.ts, r.key))
		o.buf.index[k] = bk
		heap.Push(&ws.order, bk)
	}
	v := encodeEntry(e)
	o.add(ws, bk, e, v)
	o.tx.Put([]byte(bk), v, r.ts)
}

func (o *suppressOp) add(ws *winState, bk string, e *buffered, stored []byte) {
	e.size, e.held = bufferedSize(e), pendingBytes(bk, stored)
	o.buf.pending[bk] = e
	o.buf.size += e.size
	ws.bytes += e.held
}

func (o *suppressOp) drop(ws *winState, bk string, e *buffered) {
	delete(o.buf.pending, bk)
	o.buf.size -= e.size
	ws.bytes -= e.held
}

// evict takes the oldest buffered update out of the buffer and its store
// and appends it to out (untilTimeLimit forwards tombstones too).
func (o *suppressOp) evict(ws *winState, out []rec) []rec {
	bk := heap.Pop(&ws.order).(string)
	e, ok := o.buf.pending[bk]
	if !ok {
		return out // deleted by a tombstone: an entry left in the heap
	}
	o.drop(ws, bk, e)
	delete(o.buf.index, bk[8:])
	o.tx.Put([]byte(bk), nil, e.r.ts)
	return append(out, e.r)
}

// bufferedSize is what Kafka Streams counts a buffered update as against
// BufferConfig.maxBytes (InMemoryTimeOrderedKeyValueChangeBuffer's
// computeRecordSize): the buffer time (8), the key, the prior, old (unless
// it is the prior) and new values, and the record context: timestamp and
// offset (8 each), the topic's characters, the partition (4), and each
// header's key characters and value.
func bufferedSize(e *buffered) int64 {
	n := 8 + len(e.r.key) + len(e.prior) + len(e.r.value)
	if !e.priorIsOld {
		n += len(e.r.old)
	}
	n += 8 + 8 + 4
	if e.r.in != nil {
		n += utf16Len(e.r.in.Topic)
	}
	for _, h := range recHeaders(e.r) {
		n += utf16Len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// utf16Len is the length of s in Java chars.
func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		if c == utf8.RuneError {
			n++
			continue
		}
		n += utf16.RuneLen(c)
	}
	return n
}

// recHeaders are the headers r carries.
func recHeaders(r rec) []kgo.RecordHeader {
	if r.ownHeaders {
		return r.headers
	}
	if r.in != nil {
		return r.in.Headers
	}
	return nil
}

// entryValue flags.
const (
	entryNew = 1 << iota
	entryPrior
	entryOld
	entryOldIsPrior
)

// encodeEntry is an untilTimeLimit buffer entry's store value: flags, the
// new, prior and old values, and the record context (topic, partition,
// offset, headers), each field length-prefixed (uvarint). Its timestamp is
// the row's.
func encodeEntry(e *buffered) []byte {
	r := e.r
	var flags byte
	if r.value != nil {
		flags |= entryNew
	}
	if e.prior != nil {
		flags |= entryPrior
	}
	if r.old != nil {
		flags |= entryOld
	}
	if e.priorIsOld {
		flags |= entryOldIsPrior
	}
	b := []byte{flags}
	field := func(v []byte) { b = append(binary.AppendUvarint(b, uint64(len(v))), v...) }
	field(r.value)
	field(e.prior)
	if !e.priorIsOld {
		field(r.old)
	}
	var topic string
	var partition int32
	var offset int64 = -1
	if r.in != nil {
		topic, partition, offset = r.in.Topic, r.in.Partition, r.in.Offset
	}
	field([]byte(topic))
	b = binary.AppendVarint(b, int64(partition))
	b = binary.AppendVarint(b, offset)
	hs := recHeaders(r)
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for _, h := range hs {
		field([]byte(h.Key))
		if h.Value == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		field(h.Value)
	}
	return b
}

// decodeEntry reads an untilTimeLimit buffer entry of key (encodeEntry).
func decodeEntry(key, v []byte, ts int64) (*buffered, error) {
	bad := fmt.Errorf("buffer entry of %d bytes is malformed", len(v))
	if len(v) == 0 {
		return nil, bad
	}
	flags, p := v[0], v[1:]
	field := func() ([]byte, bool) {
		n, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < n {
			return nil, false
		}
		f := append([]byte{}, p[w:w+int(n)]...)
		p = p[w+int(n):]
		return f, true
	}
	varint := func() (int64, bool) {
		x, w := binary.Varint(p)
		if w <= 0 {
			return 0, false
		}
		p = p[w:]
		return x, true
	}
	e := &buffered{priorIsOld: flags&entryOldIsPrior != 0}
	r := rec{key: append([]byte(nil), key...), ts: ts}
	var ok bool
	if r.value, ok = field(); !ok {
		return nil, bad
	}
	if e.prior, ok = field(); !ok {
		return nil, bad
	}
	if e.priorIsOld {
		r.old = e.prior
	} else if r.old, ok = field(); !ok {
		return nil, bad
	}
	if flags&entryNew == 0 {
		r.value = nil
	}
	if flags&entryPrior == 0 {
		e.prior = nil
	}
	if flags&entryOld == 0 {
		r.old = nil
	}
	topic, ok := field()
	if !ok {
		return nil, bad
	}
	partition, ok1 := varint()
	offset, ok2 := varint()
	n, w := binary.Uvarint(p)
	if !ok1 || !ok2 || w <= 0 {
		return nil, bad
	}
	p = p[w:]
	in := &kgo.Record{Topic: string(topic), Partition: int32(partition), Offset: offset}
	for i := uint64(0); i < n; i++ {
		k, ok := field()
		if !ok || len(p) == 0 {
			return nil, bad
		}
		h := kgo.RecordHeader{Key: string(k)}
		present := p[0]
		p = p[1:]
		if present == 1 {
			if h.Value, ok = field(); !ok {
				return nil, bad
			}
		}
		in.Headers = append(in.Headers, h)
	}
	r.in = in
	e.r = r
	return e, nil
}

// keyHeap orders buffer keys: by buffer time, then key.
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
