package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/polystreams/polystreams/core/internal/crossing"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Stream-stream joins (KStreamKStreamJoin, docs/design/joins.md).
//
// Each side keeps its records in a join window store: store key
// len(4) ‖ key ‖ ts(8) ‖ seq(4), so a key's rows are one range and
// duplicates are kept; its changelog key is Kafka Streams' window-store
// key with seqnum, key ‖ ts(8) ‖ seq(4). The left store also keeps the
// join's stream time under ssMetaKey. A left or outer join keeps the
// records that joined nothing yet in its shared store, key
// ts(8) ‖ side(1) ‖ len(4) ‖ key ‖ seq(4): in time order, as Kafka's
// TimestampedKeyAndJoinSide orders them.
//
// Both sides' steps of one join share an ssState per task: the stream
// time (the largest timestamp either side saw, Kafka's shared TimeTracker)
// and, in memory, every row of the stores (they hold only the join's
// retention), loaded from Pebble on first use.

// ssMetaKey is the stream-time row of a join's left store: shorter than
// any row key (at least 16 bytes). Its changelog key is metaLogKey.
var ssMetaKey = []byte{0xff}

type joinWindowCodec struct{}

func (joinWindowCodec) toLog(sk []byte) []byte {
	if bytes.Equal(sk, ssMetaKey) {
		return metaLogKey
	}
	return sk[4:]
}

func (joinWindowCodec) fromLog(lk []byte) ([]byte, error) {
	if bytes.Equal(lk, metaLogKey) {
		return ssMetaKey, nil
	}
	if len(lk) < 12 {
		return nil, fmt.Errorf("join window changelog key of %d bytes: want key, timestamp (8) and seqnum (4)", len(lk))
	}
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, len(lk)+4), uint32(len(lk)-12)), lk...), nil
}

func joinRowKey(key []byte, ts int64, seq uint32) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, len(key)+16), uint32(len(key)))
	k = append(k, key...)
	k = binary.BigEndian.AppendUint64(k, uint64(ts))
	return binary.BigEndian.AppendUint32(k, seq)
}

// outerPrefix is a shared-store key without its seqnum.
func outerPrefix(ts int64, left bool, key []byte) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, len(key)+17), uint64(ts))
	side := byte(0)
	if left {
		side = 1 // Kafka's KeyAndJoinSide: true for the left side
	}
	k = append(k, side)
	k = binary.BigEndian.AppendUint32(k, uint32(len(key)))
	return append(k, key...)
}

type ssRow struct {
	ts    int64
	seq   uint32
	value []byte
}

// ssSide is one side's window store and its rows, by key, in (ts, seq)
// order. time is the store's own observed time, the largest timestamp
// written to it (AbstractRocksDBSegmentedBytesStore.observedStreamTime):
// a fetch finds no row older than time - retention + 1, and a write older
// than its live segments is dropped. It is the largest row timestamp, so
// a restart recomputes it from the rows, as Kafka Streams' restore does.
type ssSide struct {
	tx   *storeTx
	rows map[string][]ssRow
	time int64
}

// live says whether a window store whose observed time is now keeps a row
// at ts: its segment (segment interval max(retention / 2, 1 minute), as
// Stores.persistentWindowStore) is not older than that of now - retention
// (AbstractSegments#getOrCreateSegmentIfLive).
func (sd *ssSide) live(w topology.JoinWindows, ts int64) bool {
	interval := max(w.Retention()/2, 60_000)
	return ts/interval >= (sd.time-w.Retention())/interval
}

// ssOuter is a shared-store entry group: the unmatched records of one
// side with one key and timestamp.
type ssOuter struct {
	key  []byte
	ts   int64
	left bool
	seqs []uint32
	vals [][]byte
}

// ssState is one join's state in one task.
type ssState struct {
	streamTime int64
	seq        uint32
	// minTime is the earliest timestamp in the shared store (MaxInt64:
	// none).
	minTime    int64
	lastExpiry int64
	sides      [2]*ssSide // left, right
	outerTx    *storeTx
	outer      map[string]*ssOuter // by outerPrefix
	// bytes is what the rows and outer hold (budget.go).
	bytes int64
}

