package server_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// A word count over stream(Pattern) through the protocol (StreamOp's
// topic_pattern), its functions in the host: the lines of a topic the
// pattern matches that is created after the start are counted from the
// next metadata refresh (metadata.max.age.ms) on, with those of the topic
// matched at the start; a topic it does not match is not read.
func TestPatternSourceCountsATopicCreatedAfterTheStart(t *testing.T) {
	e := newEnv(t, "lines-a", "lines", "word-counts")
	first, want := lines(300, 0)
	e.produce("lines-a", first...)
	e.produce("lines", "unmatched")
	h := e.open("pattern-wc", map[string]string{"metadata.max.age.ms": "200", "commit.interval.ms": "100"})
	split := h.register("split", flatFn(func(v []byte) ([][]byte, error) { return bytes.Fields(v), nil }))
	word := h.register("word", keyFn(func(_, v []byte) ([]byte, error) { return v, nil }))
	s := h.mustBuild(&pb.StreamOp{TopicPattern: "lines-.*", ValueSerde: "string"})
	w := h.mustBuild(&pb.FlatMapValuesOp{Input: s.Id, Token: split})
	g := h.mustBuild(&pb.GroupByOp{Input: w.Id, Token: word, KeySerde: "string"})
	c := h.mustBuild(&pb.CountOp{Input: g.Id})
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "word-counts"})
	h.start()
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)

	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 4, 1, nil, "lines-b"); err != nil {
		t.Fatal(err)
	}
	more, w2 := lines(300, 1)
	e.produce("lines-b", more...)
	for k, v := range w2 {
		want[k] += v
	}
	waitCounts(t, e, "word-counts", want)
	if got := e.lastCounts("word-counts")["unmatched"]; got != 0 {
		t.Errorf("the topic the pattern does not match was read: unmatched counted %d times", got)
	}
	h.stop()
	if got := <-done; !strings.HasPrefix(got, "STATE_STOPPED") {
		t.Fatalf("host loop ended with %q, want STATE_STOPPED", got)
	}
}
