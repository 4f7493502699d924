package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Emit on window close (KIP-825, EmitStrategy.onWindowClose): a windowed
// aggregation updates its store as usual but forwards no update; after each
// record that moves the window close time (stream time - grace, for session
// windows also - inactivity gap) past the last one emitted, it forwards the
// final result of every window that closed since, as
// AbstractKStreamTimeWindowAggregateProcessor#maybeForwardFinalResult and
// KStreamSessionWindowAggregate do with Kafka Streams' emit interval 0 (the
// TopologyTestDriver's; the engine forwards as soon as a batch closes
// windows, it does not throttle by wall-clock time):
//
//   - time windows: windows starting from max(0, last - size) + 1 (0 the
//     first time) to close - size, in (start, key) order, stamped with the
//     window's aggregate timestamp (its latest record's);
//   - sliding windows: starting from max(0, last - difference) (0 the first
//     time) to close - difference - 1, in (start, key) order, stamped as
//     time windows;
//   - session windows: ending from max(0, last) to close - 1, in (end,
//     start, key) order, stamped with the session's end.
//
// Each result carries the headers of the record that closed its window. The
// close time last emitted is a row of the store (emitKey), written with the
// batch that emitted: under exactly_once_v2 it commits with the outputs and
// the input offsets, so a restart neither emits a window again nor loses
// one (Kafka Streams keeps it in the task's processor metadata, committed
// with the offsets).

// emitKey is the store key of the close-time row: after metaKey, so that no
// scan bounded by metaKey meets it, and no window key can be it.
var emitKey = append(bytes.Clone(metaKey), 1)

// emitLogKey is its changelog key: one byte, shorter than any window key.
var emitLogKey = []byte{1}

// emitCodec maps the close-time row to its changelog key, and every other
// row as the store's codec does.
type emitCodec struct{ keyCodec }

func (c emitCodec) toLog(sk []byte) []byte {
	if bytes.Equal(sk, emitKey) {
		return emitLogKey
	}
	return c.keyCodec.toLog(sk)
}

func (c emitCodec) fromLog(lk []byte) ([]byte, error) {
	if bytes.Equal(lk, emitLogKey) {
		return emitKey, nil
	}
	return c.keyCodec.fromLog(lk)
}

// noEmit is the close time of a store that emitted nothing yet (Kafka's
// ConsumerRecord.NO_TIMESTAMP).
const noEmit = -1

// emitOnClose runs a windowed aggregation that emits on window close: the
// aggregation (its updates discarded), the final results of the windows
// that closed, then the expiry of windows past retention, which must not
// take a window before its final result went out.
func (o *windowed) emitOnClose(ctx context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	ws, err := o.state()
	if err != nil {
		return nil, err
	}
	if !ws.emitLoaded {
		v, _, err := tx.Get(emitKey)
		if err != nil {
			return nil, fmt.Errorf("engine: task %s: reading the last emitted close time of store %s: %w", t.id, tx.store.Name, err)
		}
		ws.lastEmit, ws.emitLoaded = noEmit, true
		if len(v) == 8 {
			ws.lastEmit = int64(binary.BigEndian.Uint64(v))
		}
	}
	before := ws.streamTime
	ws.holdExpiry = true
	_, err = o.agg.aggregate(ctx, recs)
	ws.holdExpiry = false
	if err != nil {
		return nil, err
	}
	out, err := o.emitFinal(ws, tx, before, recs)
	if err != nil {
		return nil, err
	}
	return out, o.agg.expire(ws, tx, s.store)
}

// closed is a window whose final result is due: its order key, its
// windowed key, and its row.
type closed struct {
	order string
	at    int64 // start (time, sliding) or end (session): what emit ranges bound
	key   []byte
	value []byte
	ts    int64
}

