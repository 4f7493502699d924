package engine

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A cached entry keeps nothing of the fetched records it came from (their
// bytes and the record itself belong to the fetch, which the entry would
// keep alive until the cache flushes): it owns copies of its key, value
// and input record, updated in place, and a null value stays null.
func TestCachedEntriesOwnWhatTheyKeep(t *testing.T) {
	tk := newOrderTask(t, twoStreams(t, nil), nil, nil)
	s := &step{}
	fetch := []byte("k1v1hv")
	in := &kgo.Record{Topic: "a", Partition: 3, Offset: 7, LeaderEpoch: 2, Key: fetch[0:2], Value: fetch[2:4],
		Headers: []kgo.RecordHeader{{Key: "h", Value: fetch[4:6]}}}
	tk.cache(s, []rec{{key: fetch[0:2], value: fetch[2:4], old: fetch[4:6], ts: 5, in: in}})
	e := &tk.caches[s].entries[0]
	own := e.in
	if own == in {
		t.Fatal("the entry keeps the fetched record itself")
	}
	copy(fetch, "XXXXXX") // the fetch's buffer reused
	if string(e.key) != "k1" || string(e.value) != "v1" || string(e.old) != "hv" {
		t.Errorf("entry %s=%s (old %s) after the fetch's bytes changed, want k1=v1 (old hv)", e.key, e.value, e.old)
	}
	if own.Topic != "a" || own.Partition != 3 || own.Offset != 7 || own.LeaderEpoch != 2 ||
		string(own.Key) != "k1" || string(own.Value) != "v1" || len(own.Headers) != 1 || string(own.Headers[0].Value) != "hv" {
		t.Errorf("the entry's input record is %+v, want a/3@7 k1=v1 with header h=hv", own)
	}

	// An update of the key: the same copy, now of the later input record.
	fetch2 := []byte("k1v22")
	in2 := &kgo.Record{Topic: "a", Partition: 3, Offset: 9, Key: fetch2[0:2], Value: fetch2[2:5]}
	tk.cache(s, []rec{{key: fetch2[0:2], value: fetch2[2:5], ts: 6, in: in2}})
	copy(fetch2, "YYYYY")
	if len(tk.caches[s].entries) != 1 || e.in != own {
		t.Fatalf("an update made %d entries (input copy reused: %v)", len(tk.caches[s].entries), e.in == own)
	}
	if string(e.value) != "v22" || e.ts != 6 || string(e.old) != "hv" || own.Offset != 9 || string(own.Value) != "v22" || own.Headers != nil {
		t.Errorf("after the update: %s (old %s) @%d from offset %d value %s headers %v; want v22 (old hv) @6 from offset 9 value v22, no headers",
			e.value, e.old, e.ts, own.Offset, own.Value, own.Headers)
	}
	// A delete: null, not an empty value.
	tk.cache(s, []rec{{key: []byte("k1"), value: nil, ts: 7, in: in2}})
	if e.value != nil {
		t.Errorf("a deleted key's cached value is %q, want null", e.value)
	}
	if want := entrySize(rec{key: []byte("k1"), old: []byte("hv")}); tk.cacheBytes != want {
		t.Errorf("the cache counts %d bytes, want %d", tk.cacheBytes, want)
	}
}

// What a take cut from a queue is no longer referenced by the queue's
// array: a queue that never runs empty would otherwise keep every fetch it
// ever held alive.
func TestInboxTakeReleasesWhatItTook(t *testing.T) {
	tk := newOrderTask(t, twoStreams(t, nil), nil, nil)
	tk.fetch(fetched("a", 0, "=a1@1", "=a2@2", "=a3@3"))
	tk.caughtUp()
	queue := tk.in.queue("a").recs
	if got := names(tk.in.taken(2)); got != "a/a1@1 a/a2@2" {
		t.Fatalf("took %s", got)
	}
	if queue[0] != nil || queue[1] != nil || queue[2] == nil {
		t.Errorf("the queue's array still holds %v", queue)
	}
	if !bytes.Equal(tk.in.taken(1)[0].Value, []byte("a3")) {
		t.Error("the record left was not taken next")
	}
}
