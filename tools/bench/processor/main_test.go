package main

import (
	"encoding/binary"
	"strings"
	"testing"
)

// The measured crossing must do the processor's work: each record reads
// the state its key's previous record wrote (the overlay), and the engine
// applies the ops in record order.
func TestPrefetchCrossingReadsItsOwnWrites(t *testing.T) {
	db, err := openStore(t.TempDir(), 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &engine{db: db, dirty: map[string]row{}}
	v := make([]byte, 100)
	stored, fresh := storeKey(3), storeKey(1_000)
	recs := []rec{{key: fresh, value: v}, {key: stored, value: v}, {key: fresh, value: v}, {key: fresh, value: v}, {key: stored, value: v}}
	for i := range recs {
		recs[i].offset, recs[i].ts = int64(i), int64(100+i)
	}
	msg, err := e.encodePrefetch(recs)
	if err != nil {
		t.Fatal(err)
	}
	res, calls, err := host(msg, getPut, func(k []byte) ([]byte, error) {
		t.Fatalf("read of %q: every key was prefetched", k)
		return nil, nil
	})
	if err != nil || calls != 0 {
		t.Fatalf("host: %v, %d calls", err, calls)
	}
	out, err := e.apply(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(recs) {
		t.Fatalf("%d forwards for %d records", len(out), len(recs))
	}
	base, _, err := (&engine{db: db, dirty: map[string]row{}}).get(stored)
	if err != nil {
		t.Fatal(err)
	}
	first := binary.BigEndian.Uint64(base) + 1
	want := []uint64{1, first, 2, 3, first + 1}
	for i, r := range out {
		if got := binary.BigEndian.Uint64(r.value); got != want[i] || r.offset != recs[i].offset || r.ts != recs[i].ts {
			t.Errorf("forward %d: count %d, offset %d, ts %d; want %d, %d, %d", i, got, r.offset, r.ts, want[i], recs[i].offset, recs[i].ts)
		}
	}
	if got := binary.BigEndian.Uint64(e.dirty[string(fresh)].value); got != 3 {
		t.Errorf("the fresh key's state after the bundle: count %d, want 3 (the last put wins)", got)
	}
}

// A key the bundle did not bring is a fallback read, not a silent absent.
func TestMissIsAFallbackRead(t *testing.T) {
	db, err := openStore(t.TempDir(), 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &engine{db: db, dirty: map[string]row{}}
	recs := []rec{{key: storeKey(2), value: make([]byte, 100)}}
	msg := encodeRecords(nil, recs) // no store view
	var asked []string
	_, calls, err := host(msg, getPut, func(k []byte) ([]byte, error) {
		asked = append(asked, string(k))
		v, _, err := e.get(k)
		return v, err
	})
	if err != nil || calls != 1 || len(asked) != 1 || !strings.HasSuffix(asked[0], "000002") {
		t.Fatalf("host: %v, %d calls, asked %q; want one read of customer-000002", err, calls, asked)
	}
}
