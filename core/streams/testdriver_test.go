package streams_test

import (
	"bytes"
	"errors"
	"fmt"
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

// A record piped into a global table's topic is in the global store when
// PipeInput returns, so the next stream record joins with it: Kafka's
// TopologyTestDriver#pipeRecord hands a global topic's record to
// processGlobalRecord (globalStateTask.update, then flushState) before it
// returns. The global topic is one the topology reads, so it is named
// among them for an unknown topic, and its store answers GetStore.
func TestTestDriverGlobalTableJoin(t *testing.T) {
	b := streams.NewBuilder()
	prices, err := b.GlobalTable("prices", streams.KeySerde(streams.String), streams.ValueSerde(streams.String), streams.Store("prices"))
	must(err)
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	item := func(_, order []byte) ([]byte, error) { return bytes.Fields(order)[0], nil }
	priced, err := orders.JoinGlobal(prices, item, func(order, price []byte) ([]byte, error) {
		return append(append(append([]byte(nil), order...), '@'), price...), nil
	})
	must(err)
	must(priced.To("priced"))
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.PipeInput("nope", nil, []byte("x")); !errors.Is(err, streams.ErrUnknownTopic) || !strings.Contains(err.Error(), `(it reads "orders", "prices")`) {
		t.Fatalf("PipeInput(nope): %v", err)
	}
	if _, err := d.ReadOutput("prices"); !errors.Is(err, streams.ErrUnknownTopic) || !strings.Contains(err.Error(), `topic "prices" is not written by the topology (it writes "priced")`) {
		t.Fatalf("ReadOutput(prices): %v", err)
	}
	if _, err := d.GetStore("nostore"); !errors.Is(err, streams.ErrNotFound) || !strings.Contains(err.Error(), `(stores: prices)`) {
		t.Fatalf("GetStore(nostore): %v", err)
	}
	// Each step pipes into the global topic, then at once into the stream.
	steps := []struct {
		price *string // nil: a tombstone
		order string
		want  []string
	}{
		{strp("1"), "apple x2", []string{"o0 apple x2@1"}},
		{strp("5"), "apple x3", []string{"o1 apple x3@5"}},
		{nil, "apple x4", nil}, // deleted: an inner join drops the order
		{strp("7"), "apple x5", []string{"o3 apple x5@7"}},
	}
	store, err := d.GetStore("prices")
	must(err)
	for i, s := range steps {
		var price []byte
		if s.price != nil {
			price = []byte(*s.price)
		}
		must(d.PipeInput("prices", []byte("apple"), price))
		got, err := store.Get([]byte("apple"))
		must(err)
		if !bytes.Equal(got, price) {
			t.Fatalf("step %d: global store prices holds apple=%q right after PipeInput, want %q", i, got, price)
		}
		must(d.PipeInput("orders", []byte(fmt.Sprintf("o%d", i)), []byte(s.order)))
		out, err := d.ReadOutput("priced")
		must(err)
		var lines []string
		for _, r := range out {
			lines = append(lines, fmt.Sprintf("%s %s", r.Key, r.Value))
		}
		if !reflect.DeepEqual(lines, s.want) {
			t.Fatalf("step %d: priced %q, want %q", i, lines, s.want)
		}
	}
}

func strp(s string) *string { return &s }

// A record of a global table's topic that does not deserialize fails the
// application under the default deserialization.exception.handler (Kafka's
// LogAndFailExceptionHandler; GlobalStateUpdateTask#update deserializes
// through the global source node): PipeInput returns the RecordError naming
// the record and the global source, rather than waiting for it.
func TestTestDriverGlobalTableRecordThatDoesNotDecode(t *testing.T) {
	b := streams.NewBuilder()
	prices, err := b.GlobalTable("prices", streams.KeySerde(streams.String), streams.ValueSerde(streams.Long))
	must(err)
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	joined, err := orders.LeftJoinGlobal(prices, func(k, _ []byte) ([]byte, error) { return k, nil }, func(o, p []byte) ([]byte, error) { return o, nil })
	must(err)
	must(joined.To("out"))
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var re *streams.RecordError
	if err := d.PipeInput("prices", []byte("apple"), []byte("x")); !errors.As(err, &re) || re.Topic != "prices" || re.Offset != 0 || re.Node != "KSTREAM-SOURCE-0000000001" {
		t.Fatalf("PipeInput(prices, undecodable long): %v, want a RecordError at prices@0 in KSTREAM-SOURCE-0000000001 (the store is named first: prices-STATE-STORE-0000000000)", err)
	}
}