// ssLeftStore names a join by its left side's store: both sides of one
// join name the same.
func ssLeftStore(j *topology.StreamJoin) string {
	if j.Left {
		return j.OwnStore
	}
	return j.OtherStore
}

// ssCell holds a join's state in a task once loaded; nil until then, and
// after an abort (revive).
type ssCell struct {
	st *ssState
}

// load returns the join's state, loading it on first use.
func (c *ssCell) load(t *task, j *topology.StreamJoin) (*ssState, error) {
	if c.st != nil {
		return c.st, nil
	}
	leftStore, rightStore := j.OwnStore, j.OtherStore
	if !j.Left {
		leftStore, rightStore = rightStore, leftStore
	}
	st := &ssState{streamTime: -1, minTime: math.MaxInt64, lastExpiry: math.MinInt64}
	var maxSeq uint32
	for i, name := range []string{leftStore, rightStore} {
		tx := t.stores[name]
		if tx == nil {
			return nil, fmt.Errorf("engine: task %s: join store %s is not open", t.id, name)
		}
		sd := &ssSide{tx: tx, rows: map[string][]ssRow{}, time: -1}
		err := tx.Part.ScanRange(nil, nil, func(k, v []byte, _ int64) error {
			if bytes.Equal(k, ssMetaKey) {
				if len(v) == 8 {
					st.streamTime = int64(binary.BigEndian.Uint64(v))
				}
				return nil
			}
			if len(k) < 16 || int(binary.BigEndian.Uint32(k))+16 != len(k) {
				return fmt.Errorf("join store %s holds a malformed key %x", name, k)
			}
			key := string(k[4 : len(k)-12])
			r := ssRow{ts: int64(binary.BigEndian.Uint64(k[len(k)-12:])), seq: binary.BigEndian.Uint32(k[len(k)-4:]), value: bytes.Clone(v)}
			maxSeq = max(maxSeq, r.seq)
			sd.time = max(sd.time, r.ts)
			sd.rows[key] = append(sd.rows[key], r) // key order is (ts, seq) order
			st.bytes += joinRowBytes(key, r.value)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("engine: task %s: loading join store %s: %w", t.id, name, err)
		}
		st.sides[i] = sd
	}
	if j.SharedStore != "" {
		tx := t.stores[j.SharedStore]
		if tx == nil {
			return nil, fmt.Errorf("engine: task %s: join store %s is not open", t.id, j.SharedStore)
		}
		st.outerTx, st.outer = tx, map[string]*ssOuter{}
		err := tx.Part.ScanRange(nil, nil, func(k, v []byte, _ int64) error {
			if len(k) < 17 || int(binary.BigEndian.Uint32(k[9:]))+17 != len(k) {
				return fmt.Errorf("join store %s holds a malformed key %x", j.SharedStore, k)
			}
			p := string(k[:len(k)-4])
			g := st.outer[p]
			if g == nil {
				g = &ssOuter{key: bytes.Clone(k[13 : len(k)-4]), ts: int64(binary.BigEndian.Uint64(k)), left: k[8] == 1}
				st.outer[p] = g
			}
			seq := binary.BigEndian.Uint32(k[len(k)-4:])
			maxSeq = max(maxSeq, seq)
			g.seqs, g.vals = append(g.seqs, seq), append(g.vals, bytes.Clone(v))
			st.bytes += joinRowBytes(g.key, v)
			st.minTime = min(st.minTime, g.ts)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("engine: task %s: loading join store %s: %w", t.id, j.SharedStore, err)
		}
	}
	st.seq = maxSeq + 1
	c.st = st
	return st, nil
}

// ssPair is one joiner call: key, the left and right values (nil: none),
// the output's timestamp and the input record that caused it.
type ssPair struct {
	out         rec
	left, right []byte
	// at is the timestamp of the record being processed when the joiner
	// is called (Kafka Streams' record context), the metadata's
	// timestamp for a joiner that reads it; out.ts is the output's.
	at int64
}

// streamJoinOp is KStreamKStreamJoin for one side's records: a record at ts
// joins the other side's records at [ts - before, ts + after] (the right
// side: [ts - after, ts + before]), each result stamped max(ts, other's).
// Records with a null key or value are dropped and counted
// (StreamStreamJoinUtil.skipRecord), except that an outer side's null-key
// record is joined with null at once (KIP-962). Each side's window store
// goes by its own observed time (ssSide.time): a record joins the other
// side's rows that its store still shows, and a record whose segment its
// own store no longer keeps is joined but not stored (counted as dropped,
// as the store's put counts it). In a left or outer join, a record of an
// outer side that joins nothing waits in the shared store and is emitted
// with a null other value once its window closed (ts + after + grace <
// stream time; KAFKA-10847); one whose window already ended is emitted at
// once. The joiner runs in one crossing per bundle with (left, right)
// values.
type streamJoinOp struct {
	opBase
	// state is the join's state in the task, shared by both sides'
	// operators.
	state *ssCell
}

func newStreamJoinOp(t *task, s *step) operator {
	o := &streamJoinOp{opBase: baseOf(t, s, nil), state: &ssCell{}}
	for _, op := range t.ops {
		if j, ok := op.(*streamJoinOp); ok && ssLeftStore(j.s.node.Join) == ssLeftStore(s.node.Join) {
			o.state = j.state // the other side's, made first
		}
	}
	return o
}

func (o *streamJoinOp) revive() { o.state.st = nil }

// memoryHeld counts the join's rows (budget.go), once: on its left side's
// operator, as both sides share them.
func (o *streamJoinOp) memoryHeld(held *[memComponents]int64) {
	if st := o.state.st; st != nil && o.s.node.Join.Left {
		held[memJoin] += st.bytes
	}
}

func (o *streamJoinOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	j := s.node.Join
	st, err := o.state.load(t, j)
	if err != nil {
		return nil, err
	}
	w := j.Windows
	own, other := st.sides[0], st.sides[1]
	before, after := w.Before, w.After
	if !j.Left {
		own, other = other, own
		before, after = after, before
	}
	var pairs []ssPair
	// pair adds a joiner call of this side's value mine and the other's.
	pair := func(r rec, key, mine, theirs []byte, ts int64) {
		p := ssPair{out: rec{key: key, ts: ts, in: r.in}, at: r.ts}
		if j.Left {
			p.left, p.right = mine, theirs
		} else {
			p.left, p.right = theirs, mine
		}
		pairs = append(pairs, p)
	}
	for _, r := range recs {
		if r.ts > st.streamTime {
			st.streamTime = r.ts
			st.sides[0].tx.Put(ssMetaKey, binary.BigEndian.AppendUint64(nil, uint64(r.ts)), r.ts)
		}
		if r.key == nil && r.value != nil && j.Outer {
			// KIP-962: an outer side's null-key record joins nothing, at once.
			pair(r, nil, r.value, nil, r.ts)
			continue
		}
		if r.key == nil || r.value == nil || r.ts < 0 {
			t.app.dropped.Add(1) // "Skipping record due to null key or value"
			continue
		}
		seq := st.seq
		st.seq++
		// Kept across batches: not a view of the fetch buffer.
		key, value := bytes.Clone(r.key), bytes.Clone(r.value)
		own.time = max(own.time, r.ts)
		if own.live(w, r.ts) {
			rows := own.rows[string(key)]
			i := len(rows) // after every row at or before ts: (ts, seq) order
			for i > 0 && rows[i-1].ts > r.ts {
				i--
			}
			own.rows[string(key)] = slices.Insert(rows, i, ssRow{ts: r.ts, seq: seq, value: value})
			st.bytes += joinRowBytes(key, value)
			own.tx.Put(joinRowKey(r.key, r.ts, seq), r.value, r.ts)
		} else {
			t.app.dropped.Add(1) // the store's put: "Skipping record for expired segment"
		}
		// The other store shows no row older than its time - retention + 1
		// (AbstractRocksDBSegmentedBytesStore#getActualFrom).
		visible := other.time - w.Retention() + 1

		if st.outer != nil && r.ts == st.streamTime {
			pairs = append(pairs, st.emitClosed(w, r, after)...)
		}
		from, to := max(0, r.ts-before), max(0, r.ts+after)
		matched := false
		for _, o := range other.rows[string(r.key)] {
			if o.ts < from || o.ts > to || o.ts < visible {
				continue
			}
			matched = true
			if st.outer != nil {
				st.dropOuter(outerPrefix(o.ts, !j.Left, r.key))
			}
			pair(r, r.key, r.value, o.value, max(r.ts, o.ts))
		}
		if matched || !j.Outer {
			continue
		}
		if st.outer == nil || to < st.streamTime {
			pair(r, r.key, r.value, nil, r.ts)
			continue
		}
		st.minTime = min(st.minTime, r.ts)
		p := outerPrefix(r.ts, j.Left, r.key)
		g := st.outer[string(p)]
		if g == nil {
			g = &ssOuter{key: key, ts: r.ts, left: j.Left}
			st.outer[string(p)] = g
		}
		g.seqs, g.vals = append(g.seqs, seq), append(g.vals, value)
		st.bytes += joinRowBytes(key, value)
		st.outerTx.Put(binary.BigEndian.AppendUint32(p, seq), r.value, r.ts)
	}
	if err := o.expireJoin(st, w); err != nil {
		return nil, err
	}
	return o.runJoiner(ctx, pairs)
}

// dropOuter removes a shared-store group: its record joined after all.
func (st *ssState) dropOuter(p []byte) {
	g := st.outer[string(p)]
	if g == nil {
		return
	}
	for i, seq := range g.seqs {
		st.outerTx.Put(binary.BigEndian.AppendUint32(bytes.Clone(p), seq), nil, g.ts)
		st.bytes -= joinRowBytes(g.key, g.vals[i])
	}
	delete(st.outer, string(p))
}

// emitClosed is emitNonJoinedOuterRecords: the shared store's records
// whose window closed (ts + the side's look-back + grace < stream time),
// in time order, each joined with a null other value and stamped with its
// own timestamp; after names the processing side's look-ahead. (Kafka
// Streams also throttles this by wall-clock time, a performance measure
// that would make results depend on the clock; the engine checks on every
// record that moves stream time.)
func (st *ssState) emitClosed(w topology.JoinWindows, r rec, after int64) []ssPair {
	if st.minTime+after+w.Grace >= st.streamTime {
		return nil
	}
	keys := make([]string, 0, len(st.outer))
	for k := range st.outer {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	st.minTime = math.MaxInt64
	var out []ssPair
	for _, k := range keys {
		g := st.outer[k]
		lookBack := w.Before
		if g.left {
			lookBack = w.After
		}
		if g.ts+lookBack+w.Grace >= st.streamTime {
			st.minTime = min(st.minTime, g.ts)
			continue
		}
		for _, v := range g.vals {
			p := ssPair{out: rec{key: g.key, ts: g.ts, in: r.in}, at: r.ts}
			if g.left {
				p.left = v
			} else {
				p.right = v
			}
			out = append(out, p)
		}
		st.dropOuter([]byte(k))
	}
	return out
}

// expireJoin drops the rows retention no longer keeps (ts <= the side's
// observed time - retention, which no fetch shows) from memory and
// Pebble, when the stream time's cutoff moved by half the
// retention (at least a minute) since the last time. The changelog is not
// tombstoned: its retention deletes them, as Kafka Streams' window
// changelogs do.
func (o *streamJoinOp) expireJoin(st *ssState, w topology.JoinWindows) error {
	t := o.t
	cutoff := st.streamTime - w.Retention()
	if cutoff < 0 || st.lastExpiry != math.MinInt64 && cutoff-st.lastExpiry < max(w.Retention()/2, 60_000) {
		return nil
	}
	st.lastExpiry = cutoff
	for _, sd := range st.sides {
		var doomed []state.Write
		cutoff := sd.time - w.Retention()
		for key, rows := range sd.rows {
			n := 0
			for n < len(rows) && rows[n].ts <= cutoff {
				doomed = append(doomed, state.Write{Key: joinRowKey([]byte(key), rows[n].ts, rows[n].seq)})
				st.bytes -= joinRowBytes(key, rows[n].value)
				n++
			}
			switch {
			case n == len(rows):
				delete(sd.rows, key)
			case n > 0:
				sd.rows[key] = slices.Clone(rows[n:])
			}
		}
		for _, w := range doomed {
			delete(sd.tx.Dirty, string(w.Key))
		}
		if t.app.eos {
			// With the transaction (state.Tx.Expire): an abort keeps them.
			for _, w := range doomed {
				sd.tx.Expire(true, w.Key, append(bytes.Clone(w.Key), 0))
			}
		} else if err := sd.tx.Part.Apply(doomed); err != nil {
			return fmt.Errorf("engine: task %s: expiring join store %s: %w", t.id, sd.tx.store.Name, err)
		}
	}
	return nil
}

// runJoiner calls the joiner for each pair: a native one per pair, a host
// one in bundles (left values in values, right values beside them in
// other_values; -1: none).
func (o *streamJoinOp) runJoiner(ctx context.Context, pairs []ssPair) ([]rec, error) {
	t, s := o.t, o.s
	if len(pairs) == 0 {
		return nil, nil
	}
	if f, ok := s.node.Fn.Native.(topology.ValueJoinerFunc); ok {
		out := make([]rec, 0, len(pairs))
		for _, p := range pairs {
			v, err := f(p.left, p.right)
			if err != nil {
				if err := t.recordFailed(p.out, s.node.Name, kindOf(err), err); err != nil {
					return nil, err
				}
				continue
			}
			r := p.out
			r.value = v
			out = append(out, r)
		}
		return out, nil
	}
	recs := make([]rec, len(pairs))
	for i, p := range pairs {
		recs[i] = p.out
		recs[i].value = p.left
	}
	var out []rec
	bounds := t.bundleBounds(len(pairs), func(i int) int { return len(pairs[i].left) + len(pairs[i].right) })
	for k := range len(bounds) - 1 {
		start, end := bounds[k], bounds[k+1]
		b := encodeBundle(s, recs[start:end])
		if crossing.Metadata(s.steps) != pb.Metadata_METADATA_UNSPECIFIED {
			// The joiner reads the record context it is called in: the
			// processed record's timestamp, not the output's.
			for i, p := range pairs[start:end] {
				b.Timestamps[i] = p.at
			}
		}
		b.OtherValueSerde = s.node.Join.RightValueSerde
		b.OtherValueLengths = make([]int32, end-start)
		for i, p := range pairs[start:end] {
			b.OtherValueLengths[i] = length(p.right)
			b.OtherValues = append(b.OtherValues, p.right...)
		}
		got, _, fails, err := t.cross(ctx, s, recs[start:end], b)
		if err != nil {
			return nil, err
		}
		if err := t.applyFailures(recs[start:end], fails); err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// compileStreamJoin makes the step of a stream-stream join's node: a
// KSTREAM-WINDOWED- node passes its records on (its store is written by
// the side's join step, which needs the record in it before the other
// side's records see it); a join processor is a stepStreamJoin. Neither
// owns a store in the record cache's sense (s.store stays nil): their
// outputs go downstream at once, as Kafka Streams forwards join results.
func compileStreamJoin(t *topology.Topology, p *plan, s *step) error {
	n := s.node
	open := func(name string) error {
		st := t.Stores[name]
		if st == nil {
			return fmt.Errorf("engine: join node %s names store %s, which the topology lacks", n.Name, name)
		}
		if !slices.Contains(p.stores, st) {
			p.stores = append(p.stores, st)
		}
		return nil
	}
	if len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: join node %s has %d predecessors; it needs one", n.Name, len(n.Predecessors))
	}
	if n.Op == topology.OpJoinWindow {
		s.open = newPassOp
		return open(n.Stores[0])
	}
	j := n.Join
	if j == nil || n.Fn == nil {
		return fmt.Errorf("engine: join node %s has no join or joiner", n.Name)
	}
	s.open = newStreamJoinOp
	for _, name := range []string{j.OwnStore, j.OtherStore, j.SharedStore} {
		if name == "" {
			continue
		}
		if err := open(name); err != nil {
			return err
		}
	}
	if n.Fn.Token != 0 {
		st, err := joinerStep(n)
		if err != nil {
			return err
		}
		s.steps = []*pb.Step{st}
		s.chain = []*topology.Node{n}
		s.inKey, s.inValue = n.KeySerde, j.LeftValueSerde
		s.outKey, s.outValue = n.KeySerde, n.ValueSerde
	}
	return nil
}
