package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Windowed aggregations and suppression (docs/design/windows.md).
//
// A window store keeps each (key, window) aggregate under the store key
// start(8) ‖ key: time first, so that expiring windows past retention is
// one range delete. Its changelog key is Kafka Streams' window-store key,
// key ‖ start(8) ‖ seqnum(4). A suppression buffer keeps each pending
// update under end(8) ‖ windowed key, in close order; its changelog key is
// the windowed key. Both keep a watermark row (the task's stream time)
// under metaKey, written with the batch that moved it, so that a restart
// and a restore resume from the same stream time.

// metaKey is the store key of a windowed store's watermark row: no window
// starts (or ends) at 2^64-1.
var metaKey = bytes.Repeat([]byte{0xff}, 8)

// metaLogKey is the watermark row's changelog key: shorter than any window
// key (at least 8 bytes), so it cannot collide with one.
var metaLogKey = []byte{0}

// StreamTime returns the stream time a windowed store partition recorded
// (its watermark row), or -1 when it has none.
func StreamTime(p *state.Partition) (int64, error) {
	v, _, err := p.Get(metaKey)
	if err != nil || len(v) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// keyCodec maps a store's keys to its changelog's and back.
type keyCodec interface {
	toLog(storeKey []byte) []byte
	fromLog(logKey []byte) ([]byte, error)
}

func codecFor(st *topology.Store) keyCodec {
	switch st.Kind {
	case topology.StoreWindow:
		if st.Windows.Kind == topology.SlidingWindows {
			return emitCodec{slidingCodec{}}
		}
		return emitCodec{windowCodec{}}
	case topology.StoreSession:
		return emitCodec{sessionCodec{}}
	case topology.StoreSuppress:
		if st.Suppress != nil && !st.Suppress.FinalResults() {
			return suppressTimeCodec{}
		}
		return suppressCodec{w: st.Windows}
	case topology.StoreJoinWindow:
		return joinWindowCodec{}
	case topology.StoreVersioned:
		return versionedCodec{}
	}
	return nil
}

type windowCodec struct{}

func (windowCodec) toLog(sk []byte) []byte {
	if bytes.Equal(sk, metaKey) {
		return metaLogKey
	}
	out := append(make([]byte, 0, len(sk)+4), sk[8:]...)
	return append(append(out, sk[:8]...), 0, 0, 0, 0)
}

func (windowCodec) fromLog(lk []byte) ([]byte, error) {
	if bytes.Equal(lk, metaLogKey) {
		return metaKey, nil
	}
	if len(lk) < 12 {
		return nil, fmt.Errorf("window changelog key of %d bytes: want key, start (8) and seqnum (4)", len(lk))
	}
	n := len(lk) - 12
	return append(append(make([]byte, 0, len(lk)-4), lk[n:n+8]...), lk[:n]...), nil
}

type suppressCodec struct{ w *topology.Windows }

func (suppressCodec) toLog(sk []byte) []byte {
	if bytes.Equal(sk, metaKey) {
		return metaLogKey
	}
	return sk[8:]
}

func (c suppressCodec) fromLog(lk []byte) ([]byte, error) {
	if bytes.Equal(lk, metaLogKey) {
		return metaKey, nil
	}
	end, err := windowEnd(c.w, lk)
	if err != nil {
		return nil, err
	}
	return bufferKey(end, lk), nil
}

// suppressTimeCodec is an untilTimeLimit buffer's: its changelog key is the
// store key, bufferTime(8) ‖ key (the buffer time cannot be derived from
// the key).
type suppressTimeCodec struct{}

func (suppressTimeCodec) toLog(sk []byte) []byte {
	if bytes.Equal(sk, metaKey) {
		return metaLogKey
	}
	return sk
}

func (suppressTimeCodec) fromLog(lk []byte) ([]byte, error) {
	if bytes.Equal(lk, metaLogKey) {
		return metaKey, nil
	}
	if len(lk) < 8 {
		return nil, fmt.Errorf("suppression buffer changelog key of %d bytes: want the buffer time (8) and the key", len(lk))
	}
	return lk, nil
}

// windowKey is the window store key of key's window starting at start.
func windowKey(start int64, key []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), uint64(start)), key...)
}

