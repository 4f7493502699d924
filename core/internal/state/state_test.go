package state

import (
	"testing"
)

func TestPartitionsAreIsolatedAndCheckpointed(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := db.Partition("counts", 0), db.Partition("counts", 1)
	other := db.Partition("counts2", 0)
	if err := p0.Apply([]Write{{Key: []byte("a"), Value: []byte("1"), TS: 5}, {Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if err := p1.Apply([]Write{{Key: []byte("a"), Value: []byte("9")}}); err != nil {
		t.Fatal(err)
	}
	if err := other.Apply([]Write{{Key: []byte("a"), Value: []byte("7")}}); err != nil {
		t.Fatal(err)
	}
	if v, ts, _ := p0.Get([]byte("a")); string(v) != "1" || ts != 5 {
		t.Errorf("p0 a = %q at %d, want 1 at 5", v, ts)
	}
	if err := p0.Apply([]Write{{Key: []byte("b")}}); err != nil { // delete
		t.Fatal(err)
	}
	if v, _, _ := p0.Get([]byte("b")); v != nil {
		t.Errorf("deleted key reads %q", v)
	}
	if err := p0.SetCheckpoint(42); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p0, p1 = db.Partition("counts", 0), db.Partition("counts", 1)
	if off, ok, _ := p0.Checkpoint(); !ok || off != 42 {
		t.Errorf("checkpoint %d %v after reopen, want 42", off, ok)
	}
	if err := p0.Wipe(); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := p0.Get([]byte("a")); v != nil {
		t.Errorf("wiped partition still holds a=%q", v)
	}
	if _, ok, _ := p0.Checkpoint(); ok {
		t.Error("wipe left the checkpoint")
	}
	var n int
	p1.Scan(func(k, v []byte, ts int64) error { n++; return nil })
	if v, _, _ := p1.Get([]byte("a")); string(v) != "9" || n != 1 {
		t.Errorf("wiping partition 0 touched partition 1: a=%q, %d keys", v, n)
	}
	if v, _, _ := db.Partition("counts2", 0).Get([]byte("a")); string(v) != "7" {
		t.Errorf("wiping store counts touched store counts2: %q", v)
	}
}

// Checkpoints lists one store's checkpointed partitions, not a store whose
// name extends it, nor cleared checkpoints; they survive a reopen.
func TestCheckpointsListsAStoresCheckpointedPartitions(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		store string
		part  int32
		at    int64
	}{{"counts", 0, 40}, {"counts", 3, 7}, {"counts", 5, 9}, {"counts2", 1, 100}} {
		if err := db.Partition(c.store, c.part).SetCheckpoint(c.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Partition("counts", 5).ClearCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Checkpoints("counts")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 40 || got[3] != 7 {
		t.Errorf("checkpoints of counts: %v, want map[0:40 3:7]", got)
	}
}
