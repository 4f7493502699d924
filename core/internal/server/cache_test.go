package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// With the record cache on (statestore.cache.max.bytes, Kafka Streams'
// default 10 MiB), a count forwards the latest value per key at each commit
// instead of every update: far fewer updates, still increasing, the last one
// exact. Under exactly_once_v2 the committed updates are the same; the
// cache is flushed into each transaction before it ends.
func TestRecordCacheEmitsLatestPerKeyAtCommit(t *testing.T) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) {
			e := newEnv(t, "lines", "word-counts")
			ls, want := lines(6000, 0)
			e.produce("lines", ls...)
			h := e.open("cache-"+strings.ReplaceAll(guarantee, "_", "-"), map[string]string{
				"processing.guarantee":       guarantee,
				"commit.interval.ms":         "200",
				"statestore.cache.max.bytes": "10485760",
			})
			h.buildWordCount("lines", "word-counts")
			h.start()
			done := h.serveAsync()
			waitCounts(t, e, "word-counts", want)
			h.stopServing(done)
			seqs := e.committedSequences("word-counts")
			var updates, total int64
			for w, n := range want {
				s := seqs[w]
				for i := 1; i < len(s); i++ {
					if s[i] <= s[i-1] {
						t.Fatalf("word %q: updates do not increase: %v", w, s)
					}
				}
				if len(s) == 0 || s[len(s)-1] != n {
					t.Fatalf("word %q: last update of %v, want %d", w, s, n)
				}
				updates += int64(len(s))
				total += n
			}
			// Without the cache every one of the total occurrences is an
			// update; with it, a handful of commits' worth per word.
			if updates*4 > total {
				t.Errorf("%d updates for %d counted words: the cache did not collapse updates per key", updates, total)
			}
			if guarantee != "at_least_once" {
				return
			}
			// The store's changelog is written as the cache flushes, as
			// Kafka Streams' caching store logs: the same updates as the
			// output, not one per batch.
			logged := e.committedSequences("cache-at-least-once-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog")
			for w := range want {
				if fmt.Sprint(logged[w]) != fmt.Sprint(seqs[w]) {
					t.Fatalf("word %q: changelog updates %v, output updates %v: want the same", w, logged[w], seqs[w])
				}
			}
		})
	}
}

// A key inserted and deleted while its update waits in the cache is not
// forwarded at all (CachingKeyValueStore forwards only when the new or the
// old value is not null); the cache is flushed when the application stops.
func TestRecordCacheDropsAnInsertThenDelete(t *testing.T) {
	e := newEnv(t, "kv", "kv-out")
	h := e.open("cache-table", map[string]string{"statestore.cache.max.bytes": "1048576"}) // commit every 30 s
	tbl := h.mustBuild(&pb.TableOp{Topic: "kv", KeySerde: "string", ValueSerde: "string", Materialized: &pb.Materialized{StoreName: "kv-store"}})
	ts := h.mustBuild(&pb.ToStreamOp{Input: tbl.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "kv-out"})
	h.start()
	done := h.serveAsync()
	e.produceKeyed("kv", keyed{"gone", str("x")}, keyed{"gone", nil}, keyed{"k1", str("a")}, keyed{"k1", str("b")})
	waitFor(t, "k1 = b in kv-store", 30*time.Second, func() bool {
		resp, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "kv-store", Query: &pb.QueryRequest_Get{Get: []byte("k1")}}))
		return err == nil && string(resp.Msg.Values) == "b"
	})
	n := 0
	e.readTopic("kv-out", false, func(_ *kgo.Record) { n++ })
	if n != 0 {
		t.Fatalf("%d records forwarded before the first commit; the cache should hold them", n)
	}
	h.stopServing(done)
	got := map[string][]string{}
	e.readTopic("kv-out", false, func(r *kgo.Record) { got[string(r.Key)] = append(got[string(r.Key)], fmt.Sprintf("%s", r.Value)) })
	sameUpdates(t, got, map[string][]string{"k1": {"b"}})
}