// bufferKey is the suppression buffer key of a windowed key.
func bufferKey(end int64, windowed []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(windowed)), uint64(end)), windowed...)
}

// windowEnd reads the end of the window of a windowed key.
func windowEnd(w *topology.Windows, windowed []byte) (int64, error) {
	if w.Kind == topology.SessionWindows {
		_, _, end, err := serde.SplitSessionWindowed(windowed)
		return end, err
	}
	_, start, err := serde.SplitTimeWindowed(windowed)
	return start + w.Size, err
}

// maxWindowUpdates bounds the window updates of one pass of a hopping
// window aggregation: a batch whose records fall into more windows than
// this goes through the aggregation and everything downstream in slices of
// records, in order, so that what it holds at once (the expanded records,
// their outputs, the updates the record cache and the store batch take)
// grows with this bound and not with the batch times the windows per
// record (topology.MaxWindowsPerRecord).
const maxWindowUpdates = 1 << 16

// winState is a windowed step's state in one task: the stream time (the
// largest timestamp seen; -1 before any) and, for a suppression, the
// updates it holds. Loaded from the store on first use, so it is what the
// last committed batch left.
type winState struct {
	streamTime int64
	// lastExpiry is the retention cutoff the store was last trimmed to.
	lastExpiry int64
	// Suppression: pending updates by buffer key, and those keys in close
	// order (a heap; keys emitted or deleted since are skipped).
	pending map[string]rec
	order   keyHeap
	// Session windows: the sessions of each key read so far, and the
	// session store's observed time: the largest session end written to
	// it (AbstractRocksDBSegmentedBytesStore.observedStreamTime, what its
	// lookups and expiry go by). It lags stream time: the record being
	// aggregated and the records dropped as late have not moved it.
	sessions  map[string][]session
	storeTime int64
	// Sliding windows: the window starts of each key read so far.
	starts map[string][]int64
	// Time windows: the open windows, in memory (nil past maxOpenWindows).
	open *openWindows
	// Emit on window close (emit.go): the close time last emitted (noEmit
	// before any), once loaded from the store; holdExpiry keeps windows
	// past retention until their final results went out.
	lastEmit   int64
	emitLoaded bool
	holdExpiry bool
	// bytes is what pending, or sessions and starts, hold (budget.go).
	bytes int64
}

// maxOpenWindows bounds a task's in-memory open windows; past it, the task
// reads its windows from the store.
const maxOpenWindows = 2_000_000

// openWindows holds every open window of a time-window store partition
// (window start >= lowest: end > stream time - grace), by start: only
// those can still be updated, so the aggregation reads them from memory,
// and a window it does not hold is new. Closed windows leave it as stream
// time passes; their rows stay in the store for queries.
type openWindows struct {
	size    int64
	lowest  int64
	n       int
	buckets map[int64]map[string]row // start -> inner key -> row
	bytes   int64                    // what the rows hold (budget.go)
}

func (o *openWindows) Lookup(key []byte) (row, bool) {
	if len(key) < 8 || key[0] == 0xff {
		return row{}, false // the watermark row
	}
	start := int64(binary.BigEndian.Uint64(key))
	if start < o.lowest {
		return row{}, false
	}
	return o.buckets[start][string(key[8:])], true
}

