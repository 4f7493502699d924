package engine

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// An untilTimeLimit buffer entry is stored and read back whole: values
// (absent ones too), the prior value, the record context and its headers,
// so that a restart forwards what Kafka Streams' restored buffer would.
func TestSuppressEntryRoundTrips(t *testing.T) {
	in := &kgo.Record{Topic: "orders", Partition: 3, Offset: 1842, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}, {Key: "none"}}}
	for _, e := range []*buffered{
		{r: rec{value: []byte("new"), old: []byte("old"), in: in}, prior: []byte("prior")},
		{r: rec{value: []byte("v"), old: []byte("first"), in: in}, prior: []byte("first"), priorIsOld: true},
		{r: rec{value: nil, old: []byte("gone"), in: in}, prior: nil}, // a tombstone, first buffered with no prior
		{r: rec{value: []byte{}, in: &kgo.Record{Topic: "t", Offset: -1}}},
	} {
		e.r.key, e.r.ts = []byte("k"), 77
		got, err := decodeEntry(e.r.key, encodeEntry(e), e.r.ts)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.r.value, e.r.value) || (got.r.value == nil) != (e.r.value == nil) ||
			!bytes.Equal(got.r.old, e.r.old) || (got.r.old == nil) != (e.r.old == nil) ||
			!bytes.Equal(got.prior, e.prior) || got.priorIsOld != e.priorIsOld || got.r.ts != 77 {
			t.Fatalf("round trip: got %+v, want %+v", got, e)
		}
		if got.r.in.Topic != e.r.in.Topic || got.r.in.Partition != e.r.in.Partition || got.r.in.Offset != e.r.in.Offset ||
			!reflect.DeepEqual(got.r.in.Headers, e.r.in.Headers) {
			t.Fatalf("round trip: record context %+v, want %+v", got.r.in, e.r.in)
		}
		if bufferedSize(got) != bufferedSize(e) {
			t.Fatalf("size %d after the round trip, %d before", bufferedSize(got), bufferedSize(e))
		}
	}
	if _, err := decodeEntry([]byte("k"), []byte{1, 9}, 0); err == nil {
		t.Fatal("a truncated entry decoded")
	}
}

// Kafka's estimate (computeRecordSize): buffer time 8, key, prior, old
// (unless it is the prior) and new values, timestamp and offset 8 each,
// partition 4, topic characters, header keys and values.
func TestSuppressBufferedSizeIsKafkas(t *testing.T) {
	in := &kgo.Record{Topic: "input", Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("xy")}}}
	first := &buffered{r: rec{key: []byte("a"), value: []byte("22"), old: []byte("1"), in: in}, prior: []byte("1"), priorIsOld: true}
	if got, want := bufferedSize(first), int64(8+1+1+2+8+8+4+5+1+2); got != want {
		t.Fatalf("first update: %d, want %d", got, want)
	}
	later := &buffered{r: rec{key: []byte("a"), value: []byte("333"), old: []byte("22"), in: in}, prior: []byte("1")}
	if got, want := bufferedSize(later), int64(8+1+1+2+3+8+8+4+5+1+2); got != want {
		t.Fatalf("later update: %d, want %d", got, want)
	}
	if n := utf16Len("é€😀"); n != 4 { // a char each, two for the supplementary one
		t.Fatalf("utf16Len = %d, want 4", n)
	}
}

// An untilTimeLimit buffer counts its entries for the memory budget until
// it forwards them, and nothing after.
func TestMemoryTimeLimitSuppressionGoesUpAndDown(t *testing.T) {
	h := newMemHarness(t, 1<<40, false, func(b *topology.Builder, l, _ *topology.Handle) *topology.Handle {
		g := must(t)(b.GroupByKey(l.ID, "", "", ""))
		c := must(t)(b.Count(g.ID, nil, ""))
		sup := topology.UntilWindowCloses
		sup.TimeLimit = 100
		s := must(t)(b.Suppress(c.ID, "", sup))
		return must(t)(b.ToStream(s.ID, ""))
	})
	if used := h.send("left", "a:x@100", "b:x@150", "a:x@160"); used[memSuppress] <= 0 {
		t.Fatalf("suppression buffer counts %d with a and b held", used[memSuppress])
	}
	if used := h.send("left", "c:x@1000"); used[memSuppress] <= 0 || len(h.task.out) != 2 {
		t.Fatalf("after stream time 1000: buffer counts %d (c held), %d forwarded (want a and b)", used[memSuppress], len(h.task.out))
	}
	if used := h.send("left", "c:x@5000"); used[memSuppress] != 0 {
		t.Fatalf("buffer counts %d once everything was forwarded", used[memSuppress])
	}
}
