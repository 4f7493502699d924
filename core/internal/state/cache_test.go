package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A partition with its read cache answers every Get as Pebble does (read
// through a second Partition of the same range, which has no cache),
// through puts, deletes, range deletes, wipes, a lowered limit and
// evictions, with the cache's size kept near its limit.
func TestReadCacheAnswersAsPebbleDoes(t *testing.T) {
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cached, plain := db.Partition("counts", 3), db.Partition("counts", 3)
	const limit = 40 * (cacheRowOverhead + 8)
	cached.SetCacheLimit(limit)
	rng := rand.New(rand.NewPCG(23, 5))
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(200)) }
	for step := range 5000 {
		switch op := rng.IntN(100); {
		case op < 50:
			k := key()
			got, gotTS, err := cached.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			want, wantTS, err := plain.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) || gotTS != wantTS {
				t.Fatalf("step %d: Get(%s) = %q at %d with the cache, %q at %d in Pebble", step, k, got, gotTS, want, wantTS)
			}
			if got != nil {
				got[0] ^= 0xff // a copy: the cache must not see this
			}
		case op < 90:
			ws := make([]Write, 1+rng.IntN(5))
			for i := range ws {
				ws[i] = Write{Key: key(), TS: int64(step)}
				if rng.IntN(4) > 0 {
					ws[i].Value = fmt.Appendf(nil, "v%d", step)
				}
			}
			if err := cached.Apply(ws); err != nil {
				t.Fatal(err)
			}
			for _, w := range ws {
				if w.Value != nil {
					w.Value[0] = 'X' // Apply's caller may reuse its buffers
				}
			}
		case op < 95:
			lo := key()
			if err := cached.DeleteRange(lo, append(lo, 0xff)); err != nil {
				t.Fatal(err)
			}
		case op < 97:
			cached.SetCacheLimit(limit / 2)
			if cached.CacheBytes() > limit/2 {
				t.Fatalf("step %d: the cache holds %d bytes after its limit fell to %d", step, cached.CacheBytes(), limit/2)
			}
			cached.SetCacheLimit(limit)
		case op < 98:
			if err := cached.Wipe(); err != nil {
				t.Fatal(err)
			}
		default:
			cached.DropCache()
		}
		if cached.CacheBytes() > limit {
			t.Fatalf("step %d: the cache holds %d bytes, over its limit of %d", step, cached.CacheBytes(), limit)
		}
	}
	cached.SetCacheLimit(0)
	if cached.CacheBytes() != 0 {
		t.Errorf("a disabled cache holds %d bytes", cached.CacheBytes())
	}
}
