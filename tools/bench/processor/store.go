package main

// The engine's side of the measurement: the records, the store and its
// batch of writes.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2"
)

// rec is one input record as the engine holds it.
type rec struct {
	key, value []byte
	offset, ts int64
}

// row is a store entry; a nil value is absent (deleted).
type row struct {
	value []byte
	ts    int64
}

// engine is the engine's side: a Pebble store and the batch's writes
// (dirty), which reads see first, as the runtime's store transaction.
type engine struct {
	db    *pebble.DB
	dirty map[string]row
}

func (e *engine) get(key []byte) ([]byte, int64, error) {
	if r, ok := e.dirty[string(key)]; ok {
		return r.value, r.ts, nil
	}
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer closer.Close()
	// Stored as 8-byte timestamp + value, as the runtime's state package does.
	return bytes.Clone(v[8:]), int64(binary.BigEndian.Uint64(v[:8])), nil
}

// quiet drops Pebble's log lines.
type quiet struct{}

func (quiet) Infof(string, ...any)         {}
func (quiet) Errorf(string, ...any)        {}
func (quiet) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

func storeKey(i int) []byte { return fmt.Appendf(nil, "customer-%06d", i) }

func openStore(dir string, n, valueSize int) (*pebble.DB, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return nil, err
	}
	b := db.NewBatch()
	v := make([]byte, 8+valueSize)
	for i := range n {
		binary.BigEndian.PutUint64(v, uint64(i))
		copy(v[8:], fmt.Sprintf("state-%d-", i))
		if err := b.Set(storeKey(i), v, nil); err != nil {
			return nil, err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, err
	}
	return db, db.Flush()
}

// makeBundles draws bundles of records whose keys come from the first
// distinct of the store's keys plus as many that are not stored (new keys),
// uniformly, so keys repeat within a bundle.
func makeBundles(n, perBundle, distinct, stored, valueSize int) [][]rec {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]rec, n)
	off := int64(0)
	for b := range out {
		recs := make([]rec, perBundle)
		for i := range recs {
			k := rng.IntN(distinct)
			if k%2 == 1 {
				k = stored + k // odd keys are not in the store yet
			}
			v := make([]byte, valueSize)
			for j := range v {
				v[j] = byte('a' + rng.IntN(26))
			}
			recs[i] = rec{key: storeKey(k), value: v, offset: off, ts: 1_700_000_000_000 + off}
			off++
		}
		out[b] = recs
	}
	return out
}
