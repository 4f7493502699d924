package state

import (
	"bytes"
	"slices"
	"sync/atomic"
)

// Tx is a store partition plus the writes of the batch in progress, which
// reach Pebble and the changelog only when the batch succeeds (the engine's
// task writes them: its storeTx wraps a Tx with the store's definition,
// changelog topic and key codec).
//
// Under exactly_once_v2 a batch's writes move on to Txn, the writes of the
// open transaction, which reach the changelog just before the transaction
// ends and Pebble only once it committed.
type Tx struct {
	Part *Partition
	// Front, when set, answers gets in its range (the engine's open
	// windows).
	Front Front
	// Dirty: the batch's writes.
	Dirty map[string]Row
	// Txn: the open transaction's writes under exactly_once_v2; a held
	// store's writes not yet in Pebble under at_least_once (Unlogged).
	Txn map[string]Row
	// Unlogged, when not nil (a held store: under at_least_once with the
	// record cache on, a key-value or time-window store): the store's
	// changes since the task's record cache last emptied, latest per key.
	// They wait in Txn until then too, and reach Pebble once per key (at
	// the end of a batch), or sooner when a query asks; the changelog gets
	// them once the cache empties, as Kafka Streams' caching store writes
	// and logs at flush rather than per update.
	Unlogged map[string]Row
	// Expired: under exactly_once_v2, the key ranges [lo, hi) that
	// retention expired in the open transaction. They reach Pebble after
	// its writes, once it committed: deleted at once, a transaction that
	// then aborts (or a killed engine) would leave Pebble without rows its
	// checkpoint still holds (a window not emitted yet, say), and no
	// restore from the checkpoint would bring them back.
	Expired [][2][]byte
	// LastOffset is the offset of the last changelog record of the open
	// transaction, -1 when none (set by produce promises).
	LastOffset atomic.Int64
}

// NewTx returns the transaction of part with no writes; held makes its
// store hold its changes until the record cache empties (Unlogged).
func NewTx(part *Partition, held bool) *Tx {
	tx := &Tx{Part: part, Dirty: map[string]Row{}, Txn: map[string]Row{}}
	if held {
		tx.Unlogged = map[string]Row{}
	}
	tx.LastOffset.Store(-1)
	return tx
}

// Row is a store's value for a key with its timestamp; a nil value is a
// deleted key.
type Row struct {
	Value []byte
	TS    int64
}

// Front is an in-memory view of part of a store that knows every row in
// its range, in front of the batch, transaction and Pebble (the engine's
// open windows).
type Front interface {
	// Lookup returns key's row, and whether the front knows it (a key in
	// its range that it does not hold is absent).
	Lookup(key []byte) (Row, bool)
	Store(key []byte, r Row)
}

// RecordOverhead approximates a record cache entry's bookkeeping, so that
// a cache of many small entries is still bounded.
const RecordOverhead = 64

// Get returns key's value (nil when absent) and its timestamp.
func (s *Tx) Get(key []byte) ([]byte, int64, error) {
	if s.Front != nil {
		if r, known := s.Front.Lookup(key); known {
			return r.Value, r.TS, nil
		}
	}
	if r, ok := s.Dirty[string(key)]; ok {
		return r.Value, r.TS, nil
	}
	if r, ok := s.Txn[string(key)]; ok {
		return r.Value, r.TS, nil
	}
	return s.Part.Get(key)
}

// Put sets key's value (nil deletes it) as of timestamp ts.
func (s *Tx) Put(key, value []byte, ts int64) {
	s.Dirty[string(key)] = Row{value, ts}
	if s.Front != nil {
		s.Front.Store(key, Row{value, ts})
	}
}

// Expire deletes the rows in [lo, hi) (nil: open) that retention no
// longer keeps: at once under at-least-once (whose checkpoint is cleared
// while running), with the open transaction under exactly_once_v2.
func (s *Tx) Expire(eos bool, lo, hi []byte) error {
	if eos {
		s.Expired = append(s.Expired, [2][]byte{bytes.Clone(lo), bytes.Clone(hi)})
		return nil
	}
	if s.Unlogged != nil {
		// A held store: its rows in range that wait in Txn for Pebble go
		// too (their changelog records still wait in Unlogged, as Kafka
		// Streams logs a cached window at flush even past retention).
		for k := range s.Txn {
			if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
				delete(s.Txn, k)
			}
		}
	}
	return s.Part.DeleteRange(lo, hi)
}

// LogLater adds the batch's changes to Unlogged and returns by how much
// that grew it, in record cache bytes.
func (s *Tx) LogLater() int {
	n := 0
	for k, r := range s.Dirty {
		if old, ok := s.Unlogged[k]; ok {
			n += len(r.Value) - len(old.Value)
		} else {
			n += len(k) + len(r.Value) + RecordOverhead
		}
		s.Unlogged[k] = r
	}
	return n
}

