package streams_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

// emitDriver pipes "key:value:timestamp" records (key "null" is a nil key)
// into "in" one at a time and returns, per record, what "out" got, each
// output as "key@start/end=value@timestamp".
func emitDriver(t *testing.T, b *streams.Builder, session bool, inputs string) []string {
	t.Helper()
	d, err := streams.NewTestDriver(b, streams.Config{
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Properties: map[string]string{"statestore.cache.max.bytes": "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var got []string
	for _, in := range strings.Split(inputs, ",") {
		f := strings.Split(in, ":")
		var key []byte
		if f[0] != "null" {
			key = []byte(f[0])
		}
		var ts int64
		fmt.Sscan(f[2], &ts)
		if err := d.PipeInput("in", key, []byte(f[1]), streams.Timestamp(ts)); err != nil {
			t.Fatal(err)
		}
		out, err := d.ReadOutput("out")
		if err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, r := range out {
			line = append(line, windowedString(r, session))
		}
		got = append(got, strings.Join(line, " "))
	}
	return got
}

func windowedString(r streams.TestRecord, session bool) string {
	k := r.Key
	if session {
		n := len(k) - 16
		end, start := int64(binary.BigEndian.Uint64(k[n:])), int64(binary.BigEndian.Uint64(k[n+8:]))
		return fmt.Sprintf("%s@%d/%d=%s@%d", k[:n], start, end, value(r.Value), r.Timestamp)
	}
	n := len(k) - 8
	return fmt.Sprintf("%s@%d=%s@%d", k[:n], int64(binary.BigEndian.Uint64(k[n:])), value(r.Value), r.Timestamp)
}

func value(v []byte) string {
	if len(v) == 8 && v[0] == 0 {
		return fmt.Sprint(int64(binary.BigEndian.Uint64(v)))
	}
	return string(v)
}

func emitBuilder(t *testing.T, w streams.Windows, strategy streams.EmitStrategy, reduce bool) *streams.Builder {
	t.Helper()
	b := streams.NewBuilder()
	s := must1[*streams.Stream](t)(b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
	g := must1[*streams.GroupedStream](t)(s.GroupByKey())
	ws := must1[*streams.WindowedStream](t)(g.WindowedBy(w))
	ws = must1[*streams.WindowedStream](t)(ws.EmitStrategy(strategy))
	var tbl *streams.Table
	if reduce {
		tbl = must1[*streams.Table](t)(ws.Reduce(func(a, v []byte) ([]byte, error) { return []byte(string(a) + "+" + string(v)), nil }))
	} else {
		tbl = must1[*streams.Table](t)(ws.Count())
	}
	out := must1[*streams.Stream](t)(tbl.ToStream())
	must(out.To("out"))
	return b
}

// Tumbling windows emitting on close: each window's count once, when stream
// time reaches its end (grace 0), stamped with its latest record's time;
// a window whose end stream time never reaches emits nothing. As
// KStreamWindowAggregateTest's emitFinal cases (Kafka's time-ordered
// window store returns closed windows by start, then key).
func TestEmitOnWindowCloseTumbling(t *testing.T) {
	b := emitBuilder(t, streams.TumblingWindows(10*time.Millisecond, 0), streams.OnWindowClose, false)
	got := emitDriver(t, b, false, "a:1:5,a:2:12,b:3:16,a:4:21,a:5:45,b:6:3")
	want := []string{"", "a@0=1@5", "", "a@10=1@12 b@10=1@16", "a@20=1@21", ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs per input:\n got %q\nwant %q", got, want)
	}
	// The default strategy forwards every update.
	b = emitBuilder(t, streams.TumblingWindows(10*time.Millisecond, 0), streams.OnWindowUpdate, false)
	got = emitDriver(t, b, false, "a:1:5,a:2:7")
	if want := []string{"a@0=1@5", "a@0=2@7"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("on window update:\n got %q\nwant %q", got, want)
	}
}

// Hopping windows with grace: KStreamWindowAggregateTest
// #shouldLogAndMeterWhenSkippingExpiredWindow with emitFinal (size 10,
// advance 5, grace 90): only [5,15) comes out, "+5+6" at 6, once stream time
// reaches 105; 106 closes no new window.
func TestEmitOnWindowCloseHoppingGrace(t *testing.T) {
	b := streams.NewBuilder()
	s := must1[*streams.Stream](t)(b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
	g := must1[*streams.GroupedStream](t)(s.GroupByKey())
	ws := must1[*streams.WindowedStream](t)(g.WindowedBy(streams.HoppingWindows(10*time.Millisecond, 5*time.Millisecond, 90*time.Millisecond)))
	ws = must1[*streams.WindowedStream](t)(ws.EmitStrategy(streams.OnWindowClose))
	tbl := must1[*streams.Table](t)(ws.Aggregate(
		func() ([]byte, error) { return nil, nil },
		func(_, v, a []byte) ([]byte, error) { return []byte(string(a) + "+" + string(v)), nil },
		streams.Retention(100*time.Millisecond)))
	must(must1[*streams.Stream](t)(tbl.ToStream()).To("out"))
	got := emitDriver(t, b, false, "k:100:100,k:0:0,k:1:1,k:2:2,k:3:3,k:4:4,k:5:5,k:6:6,k:105:105,k:106:106")
	want := []string{"", "", "", "", "", "", "", "", "k@5=+5+6@6", ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs per input:\n got %q\nwant %q", got, want)
	}
}

// Sliding windows emitting on close: a window [s, s+d] closes once stream
// time passes s+d (+ grace); closed windows come by start, then key.
func TestEmitOnWindowCloseSliding(t *testing.T) {
	b := emitBuilder(t, streams.SlidingWindows(10*time.Millisecond, 0), streams.OnWindowClose, false)
	got := emitDriver(t, b, false, "a:1:5,a:2:8,b:3:12,a:4:16,b:5:30,a:6:31")
	want := []string{"", "", "a@0=2@8", "b@2=1@12", "a@6=2@16 a@9=1@16", "b@20=1@30"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs per input:\n got %q\nwant %q", got, want)
	}
}

// Session windows emitting on close: a session closes once stream time
// passes its end + gap + grace; closed sessions come by end, then start,
// then key, stamped with their end.
func TestEmitOnWindowCloseSession(t *testing.T) {
	b := emitBuilder(t, streams.SessionWindows(10*time.Millisecond, 5*time.Millisecond), streams.OnWindowClose, true)
	got := emitDriver(t, b, true, "a:1:0,a:2:20,b:x:100,a:3:92,c:y:200")
	want := []string{"", "a@0/0=1@0", "a@20/20=2@20", "", "a@92/92=3@92 b@100/100=x@100"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs per input:\n got %q\nwant %q", got, want)
	}
	b = emitBuilder(t, streams.SessionWindows(5*time.Millisecond, 0), streams.OnWindowClose, true)
	got = emitDriver(t, b, true, "a:1:1,a:2:4,b:3:5,a:4:20,b:5:22,a:6:40")
	want = []string{"", "", "", "a@1/4=1+2@4 b@5/5=3@5", "", "a@20/20=4@20 b@22/22=5@22"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs per input (gap 5):\n got %q\nwant %q", got, want)
	}
}

// EmitStrategy refuses what is not a windowed stream, and an unknown
// strategy.
func TestEmitStrategyRefused(t *testing.T) {
	b := streams.NewBuilder()
	s := must1[*streams.Stream](t)(b.Stream([]string{"in"}))
	g := must1[*streams.GroupedStream](t)(s.GroupByKey())
	ws := must1[*streams.WindowedStream](t)(g.WindowedBy(streams.TumblingWindows(time.Second, 0)))
	if _, err := ws.EmitStrategy(streams.EmitStrategy(7)); err == nil || !strings.Contains(err.Error(), "EmitStrategy(7)") {
		t.Fatalf("EmitStrategy(7): %v", err)
	}
}

// KStream.toTable: a KSTREAM-TOTABLE- node (its store's number taken: the
// store is KSTREAM-TOTABLE-STATE-STORE-<n>, only materialized when named or
// needed); records become upserts, a null key is dropped, a null value
// deletes. Describe as Kafka Streams 4.1's for
// stream("in").toTable().toStream().to("out").
func TestToTable(t *testing.T) {
	b := streams.NewBuilder()
	s := must1[*streams.Stream](t)(b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
	tbl := must1[*streams.Table](t)(s.ToTable())
	if tbl.Store() != "" {
		t.Fatalf("unnamed toTable keeps store %q; want none until needed", tbl.Store())
	}
	must(must1[*streams.Stream](t)(tbl.ToStream()).To("out"))
	desc, err := b.Describe()
	must(err)
	want := "Topologies:\n" +
		"   Sub-topology: 0\n" +
		"    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n" +
		"      --> KSTREAM-TOTABLE-0000000001\n" +
		"    Processor: KSTREAM-TOTABLE-0000000001 (stores: [])\n" +
		"      --> KTABLE-TOSTREAM-0000000003\n" +
		"      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])\n" +
		"      --> KSTREAM-SINK-0000000004\n" +
		"      <-- KSTREAM-TOTABLE-0000000001\n" +
		"    Sink: KSTREAM-SINK-0000000004 (topic: out)\n" +
		"      <-- KTABLE-TOSTREAM-0000000003\n\n"
	if desc != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", desc, want)
	}
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Properties: map[string]string{"statestore.cache.max.bytes": "0"}})
	must(err)
	defer d.Close()
	must(d.PipeInput("in", []byte("a"), []byte("1"), streams.Timestamp(1)))
	must(d.PipeInput("in", nil, []byte("2"), streams.Timestamp(2)))
	must(d.PipeInput("in", []byte("b"), []byte("3"), streams.Timestamp(3)))
	must(d.PipeInput("in", []byte("a"), nil, streams.Timestamp(4)))
	out, err := d.ReadOutput("out")
	must(err)
	wantOut := []streams.TestRecord{
		{Key: []byte("a"), Value: []byte("1"), Timestamp: 1},
		{Key: []byte("b"), Value: []byte("3"), Timestamp: 3},
		{Key: []byte("a"), Value: nil, Timestamp: 4},
	}
	if !reflect.DeepEqual(out, wantOut) {
		t.Fatalf("out: %+v\nwant %+v", out, wantOut)
	}
}

// toTable after selectKey repartitions through
// "KSTREAM-TOTABLE-<n>-repartition" (KStreamImpl#toTable with
// repartitionRequired), and a later groupBy materializes its store. Describe
// as Kafka Streams 4.1's for
// stream("in").selectKey(...).toTable().groupBy(...).count().toStream().mapValues(...).to("out").
func TestToTableRepartitions(t *testing.T) {
	b := streams.NewBuilder()
	s := must1[*streams.Stream](t)(b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
	sel := must1[*streams.Stream](t)(s.SelectKey(func(_, v []byte) ([]byte, error) { return v, nil }))
	tbl := must1[*streams.Table](t)(sel.ToTable())
	gt, err := tbl.GroupBy(func(_, v []byte) ([]byte, []byte, error) { return v, v, nil })
	must(err)
	cnt, err := gt.Count()
	must(err)
	cs := must1[*streams.Stream](t)(cnt.ToStream())
	mv := must1[*streams.Stream](t)(cs.MapValues(func(v []byte) ([]byte, error) { return v, nil }))
	must(mv.To("out"))
	desc, err := b.Describe()
	must(err)
	for _, frag := range []string{
		"Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-TOTABLE-0000000002-repartition)\n      <-- KSTREAM-FILTER-0000000005",
		"Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-TOTABLE-0000000002-repartition])\n      --> KSTREAM-TOTABLE-0000000002",
		"Processor: KSTREAM-TOTABLE-0000000002 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000003])\n      --> KTABLE-SELECT-0000000007",
		"Sink: KSTREAM-SINK-0000000009 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000008-repartition)",
		"Processor: KTABLE-AGGREGATE-0000000011 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000008])",
	} {
		if !strings.Contains(desc, frag) {
			t.Fatalf("describe lacks %q:\n%s", frag, desc)
		}
	}
}
