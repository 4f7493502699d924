// Package state keeps the engine's state stores in Pebble: one database per
// application per engine instance, one key range per store partition, and a
// checkpoint of each store partition's changelog offset. The changelog
// itself (writing and restoring) is the runtime's; this package only stores.
package state

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// DB is a Pebble database holding every store partition of one application.
// Safe for concurrent use; each Partition is used by one task at a time.
type DB struct {
	db *pebble.DB
}

// Key layout: 'd' storeName 0x00 partition(4 BE) userKey for data,
// 'c' storeName 0x00 partition(4 BE) for the checkpointed changelog offset.
//
// Values are timestamped, as Kafka Streams' timestamped stores keep them
// (ValueAndTimestamp): the 8-byte big-endian timestamp of the row, then its
// value. The changelog carries the plain value, with the row's timestamp as
// the record's.
const (
	dataTag       = 'd'
	checkpointTag = 'c'
)

// Open opens (creating if needed) the database in dir.
func Open(dir string) (*DB, error) {
	opts := &pebble.Options{Logger: quietLogger{}}
	// Bloom filters on every level: an aggregation's first update of a key
	// (or window) looks up a key that is not there, and without a filter
	// that reads sstable blocks.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", dir, err)
	}
	return &DB{db: db}, nil
}

// Close closes the database, syncing what it holds.
func (d *DB) Close() error {
	if err := d.db.Flush(); err != nil {
		d.db.Close()
		return fmt.Errorf("state: flush: %w", err)
	}
	return d.db.Close()
}

// Partition returns the key range of one store partition.
func (d *DB) Partition(store string, partition int32) *Partition {
	p := &Partition{db: d.db, Store: store, Number: partition}
	p.prefix = binary.BigEndian.AppendUint32(append(append([]byte{dataTag}, store...), 0), uint32(partition))
	p.ckptKey = binary.BigEndian.AppendUint32(append(append([]byte{checkpointTag}, store...), 0), uint32(partition))
	return p
}

// Partition is one store partition (the store of one task). Not safe for
// concurrent use.
type Partition struct {
	db      *pebble.DB
	Store   string
	Number  int32
	prefix  []byte
	ckptKey []byte
	keyBuf  []byte
	// cache is the read cache (cache.go), nil unless enabled.
	cache *rowCache
}

func (p *Partition) dataKey(key []byte) []byte {
	p.keyBuf = append(append(p.keyBuf[:0], p.prefix...), key...)
	return p.keyBuf
}

// end is the first key after the partition's data.
func (p *Partition) end() []byte {
	end := append([]byte(nil), p.prefix...)
	return binary.BigEndian.AppendUint32(end[:len(end)-4], uint32(p.Number)+1)
}

// Get returns a copy of the value of key and its timestamp, or a nil value
// when absent. With the read cache enabled, a key it holds is answered
// from it, and a key read from Pebble is cached.
func (p *Partition) Get(key []byte) ([]byte, int64, error) {
	if p.cache != nil {
		if v, ts, ok := p.cache.lookup(key); ok {
			return v, ts, nil
		}
	}
	v, closer, err := p.db.Get(p.dataKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		if p.cache != nil {
			p.cache.store(key, nil, 0)
		}
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("state: get from store %s partition %d: %w", p.Store, p.Number, err)
	}
	defer closer.Close()
	value, ts, err := split(v)
	if err != nil {
		return nil, 0, fmt.Errorf("state: get from store %s partition %d: key %q: %w", p.Store, p.Number, key, err)
	}
	if p.cache != nil {
		p.cache.store(key, value, ts)
	}
	return append(make([]byte, 0, len(value)), value...), ts, nil
}

// split reads a stored value: its timestamp, then the value.
func split(stored []byte) ([]byte, int64, error) {
	if len(stored) < 8 {
		return nil, 0, fmt.Errorf("stored value of %d bytes has no 8-byte timestamp", len(stored))
	}
	return stored[8:], int64(binary.BigEndian.Uint64(stored)), nil
}

// Write is one change: a put, or a delete when Value is nil. TS is the
// row's timestamp.
type Write struct {
	Key, Value []byte
	TS         int64
}