// emitFinal forwards the final results the batch's records made due, each
// record in turn, as maybeForwardFinalResult after each process() call.
func (o *windowed) emitFinal(ws *winState, tx *storeTx, streamTime int64, recs []rec) ([]rec, error) {
	s := o.s
	n, w := s.node, s.node.Windows
	// The emits, in order: the close time each record made and its range.
	type emit struct {
		r            rec
		close        int64
		lower, upper int64
	}
	var emits []emit
	last := ws.lastEmit
	for _, r := range recs {
		if r.key == nil || r.ts < 0 || r.value == nil && (w.Kind != topology.SessionWindows || n.Op == topology.OpReduce) {
			continue // skipped before the aggregation, as the step skips it
		}
		streamTime = max(streamTime, r.ts)
		closeTime := streamTime - w.CloseGrace()
		if last != noEmit && last >= closeTime {
			continue // the close time did not move
		}
		e := emit{r: r, close: closeTime}
		switch w.Kind {
		case topology.TimeWindows:
			e.upper = closeTime - w.Size
			if last != noEmit {
				e.lower = max(0, last-w.Size) + 1
				// KStreamWindowAggregate#shouldRangeFetch: no window
				// starts in the range.
				if e.upper >= 0 && slices.Equal(w.For(e.upper, nil), w.For(e.lower-1, nil)) {
					continue
				}
			}
		case topology.SlidingWindows:
			e.upper = closeTime - w.Size - 1
			if last != noEmit {
				e.lower = max(0, last-w.Size)
			}
		case topology.SessionWindows:
			e.upper = closeTime - 1
			e.lower = max(0, last)
			if e.upper < e.lower {
				continue
			}
		}
		if e.upper < 0 {
			continue // no window closed ever
		}
		emits = append(emits, e)
		last = closeTime
	}
	if len(emits) == 0 {
		return nil, nil
	}
	windows, err := o.closedWindows(tx, w, emits[0].lower, emits[len(emits)-1].upper)
	if err != nil {
		return nil, err
	}
	var out []rec
	i := 0
	for _, e := range emits {
		for ; i < len(windows) && windows[i].at <= e.upper; i++ {
			c := windows[i]
			if c.at < e.lower {
				continue
			}
			out = append(out, rec{key: c.key, value: c.value, ts: c.ts, in: e.r.in})
		}
	}
	ws.lastEmit = last
	tx.Put(emitKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(last)), ws.streamTime)
	return out, nil
}

// closedWindows returns the windows of the store whose emit bound (start,
// or a session's end) lies in [lower, upper], in the order Kafka Streams'
// time-ordered stores return them, as the batch left the store.
func (o *windowed) closedWindows(tx *storeTx, w *topology.Windows, lower, upper int64) ([]closed, error) {
	t := o.t
	var lo, hi []byte
	if w.Kind == topology.TimeWindows {
		// Time first: start(8) ‖ key, one range.
		lo = binary.BigEndian.AppendUint64(nil, uint64(lower))
		hi = binary.BigEndian.AppendUint64(nil, uint64(upper)+1)
	} else {
		hi = metaKey // key first: every window of every key
	}
	var out []closed
	err := tx.ScanRows(lo, hi, func(k, v []byte, ts int64) error {
		var c closed
		switch w.Kind {
		case topology.TimeWindows:
			if len(k) < 8 {
				return nil
			}
			start := int64(binary.BigEndian.Uint64(k))
			c = closed{order: string(k), at: start, key: serde.AppendTimeWindowed(nil, k[8:], start), ts: ts}
		case topology.SlidingWindows:
			n := int(binary.BigEndian.Uint32(k))
			if len(k) != 4+n+8 {
				return nil
			}
			key, start := k[4:4+n], int64(binary.BigEndian.Uint64(k[4+n:]))
			c = closed{order: string(binary.BigEndian.AppendUint64(nil, uint64(start))) + string(key), at: start, key: serde.AppendTimeWindowed(nil, key, start), ts: ts}
		case topology.SessionWindows:
			n := int(binary.BigEndian.Uint32(k))
			if len(k) != 4+n+16 {
				return nil
			}
			key := k[4 : 4+n]
			end, start := int64(binary.BigEndian.Uint64(k[4+n:])), int64(binary.BigEndian.Uint64(k[4+n+8:]))
			c = closed{order: string(k[4+n:]) + string(key), at: end, key: serde.AppendSessionWindowed(nil, key, start, end), ts: end}
		}
		if c.at < lower || c.at > upper {
			return nil
		}
		c.value = v
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: task %s: reading the closed windows of store %s: %w", t.id, tx.store.Name, err)
	}
	slices.SortFunc(out, func(a, b closed) int { return strings.Compare(a.order, b.order) })
	return out, nil
}
