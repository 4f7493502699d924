// Package serde names the serdes the engine knows and checks records against
// them, with Kafka's encodings (a long is 8 bytes big-endian, as Serdes.Long).
package serde

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names of the serdes, as they appear in the protocol.
const (
	Bytes   = "bytes"
	String  = "string"
	JSON    = "json"
	Long    = "long"
	Integer = "integer"
	Double  = "double"
)

var known = []string{Bytes, String, JSON, Long, Integer, Double}

// Check reports whether name is a known serde; the empty name is known (it
// means "inherit"). The error names the serde and lists the known ones.
func Check(name string) error {
	if windowedDepth(name) > MaxWindowedDepth {
		return fmt.Errorf("serde %.80q nests windowed serdes more than %d deep", name, MaxWindowedDepth)
	}
	return check(name)
}

// MaxWindowedDepth bounds how deeply windowed serdes nest (a windowed key of
// a windowed key ...): Check refuses a name nesting deeper, so a crafted
// name cannot make Check and Validate recurse without bound.
const MaxWindowedDepth = 4

// windowedDepth counts the windowed serdes name nests, without recursion,
// up to MaxWindowedDepth+1.
func windowedDepth(name string) int {
	d := 0
	for d <= MaxWindowedDepth {
		inner, _, _, ok := ParseWindowed(name)
		if !ok {
			return d
		}
		name, d = inner, d+1
	}
	return d
}

func check(name string) error {
	if name == "" {
		return nil
	}
	if inner, _, _, ok := ParseWindowed(name); ok {
		if err := check(inner); err != nil || inner == "" {
			return fmt.Errorf("windowed serde %q: inner serde %q is not known (known: %s)", name, inner, strings.Join(known, ", "))
		}
		return nil
	}
	for _, k := range known {
		if k == name {
			return nil
		}
	}
	return fmt.Errorf("serde %q is not known (known: %s)", name, strings.Join(known, ", "))
}

// Or returns name, or fallback when name is empty.
func Or(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}

// Windowed keys, as Kafka Streams' windowed serdes encode them: a time
// window's key is the inner key then the window start (8 bytes, big-endian
// epoch ms; TimeWindowedSerializer); a session's is the inner key, then its
// end, then its start (SessionWindowedSerializer). Their serde names carry
// the inner serde and, for time windows, the size that gives the end.

// TimeWindowed names the serde of time-windowed keys of serde inner.
func TimeWindowed(inner string, size int64) string {
	return "windowed(" + inner + "," + strconv.FormatInt(size, 10) + ")"
}

// SessionWindowed names the serde of session-windowed keys of serde inner.
func SessionWindowed(inner string) string { return "session-windowed(" + inner + ")" }

// ParseWindowed reads a windowed serde name: the inner serde, the window
// size (time windows), and whether it is session-windowed.
func ParseWindowed(name string) (inner string, size int64, session, ok bool) {
	if rest, found := strings.CutPrefix(name, "session-windowed("); found {
		inner, ok = strings.CutSuffix(rest, ")")
		return inner, 0, true, ok
	}
	rest, found := strings.CutPrefix(name, "windowed(")
	if !found {
		return "", 0, false, false
	}
	rest, found = strings.CutSuffix(rest, ")")
	i := strings.LastIndexByte(rest, ',')
	if !found || i < 0 {
		return "", 0, false, false
	}
	size, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || size <= 0 {
		return "", 0, false, false
	}
	return rest[:i], size, false, true
}

// AppendTimeWindowed appends the key of the time window starting at start.
func AppendTimeWindowed(dst, key []byte, start int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, key...), uint64(start))
}

// AppendSessionWindowed appends the key of the session [start, end].
func AppendSessionWindowed(dst, key []byte, start, end int64) []byte {
	dst = binary.BigEndian.AppendUint64(append(dst, key...), uint64(end))
	return binary.BigEndian.AppendUint64(dst, uint64(start))
}

// SplitTimeWindowed reads a time-windowed key: the inner key and the start.
func SplitTimeWindowed(b []byte) (key []byte, start int64, err error) {
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("a time-windowed key needs at least 8 bytes, got %d", len(b))
	}
	n := len(b) - 8
	return b[:n], int64(binary.BigEndian.Uint64(b[n:])), nil
}

// SplitSessionWindowed reads a session-windowed key: the inner key, the
// session's start and end.
func SplitSessionWindowed(b []byte) (key []byte, start, end int64, err error) {
	if len(b) < 16 {
		return nil, 0, 0, fmt.Errorf("a session-windowed key needs at least 16 bytes, got %d", len(b))
	}
	n := len(b) - 16
	return b[:n], int64(binary.BigEndian.Uint64(b[n+8:])), int64(binary.BigEndian.Uint64(b[n : n+8])), nil
}

// Validate reports why b (not null) does not decode as serde name, or nil.
func Validate(name string, b []byte) error {
	if inner, _, session, ok := ParseWindowed(name); ok {
		var key []byte
		var err error
		if session {
			key, _, _, err = SplitSessionWindowed(b)
		} else {
			key, _, err = SplitTimeWindowed(b)
		}
		if err != nil {
			return err
		}
		return Validate(inner, key)
	}
	switch name {
	case Long, Double:
		if len(b) != 8 {
			return fmt.Errorf("%s needs 8 bytes, got %d", name, len(b))
		}
	case Integer:
		if len(b) != 4 {
			return fmt.Errorf("integer needs 4 bytes, got %d", len(b))
		}
	case String:
		if !utf8.Valid(b) {
			return fmt.Errorf("not valid UTF-8")
		}
	case JSON:
		if !json.Valid(b) {
			return fmt.Errorf("not valid JSON")
		}
	}
	return nil
}

// Checks reports whether Validate does anything for name, so that callers can
// skip the per-record call for bytes.
func Checks(name string) bool { return name != "" && name != Bytes }

// AppendLong appends v as Kafka's Serdes.Long: 8 bytes, big-endian.
func AppendLong(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// ErrMalformed marks an error of bytes that do not decode with their serde
// (a deserialization failure, to the engine's exception handlers):
// errors.Is(err, ErrMalformed) holds for the errors Malformed returns.
var ErrMalformed = errors.New("malformed")

// Malformed marks err as one of bytes that do not decode, its text as is.
func Malformed(err error) error { return malformed{err} }

type malformed struct{ error }

func (m malformed) Unwrap() error      { return m.error }
func (malformed) Is(target error) bool { return target == ErrMalformed }

// DecodeLong decodes Kafka's Serdes.Long.
func DecodeLong(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, Malformed(fmt.Errorf("long needs 8 bytes, got %d", len(b)))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
