package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

type kv struct {
	k string
	v int64
}

func (h *testHost) query(store string, q *pb.QueryRequest) ([]kv, error) {
	q.SessionId, q.Store = h.session, store
	resp, err := h.cl.Query(context.Background(), connect.NewRequest(q))
	if err != nil {
		return nil, err
	}
	m := resp.Msg
	if m.KeySerde != "string" || m.ValueSerde != "long" {
		return nil, fmt.Errorf("store serdes %q/%q, want string/long", m.KeySerde, m.ValueSerde)
	}
	var out []kv
	ko, vo := 0, 0
	for i := range m.KeyLengths {
		k := string(m.Keys[ko : ko+int(m.KeyLengths[i])])
		v := int64(binary.BigEndian.Uint64(m.Values[vo : vo+int(m.ValueLengths[i])]))
		ko += int(m.KeyLengths[i])
		vo += int(m.ValueLengths[i])
		out = append(out, kv{k, v})
	}
	return out, nil
}

const wcStore = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"

func digest(entries []kv) string {
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s=%d\n", e.k, e.v)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Interactive queries read the count store: get, range (inclusive), prefix
// and all, in serialized-key order; errors name the store.
func TestQueryCountStore(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(1000, 0)
	e.produce("lines", ls...)
	h := e.open("iq", nil)
	h.buildWordCount("lines", "word-counts")

	if _, err := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}}); connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "before Start") {
		t.Errorf("query before start: %v", err)
	}
	h.start()
	done := h.serveAsync()
	defer func() { h.stop(); <-done }()
	waitCounts(t, e, "word-counts", want)

	if _, err := h.query("nope", &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}}); connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), wcStore) {
		t.Errorf("query of a missing store: %v", err)
	}
	var all []kv
	waitFor(t, "the store to hold every word", 30*time.Second, func() bool {
		all, _ = h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}})
		return len(all) == len(want)
	})
	for i, e := range all {
		if want[e.k] != e.v {
			t.Errorf("all: %s=%d, want %d", e.k, e.v, want[e.k])
		}
		if i > 0 && all[i-1].k >= e.k {
			t.Errorf("all is not in key order: %q before %q", all[i-1].k, e.k)
		}
	}
	got, err := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_Get{Get: []byte("w5")}})
	if err != nil || len(got) != 1 || got[0].v != want["w5"] {
		t.Errorf("get w5 = %v, %v; want %d", got, err, want["w5"])
	}
	if got, _ := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_Get{Get: []byte("absent")}}); len(got) != 0 {
		t.Errorf("get of an absent key = %v", got)
	}
	rng, _ := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_Range{Range: &pb.KeyRange{From: []byte("w10"), To: []byte("w12")}}})
	var keys []string
	for _, e := range rng {
		keys = append(keys, e.k)
	}
	if strings.Join(keys, ",") != "w10,w11,w12" {
		t.Errorf("range w10..w12 = %v, want w10,w11,w12 (both bounds inclusive)", keys)
	}
	pre, _ := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_Prefix{Prefix: []byte("w9")}})
	if len(pre) != 8 { // w9, w90..w96
		t.Errorf("prefix w9 = %v, want w9 and w90..w96", pre)
	}
	// The store has 4 partitions: a limit must give the first keys over all
	// of them, not over whichever partition was read first.
	for _, n := range []int{1, 5, 30} {
		lim, err := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}, Limit: int32(n)})
		if err != nil || len(lim) != n {
			t.Fatalf("all with limit %d = %d entries, %v", n, len(lim), err)
		}
		for i := range lim {
			if lim[i] != all[i] {
				t.Errorf("all with limit %d: entry %d is %v, want %v", n, i, lim[i], all[i])
				break
			}
		}
	}
}

// Deleting the state directory between runs loses nothing: the store
// restored from the changelog equals the store before (compared by digest).
func TestStateRestoredFromChangelogEqualsBefore(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(2000, 0)
	e.produce("lines", ls...)
	snapshot := func() string {
		h := e.open("digest", nil)
		h.buildWordCount("lines", "word-counts")
		h.start()
		done := h.serveAsync()
		var all []kv
		waitFor(t, "the store to hold every word's count", 60*time.Second, func() bool {
			all, _ = h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}})
			if len(all) != len(want) {
				return false
			}
			for _, e := range all {
				if e.v != want[e.k] {
					return false
				}
			}
			return true
		})
		h.stop()
		<-done
		return digest(all)
	}
	before := snapshot()
	if err := os.RemoveAll(filepath.Join(e.stateDir, "digest")); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("store digest %s after restoring from the changelog, %s before", after, before)
	}
}
