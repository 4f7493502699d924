package topology

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// pair decodes each side by its serde and writes [this, other] in JSON;
// null for a missing side. Kafka Streams has no built-in joiner: this pins
// polystreams' encoding (Serdes.Long/Integer/Double's big-endian bytes).
func TestPairJoinerEncoding(t *testing.T) {
	u64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	cases := []struct {
		serde string
		value []byte
		json  string
	}{
		{serde.String, []byte(`a "q" <&> é`), `"a \"q\" <&> é"`},
		{serde.String, []byte{}, `""`},
		{serde.JSON, []byte(" {\"x\": [1, null]}\n"), `{"x": [1, null]}`},
		{serde.Long, u64(uint64(math.MaxInt64)), "9223372036854775807"},
		{serde.Long, u64(math.MaxUint64), "-1"},
		{serde.Integer, binary.BigEndian.AppendUint32(nil, uint32(0xffffff85)), "-123"},
		{serde.Double, u64(math.Float64bits(1.5)), "1.5"},
		{serde.Double, u64(math.Float64bits(-3)), "-3"},
		{serde.Double, u64(math.Float64bits(1e21)), "1e+21"},
		{serde.Long, nil, "null"},
	}
	for _, c := range cases {
		f, out, err := builtinJoiner(JoinerPair, c.serde, serde.String)
		if err != nil || out != serde.JSON {
			t.Fatalf("%s: %v, result serde %q", c.serde, err, out)
		}
		got, err := f(c.value, []byte("o"))
		if want := "[" + c.json + `,"o"]`; err != nil || string(got) != want {
			t.Errorf("pair(%s %x, string o) = %s, %v; want %s", c.serde, c.value, got, err, want)
		}
		f, _, _ = builtinJoiner(JoinerPair, serde.Long, c.serde)
		got, err = f(nil, c.value)
		if want := "[null," + c.json + "]"; err != nil || string(got) != want {
			t.Errorf("pair(null, %s %x) = %s, %v; want %s", c.serde, c.value, got, err, want)
		}
	}
}

// Values that do not decode by their serde fail the record as malformed
// (the deserialization handler decides); a double with no JSON form fails
// it too. Sides pair cannot read are refused before any record.
func TestPairJoinerRefusals(t *testing.T) {
	for _, c := range []struct {
		serde string
		value []byte
	}{{serde.Long, []byte{1}}, {serde.Integer, []byte{1, 2}}, {serde.Double, []byte{}}, {serde.String, []byte{0xff}}, {serde.JSON, []byte("{")}} {
		f, _, _ := builtinJoiner(JoinerPair, c.serde, serde.String)
		if _, err := f(c.value, nil); !errors.Is(err, serde.ErrMalformed) || !strings.Contains(err.Error(), "pair: this value") {
			t.Errorf("pair over %s %x: %v, want a malformed this value", c.serde, c.value, err)
		}
	}
	f, _, _ := builtinJoiner(JoinerPair, serde.Double, serde.String)
	if _, err := f(binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN())), nil); err == nil || !strings.Contains(err.Error(), "no JSON form") {
		t.Errorf("pair over NaN: %v", err)
	}
	for _, c := range []struct{ this, other, side string }{
		{serde.Bytes, serde.String, "this"},
		{serde.String, serde.Bytes, "other"},
		{serde.String, "", "other"},
		{serde.TimeWindowed(serde.String, 10), serde.String, "this"},
	} {
		_, _, err := builtinJoiner(JoinerPair, c.this, c.other)
		var se sideError
		if !errors.As(err, &se) || se.side != c.side || !strings.Contains(err.Error(), "no JSON form") {
			t.Errorf("pair(%s, %s): %v, want a refusal of the %s side", c.this, c.other, err, c.side)
		}
	}
	if _, _, err := builtinJoiner("concat", serde.String, serde.String); err == nil || !strings.Contains(err.Error(), `"concat" is not known`) {
		t.Errorf("unknown built-in: %v", err)
	}
	// this and other read anything, keeping their side's serde.
	for _, c := range []struct{ name, want string }{{JoinerThis, serde.Bytes}, {JoinerOther, serde.Long}} {
		f, out, err := builtinJoiner(c.name, serde.Bytes, serde.Long)
		if err != nil || out != c.want {
			t.Fatalf("%s: %v, %q", c.name, err, out)
		}
		got, _ := f([]byte("t"), nil)
		if c.name == JoinerThis && string(got) != "t" || c.name == JoinerOther && got != nil {
			t.Errorf("%s(t, null) = %q", c.name, got)
		}
	}
}
