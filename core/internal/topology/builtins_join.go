package topology

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Built-in joiners (JoinOp.builtin_joiner): they run in the engine and
// never cross to a host, in every kind of join.
const (
	// JoinerPair joins into the JSON array [this value, other value], each
	// side decoded by its serde (null for a missing side); its results are
	// json.
	JoinerPair = "pair"
	// JoinerThis keeps this side's value (null when missing), in this
	// side's value serde.
	JoinerThis = "this"
	// JoinerOther keeps the other side's value (null when missing), in the
	// other side's value serde.
	JoinerOther = "other"
)

// builtinJoiner returns the ValueJoinerFunc of a built-in joiner over this
// side's and the other side's values, and the serde of its results. An
// error names the side whose serde the joiner cannot read.
func builtinJoiner(name, thisSerde, otherSerde string) (ValueJoinerFunc, string, error) {
	switch name {
	case JoinerThis:
		return func(v, _ []byte) ([]byte, error) { return v, nil }, serde.Or(thisSerde, serde.Bytes), nil
	case JoinerOther:
		return func(_, o []byte) ([]byte, error) { return o, nil }, serde.Or(otherSerde, serde.Bytes), nil
	case JoinerPair:
	default:
		return nil, "", fmt.Errorf("built-in joiner %q is not known (known: pair, this, other)", name)
	}
	thisJSON, err := jsonOf(thisSerde)
	if err != nil {
		return nil, "", sideError{"this", err}
	}
	otherJSON, err := jsonOf(otherSerde)
	if err != nil {
		return nil, "", sideError{"other", err}
	}
	return func(v, o []byte) ([]byte, error) {
		out := make([]byte, 0, len(v)+len(o)+16)
		out = append(out, '[')
		out, err := thisJSON(out, v)
		if err != nil {
			return nil, fmt.Errorf("pair: this value: %w", err)
		}
		out = append(out, ',')
		out, err = otherJSON(out, o)
		if err != nil {
			return nil, fmt.Errorf("pair: other value: %w", err)
		}
		return append(out, ']'), nil
	}, serde.JSON, nil
}

// sideError is builtinJoiner's error about one side's serde.
type sideError struct {
	side string // "this" or "other"
	err  error
}

func (e sideError) Error() string { return e.side + " side: " + e.err.Error() }

// jsonOf returns the function that appends a value of serde name as JSON
// (nil: null): strings as JSON strings, json as is, long, integer and
// double as numbers. Bytes (and windowed serdes) have no JSON form.
func jsonOf(name string) (func(dst, v []byte) ([]byte, error), error) {
	var f func(dst, v []byte) ([]byte, error)
	switch name {
	case serde.String:
		f = func(dst, v []byte) ([]byte, error) {
			if !utf8.Valid(v) {
				return nil, serde.Malformed(fmt.Errorf("string is not valid UTF-8"))
			}
			return appendJSONString(dst, v), nil
		}
	case serde.JSON:
		f = func(dst, v []byte) ([]byte, error) {
			if !json.Valid(v) {
				return nil, serde.Malformed(fmt.Errorf("not valid JSON"))
			}
			return append(dst, bytes.TrimSpace(v)...), nil
		}
	case serde.Long:
		f = func(dst, v []byte) ([]byte, error) {
			n, err := serde.DecodeLong(v)
			if err != nil {
				return nil, err
			}
			return strconv.AppendInt(dst, n, 10), nil
		}
	case serde.Integer:
		f = func(dst, v []byte) ([]byte, error) {
			if len(v) != 4 {
				return nil, serde.Malformed(fmt.Errorf("integer needs 4 bytes, got %d", len(v)))
			}
			return strconv.AppendInt(dst, int64(int32(binary.BigEndian.Uint32(v))), 10), nil
		}
	case serde.Double:
		f = func(dst, v []byte) ([]byte, error) {
			if len(v) != 8 {
				return nil, serde.Malformed(fmt.Errorf("double needs 8 bytes, got %d", len(v)))
			}
			d := math.Float64frombits(binary.BigEndian.Uint64(v))
			if math.IsNaN(d) || math.IsInf(d, 0) {
				return nil, fmt.Errorf("double %v has no JSON form", d)
			}
			b, _ := json.Marshal(d) // JSON's (ES6) number form; never fails for a finite double
			return append(dst, b...), nil
		}
	default:
		return nil, fmt.Errorf("%s values have no JSON form (pair reads string, json, long, integer and double)", serde.Or(name, serde.Bytes))
	}
	return func(dst, v []byte) ([]byte, error) {
		if v == nil {
			return append(dst, "null"...), nil
		}
		return f(dst, v)
	}, nil
}

// appendJSONString appends s as a JSON string, without the HTML escaping
// of encoding/json's default (so that "<" stays "<").
func appendJSONString(dst, s []byte) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s)) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// joiner checks a join's joiner, as function does, and resolves a built-in
// one (fn.Builtin) to its native function over this and other's values; a
// built-in sets *valueSerde (empty: the join's default) to the serde of its
// results, and refuses a given serde (value or materialized value) that
// differs: the engine does not convert. this or other is nil when its
// handle was refused.
func (c *call) joiner(fn *Function, this, other *entry, valueSerde *string, materializedValue string) {
	if fn.Builtin == "" {
		c.function(*fn, reflect.TypeFor[ValueJoinerFunc]())
		return
	}
	if fn.Token != 0 || fn.Native != nil {
		c.invalid("%s names both built-in joiner %s and a joiner function; give one", c.op, fn.Builtin)
		return
	}
	if this == nil || other == nil {
		return
	}
	f, out, err := builtinJoiner(fn.Builtin, this.handle.ValueSerde, other.handle.ValueSerde)
	if err != nil {
		var se sideError
		if !errors.As(err, &se) {
			c.invalid("%s: %v", c.op, err)
			return
		}
		side := this
		if se.side == "other" {
			side = other
		}
		c.invalid("%s: built-in joiner %s cannot read the %s side, handle %d (%s): %v; give it a string, json, long, integer or double value serde, or use a host joiner", c.op, fn.Builtin, se.side, side.handle.ID, side.handle.Node.Name, se.err)
		return
	}
	for _, given := range []struct{ which, name string }{{"value", *valueSerde}, {"materialized value", materializedValue}} {
		if given.name != "" && given.name != out {
			c.invalid("%s: built-in joiner %s makes %s values, but the %s serde is %s; the engine does not convert (give no %s serde, or use a host joiner)", c.op, fn.Builtin, out, given.which, given.name, given.which)
			return
		}
	}
	*valueSerde = out
	*fn = Function{Name: fn.Builtin, Builtin: fn.Builtin, Native: f}
}
