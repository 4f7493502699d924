package streams_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

func long(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// builtinDriver runs b in a test driver and returns a function that reads
// a topic's output as "key=value" strings.
func builtinDriver(t *testing.T, b *streams.Builder) (*streams.TestDriver, func(topic string) []string) {
	t.Helper()
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, func(topic string) []string {
		t.Helper()
		out, err := d.ReadOutput(topic)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range out {
			v := string(r.Value)
			if r.Value == nil {
				v = "<null>"
			}
			got = append(got, string(r.Key)+"="+v)
		}
		return got
	}
}

func pipe(t *testing.T, d *streams.TestDriver, topic, key string, value []byte, ts int64) {
	t.Helper()
	if err := d.PipeInput(topic, []byte(key), value, streams.Timestamp(ts)); err != nil {
		t.Fatal(err)
	}
}

func must1[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantOut(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// The built-in joiners in every kind of join, run by the engine's runtime
// (a Go joiner would be native too; these are resolved by the builder for
// the joined values' serdes). Kafka Streams has no built-in joiner: the
// join semantics pinned are KStreamKTableJoinProcessor's (left join: null
// table value), KStreamKStreamJoin's (outer: null other side, emitted
// when the window closes), KTableKTableOuterJoin's and
// ForeignTableJoinProcessorSupplier / SubscriptionJoinProcessorSupplier's
// (KIP-213). Stream-global-table joins: server/join_builtin_test.go.
func TestBuiltinJoiners(t *testing.T) {
	t.Run("stream-table left join, pair", func(t *testing.T) {
		b := streams.NewBuilder()
		customers := must1[*streams.Table](t)(b.Table("customers", streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
		orders := must1[*streams.Stream](t)(b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.Long)))
		j := must1[*streams.Stream](t)(orders.LeftJoin(customers, streams.PairJoiner))
		if err := j.To("out"); err != nil {
			t.Fatal(err)
		}
		d, read := builtinDriver(t, b)
		pipe(t, d, "customers", "c1", []byte(`ann "<&>"`), 1)
		pipe(t, d, "orders", "c1", long(5), 2)
		pipe(t, d, "orders", "c2", long(-7), 3)
		wantOut(t, "pair", read("out"), `c1=[5,"ann \"<&>\""]`, "c2=[-7,null]")
	})
	t.Run("stream-stream outer join, this and other", func(t *testing.T) {
		b := streams.NewBuilder()
		views := must1[*streams.Stream](t)(b.Stream([]string{"views"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
		clicks := must1[*streams.Stream](t)(b.Stream([]string{"clicks"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.Integer)))
		w := streams.JoinTimeDifference(100*time.Millisecond, 0)
		this := must1[*streams.Stream](t)(views.OuterJoinStream(clicks, streams.ThisJoiner, w))
		other := must1[*streams.Stream](t)(views.JoinStream(clicks, streams.OtherJoiner, w))
		pair := must1[*streams.Stream](t)(views.OuterJoinStream(clicks, streams.PairJoiner, w))
		for topic, s := range map[string]*streams.Stream{"this": this, "other": other, "pair": pair} {
			if err := s.To(topic); err != nil {
				t.Fatal(err)
			}
		}
		d, read := builtinDriver(t, b)
		pipe(t, d, "views", "a", []byte("v1"), 1000)
		pipe(t, d, "clicks", "a", binary.BigEndian.AppendUint32(nil, 3), 1050)
		pipe(t, d, "clicks", "b", binary.BigEndian.AppendUint32(nil, 4), 1060)
		pipe(t, d, "views", "z", []byte("v9"), 3000) // closes the windows
		wantOut(t, "this (string)", read("this"), "a=v1", "b=<null>")
		wantOut(t, "pair", read("pair"), `a=["v1",3]`, `b=[null,4]`)
		got := read("other")
		if len(got) != 1 || got[0] != "a=\x00\x00\x00\x03" {
			t.Errorf("other: got %q, want the click's integer bytes", got)
		}
	})
	t.Run("table-table outer join, pair", func(t *testing.T) {
		b := streams.NewBuilder()
		l := must1[*streams.Table](t)(b.Table("l", streams.KeySerde(streams.String), streams.ValueSerde(streams.JSON)))
		r := must1[*streams.Table](t)(b.Table("r", streams.KeySerde(streams.String), streams.ValueSerde(streams.Double)))
		j := must1[*streams.Table](t)(l.OuterJoin(r, streams.PairJoiner))
		if j.ValueSerde() != streams.JSON {
			t.Errorf("pair's result serde is %s, want json", j.ValueSerde())
		}
		s := must1[*streams.Stream](t)(j.ToStream())
		if err := s.To("out"); err != nil {
			t.Fatal(err)
		}
		d, read := builtinDriver(t, b)
		pipe(t, d, "l", "k", []byte(` {"a": [1, 2]} `), 1)
		pipe(t, d, "r", "k", binary.BigEndian.AppendUint64(nil, 0x3ff8000000000000), 2) // 1.5
		pipe(t, d, "r", "only", binary.BigEndian.AppendUint64(nil, 0x4000000000000000), 3)
		wantOut(t, "pair", read("out"), `k=[{"a": [1, 2]},null]`, `k=[{"a": [1, 2]},1.5]`, `only=[null,2]`)
	})
	t.Run("foreign-key join, other", func(t *testing.T) {
		b := streams.NewBuilder()
		orders := must1[*streams.Table](t)(b.Table("orders", streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
		customers := must1[*streams.Table](t)(b.Table("customers", streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
		byCustomer := func(v []byte) ([]byte, error) { return v[:strings.IndexByte(string(v), '/')], nil }
		j := must1[*streams.Table](t)(orders.ForeignKeyJoin(customers, byCustomer, streams.OtherJoiner))
		s := must1[*streams.Stream](t)(j.ToStream())
		if err := s.To("out"); err != nil {
			t.Fatal(err)
		}
		d, read := builtinDriver(t, b)
		pipe(t, d, "customers", "c1", []byte("ann"), 1)
		pipe(t, d, "orders", "o1", []byte("c1/book"), 2)
		wantOut(t, "other", read("out"), "o1=ann")
	})
}

// A built-in joiner is refused when the join is built if it cannot read a
// side (pair over bytes names the side, its handle and serde) or if a
// value serde other than its result's is given.
func TestBuiltinJoinerRefusals(t *testing.T) {
	b := streams.NewBuilder()
	raw := must1[*streams.Table](t)(b.Table("raw", streams.KeySerde(streams.String)))
	s := must1[*streams.Stream](t)(b.Stream([]string{"s"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String)))
	_, err := s.Join(raw, streams.PairJoiner)
	if !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), "built-in joiner pair cannot read the other side, handle 1 (KTABLE-SOURCE-0000000002)") || !strings.Contains(err.Error(), "bytes values have no JSON form") {
		t.Errorf("pair over bytes: %v", err)
	}
	_, err = s.Join(must1[*streams.Table](t)(b.Table("t", streams.KeySerde(streams.String), streams.ValueSerde(streams.Long))), streams.PairJoiner, streams.ValueSerde(streams.String))
	if !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), "built-in joiner pair makes json values, but the value serde is string") {
		t.Errorf("pair with value serde string: %v", err)
	}
	if j, err := s.Join(raw, streams.ThisJoiner, streams.ValueSerde(streams.String)); err != nil || j.ValueSerde() != streams.String {
		t.Errorf("this with its own serde: %v", err)
	}
	if j, err := s.Join(raw, streams.OtherJoiner); err != nil || j.ValueSerde() != streams.Bytes {
		t.Errorf("other keeps the table's serde (bytes): %v", err)
	}
	if _, err := streams.PairJoiner(nil, nil); err == nil {
		t.Error("PairJoiner called directly did not fail")
	}
}
