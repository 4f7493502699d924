package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Sliding windows (KStreamSlidingWindowAggregate): windows of the time
// difference d, both ends inclusive, made as records arrive: each record
// gets a left window [ts - d, ts] and, when later records fall within d
// after it, a right window [ts + 1, ts + 1 + d]; existing windows holding
// ts are updated. A sliding store keeps each window under len(key) (4) ‖
// key ‖ start (8), a key's windows as one range; its changelog keys are
// Kafka Streams' window-store keys (key ‖ start ‖ seqnum). The row
// timestamp is the latest record time in the window, which the algorithm
// reads. As for sessions, the task indexes each key's window starts once it
// has read them.

func slidingKey(key []byte, start int64) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 12+len(key)), uint32(len(key)))
	return binary.BigEndian.AppendUint64(append(out, key...), uint64(start))
}

type slidingCodec struct{}

func (slidingCodec) toLog(sk []byte) []byte {
	if string(sk) == string(metaKey) {
		return metaLogKey
	}
	return append(append(make([]byte, 0, len(sk)), sk[4:]...), 0, 0, 0, 0)
}

func (slidingCodec) fromLog(lk []byte) ([]byte, error) {
	if string(lk) == string(metaLogKey) {
		return metaKey, nil
	}
	if len(lk) < 12 {
		return nil, fmt.Errorf("window changelog key of %d bytes: want key, start (8) and seqnum (4)", len(lk))
	}
	n := len(lk) - 12
	return slidingKey(lk[:n], int64(binary.BigEndian.Uint64(lk[n:n+8]))), nil
}

