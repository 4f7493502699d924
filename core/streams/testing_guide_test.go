// The example of docs/testing.md (Go), run as it is printed there.
package streams_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strconv"
	"testing"

	"github.com/polystreams/polystreams/core/streams"
)

func buildWordCount(t *testing.T) *streams.Builder {
	b := streams.NewBuilder()
	lines, err := b.Stream([]string{"lines"}, streams.ValueSerde(streams.String))
	check(t, err)
	words, err := lines.FlatMapValues(func(line []byte) ([][]byte, error) { return bytes.Fields(line), nil })
	check(t, err)
	grouped, err := words.GroupBy(func(_, word []byte) ([]byte, error) { return word, nil }, streams.KeySerde(streams.String))
	check(t, err)
	counts, err := grouped.Count(streams.Store("counts"))
	check(t, err)
	changes, err := counts.ToStream()
	check(t, err)
	check(t, changes.To("word-counts"))
	return b
}

func TestWordCount(t *testing.T) {
	d, err := streams.NewTestDriver(buildWordCount(t), streams.Config{
		ApplicationID: "wordcount",
		Properties:    map[string]string{"statestore.cache.max.bytes": "0"},
	})
	check(t, err)
	defer d.Close()
	check(t, d.PipeInput("lines", nil, []byte("the cat"), streams.Timestamp(1_000)))
	check(t, d.PipeInput("lines", nil, []byte("the dog"), streams.Timestamp(2_000)))
	out, err := d.ReadOutput("word-counts")
	check(t, err)
	var got []string
	for _, r := range out {
		got = append(got, string(r.Key)+"="+strconv.FormatUint(binary.BigEndian.Uint64(r.Value), 10))
	}
	if want := []string{"the=1", "cat=1", "the=2", "dog=1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("word-counts: %v, want %v", got, want)
	}
	counts, err := d.GetStore("counts")
	check(t, err)
	if n, err := counts.Get([]byte("the")); err != nil || binary.BigEndian.Uint64(n) != 2 {
		t.Fatalf("counts[the] = %v, %v; want 2", n, err)
	}
}

func TestWordCountWithTheRecordCache(t *testing.T) {
	// The cache (on by default) is flushed after each piped record, so each
	// line yields the latest count of each of its words once.
	d, err := streams.NewTestDriver(buildWordCount(t), streams.Config{ApplicationID: "wordcount"})
	check(t, err)
	defer d.Close()
	check(t, d.PipeInput("lines", nil, []byte("b a b")))
	latest, err := d.ReadKeyValuesToMap("word-counts")
	check(t, err)
	if len(latest) != 2 || binary.BigEndian.Uint64(latest["a"]) != 1 || binary.BigEndian.Uint64(latest["b"]) != 2 {
		t.Fatalf("word-counts: %v, want a=1, b=2", latest)
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