func (o *openWindows) Store(key []byte, r row) {
	if len(key) < 8 || key[0] == 0xff {
		return
	}
	start := int64(binary.BigEndian.Uint64(key))
	if start < o.lowest {
		return
	}
	b := o.buckets[start]
	if b == nil {
		b = map[string]row{}
		o.buckets[start] = b
	}
	if old, ok := b[string(key[8:])]; !ok {
		o.n++
		o.bytes += int64(len(key) - 8 + rowOverhead)
	} else {
		o.bytes -= int64(len(old.Value))
	}
	o.bytes += int64(len(r.Value))
	b[string(key[8:])] = r
}

// close drops the windows that closed: start + size <= closeTime.
func (o *openWindows) close(closeTime int64) {
	lowest := closeTime - o.size + 1
	if lowest <= o.lowest {
		return
	}
	for start, b := range o.buckets {
		if start < lowest {
			o.n -= len(b)
			for k, r := range b {
				o.bytes -= int64(len(k) + len(r.Value) + rowOverhead)
			}
			delete(o.buckets, start)
		}
	}
	o.lowest = lowest
}

// openWindowsOf loads the open windows of a time-window store partition.
// It returns nil when there are more than maxOpenWindows.
func openWindowsOf(tx *storeTx, w *topology.Windows, streamTime int64) (*openWindows, error) {
	o := &openWindows{size: w.Size, lowest: max(0, streamTime-w.Grace-w.Size+1), buckets: map[int64]map[string]row{}}
	tooMany := errors.New("too many open windows")
	err := tx.Part.ScanRange(binary.BigEndian.AppendUint64(nil, uint64(o.lowest)), metaKey, func(k, v []byte, ts int64) error {
		o.Store(k, row{Value: append([]byte(nil), v...), TS: ts})
		if o.n > maxOpenWindows {
			return tooMany
		}
		return nil
	})
	if errors.Is(err, tooMany) {
		return nil, nil
	}
	return o, err
}

// winStateOf returns *ws, loading it first when nil: the stream time from
// tx, then the rest of the operator's state with more.
func (t *task) winStateOf(ws **winState, tx *storeTx, more func(*winState) error) (*winState, error) {
	if *ws != nil {
		return *ws, nil
	}
	loaded := &winState{streamTime: -1, lastExpiry: math.MinInt64, sessions: map[string][]session{}, starts: map[string][]int64{}}
	v, _, err := tx.Get(metaKey)
	if err != nil {
		return nil, fmt.Errorf("engine: task %s: reading the stream time of store %s: %w", t.id, tx.store.Name, err)
	}
	if len(v) == 8 {
		loaded.streamTime = int64(binary.BigEndian.Uint64(v))
	}
	if err := more(loaded); err != nil {
		return nil, err
	}
	*ws = loaded
	return loaded, nil
}

// advance moves the stream time to ts when later, and records it in the
// store with the batch.
func (ws *winState) advance(tx *storeTx, ts int64) {
	if ts > ws.streamTime {
		ws.streamTime = ts
		ws.record(tx)
	}
}

// record writes the stream time to the store with the batch.
func (ws *winState) record(tx *storeTx) {
	tx.Put(metaKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(ws.streamTime)), ws.streamTime)
}

// windowed is what the windowed aggregations (timeWindowOp,
// sessionWindowOp, slidingWindowOp) share: their store, and their state in
// the task, loaded from the store on first use: the stream time, the open
// windows or the sessions' observed time, the close time emitted. Each
// emits every update or, with emitStrategy(onWindowClose), each window's
// final result (emit.go).
type windowed struct {
	opBase
	ws  *winState // nil: load on next use
	agg windowAggregation
}

func (o *windowed) revive() { o.ws = nil }

// home is the windowed state of the operator, which the other aggregations
// of a cogroup's store share (step.owner).
func (o *windowed) home() *windowed { return o }

func (o *windowed) process(ctx context.Context, recs []rec) ([]rec, error) {
	if o.s.node.Windows.EmitOnClose {
		return o.emitOnClose(ctx, recs) // emit.go
	}
	return o.agg.aggregate(ctx, recs)
}