// slidingStarts returns key's window starts, ascending, reading them from
// the store the first time.
func (o *slidingWindowOp) slidingStarts(ws *winState, tx *storeTx, key []byte) ([]int64, error) {
	if ss, ok := ws.starts[string(key)]; ok {
		return ss, nil
	}
	prefix := append(binary.BigEndian.AppendUint32(nil, uint32(len(key))), key...)
	var ss []int64
	err := tx.Part.ScanRange(prefix, state.PrefixEnd(prefix), func(k, _ []byte, _ int64) error {
		if len(k) == len(prefix)+8 {
			ss = append(ss, int64(binary.BigEndian.Uint64(k[len(prefix):])))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	setIndex(ws, ws.starts, string(key), ss, true)
	return ss, nil
}

// slider is one record's pass over its key's sliding windows.
type slider struct {
	t         *task
	f         *folder
	ws        *winState
	r         rec
	d         int64
	closeTime int64
	// visible is the earliest window start the store still finds (Kafka
	// Streams' fetch: stream time - retention + 1).
	visible int64
	err     error
}

// window is a sliding window's row: its aggregate (none: no row) and
// latest record time.
type window struct {
	agg agg
	ts  int64
}

func (sl *slider) get(start int64) window {
	a, ts, err := sl.f.get(slidingKey(sl.r.key, start))
	if err != nil && sl.err == nil {
		sl.err = err
	}
	return window{a, ts}
}

// update is updateWindowAndForward: the record joins the window [start,
// start + d] holding w, unless the window closed (end < stream time -
// grace: dropped and counted).
func (sl *slider) update(start int64, w window) {
	if sl.err != nil {
		return
	}
	if start+sl.d < sl.closeTime {
		sl.f.drop() // "Skipping record for expired window"
		return
	}
	a, err := sl.f.fold(sl.r, w.agg, nil)
	if err != nil {
		sl.err = sl.f.fail(err)
		return
	}
	ts := sl.r.ts
	if !w.agg.none() {
		ts = max(ts, w.ts)
	}
	sl.put(start, window{a, ts})
}

// put stores and forwards a window's row.
func (sl *slider) put(start int64, w window) {
	sl.f.put(slidingKey(sl.r.key, start), w.agg, w.ts)
	starts := sl.ws.starts[string(sl.r.key)]
	if i, found := slices.BinarySearch(starts, start); !found {
		sl.f.touchStarts(sl.r.key)
		setIndex(sl.ws, sl.ws.starts, string(sl.r.key), slices.Insert(starts, i, start), true)
	}
	sl.f.emit(rec{key: serde.AppendTimeWindowed(nil, sl.r.key, start), ts: w.ts, in: sl.r.in}, w.agg, agg{sym: aggBytes})
}

func (sl *slider) init() window {
	a, err := sl.f.init()
	if err != nil && sl.err == nil {
		sl.err = sl.f.fail(err)
	}
	return window{a, sl.r.ts}
}

// slidingWindowOp is KStreamSlidingWindowAggregate: count, reduce,
// aggregate over sliding windows.
type slidingWindowOp struct{ windowed }

func newSlidingWindowOp(t *task, s *step) operator {
	o := &slidingWindowOp{}
	o.windowed = windowed{opBase: baseOf(t, s, s.store), agg: o}
	return o
}

// aggregate runs KStreamSlidingWindowAggregate over recs: records
// with a null key or value are skipped, a record whose windows all closed
// (ts + 1 + d <= stream time - grace) is dropped and counted.
func (o *slidingWindowOp) aggregate(ctx context.Context, recs []rec) ([]rec, error) {
	return o.passes(ctx, o.t.dropNulls(recs), o.slidingPass)
}

// slidingPass is one pass of aggregate over recs.
func (o *slidingWindowOp) slidingPass(f *folder, recs []rec) error {
	t := o.t
	s, ws, w := f.s, f.ws, f.s.node.Windows
	for i, r := range recs {
		f.cur = i
		if r.ts < 0 {
			f.drop()
			continue
		}
		ws.advance(f.tx, r.ts)
		if f.skip[i] {
			continue
		}
		sl := &slider{t: t, f: f, ws: ws, r: r, d: w.Size, closeTime: ws.streamTime - w.Grace, visible: ws.streamTime - s.store.Retention + 1}
		if r.ts+1+w.Size <= sl.closeTime {
			f.drop()
			continue
		}
		starts, err := o.slidingStarts(ws, f.tx, r.key)
		if err != nil {
			return recordError(r, s.node.Name, err)
		}
		if r.ts < w.Size {
			sl.early(starts)
		} else {
			sl.reverse(starts)
		}
		if sl.err != nil {
			var ff *foldFailed
			if errors.As(sl.err, &ff) {
				return sl.err
			}
			return recordError(r, s.node.Name, sl.err)
		}
	}
	return nil
}

// reverse is processReverse, what Kafka Streams runs over its default
// (RocksDB) window stores: the windows of the key that start from ts - 2d
// to ts + 1, latest first, so that the windows the record updates are
// forwarded latest first too.
func (sl *slider) reverse(all []int64) {
	ts, d := sl.r.ts, sl.d
	lo := max(0, ts-2*d, sl.visible)
	seen := map[int64]bool{}
	var left, right *window
	leftMade, rightMade := false, false
	prev := int64(math.MinInt64) // the previous record's time, when known
	starts := slices.Clone(all)
scan:
	for i := len(starts) - 1; i >= 0; i-- {
		start := starts[i]
		if start > ts+1 {
			continue
		}
		if start < lo {
			break
		}
		w := sl.get(start)
		seen[start] = true
		switch end := start + d; {
		case start == ts+1:
			rightMade = true
		case end > ts:
			if right == nil {
				right = &w
			}
			sl.update(start, w)
		case end == ts:
			leftMade = true
			sl.update(start, w)
			if w.ts >= ts {
				return // a record at ts came before: its windows exist
			}
			prev = w.ts
		default:
			left, prev = &w, w.ts
			break scan
		}
	}
	// The previous record's right window, when missing and the record falls in it.
	if prev != math.MinInt64 && !seen[prev+1] && prev+1+d >= ts {
		sl.update(prev+1, sl.init())
	}
	if !leftMade {
		w := sl.init()
		if prev != math.MinInt64 && ts-d <= prev && left != nil {
			w = window{left.agg, ts}
		}
		sl.update(ts-d, w)
	}
	if !rightMade && right != nil && right.ts > ts {
		sl.put(ts+1, *right)
	}
}

// early is processEarly, for 0 <= ts < d: windows that would start before
// 0 are the one window [0, d].
func (sl *slider) early(all []int64) {
	ts := sl.r.ts
	seen := map[int64]bool{}
	var combined, right *window
	rightMade := false
	prev := int64(math.MinInt64)
	for _, start := range slices.Clone(all) {
		if start > ts+1 || start < sl.visible {
			continue
		}
		w := sl.get(start)
		seen[start] = true
		switch {
		case start == 0:
			combined = &w
			if w.ts < ts {
				prev = w.ts
			}
		case start <= ts:
			right = &w
			sl.update(start, w)
		case start == ts+1:
			rightMade = true
		}
	}
	if right == nil && combined != nil && combined.ts > ts {
		right = combined
	}
	if !rightMade && right != nil && right.ts > ts {
		sl.put(ts+1, *right)
	}
	if prev != math.MinInt64 && !seen[prev+1] {
		sl.update(prev+1, sl.init())
	}
	if combined == nil {
		sl.update(0, sl.init())
	} else {
		sl.update(0, *combined)
	}
}

// expire deletes the windows that start at or before stream time -
// retention, in steps of half the retention (at least a minute).
func (o *slidingWindowOp) expire(ws *winState, tx *storeTx, st *topology.Store) error {
	cutoff, due := ws.expiryDue(st, ws.streamTime)
	if !due {
		return nil
	}
	if err := o.trimScan(tx, func(k []byte) bool {
		return len(k) >= 12 && int64(binary.BigEndian.Uint64(k[len(k)-8:])) <= cutoff
	}); err != nil {
		return err
	}
	for key, ss := range ws.starts {
		i, _ := slices.BinarySearch(ss, cutoff+1)
		setIndex(ws, ws.starts, key, ss[i:], i < len(ss))
	}
	return nil
}
