package state

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func openPartition(t *testing.T) *Partition {
	t.Helper()
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Partition("s", 0)
}

// onlyKey is a front that knows one key.
type onlyKey struct {
	key    string
	r      Row
	stored []string
}

func (f *onlyKey) Lookup(key []byte) (Row, bool) {
	if string(key) == f.key {
		return f.r, true
	}
	return Row{}, false
}

func (f *onlyKey) Store(key []byte, r Row) {
	f.stored = append(f.stored, string(key)+"="+string(r.Value))
}

func TestTxReadsBatchOverTransactionOverPebble(t *testing.T) {
	p := openPartition(t)
	if err := p.Apply([]Write{{Key: []byte("a"), Value: []byte("pebble-a"), TS: 1}, {Key: []byte("b"), Value: []byte("pebble-b"), TS: 1}, {Key: []byte("c"), Value: []byte("pebble-c"), TS: 1}}); err != nil {
		t.Fatal(err)
	}
	tx := NewTx(p, false)
	if tx.Unlogged != nil || tx.LastOffset.Load() != -1 {
		t.Fatalf("a new Tx: Unlogged %v, LastOffset %d", tx.Unlogged, tx.LastOffset.Load())
	}
	tx.Txn["b"] = Row{Value: []byte("txn-b"), TS: 2}
	tx.Txn["c"] = Row{TS: 2} // deleted in the transaction
	tx.Put([]byte("a"), []byte("batch-a"), 3)
	tx.Put([]byte("d"), []byte("batch-d"), 3)
	for key, want := range map[string]string{"a": "batch-a", "b": "txn-b", "c": "", "d": "batch-d", "e": ""} {
		v, _, err := tx.Get([]byte(key))
		if err != nil || string(v) != want {
			t.Errorf("Get(%s) = %q, %v; want %q", key, v, err, want)
		}
	}
	var got []string
	if err := tx.Scan(nil, nil, func(k, v []byte, ts int64) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a=batch-a b=txn-b d=batch-d" {
		t.Errorf("Scan = %v", got)
	}
	got = nil
	if err := tx.ScanPrefix([]byte("b"), func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "b=txn-b" {
		t.Errorf("ScanPrefix(b) = %v", got)
	}

	f := &onlyKey{key: "a", r: Row{Value: []byte("front-a"), TS: 4}}
	tx.Front = f
	if v, ts, _ := tx.Get([]byte("a")); string(v) != "front-a" || ts != 4 {
		t.Errorf("Get(a) with a front = %q at %d", v, ts)
	}
	tx.Put([]byte("x"), []byte("1"), 5)
	if len(f.stored) != 1 || f.stored[0] != "x=1" {
		t.Errorf("the front stored %v", f.stored)
	}
}

func TestTxExpireAndLogLater(t *testing.T) {
	p := openPartition(t)
	if err := p.Apply([]Write{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	tx := NewTx(p, true)
	if err := tx.Expire(true, []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := p.Get([]byte("a")); v == nil || len(tx.Expired) != 1 {
		t.Errorf("under exactly_once_v2 an expiry waits for the transaction: a = %q, Expired %q", v, tx.Expired)
	}
	if err := tx.Expire(false, []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := p.Get([]byte("a")); v != nil {
		t.Errorf("under at_least_once an expiry deletes at once: a = %q", v)
	}
	// A held store's rows waiting in Txn go too; their changelog records
	// stay in Unlogged.
	tx.Put([]byte("a2"), []byte("3"), 3)
	tx.Put([]byte("c"), []byte("4"), 4)
	tx.LogLater()
	tx.Hold()
	tx.Begin(0)
	if err := tx.Expire(false, nil, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, ok := tx.Txn["a2"]; ok || len(tx.Txn) != 1 || len(tx.Unlogged) != 2 {
		t.Errorf("after an expiry of a held store: Txn %v, Unlogged %v; want a2 gone from Txn only", tx.Txn, tx.Unlogged)
	}
	clear(tx.Unlogged)
	tx.Put([]byte("k"), []byte("12"), 1)
	if n := tx.LogLater(); n != 1+2+RecordOverhead {
		t.Errorf("LogLater of a new key = %d", n)
	}
	tx.Put([]byte("k"), []byte("1234"), 2)
	if n := tx.LogLater(); n != 2 {
		t.Errorf("LogLater of a longer value = %d, want 2", n)
	}
	if ws := Writes(tx.Unlogged); len(ws) != 1 || string(ws[0].Value) != "1234" || ws[0].TS != 2 {
		t.Errorf("Writes(Unlogged) = %v", ws)
	}
}

func TestReplay(t *testing.T) {
	at := time.UnixMilli(7)
	recs := []*kgo.Record{
		{Topic: "log", Offset: 0, Key: []byte("Lk"), Value: []byte("v"), Timestamp: at},
		{Topic: "log", Offset: 1, Key: []byte("bad")},
	}
	recs = append(recs, &kgo.Record{Topic: "log", Offset: 2, Key: []byte("Lz"), Timestamp: at})
	fromLog := func(k []byte) ([]byte, error) {
		if !strings.HasPrefix(string(k), "L") {
			return nil, errors.New("no L")
		}
		return k[1:], nil
	}
	ws, err := Replay{FromLog: fromLog}.Writes(nil, []*kgo.Record{recs[0], recs[2]})
	if err != nil || len(ws) != 2 || string(ws[0].Key) != "k" || string(ws[0].Value) != "v" || ws[0].TS != 7 || string(ws[1].Key) != "z" || ws[1].Value != nil {
		t.Errorf("Writes = %v, %v", ws, err)
	}
	if _, err := (Replay{FromLog: fromLog}).Writes(nil, recs); err == nil || !strings.Contains(err.Error(), "log/0@1: no L") {
		t.Errorf("a bad key's error = %v, want it to name log/0@1", err)
	}
	finished := 0
	ws, err = Replay{
		Version: func(ws []Write, r *kgo.Record) ([]Write, error) { return append(ws, Write{Key: r.Key}), nil },
		Finish:  func(ws []Write) []Write { finished++; return append(ws, Write{Key: []byte("time")}) },
	}.Writes(nil, []*kgo.Record{recs[0]})
	if err != nil || len(ws) != 2 || string(ws[1].Key) != "time" || finished != 1 {
		t.Errorf("versioned Writes = %v, %v (finished %d)", ws, err, finished)
	}
}

func TestReplayFromWipesWithoutCheckpoint(t *testing.T) {
	p := openPartition(t)
	if err := p.Apply([]Write{{Key: []byte("a"), Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if from, err := p.ReplayFrom(); err != nil || from != 0 {
		t.Fatalf("ReplayFrom = %d, %v", from, err)
	}
	if v, _, _ := p.Get([]byte("a")); v != nil {
		t.Errorf("no checkpoint: a = %q, want wiped", v)
	}
	if err := p.Apply([]Write{{Key: []byte("a"), Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCheckpoint(9); err != nil {
		t.Fatal(err)
	}
	if from, err := p.ReplayFrom(); err != nil || from != 9 {
		t.Fatalf("ReplayFrom = %d, %v; want 9", from, err)
	}
	if v, _, _ := p.Get([]byte("a")); string(v) != "1" {
		t.Errorf("a checkpoint keeps the rows: a = %q", v)
	}
}

func TestTxHoldSyncSettle(t *testing.T) {
	p := openPartition(t)
	tx := NewTx(p, true)
	tx.Begin(1 << 20)
	if p.cache == nil {
		t.Error("Begin with a share enables the read cache")
	}
	tx.Put([]byte("a"), []byte("1"), 1)
	tx.Hold()
	tx.Begin(0)
	if len(tx.Dirty) != 0 || string(tx.Txn["a"].Value) != "1" {
		t.Fatalf("after Hold and Begin: Dirty %v, Txn %v", tx.Dirty, tx.Txn)
	}
	if err := tx.Sync(); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := p.Get([]byte("a")); string(v) != "1" || len(tx.Txn) != 0 {
		t.Errorf("a held store's Sync writes Txn to Pebble: a = %q, Txn %v", v, tx.Txn)
	}

	eos := NewTx(p, false)
	eos.Put([]byte("b"), []byte("2"), 2)
	eos.Hold()
	if err := eos.Sync(); err != nil || len(eos.Txn) != 1 {
		t.Errorf("Sync of a store that is not held: %v, Txn %v", err, eos.Txn)
	}
	if err := eos.Expire(true, []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	eos.Logged(7)
	eos.Logged(5)
	if eos.LastOffset.Load() != 7 {
		t.Errorf("LastOffset = %d, want the highest, 7", eos.LastOffset.Load())
	}
	if err := eos.Settle(false); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := p.Get([]byte("b")); v != nil || len(eos.Txn) != 0 || eos.Expired != nil || eos.LastOffset.Load() != -1 {
		t.Errorf("an aborted transaction writes nothing and empties: b = %q", v)
	}
	if _, ok, _ := p.Checkpoint(); ok {
		t.Error("an aborted transaction set a checkpoint")
	}
	eos.Put([]byte("b"), []byte("2"), 2)
	eos.Hold()
	if err := eos.Expire(true, []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	eos.Logged(7)
	if err := eos.Settle(true); err != nil {
		t.Fatal(err)
	}
	va, _, _ := p.Get([]byte("a"))
	vb, _, _ := p.Get([]byte("b"))
	if va != nil || string(vb) != "2" {
		t.Errorf("a committed transaction: a = %q (expired), b = %q", va, vb)
	}
	if off, ok, _ := p.Checkpoint(); !ok || off != 8 {
		t.Errorf("checkpoint = %d, %v; want 8, just past the last changelog record", off, ok)
	}
}
