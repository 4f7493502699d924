// Package serde names the serdes the engine knows and checks records against
// them, with Kafka's encodings (a long is 8 bytes big-endian, as Serdes.Long).
package serde

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/avro"
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

var known = []string{Bytes, String, JSON, Long, Integer, Double, Avro, JSONSchema, Protobuf}

// Avro names the Schema Registry Avro serde: records in the Confluent wire
// format (magic byte 0, the schema's 4-byte big-endian id, the Avro
// binary). It is a topic's format, named where records enter (stream,
// table, global_table) or leave (to): in between, the records are json
// (Carried). "avro" alone reads any schema the registry holds and, at a
// sink, writes with the latest schema of the subject; "avro(<schema>)"
// names the schema (Avro JSON): a sink registers it (unless
// auto.register.schemas=false) and writes with it, a source reads each
// record's schema into it (Avro schema resolution).
const Avro = "avro"

// AvroWith names the Avro serde with schema (Avro JSON).
func AvroWith(schema string) string { return Avro + "(" + schema + ")" }

// JSONSchema names the Schema Registry JSON Schema serde: the Confluent
// wire format with a UTF-8 JSON payload, validated against its JSON
// Schema. Like Avro, a topic's format; "json-schema" reads any schema the
// registry holds and, at a sink, writes with the subject's latest one;
// "json-schema(<schema>)" names the sink's schema (a source validates
// against the record's schema, by its id).
const JSONSchema = "json-schema"

// JSONSchemaWith names the JSON Schema serde with schema.
func JSONSchemaWith(schema string) string { return JSONSchema + "(" + schema + ")" }

// ParseRegistry reads a Schema Registry serde name: its format ("avro",
// "json-schema" or "protobuf") and the schema it names (empty: none).
// A protobuf serde's message option (", message=<name>") is not part of
// the schema: ParseProtobuf returns it.
func ParseRegistry(name string) (format, schema string, ok bool) {
	format, schema, _, ok = parseRegistry(name)
	return format, schema, ok
}

// ParseProtobuf reads a Protobuf serde name: "protobuf", "protobuf(<schema>)",
// "protobuf(<schema>, message=<name>)" or "protobuf(message=<name>)". message
// is the message a sink writes (empty: the schema's first), by full name or
// by its name in the schema's package (a nested one as Outer.Inner).
func ParseProtobuf(name string) (schema, message string, ok bool) {
	format, schema, message, ok := parseRegistry(name)
	if !ok || format != Protobuf {
		return "", "", false
	}
	return schema, message, true
}

func parseRegistry(name string) (format, schema, message string, ok bool) {
	for _, f := range []string{Avro, JSONSchema, Protobuf} {
		if name == f {
			return f, "", "", true
		}
		// f, then "(": not strings.CutPrefix(name, f+"("), which builds
		// the prefix string on every call, and Validate calls this for
		// every record a source reads.
		rest, found := strings.CutPrefix(name, f)
		if found && len(rest) > 0 && rest[0] == '(' {
			if schema, found = strings.CutSuffix(rest[1:], ")"); found && strings.TrimSpace(schema) != "" {
				if f == Protobuf {
					schema, message = cutMessage(schema)
				}
				return f, schema, message, true
			}
		}
	}
	return "", "", "", false
}

// cutMessage splits a protobuf serde's argument into the schema and the
// name of a trailing "message=<name>" (after a comma, or alone). A .proto
// file cannot end that way: its last token is "}" or ";". The schema is
// kept as given up to the comma (its final newline too: a sink registers
// the text itself).
func cutMessage(arg string) (schema, message string) {
	m := messageOption.FindStringSubmatchIndex(arg)
	if m == nil {
		return arg, ""
	}
	return strings.TrimRight(arg[m[2]:m[3]], " \t"), arg[m[4]:m[5]]
}

// messageOption matches a protobuf serde argument ending in a message
// option: the schema (group 1), then the name (group 2).
var messageOption = regexp.MustCompile(`(?s)^(.*?)(?:,|^)[ \t\n]*message[ \t]*=[ \t]*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)[ \t\n]*$`)

// ProtobufWithMessage names the Protobuf serde with schema (.proto text;
// empty: the subject's latest) writing message.
func ProtobufWithMessage(schema, message string) string {
	if schema == "" {
		return Protobuf + "(message=" + message + ")"
	}
	return Protobuf + "(" + schema + ", message=" + message + ")"
}

// CompileJSONSchema compiles a JSON Schema document (no remote
// references are loaded).
func CompileJSONSchema(text string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("schema.json")
}

// IsRegistry reports whether name is a Schema Registry serde.
func IsRegistry(name string) bool {
	_, _, ok := ParseRegistry(name)
	return ok
}

// Carried is the serde of the records a topic of serde name carries
// inside the topology: json for a Schema Registry serde (decoded at the
// source, encoded at the sink), name itself otherwise.
func Carried(name string) string {
	if IsRegistry(name) {
		return JSON
	}
	return name
}

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
	if format, schema, ok := ParseRegistry(name); ok {
		if schema == "" {
			return nil
		}
		if format == JSONSchema {
			if _, err := CompileJSONSchema(schema); err != nil {
				return fmt.Errorf("serde json-schema(...): the schema does not compile as a JSON Schema: %v", err)
			}
			return nil
		}
		if format == Protobuf {
			fd, err := CompileProtobuf(schema, nil)
			if err != nil {
				return fmt.Errorf("serde protobuf(...): the schema does not compile as a .proto file: %v", err)
			}
			if _, message, _ := ParseProtobuf(name); message != "" {
				if _, err := ProtobufMessage(fd, message); err != nil {
					return fmt.Errorf("serde protobuf(..., message=%s): %v", message, err)
				}
			}
			return nil
		}
		if _, err := avro.Parse(schema); err != nil {
			return fmt.Errorf("serde avro(...): the schema does not parse as Avro: %v", err)
		}
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
// Sources call it for every record they read: the plain serdes are told
// apart first, by a switch, before the names that need parsing.
func Validate(name string, b []byte) error {
	switch name {
	case Long, Double:
		if len(b) != 8 {
			return fmt.Errorf("%s needs 8 bytes, got %d", name, len(b))
		}
		return nil
	case Integer:
		if len(b) != 4 {
			return fmt.Errorf("integer needs 4 bytes, got %d", len(b))
		}
		return nil
	case String:
		if !utf8.Valid(b) {
			return fmt.Errorf("not valid UTF-8")
		}
		return nil
	case JSON:
		if !json.Valid(b) {
			return fmt.Errorf("not valid JSON")
		}
		return nil
	}
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
	if IsRegistry(name) {
		if len(b) < 5 || b[0] != 0 {
			return fmt.Errorf("not in the Confluent wire format (magic byte 0 and a 4-byte schema id, then the value)")
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
