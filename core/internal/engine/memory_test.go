package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

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

// wordsTask is a task (newOrderTask) of stream "in" ->
// flat_map_values(split into words, in Go) -> to "out".
func wordsTask(tb testing.TB) *task {
	tb.Helper()
	b := topology.NewBuilder()
	s, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, ValueSerde: "string"})
	if err != nil {
		tb.Fatal(err)
	}
	split := topology.FlatMapValuesFunc(func(v []byte) ([][]byte, error) { return bytes.Fields(v), nil })
	w, err := b.FlatMapValues(s.ID, topology.Function{Name: "words", Native: split}, "", "")
	if err != nil {
		tb.Fatal(err)
	}
	if err := b.To(w.ID, "out", "", "", ""); err != nil {
		tb.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		tb.Fatal(err)
	}
	return newOrderTask(tb, topo, nil, nil)
}

// A batch's outputs wait for its end, so a plan with no host takes fewer
// records when the last batch's records fanned out: about a bundle's worth
// of outputs (a line of 8 words: 2,000 / 8 lines). A plan that crosses to a
// host takes a bundle whatever its fan-out, and one whose records do not
// fan out takes a bundle.
func TestBatchSizeBoundsWhatABatchMakes(t *testing.T) {
	tk := wordsTask(t)
	if got := tk.batchSize(2000); got != 2000 {
		t.Fatalf("before any batch: %d records, want 2000", got)
	}
	lines := make([]*kgo.Record, 200)
	for i := range lines {
		lines[i] = &kgo.Record{Topic: "in", Offset: int64(i), Value: []byte(fmt.Sprintf("a b c d e f g %d", i))}
	}
	if err := tk.process(context.Background(), lines); err != nil {
		t.Fatal(err)
	}
	if len(tk.out) != 1600 {
		t.Fatalf("the batch made %d outputs, want 1600", len(tk.out))
	}
	if got := tk.batchSize(2000); got != 251 {
		t.Errorf("after 8 outputs per record: %d records, want 251", got)
	}
	if got := tk.batchSize(100); got != 13 {
		t.Errorf("with bundles of 100: %d records, want 13", got)
	}
	tk.plan.host = true
	if got := tk.batchSize(2000); got != 2000 {
		t.Errorf("a plan that crosses to a host: %d records, want 2000", got)
	}
	tk.plan.host = false
	one := lines[:10]
	for i, r := range one {
		one[i] = &kgo.Record{Topic: "in", Offset: r.Offset + 200, Value: []byte("word")}
	}
	if err := tk.process(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if got := tk.batchSize(2000); got != 2000 {
		t.Errorf("after one output per record: %d records, want 2000", got)
	}
}
