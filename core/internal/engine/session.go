package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Session windows (KStreamSessionWindowAggregate). A session store keeps
// each session's aggregate under len(key) (4) ‖ key ‖ end (8) ‖ start (8):
// a key's sessions are one range, in end order. Its changelog key is Kafka
// Streams' session key, key ‖ end ‖ start. The task keeps an index of each
// key's sessions once it has read them, so finding the sessions a record
// touches reads no range from Pebble after the first.

type session struct{ start, end int64 }

// storeTimeKey is the store key of a session store's own observed time
// (winState.storeTime), next to the watermark row; storeTimeLogKey is its
// changelog key, shorter than any session key (at least 16 bytes).
var (
	storeTimeKey    = append(bytes.Clone(metaKey), 1)
	storeTimeLogKey = []byte{1}
)

// writeStoreTime moves the session store's observed time on to end.
func (ws *winState) writeStoreTime(tx *storeTx, end int64) {
	if end > ws.storeTime {
		ws.storeTime = end
		tx.Put(storeTimeKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(end)), end)
	}
}

// loadStoreTime reads the session store's observed time; a store written
// before it was kept starts from the stream time.
func (ws *winState) loadStoreTime(tx *storeTx) error {
	v, _, err := tx.Get(storeTimeKey)
	if err != nil {
		return err
	}
	ws.storeTime = ws.streamTime
	if len(v) == 8 {
		ws.storeTime = int64(binary.BigEndian.Uint64(v))
	}
	return nil
}

func sessionKey(key []byte, s session) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 20+len(key)), uint32(len(key)))
	out = binary.BigEndian.AppendUint64(append(out, key...), uint64(s.end))
	return binary.BigEndian.AppendUint64(out, uint64(s.start))
}

type sessionCodec struct{}

func (sessionCodec) toLog(sk []byte) []byte {
	switch string(sk) {
	case string(metaKey):
		return metaLogKey
	case string(storeTimeKey):
		return storeTimeLogKey
	}
	return sk[4:]
}

func (sessionCodec) fromLog(lk []byte) ([]byte, error) {
	switch string(lk) {
	case string(metaLogKey):
		return metaKey, nil
	case string(storeTimeLogKey):
		return storeTimeKey, nil
	}
	key, start, end, err := serde.SplitSessionWindowed(lk)
	if err != nil {
		return nil, fmt.Errorf("session changelog key: %w", err)
	}
	return sessionKey(key, session{start, end}), nil
}