// memoryHeld counts the open windows and the session and sliding windows'
// indexes (budget.go).
func (o *windowed) memoryHeld(held *[memComponents]int64) {
	if o.ws == nil {
		return
	}
	if o.ws.open != nil {
		held[memOpenWindows] += o.ws.open.bytes
	}
	held[memWindowIndex] += o.ws.bytes
}

// releaseMemory drops the open windows over the budget: the aggregation
// reads the store from then on (budget.go).
func (o *windowed) releaseMemory() {
	if o.ws != nil && o.ws.open != nil {
		o.ws.open, o.tx.Front = nil, nil
	}
}

// windowAggregation is what a windowed aggregation adds to windowed: its
// aggregation of a run of records, and the expiry of the windows its
// store's retention no longer keeps.
type windowAggregation interface {
	aggregate(ctx context.Context, recs []rec) ([]rec, error)
	expire(ws *winState, tx *storeTx, st *topology.Store) error
}

// state returns the aggregation's state, loading it on first use: the
// stream time, and the open time windows or the sessions' observed time.
func (o *windowed) state() (*winState, error) {
	wsp := &o.ws
	if o.s.owner != nil {
		// A cogroup's aggregation: the state of its store is the first
		// aggregation's (its open windows or session index, its times).
		if h, ok := o.t.op(o.s.owner).(interface{ home() *windowed }); ok {
			wsp = &h.home().ws
		}
	}
	return o.t.winStateOf(wsp, o.tx, func(ws *winState) error {
		t, tx := o.t, o.tx
		var err error
		switch w := o.s.node.Windows; w.Kind {
		case topology.TimeWindows:
			if ws.open, err = openWindowsOf(tx, w, ws.streamTime); err != nil {
				return fmt.Errorf("engine: task %s: loading the open windows of store %s: %w", t.id, tx.store.Name, err)
			}
			if ws.open != nil {
				tx.Front = ws.open
			}
		case topology.SessionWindows:
			if err := ws.loadStoreTime(tx); err != nil {
				return fmt.Errorf("engine: task %s: reading the observed time of session store %s: %w", t.id, tx.store.Name, err)
			}
		}
		return nil
	})
}

// timeWindowOp is KStreamWindowAggregate: count, reduce, aggregate over
// time windows (tumbling, hopping).
type timeWindowOp struct {
	windowed
	// expand is the aggregation's scratch: a record per window; keys
	// holds their store keys (the store copies what it keeps).
	expand []rec
	keys   []byte
}

func newTimeWindowOp(t *task, s *step) operator {
	o := &timeWindowOp{}
	o.windowed = windowed{opBase: baseOf(t, s, s.store), agg: o}
	return o
}

