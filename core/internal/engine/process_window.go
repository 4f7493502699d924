package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// A processor's window store (Stores.windowStoreBuilder,
// WindowStore.put(key, value, windowStart) / fetch / fetchAll) keeps its
// rows as the DSL's time-window stores do (window.go): store key
// start(8) ‖ key, changelog key key ‖ start(8) ‖ seqnum(4), and a
// watermark row under metaKey. The watermark is the store's observed
// stream time, the largest window start put into it
// (AbstractRocksDBSegmentedBytesStore.observedStreamTime). A window that
// starts at or before observed time - retention is expired: a put into it
// is dropped and fetches do not see it (getActualFrom); the store drops
// expired rows once the cutoff moves by a segment (half the retention, at
// least a minute), as segments are dropped.

// windowObserved is the store's observed stream time (-1: no put yet).
func windowObserved(tx *storeTx) (int64, error) {
	v, _, err := tx.Get(metaKey)
	if err != nil || len(v) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// windowPut writes key's row of the window starting at start (a nil
// value deletes it) with row time ts.
func (t *task) windowPut(tx *storeTx, node string, key, value []byte, start, ts int64) error {
	st := tx.store
	if start < 0 {
		return fmt.Errorf("put: node %s: window store %q takes window starts from 0; got %d", node, st.Name, start)
	}
	obs, err := windowObserved(tx)
	if err != nil {
		return err
	}
	if obs >= 0 && start <= obs-st.Retention {
		return nil // expired: Kafka Streams drops it (expired-window-record-drop)
	}
	tx.Put(windowKey(start, slices.Clone(key)), slices.Clone(value), ts)
	if start <= obs {
		return nil
	}
	tx.Put(metaKey, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(start)), start)
	seg := max(st.Retention/2, 60_000)
	cut := start - st.Retention
	if cut < 0 || obs >= 0 && obs-st.Retention >= 0 && (obs-st.Retention)/seg == cut/seg {
		return nil
	}
	if err := tx.Expire(t.app.eos, nil, binary.BigEndian.AppendUint64(nil, uint64(cut)+1)); err != nil {
		return fmt.Errorf("engine: task %s: expiring windows of store %s: %w", t.id, st.Name, err)
	}
	return nil
}

// windowRow is a window store row: the key, its window start, the value
// and the row's timestamp.
type windowRow struct {
	key   []byte
	start int64
	value []byte
	ts    int64
}

// windowFetch returns the rows of key (nil: every key) whose windows
// start from from to to, both inclusive, that retention keeps, in (key,
// window start) order, as the store reads now.
func windowFetch(tx *storeTx, key []byte, from, to int64) ([]windowRow, error) {
	obs, err := windowObserved(tx)
	if err != nil {
		return nil, err
	}
	from = max(from, 0)
	if obs >= 0 {
		from = max(from, obs-tx.store.Retention+1)
	}
	if from > to {
		return nil, nil
	}
	hi := metaKey
	if to < math.MaxInt64 {
		hi = windowKey(to+1, nil)
	}
	var rows []windowRow
	err = tx.Scan(windowKey(from, nil), hi, func(k, v []byte, ts int64) bool {
		if len(k) < 8 || key != nil && !bytes.Equal(k[8:], key) {
			return true
		}
		rows = append(rows, windowRow{key: k[8:], start: int64(binary.BigEndian.Uint64(k[:8])), value: v, ts: ts})
		return true
	})
	slices.SortFunc(rows, func(a, b windowRow) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmpInt(a.start, b.start)
	})
	return rows, err
}
