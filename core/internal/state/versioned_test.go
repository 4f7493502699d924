package state

import (
	"bytes"
	"math"
	"testing"
)

// A key's versions are adjacent and in time order (negative times first),
// and the range of key "a" holds none of key "ab"'s.
func TestVersionKeyLayout(t *testing.T) {
	keys := [][]byte{
		VersionKey([]byte("a"), -5), VersionKey([]byte("a"), 0), VersionKey([]byte("a"), 7), VersionKey([]byte("a"), math.MaxInt64),
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("version keys out of time order at %d", i)
		}
	}
	lo, hi := VersionRange([]byte("a"))
	for _, k := range keys {
		if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
			t.Errorf("version key %x outside a's range [%x, %x)", k, lo, hi)
		}
	}
	for _, other := range [][]byte{VersionKey([]byte("ab"), 3), VersionKey([]byte(""), 3), StreamTimeKey} {
		if bytes.Compare(other, lo) >= 0 && bytes.Compare(other, hi) < 0 {
			t.Errorf("key %x is inside a's version range", other)
		}
	}
	k, ts, ok := SplitVersionKey(VersionKey([]byte("ab"), -3))
	if !ok || string(k) != "ab" || ts != -3 {
		t.Errorf("SplitVersionKey = %q, %d, %v", k, ts, ok)
	}
	if _, _, ok := SplitVersionKey(StreamTimeKey); ok {
		t.Error("the stream-time row split as a version")
	}
	if v, err := VersionData(VersionValue(nil)); err != nil || v != nil {
		t.Errorf("a tombstone reads back as %q, %v", v, err)
	}
	if v, err := VersionData(VersionValue([]byte{})); err != nil || v == nil || len(v) != 0 {
		t.Errorf("an empty value reads back as %q (nil: %v), %v", v, v == nil, err)
	}
	if _, err := VersionData([]byte{0, 1}); err == nil {
		t.Error("a tombstone with bytes after it decoded")
	}
}

// FindVersion answers as RocksDBVersionedStore.get does.
func TestFindVersion(t *testing.T) {
	vs := []Version{{Value: []byte("1"), ValidFrom: 10}, {Value: nil, ValidFrom: 20}, {Value: []byte("3"), ValidFrom: 30}}
	LinkVersions(vs)
	latest := []Version{{Value: []byte("1"), ValidFrom: 10}}
	LinkVersions(latest)
	for _, c := range []struct {
		name             string
		vs               []Version
		latest           bool
		asOf, st, retain int64
		want             string // "" none
	}{
		{"latest", vs, true, 0, 30, 100, "3"},
		{"before every version", vs, false, 9, 30, 100, ""},
		{"at a version's start", vs, false, 10, 30, 100, "1"},
		{"a tombstone's interval", vs, false, 25, 30, 100, ""},
		{"after the latest", vs, false, 99, 30, 100, "3"},
		{"valid but past retention", vs, false, 15, 30, 10, ""},
		{"at the cut-off", vs, false, 15, 30, 15, "1"},
		{"just before the cut-off", vs, false, 14, 30, 15, ""},
		{"the latest past retention", latest, false, 15, 1000, 10, "1"},
		{"the latest, not yet valid, past retention", latest, false, 5, 1000, 10, ""},
		{"no versions", nil, false, 5, 0, 10, ""},
	} {
		v, ok := FindVersion(c.vs, c.latest, c.asOf, c.st, c.retain)
		got := ""
		if ok {
			got = string(v.Value)
		}
		if got != c.want {
			t.Errorf("%s: got %q (found %v), want %q", c.name, got, ok, c.want)
		}
	}
	if vs[0].ValidTo != 10+10 || vs[2].ValidTo != math.MaxInt64 || !vs[2].Latest || vs[1].Latest {
		t.Errorf("LinkVersions: %+v", vs)
	}
}
