// Package serde names the serdes the engine knows and checks records against
// them, with Kafka's encodings (a long is 8 bytes big-endian, as Serdes.Long).
package serde

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
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
	if name == "" {
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

// Validate reports why b (not null) does not decode as serde name, or nil.
func Validate(name string, b []byte) error {
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

// DecodeLong decodes Kafka's Serdes.Long.
func DecodeLong(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("long needs 8 bytes, got %d", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