// aggregate is KStreamWindowAggregate's process (count, reduce, aggregate over
// time windows): each record updates every window it falls into that is
// still open: w.end > stream time - grace, stream time including this
// record. A record too late for a window is dropped for it and counted
// (dropped-records), as Kafka Streams counts it. Each window's update is
// forwarded with the windowed key. All windows of all records of the batch
// fold in one crossing for a host function.
func (o *timeWindowOp) aggregate(ctx context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	w := s.node.Windows
	ws, err := o.state()
	if err != nil {
		return nil, err
	}
	var starts []int64
	// One entry per record and window: reused from batch to batch (the
	// fold's outputs are new slices).
	expanded := o.expand[:0]
	if need := len(recs) * int(w.PerRecord()); cap(expanded) < need {
		expanded = make([]rec, 0, need)
	}
	keys := o.keys[:0]
	defer func() { o.expand, o.keys = expanded[:0], keys[:0] }()
	// The watermark row is written once, after the batch: stream time
	// moves with nearly every record.
	from := ws.streamTime
	for _, r := range recs {
		// KStreamWindowAggregate skips a record with a null key only: a
		// null value is counted by count and handed to an aggregator
		// (Kafka 3.1+). A reduce has nothing to fold it with (as for
		// sessions, sessionPass).
		if r.key == nil || r.value == nil && s.node.Op == topology.OpReduce {
			t.app.dropped.Add(1)
			continue
		}
		if r.ts < 0 {
			t.app.dropped.Add(1) // no window holds a negative time
			continue
		}
		ws.streamTime = max(ws.streamTime, r.ts)
		closeTime := ws.streamTime - w.Grace
		starts = w.For(r.ts, starts[:0])
		for _, start := range starts {
			if start+w.Size <= closeTime {
				t.app.dropped.Add(1) // "Skipping record for expired window"
				continue
			}
			// windowKey(start, r.key), in the batch's buffer: a grown
			// buffer leaves the keys before it where they were.
			at := len(keys)
			keys = append(binary.BigEndian.AppendUint64(keys, uint64(start)), r.key...)
			r.skey = keys[at:len(keys):len(keys)]
			expanded = append(expanded, r)
		}
	}
	if ws.streamTime > from {
		ws.record(tx)
	}
	var out []rec
	if s.node.Op == topology.OpCount {
		out, err = count(s, tx, expanded)
	} else {
		out, err = t.foldKept(ctx, s, expanded)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		r := &out[i]
		r.key = serde.AppendTimeWindowed(make([]byte, 0, len(r.key)+8), r.key, int64(binary.BigEndian.Uint64(r.skey)))
		r.skey = nil
	}
	if ws.open != nil {
		ws.open.close(ws.streamTime - w.Grace)
		if ws.open.n > maxOpenWindows {
			ws.open, tx.Front = nil, nil // too many: read the store
		}
	}
	if err := o.expire(ws, tx, s.store); err != nil {
		return nil, err
	}
	return out, nil
}

// expire deletes the windows that retention no longer keeps: those that
// start at or before stream time - retention. It trims in steps of half
// the retention (at least a minute), as Kafka Streams drops whole
// segments, not each window. The changelog is not tombstoned: its own
// retention (retention + 1 day) deletes them, as in Kafka Streams. Under
// exactly_once_v2 the rows go with the transaction (state.Tx.Expire).
func (o *timeWindowOp) expire(ws *winState, tx *storeTx, st *topology.Store) error {
	t := o.t
	cutoff, due := ws.expiryDue(st, ws.streamTime)
	if !due {
		return nil
	}
	upper := binary.BigEndian.AppendUint64(nil, uint64(cutoff)+1)
	if err := tx.Expire(t.app.eos, nil, upper); err != nil {
		return fmt.Errorf("engine: task %s: expiring windows of store %s: %w", t.id, st.Name, err)
	}
	return nil
}

// expiryDue returns the retention cutoff (now - retention, now being the
// time the store goes by), and whether the store is due a trim: the cutoff
// moved by half the retention (at least a minute) since the last one.
func (ws *winState) expiryDue(st *topology.Store, now int64) (int64, bool) {
	cutoff := now - st.Retention
	if cutoff < 0 || ws.holdExpiry || ws.lastExpiry != math.MinInt64 && cutoff-ws.lastExpiry < max(st.Retention/2, 60_000) {
		return cutoff, false
	}
	ws.lastExpiry = cutoff
	return cutoff, true
}

// trimScan deletes the rows of a key-first store (sessions, sliding
// windows) that doomed picks: a scan of the store partition.
func (o *windowed) trimScan(tx *storeTx, doomed func(k []byte) bool) error {
	t := o.t
	var keys [][]byte
	err := tx.Part.ScanRange(nil, metaKey, func(k, _ []byte, _ int64) error {
		if doomed(k) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range keys {
		if err == nil {
			err = tx.Expire(t.app.eos, k, append(k, 0))
		}
	}
	if err != nil {
		return fmt.Errorf("engine: task %s: expiring rows of store %s: %w", t.id, tx.store.Name, err)
	}
	return nil
}
