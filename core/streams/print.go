package streams

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Printed is Kafka Streams' Printed: where and how Print writes records.
// The zero value is Printed.toSysOut() with the default label and mapper.
type Printed struct {
	// Writer receives the lines; nil: os.Stdout. Print serialises its
	// writes; a Writer shared with other code must be safe for that.
	Writer io.Writer
	// Label (Printed.withLabel) starts each line, in brackets; empty: the
	// name of the node the stream comes from, as in Kafka Streams.
	Label string
	// Mapper (Printed.withKeyValueMapper) makes the text after the label
	// from the record's key and value bytes; nil: "<key>, <value>", each
	// as text by the stream's serdes (printText).
	Mapper func(key, value []byte) string
}

// Print writes each record as "[<label>]: <key>, <value>" and a newline
// (KStream.print); terminal. Its node is KSTREAM-PRINTER-<n>. Options: Name.
func (s *Stream) Print(p Printed, opts ...Option) error {
	o, err := parse("Print", opts, optName)
	if err != nil {
		return err
	}
	w := p.Writer
	if w == nil {
		w = os.Stdout
	}
	label := p.Label
	if label == "" {
		label = s.h.Node.Name
	}
	mapper := p.Mapper
	if mapper == nil {
		ks, vs := s.h.KeySerde, s.h.ValueSerde
		mapper = func(k, v []byte) string { return printText(ks, k) + ", " + printText(vs, v) }
	}
	var mu sync.Mutex // tasks print concurrently; a line is written whole
	fn := ForeachFunc(func(k, v []byte) error {
		line := "[" + label + "]: " + mapper(k, v) + "\n"
		mu.Lock()
		defer mu.Unlock()
		_, err := io.WriteString(w, line)
		return err
	})
	return s.b.b.Print(s.h.ID, topology.Function{Name: "print", Native: fn}, o.name)
}

// printText is a key or value of serde as Print shows it, as Java's
// String.valueOf shows the deserialized object: null for a Kafka null,
// strings and JSON as they are, numbers in decimal (a double with a
// fraction or ".0", as Java's Double.toString for everyday magnitudes),
// bytes in hex (Java would print an array's identity). A value its serde
// does not decode is shown as its bytes in hex.
func printText(serde string, b []byte) string {
	if b == nil {
		return "null"
	}
	switch serde {
	case Long:
		if len(b) == 8 {
			return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10)
		}
	case Integer:
		if len(b) == 4 {
			return strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(b))), 10)
		}
	case Double:
		if len(b) == 8 {
			f := math.Float64frombits(binary.BigEndian.Uint64(b))
			t := strconv.FormatFloat(f, 'g', -1, 64)
			if !strings.ContainsAny(t, ".eIN") {
				t += ".0"
			}
			return t
		}
	case String, JSON:
		return string(b)
	}
	return fmt.Sprintf("%x", b)
}