// Apply writes changes atomically, in order.
func (p *Partition) Apply(ws []Write) error {
	if len(ws) == 0 {
		return nil
	}
	b := p.db.NewBatch()
	defer b.Close()
	var k, v []byte // the batch copies them
	for _, w := range ws {
		k = append(append(k[:0], p.prefix...), w.Key...)
		var err error
		if w.Value == nil {
			err = b.Delete(k, nil)
		} else {
			v = append(binary.BigEndian.AppendUint64(v[:0], uint64(w.TS)), w.Value...)
			err = b.Set(k, v, nil)
		}
		if err != nil {
			return fmt.Errorf("state: write to store %s partition %d: %w", p.Store, p.Number, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		// What the batch left in Pebble is not known: nor is what to cache.
		p.DropCache()
		return fmt.Errorf("state: commit to store %s partition %d: %w", p.Store, p.Number, err)
	}
	if p.cache != nil {
		for _, w := range ws {
			p.cache.store(w.Key, w.Value, w.TS)
		}
	}
	return nil
}

// DeleteRange deletes the keys k with lower <= k < upper (a nil bound is
// open), at once, without a write per key.
func (p *Partition) DeleteRange(lower, upper []byte) error {
	p.DropCache()
	lo, hi := p.prefix, p.end()
	if lower != nil {
		lo = append(append([]byte(nil), p.prefix...), lower...)
	}
	if upper != nil {
		hi = append(append([]byte(nil), p.prefix...), upper...)
	}
	if err := p.db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
		return fmt.Errorf("state: delete range of store %s partition %d: %w", p.Store, p.Number, err)
	}
	return nil
}

// Wipe deletes every key of the partition and its checkpoint.
func (p *Partition) Wipe() error {
	p.DropCache()
	if err := p.db.DeleteRange(p.prefix, p.end(), pebble.NoSync); err != nil {
		return fmt.Errorf("state: wipe store %s partition %d: %w", p.Store, p.Number, err)
	}
	return p.ClearCheckpoint()
}

// Checkpoint returns the changelog offset the partition's data reflects
// (the next offset to restore from), if one was written.
func (p *Partition) Checkpoint() (int64, bool, error) {
	v, closer, err := p.db.Get(p.ckptKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("state: read checkpoint of store %s partition %d: %w", p.Store, p.Number, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, nil
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// SetCheckpoint records, durably, that the data reflects the changelog up to
// (not including) offset.
func (p *Partition) SetCheckpoint(offset int64) error {
	if err := p.db.Set(p.ckptKey, binary.BigEndian.AppendUint64(nil, uint64(offset)), pebble.Sync); err != nil {
		return fmt.Errorf("state: write checkpoint of store %s partition %d: %w", p.Store, p.Number, err)
	}
	return nil
}

// Checkpoints returns the checkpointed changelog offset of every partition
// of store that has one: the store partitions whose local data can be
// restored from where it is rather than from the changelog's start.
func (d *DB) Checkpoints(store string) (map[int32]int64, error) {
	prefix := append(append([]byte{checkpointTag}, store...), 0)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: PrefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("state: list checkpoints of store %s: %w", store, err)
	}
	defer it.Close()
	out := map[int32]int64{}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(prefix)+4 || len(v) != 8 {
			continue
		}
		out[int32(binary.BigEndian.Uint32(k[len(prefix):]))] = int64(binary.BigEndian.Uint64(v))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("state: list checkpoints of store %s: %w", store, err)
	}
	return out, nil
}

// ClearCheckpoint removes the checkpoint, durably: until a new one is written
// the data is not trusted (a crash then means wipe and restore).
func (p *Partition) ClearCheckpoint() error {
	if err := p.db.Delete(p.ckptKey, pebble.Sync); err != nil {
		return fmt.Errorf("state: clear checkpoint of store %s partition %d: %w", p.Store, p.Number, err)
	}
	return nil
}

// Scan calls fn for every key of the partition in key order, with its value
// and timestamp (keys and values are valid only during the call).
func (p *Partition) Scan(fn func(key, value []byte, ts int64) error) error {
	return p.ScanRange(nil, nil, fn)
}

// ScanRange is Scan over the keys k with lower <= k < upper; a nil bound is
// open. fn may stop the scan by returning ErrStop.
func (p *Partition) ScanRange(lower, upper []byte, fn func(key, value []byte, ts int64) error) error {
	lo, hi := p.prefix, p.end()
	if lower != nil {
		lo = append(append([]byte(nil), p.prefix...), lower...)
	}
	if upper != nil {
		hi = append(append([]byte(nil), p.prefix...), upper...)
	}
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("state: scan store %s partition %d: %w", p.Store, p.Number, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		key := it.Key()[len(p.prefix):]
		value, ts, err := split(it.Value())
		if err != nil {
			return fmt.Errorf("state: scan store %s partition %d: key %q: %w", p.Store, p.Number, key, err)
		}
		if err := fn(key, value, ts); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return it.Error()
}

// PrefixEnd is the first key after every key that starts with p, or nil
// (open) when p is all 0xff: the upper bound of a prefix scan.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// UpperBound is the exclusive scan bound that includes key last (the first
// key after it), as KeyValueStore.range's inclusive to; nil (open) for nil.
func UpperBound(last []byte) []byte {
	if last == nil {
		return nil
	}
	return append(append(make([]byte, 0, len(last)+1), last...), 0)
}

// ErrStop ends a scan early without an error.
var ErrStop = errors.New("stop")

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