// sessionsOf returns key's sessions, in (end, start) order, reading them
// from the store the first time.
func (o *sessionWindowOp) sessionsOf(ws *winState, tx *storeTx, key []byte) ([]session, error) {
	if ss, ok := ws.sessions[string(key)]; ok {
		return ss, nil
	}
	prefix := binary.BigEndian.AppendUint32(nil, uint32(len(key)))
	prefix = append(prefix, key...)
	var ss []session
	err := tx.Part.ScanRange(prefix, state.PrefixEnd(prefix), func(k, _ []byte, _ int64) error {
		if len(k) != len(prefix)+16 {
			return nil
		}
		ss = append(ss, session{start: int64(binary.BigEndian.Uint64(k[len(k)-8:])), end: int64(binary.BigEndian.Uint64(k[len(k)-16:]))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	setIndex(ws, ws.sessions, string(key), ss, true)
	return ss, nil
}

// sessionWindowOp is KStreamSessionWindowAggregate: count, reduce,
// aggregate over session windows.
type sessionWindowOp struct{ windowed }

func newSessionWindowOp(t *task, s *step) operator {
	o := &sessionWindowOp{}
	o.windowed = windowed{opBase: baseOf(t, s, s.store), agg: o}
	return o
}

// aggregate is KStreamSessionWindowAggregate's process: a record at ts joins
// (and merges) every session of its key that ends at or after ts - gap and
// starts at or before ts + gap; the merged sessions are removed (a
// tombstone forwarded for each) and the merged one forwarded, stamped with
// its end. A merged session that ends before stream time - grace - gap is
// too late: the record is dropped and counted. Only records with a null key
// are skipped; count counts null values, as Kafka Streams' does.
func (o *sessionWindowOp) aggregate(ctx context.Context, recs []rec) ([]rec, error) {
	return o.passes(ctx, recs, o.sessionPass)
}

// sessionPass is one pass of aggregate over recs.
func (o *sessionWindowOp) sessionPass(f *folder, recs []rec) error {
	n, w, s, ws := f.s.node, f.s.node.Windows, f.s, f.ws
	f.out = make([]rec, 0, len(recs))
	for i, r := range recs {
		f.cur = i
		if r.key == nil || r.ts < 0 {
			f.drop()
			continue
		}
		if n.Op != topology.OpCount && r.value == nil && n.Op == topology.OpReduce {
			f.drop() // a reduce has nothing to fold
			continue
		}
		ws.advance(f.tx, r.ts)
		if f.skip[i] {
			continue
		}
		closeTime := ws.streamTime - w.Grace - w.Size
		all, err := o.sessionsOf(ws, f.tx, r.key)
		if err != nil {
			return recordError(r, n.Name, err)
		}
		merged := session{r.ts, r.ts}
		var touched []session
		var touchedAggs []agg
		// Kafka Streams' session store finds no session that ends before
		// its own observed time - retention + 1, whether or not it was
		// deleted yet (AbstractRocksDBSegmentedBytesStore#getActualFrom).
		visible := ws.storeTime - s.store.Retention + 1
		for _, ss := range all {
			if ss.end < r.ts-w.Size || ss.start > r.ts+w.Size || ss.end < visible {
				continue
			}
			a, _, err := f.get(sessionKey(r.key, ss))
			if err != nil {
				return recordError(r, n.Name, err)
			}
			touched, touchedAggs = append(touched, ss), append(touchedAggs, a)
			merged = session{min(merged.start, ss.start), max(merged.end, ss.end)}
		}
		if merged.end < closeTime {
			f.drop() // "Skipping record for expired window"
			continue
		}
		if merged != (session{r.ts, r.ts}) {
			for i, ss := range touched {
				f.put(sessionKey(r.key, ss), agg{sym: aggBytes}, ss.end)
				f.emit(rec{key: serde.AppendSessionWindowed(nil, r.key, ss.start, ss.end), ts: ss.end, in: r.in}, agg{sym: aggBytes}, touchedAggs[i])
			}
		}
		// Every session joined is merged into a fresh aggregate, then the
		// value is added (KStreamSessionWindowAggregate's order).
		start, err := f.init()
		if err != nil {
			return f.fail(err)
		}
		a, err := f.fold(r, start, touchedAggs)
		if err != nil {
			return f.fail(err)
		}
		f.put(sessionKey(r.key, merged), a, merged.end)
		ws.writeStoreTime(f.tx, merged.end)
		f.emit(rec{key: serde.AppendSessionWindowed(nil, r.key, merged.start, merged.end), ts: merged.end, in: r.in}, a, agg{sym: aggBytes})
		kept := all[:0:0]
		for _, ss := range all {
			if !slices.Contains(touched, ss) {
				kept = append(kept, ss)
			}
		}
		kept = append(kept, merged)
		slices.SortFunc(kept, func(a, b session) int {
			if a.end != b.end {
				return cmpInt(a.end, b.end)
			}
			return cmpInt(a.start, b.start)
		})
		f.touchSessions(r.key)
		setIndex(ws, ws.sessions, string(r.key), kept, true)
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sessionInit is the aggregate a record starts from before the sessions it
// joins are merged in: count's 0, reduce's none, aggregate's initializer.
func sessionInit(n *topology.Node) ([]byte, error) {
	switch n.Op {
	case topology.OpCount:
		return serde.AppendLong(nil, 0), nil
	case topology.OpReduce:
		return nil, nil
	}
	init, ok := n.Init.Native.(topology.InitializerFunc)
	if !ok {
		return nil, fmt.Errorf("engine: node %s has no native initializer", n.Name)
	}
	v, err := init()
	if err != nil {
		return nil, fmt.Errorf("initializer: %w", err)
	}
	return v, nil
}

// sessionMerge merges a session's aggregate into agg: count adds, reduce
// reduces (a missing side is the other), aggregate calls the merger.
func sessionMerge(n *topology.Node, key, agg, other []byte) ([]byte, error) {
	switch n.Op {
	case topology.OpCount:
		a, err := serde.DecodeLong(agg)
		if err != nil {
			return nil, err
		}
		b, err := serde.DecodeLong(other)
		if err != nil {
			return nil, fmt.Errorf("store holds a bad count: %w", err)
		}
		return serde.AppendLong(nil, a+b), nil
	case topology.OpReduce:
		if agg == nil {
			return other, nil
		}
		return n.Fn.Native.(topology.ReduceFunc)(agg, other)
	}
	merger, ok := n.Merger.Native.(topology.AggregateFunc)
	if !ok {
		return nil, fmt.Errorf("engine: node %s has no native merger", n.Name)
	}
	return merger(key, agg, other)
}

// sessionAdd folds r's value into agg.
func sessionAdd(n *topology.Node, r rec, agg []byte) ([]byte, error) {
	switch n.Op {
	case topology.OpCount:
		c, err := serde.DecodeLong(agg)
		if err != nil {
			return nil, err
		}
		return serde.AppendLong(nil, c+1), nil
	case topology.OpReduce:
		if agg == nil {
			return r.value, nil
		}
		return n.Fn.Native.(topology.ReduceFunc)(agg, r.value)
	}
	return n.Fn.Native.(topology.AggregateFunc)(r.key, r.value, agg)
}

// expire deletes the sessions that end before the store's observed
// time - retention (Kafka Streams' session segments expire by end time, as
// the store sees time), in steps of half the retention (at least a
// minute): a scan of the store.
func (o *sessionWindowOp) expire(ws *winState, tx *storeTx, st *topology.Store) error {
	cutoff, due := ws.expiryDue(st, ws.storeTime)
	if !due {
		return nil
	}
	if err := o.trimScan(tx, func(k []byte) bool {
		return len(k) >= 20 && int64(binary.BigEndian.Uint64(k[len(k)-16:])) < cutoff
	}); err != nil {
		return err
	}
	for key, ss := range ws.sessions {
		kept := ss[:0]
		for _, s := range ss {
			if s.end >= cutoff {
				kept = append(kept, s)
			}
		}
		setIndex(ws, ws.sessions, key, kept, len(kept) > 0)
	}
	return nil
}