// Writes turns rows into store writes.
func Writes(rows map[string]Row) []Write {
	ws := make([]Write, 0, len(rows))
	for k, r := range rows {
		ws = append(ws, Write{Key: []byte(k), Value: r.Value, TS: r.TS})
	}
	return ws
}

// rows returns the rows with lo <= key < hi (nil: open) as the store reads
// now: the batch's writes over the open transaction's over Pebble's rows;
// deleted keys are there with a nil value.
func (s *Tx) rows(lo, hi []byte) (map[string]Row, error) {
	rows := map[string]Row{}
	if err := s.Part.ScanRange(lo, hi, func(k, v []byte, ts int64) error {
		rows[string(k)] = Row{bytes.Clone(v), ts}
		return nil
	}); err != nil {
		return nil, err
	}
	in := func(k string) bool {
		return (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi))
	}
	for _, m := range []map[string]Row{s.Txn, s.Dirty} {
		for k, r := range m {
			if in(k) {
				rows[k] = r
			}
		}
	}
	return rows, nil
}

// Scan calls fn for each row with lo <= key < hi (nil: open), in key byte
// order, as the store reads now: the batch's writes over the open
// transaction's over Pebble's rows, deleted keys left out. It stops when
// fn returns false. (A processor's range, all and prefix scan; the rows
// in range are gathered first, so fn may write the store.)
func (s *Tx) Scan(lo, hi []byte, fn func(key, value []byte, ts int64) bool) error {
	rows, err := s.rows(lo, hi)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(rows))
	for k, r := range rows {
		if r.Value != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn([]byte(k), rows[k].Value, rows[k].TS) {
			return nil
		}
	}
	return nil
}

// ScanRows calls fn for every row of the store partition in [lo, hi) (nil:
// unbounded) as the batch left it: Pebble, overlaid with the open
// transaction's and the batch's writes; deleted rows are left out. Rows come
// in no particular order.
func (s *Tx) ScanRows(lo, hi []byte, fn func(k, v []byte, ts int64) error) error {
	rows, err := s.rows(lo, hi)
	if err != nil {
		return err
	}
	for k, r := range rows {
		if r.Value == nil {
			continue
		}
		if err := fn([]byte(k), r.Value, r.TS); err != nil {
			return err
		}
	}
	return nil
}

// ScanPrefix calls fn, in key order, for every key of the store starting
// with prefix that has a value, as the batch in progress sees the store;
// it stops at fn's first error and returns it.
func (s *Tx) ScanPrefix(prefix []byte, fn func(key, value []byte) error) error {
	var ferr error
	err := s.Scan(prefix, PrefixEnd(prefix), func(k, v []byte, _ int64) bool {
		ferr = fn(k, v)
		return ferr == nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// Begin starts a batch: no writes yet, and a read cache (cache.go) of
// about share bytes.
func (s *Tx) Begin(share int) {
	clear(s.Dirty)
	s.Part.SetCacheLimit(share)
}

// Hold moves the batch's writes on to the open transaction's (Txn), where
// they wait for the transaction to end, or for the record cache to empty
// (a held store).
func (s *Tx) Hold() {
	for k, r := range s.Dirty {
		s.Txn[k] = r
	}
}

// Sync writes a held store's writes that wait in Txn to Pebble, so that a
// query, which reads Pebble, sees them; their changelog records still wait
// in Unlogged. A store that is not held is left as it is.
func (s *Tx) Sync() error {
	if s.Unlogged == nil || len(s.Txn) == 0 {
		return nil
	}
	if err := s.Part.Apply(Writes(s.Txn)); err != nil {
		return err
	}
	clear(s.Txn)
	return nil
}

// Logged notes that the open transaction's changelog record at offset was
// produced (LastOffset keeps the highest).
func (s *Tx) Logged(offset int64) {
	for {
		cur := s.LastOffset.Load()
		if offset <= cur || s.LastOffset.CompareAndSwap(cur, offset) {
			return
		}
	}
}

// Settle ends the open transaction: when it committed, its writes and
// expiries reach Pebble with a checkpoint just past its last changelog
// record; either way the transaction is then empty. An error leaves it
// empty too (the caller fails the application).
func (s *Tx) Settle(committed bool) error {
	var err error
	if committed && (len(s.Txn) > 0 || len(s.Expired) > 0) {
		err = s.Part.Apply(Writes(s.Txn))
		for _, r := range s.Expired {
			if err == nil {
				err = s.Part.DeleteRange(r[0], r[1])
			}
		}
		if last := s.LastOffset.Load(); err == nil && last >= 0 {
			err = s.Part.SetCheckpoint(last + 1)
		}
	}
	clear(s.Txn)
	s.Expired = nil
	s.LastOffset.Store(-1)
	return err
}
