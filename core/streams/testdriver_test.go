package streams_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

// Bad input is named: a topic the topology does not read or write, a store
// it does not have; a failing function returns its RecordError.
func TestTestDriverNamesBadInput(t *testing.T) {
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.ValueSerde(streams.String))
	must(err)
	up, err := in.MapValues(func(v []byte) ([]byte, error) {
		if string(v) == "bad" {
			return nil, errors.New("bad value")
		}
		return bytes.ToUpper(v), nil
	})
	must(err)
	must(up.To("out"))
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.PipeInput("nope", nil, []byte("x")); !errors.Is(err, streams.ErrUnknownTopic) || !strings.Contains(err.Error(), `topic "nope" is not read by the topology (it reads "in")`) {
		t.Fatalf("PipeInput(nope): %v", err)
	}
	if _, err := d.ReadOutput("in"); !errors.Is(err, streams.ErrUnknownTopic) || !strings.Contains(err.Error(), `topic "in" is not written by the topology (it writes "out")`) {
		t.Fatalf("ReadOutput(in): %v", err)
	}
	if _, err := d.GetStore("missing"); !errors.Is(err, streams.ErrNotFound) || !strings.Contains(err.Error(), `store "missing" does not exist (stores: none)`) {
		t.Fatalf("GetStore(missing): %v", err)
	}
	clock, err := d.AdvanceWallClock(5 * time.Second)
	must(err)
	must(d.PipeInput("in", []byte("k"), []byte("v"), streams.WithHeader("h", []byte("1"))))
	out, err := d.ReadOutput("out")
	must(err)
	if want := []streams.TestRecord{{Key: []byte("k"), Value: []byte("V"), Timestamp: clock, Headers: []streams.Header{{Key: "h", Value: []byte("1")}}}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("out: %+v, want %+v (a record piped without a timestamp takes the wall clock's)", out, want)
	}
	var re *streams.RecordError
	if err := d.PipeInput("in", nil, []byte("bad")); !errors.As(err, &re) || re.Topic != "in" || re.Offset != 1 {
		t.Fatalf("PipeInput(bad): %v, want a RecordError at in@1", err)
	}
}
