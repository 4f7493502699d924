package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// The serdes' natural JSON forms (conformance/README.md): string -> a JSON
// string, json -> any JSON, long and integer -> a JSON integer, double -> a
// JSON number, bytes -> a base64 JSON string; JSON null is a Kafka null.

// encode turns a natural JSON value into a record's bytes (nil for null).
func encode(serde string, raw json.RawMessage) ([]byte, error) {
	v, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	return encodeValue(serde, v)
}

// parseJSON decodes with numbers as int64 when integral, else float64; an
// absent value (nil raw) is null.
func parseJSON(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}

// encodeValue turns a natural value (string, int64, float64, []byte, JSON
// value, nil) into bytes as serde encodes it.
func encodeValue(serde string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if inner, size, session, ok := parseWindowed(serde); ok {
		return encodeWindowed(serde, inner, size, session, v)
	}
	switch serde {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("string serde: want a string, got %s", describeValue(v))
		}
		return []byte(s), nil
	case "json":
		return json.Marshal(v)
	case "long", "integer":
		var i int64
		switch x := v.(type) {
		case int64:
			i = x
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<62 {
				return nil, fmt.Errorf("%s serde: %v is not an integer", serde, x)
			}
			i = int64(x)
		default:
			return nil, fmt.Errorf("%s serde: want an integer, got %s", serde, describeValue(v))
		}
		if serde == "integer" {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return nil, fmt.Errorf("integer serde: %d does not fit in 32 bits", i)
			}
			return binary.BigEndian.AppendUint32(nil, uint32(int32(i))), nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(i)), nil
	case "double":
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case float64:
			f = x
		default:
			return nil, fmt.Errorf("double serde: want a number, got %s", describeValue(v))
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case "bytes":
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("bytes serde: want base64: %v", err)
			}
			return b, nil
		}
		return nil, fmt.Errorf("bytes serde: want base64 text, got %s", describeValue(v))
	}
	return nil, fmt.Errorf("serde %q is not known", serde)
}

// decode turns a record's bytes into the natural value (nil for null).
func decode(serde string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	if inner, size, session, ok := parseWindowed(serde); ok {
		return decodeWindowed(serde, inner, size, session, b)
	}
	switch serde {
	case "string":
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("string serde: not UTF-8: %x", b)
		}
		return string(b), nil
	case "json":
		v, err := parseJSON(b)
		if err != nil {
			return nil, fmt.Errorf("json serde: %v: %q", err, b)
		}
		return v, nil
	case "long":
		if len(b) != 8 {
			return nil, fmt.Errorf("long serde: want 8 bytes, got %d (%x)", len(b), b)
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case "integer":
		if len(b) != 4 {
			return nil, fmt.Errorf("integer serde: want 4 bytes, got %d (%x)", len(b), b)
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case "double":
		if len(b) != 8 {
			return nil, fmt.Errorf("double serde: want 8 bytes, got %d (%x)", len(b), b)
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case "bytes", "":
		return b, nil
	}
	return nil, fmt.Errorf("serde %q is not known", serde)
}

// canon is the text a record's key or value is compared and shown as:
// canonical JSON of its natural value (sorted object keys; an integral
// number prints as an integer, so that a double 2.0 equals 2), or, for
// bytes that do not decode, why.
func canon(serde string, b []byte) string {
	v, err := decode(serde, b)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	if bs, ok := v.([]byte); ok {
		v = base64.StdEncoding.EncodeToString(bs)
	}
	return canonJSON(v)
}

func canonJSON(v any) string {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(canonJSON(e))
		}
		b.WriteByte(']')
		return b.String()
	case map[string]any:
		var b bytes.Buffer
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			b.WriteString(canonJSON(x[k]))
		}
		b.WriteByte('}')
		return b.String()
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func describeValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case []byte:
		return "bytes"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// Windowed keys (Kafka Streams' WindowedSerdes): windowed(<inner>,<size>)
// is the inner key's bytes and the window start, 8 bytes big-endian (the
// end is start + size); session-windowed(<inner>) the inner key's bytes,
// the end and the start. Their natural form is {"key": <inner natural
// value>, "start": <ms>, "end": <ms>}.
var windowedName = regexp.MustCompile(`^(?:windowed\(([a-z]+),([0-9]+)\)|session-windowed\(([a-z]+)\))$`)

func parseWindowed(serde string) (inner string, size int64, session, ok bool) {
	m := windowedName.FindStringSubmatch(serde)
	if m == nil {
		return "", 0, false, false
	}
	if m[3] != "" {
		return m[3], 0, true, true
	}
	size, err := strconv.ParseInt(m[2], 10, 64)
	return m[1], size, false, err == nil
}

func encodeWindowed(serde, inner string, size int64, session bool, v any) ([]byte, error) {
	o, ok := v.(map[string]any)
	if !ok || len(o) != 3 {
		return nil, fmt.Errorf("%s serde: want {\"key\", \"start\", \"end\"}, got %s", serde, describeValue(v))
	}
	start, okS := o["start"].(int64)
	end, okE := o["end"].(int64)
	if !okS || !okE {
		return nil, fmt.Errorf("%s serde: start and end must be integers (epoch ms)", serde)
	}
	if !session && end != start+size {
		return nil, fmt.Errorf("%s serde: a window starting at %d ends at %d, not %d", serde, start, start+size, end)
	}
	k, err := encodeValue(inner, o["key"])
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("%s serde: the key must not be null", serde)
	}
	if session {
		k = binary.BigEndian.AppendUint64(k, uint64(end))
	}
	return binary.BigEndian.AppendUint64(k, uint64(start)), nil
}

func decodeWindowed(serde, inner string, size int64, session bool, b []byte) (any, error) {
	tail := 8
	if session {
		tail = 16
	}
	if len(b) < tail {
		return nil, fmt.Errorf("%s serde: want at least %d bytes, got %d (%x)", serde, tail, len(b), b)
	}
	k, err := decode(inner, b[:len(b)-tail])
	if err != nil {
		return nil, err
	}
	start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
	end := start + size
	if session {
		end = int64(binary.BigEndian.Uint64(b[len(b)-16:]))
	}
	if bs, ok := k.([]byte); ok {
		k = base64.StdEncoding.EncodeToString(bs)
	}
	return map[string]any{"key": k, "start": start, "end": end}, nil
}
