package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// committedSequences returns each key's values of topic, read_committed, in
// order, as longs.
func (e *env) committedSequences(topic string) map[string][]int64 {
	e.t.Helper()
	out := map[string][]int64{}
	e.readTopic(topic, true, func(r *kgo.Record) {
		out[string(r.Key)] = append(out[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
	})
	return out
}

// exactlyOnce checks the committed count updates of every word: 1, 2, 3, ...
// up to its exact count — no duplicate, no gap, nothing missing.
func exactlyOnce(seqs map[string][]int64, want map[string]int64) error {
	if len(seqs) != len(want) {
		return fmt.Errorf("%d words in the output, want %d", len(seqs), len(want))
	}
	for w, n := range want {
		s := seqs[w]
		if int64(len(s)) != n {
			return fmt.Errorf("word %q has %d committed updates, want %d: %v", w, len(s), n, s)
		}
		for i, v := range s {
			if v != int64(i+1) {
				return fmt.Errorf("word %q: update %d is %d, want %d (duplicate or gap): %v", w, i, v, i+1, s)
			}
		}
	}
	return nil
}

func waitExactlyOnce(t *testing.T, e *env, topic string, want map[string]int64) {
	t.Helper()
	var last error
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if last = exactlyOnce(e.committedSequences(topic), want); last == nil {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("exactly-once never held: %v", last)
}

// Under exactly_once_v2 a word count killed with SIGKILL again and again
// commits every count update exactly once: read_committed, each word's
// updates are 1, 2, ..., its exact count.
func TestExactlyOnceSurvivesKills(t *testing.T) {
	config := map[string]string{"processing.guarantee": "exactly_once_v2", "session.timeout.ms": "6000", "polystreams.bundle.max.records": "100"}
	killWordCount(t, "eos", config, 4, 3000, func(e *env, total map[string]int64) {
		waitExactlyOnce(t, e, "word-counts", total)
	})
}

// A clean run under exactly_once_v2 in-process: the same check, and the
// default commit.interval.ms of 100 ms.
func TestExactlyOnceWordCount(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(2000, 0)
	e.produce("lines", ls...)
	h := e.open("eos-clean", map[string]string{"processing.guarantee": "exactly_once_v2"})
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	waitExactlyOnce(t, e, "word-counts", want)
	h.stop()
	<-done
}

// A host that dies in the middle of a bundle (takes bundles, never answers)
// loses nothing: its replacement opens a new session for the application,
// which replaces the old one; the bundles are processed again, and under
// exactly_once_v2 nothing is counted twice.
func TestHostDiesMidBundleUnderEOS(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(1500, 0)
	e.produce("lines", ls...)
	config := map[string]string{"processing.guarantee": "exactly_once_v2"}
	dead := e.open("mid-bundle", config)
	dead.buildWordCount("lines", "word-counts")
	dead.start()
	// The dying host takes bundles and never answers.
	var taken int
	waitFor(t, "the host to take a bundle", 30*time.Second, func() bool {
		resp, err := dead.cl.Exchange(context.Background(), connectReq(&pb.ExchangeRequest{SessionId: dead.session, WorkerId: "dies", MaxBundles: 8, WaitMs: 100}))
		if err != nil {
			t.Fatal(err)
		}
		taken += len(resp.Msg.Bundles)
		return taken > 0
	})
	h := e.open("mid-bundle", config)
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	waitExactlyOnce(t, e, "word-counts", want)
	h.stop()
	<-done
	// The old session is gone, not left running.
	if _, err := dead.cl.GetState(context.Background(), connectReq(&pb.GetStateRequest{SessionId: dead.session})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("the replaced session still answers: %v", err)
	}
}
