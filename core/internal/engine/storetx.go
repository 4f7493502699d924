package engine

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// storeTx is a store partition plus the writes of the batch in progress,
// which reach Pebble and the changelog only when the batch succeeds.
//
// Under exactly_once_v2 a batch's writes move on to txn, the writes of the
// open transaction, which reach the changelog just before the transaction
// ends and Pebble only once it committed.
type storeTx struct {
	store     *topology.Store
	part      *state.Partition
	changelog string
	// keys maps store keys to changelog keys and back (window.go); nil for
	// a key-value store, whose keys are the same.
	keys keyCodec
	// front, when set, answers gets in its range (window.go).
	front front
	dirty map[string]row
	// txn: the open transaction's writes under exactly_once_v2; a held
	// store's writes not yet in Pebble under at_least_once (unlogged).
	txn map[string]row
	// unlogged, when not nil (a held store: under at_least_once with the
	// record cache on, a key-value store): the store's changes since the
	// task's record cache last emptied, latest per key. They wait in txn
	// until then too, and reach Pebble once per key (task.finish), or
	// sooner when a query asks (task.sync); the changelog gets them once
	// the cache empties, as Kafka Streams' caching store writes and logs
	// at flush rather than per update.
	unlogged map[string]row
	// expired: under exactly_once_v2, the key ranges [lo, hi) that
	// retention expired in the open transaction. They reach Pebble after
	// its writes, once it committed: deleted at once, a transaction that
	// then aborts (or a killed engine) would leave Pebble without rows its
	// checkpoint still holds (a window not emitted yet, say), and no
	// restore from the checkpoint would bring them back.
	expired [][2][]byte
	// lastOffset is the offset of the last changelog record of the open
	// transaction, -1 when none (set by produce promises).
	lastOffset atomic.Int64
}

// row is a store's value for a key with its timestamp; a nil value is a
// deleted key.
type row struct {
	value []byte
	ts    int64
}

// get returns key's value (nil when absent) and its timestamp.
func (s *storeTx) get(key []byte) ([]byte, int64, error) {
	if s.front != nil {
		if r, known := s.front.lookup(key); known {
			return r.value, r.ts, nil
		}
	}
	if r, ok := s.dirty[string(key)]; ok {
		return r.value, r.ts, nil
	}
	if r, ok := s.txn[string(key)]; ok {
		return r.value, r.ts, nil
	}
	return s.part.Get(key)
}

// put sets key's value (nil deletes it) as of timestamp ts.
func (s *storeTx) put(key, value []byte, ts int64) {
	s.dirty[string(key)] = row{value, ts}
	if s.front != nil {
		s.front.store(key, row{value, ts})
	}
}

// expire deletes the rows in [lo, hi) (nil: open) that retention no
// longer keeps: at once under at-least-once (whose checkpoint is cleared
// while running), with the open transaction under exactly_once_v2.
func (s *storeTx) expire(eos bool, lo, hi []byte) error {
	if eos {
		s.expired = append(s.expired, [2][]byte{bytes.Clone(lo), bytes.Clone(hi)})
		return nil
	}
	return s.part.DeleteRange(lo, hi)
}

// front is an in-memory view of part of a store that knows every row in
// its range, in front of the batch, transaction and Pebble (window.go's
// open windows).
type front interface {
	// lookup returns key's row, and whether the front knows it (a key in
	// its range that it does not hold is absent).
	lookup(key []byte) (row, bool)
	store(key []byte, r row)
}

// logLater adds the batch's changes to unlogged and returns by how much
// that grew it, in record cache bytes.
func (s *storeTx) logLater() int {
	n := 0
	for k, r := range s.dirty {
		if old, ok := s.unlogged[k]; ok {
			n += len(r.value) - len(old.value)
		} else {
			n += len(k) + len(r.value) + cacheOverhead
		}
		s.unlogged[k] = r
	}
	return n
}

// writes turns rows into store writes.
func writes(rows map[string]row) []state.Write {
	ws := make([]state.Write, 0, len(rows))
	for k, r := range rows {
		ws = append(ws, state.Write{Key: []byte(k), Value: r.value, TS: r.ts})
	}
	return ws
}

// changelogRecord is the changelog record of a store change: the plain
// value, with the row's timestamp as the record's; nil for a row that is
// not logged (a versioned store's stream time: versioned.go).
func (s *storeTx) changelogRecord(partition int32, w state.Write) *kgo.Record {
	if vc, ok := s.keys.(versionedCodec); ok {
		r, err := vc.logRecord(s.changelog, partition, w)
		if err != nil {
			// Only the store's own writes reach here, made by
			// VersionValue: a bad one is a bug, not bad input.
			panic(fmt.Sprintf("engine: store %s: %v", s.store.Name, err))
		}
		return r
	}
	key := w.Key
	if s.keys != nil {
		key = s.keys.toLog(key)
	}
	return &kgo.Record{Topic: s.changelog, Partition: partition, Key: key, Value: w.Value, Timestamp: time.UnixMilli(w.TS)}
}

// scan calls fn for each row with lo <= key < hi (nil: open), in key byte
// order, as the store reads now: the batch's writes over the open
// transaction's over Pebble's rows, deleted keys left out. It stops when
// fn returns false. (A processor's range, all and prefix scan; the rows
// in range are gathered first, so fn may write the store.)
func (s *storeTx) scan(lo, hi []byte, fn func(key, value []byte, ts int64) bool) error {
	in := func(k string) bool {
		return (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi))
	}
	rows := map[string]row{}
	if err := s.part.ScanRange(lo, hi, func(k, v []byte, ts int64) error {
		rows[string(k)] = row{bytes.Clone(v), ts}
		return nil
	}); err != nil {
		return err
	}
	for _, m := range []map[string]row{s.txn, s.dirty} {
		for k, r := range m {
			if in(k) {
				rows[k] = r
			}
		}
	}
	keys := make([]string, 0, len(rows))
	for k, r := range rows {
		if r.value != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn([]byte(k), rows[k].value, rows[k].ts) {
			return nil
		}
	}
	return nil
}
