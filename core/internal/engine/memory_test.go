package engine

import (
	"bytes"
	"testing"
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
