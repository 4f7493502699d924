// Package registry is the Schema Registry serdes: records in the Confluent
// wire format (magic byte 0, the schema's 4-byte big-endian id, then the
// value) whose schemas a Confluent-compatible registry holds. The engine
// decodes them to JSON where they enter the topology and encodes JSON back
// where they leave it (docs/design/schema-registry.md), so host functions
// see plain dicts and objects.
//
// The client is franz-go's pkg/sr; Avro is github.com/twmb/avro; Protobuf
// schemas compile with github.com/bufbuild/protocompile and their records
// are dynamic messages (google.golang.org/protobuf's dynamicpb, protojson).
package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Strategy is a subject name strategy: which subject a topic's schemas are
// registered under (Confluent's key.subject.name.strategy and
// value.subject.name.strategy).
type Strategy int

const (
	// TopicName: "<topic>-key" / "<topic>-value" (the default).
	TopicName Strategy = iota
	// RecordName: the record's full name.
	RecordName
	// TopicRecordName: "<topic>-<record's full name>".
	TopicRecordName
)

var strategyNames = []string{"TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"}

func (s Strategy) String() string { return strategyNames[s] }

// ParseStrategy reads a strategy by its class name, with or without
// Confluent's package (io.confluent.kafka.serializers.subject.).
func ParseStrategy(v string) (Strategy, error) {
	short := v[strings.LastIndexByte(v, '.')+1:]
	for i, n := range strategyNames {
		if short == n {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("want TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy, got %q", v)
}

// Subject is the subject of a topic's keys (key) or values under s; record
// is the full name of the schema's record (RecordName and TopicRecordName
// need one).
func (s Strategy) Subject(topic string, key bool, record string) (string, error) {
	switch s {
	case RecordName, TopicRecordName:
		if record == "" {
			return "", fmt.Errorf("%s names subjects after a record, and the schema is not a named record (Avro), has no title (JSON Schema) or no message (Protobuf)", s)
		}
		if s == RecordName {
			return record, nil
		}
		return topic + "-" + record, nil
	}
	if key {
		return topic + "-key", nil
	}
	return topic + "-value", nil
}

// Config configures the serdes: the registry and how subjects are named.
type Config struct {
	// URLs: schema.registry.url (comma-separated in the config).
	URLs []string
	// AutoRegister: auto.register.schemas (default true). When false, a
	// sink's schema must be registered under its subject already.
	AutoRegister bool
	// KeyStrategy, ValueStrategy: key.subject.name.strategy,
	// value.subject.name.strategy (default TopicName).
	KeyStrategy, ValueStrategy Strategy
	// User, Password: basic.auth.user.info ("user:password").
	User, Password string
	// Timeout bounds one request to the registry; 0 means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds one request to the registry.
const DefaultTimeout = 15 * time.Second

// Serdes encodes and decodes one application's records against its
// registry, caching schemas by id and the writers' ids by subject. Safe for
// concurrent use.
type Serdes struct {
	cfg Config
	cl  *sr.Client

	mu sync.Mutex // guards the maps
	// byID: the schemas read so far, by id (a registry never changes the
	// schema of an id).
	byID map[int]*schema
	// readers: a writer schema resolved into a source's reader schema, by
	// writer id and reader schema text.
	readers map[readerKey]*avro.Schema
	// protoReaders: a source's Protobuf schema, compiled, by its text.
	protoReaders map[string]protoreflect.FileDescriptor
	// writers: a sink's schema and id, by serde name, topic and key/value;
	// an incompatible schema is kept as its error.
	writers map[writerKey]*writer
}

type readerKey struct {
	id     int
	reader string
}

type writerKey struct {
	name, topic string
	key         bool
}

type writer struct {
	id      int
	subject string
	schema  *schema
	// message is the message a Protobuf sink writes (its schema's first
	// unless the serde names one: protobuf(<schema>, message=<name>)).
	message protoreflect.MessageDescriptor
	err     error // the registry refused the schema (kept: it will again)
}

// schema is a parsed schema of one format: Avro, JSON Schema or Protobuf.
type schema struct {
	avro  *avro.Schema
	json  *jsonschema.Schema
	proto protoreflect.FileDescriptor
	// name is what the record strategies name a subject after: an Avro
	// record's full name, a JSON Schema's title, a Protobuf schema's first
	// message's full name (the message a sink writes).
	name string
}

// format is the serde format of sch.
func (sch *schema) format() string {
	switch {
	case sch.json != nil:
		return serde.JSONSchema
	case sch.proto != nil:
		return serde.Protobuf
	}
	return serde.Avro
}

// parse parses text as a schema of format (serde.Avro, serde.JSONSchema,
// serde.Protobuf); imports are a Protobuf schema's references, by name.
func parse(format, text string, imports map[string]string) (*schema, error) {
	if format == serde.Protobuf {
		fd, err := serde.CompileProtobuf(text, imports)
		if err != nil {
			return nil, fmt.Errorf("does not compile as a .proto file: %w", err)
		}
		return &schema{proto: fd, name: string(fd.Messages().Get(0).FullName())}, nil
	}
	if format == serde.JSONSchema {
		js, err := serde.CompileJSONSchema(text)
		if err != nil {
			return nil, fmt.Errorf("does not compile as a JSON Schema: %w", err)
		}
		var doc struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal([]byte(text), &doc)
		return &schema{json: js, name: doc.Title}, nil
	}
	a, err := avro.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("does not parse as Avro: %w", err)
	}
	return &schema{avro: a, name: recordName(a)}, nil
}

// srType is the registry's schema type of format.
func srType(format string) sr.SchemaType {
	switch format {
	case serde.JSONSchema:
		return sr.TypeJSON
	case serde.Protobuf:
		return sr.TypeProtobuf
	}
	return sr.TypeAvro
}

// New returns the serdes of cfg; no request is made until a record needs one.
func New(cfg Config) (*Serdes, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("schema registry: schema.registry.url is not set")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URLs...), sr.HTTPClient(&http.Client{Timeout: timeout}), sr.UserAgent("polystreams")}
	if cfg.User != "" || cfg.Password != "" {
		opts = append(opts, sr.BasicAuth(cfg.User, cfg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Serdes{cfg: cfg, cl: cl, byID: map[int]*schema{}, readers: map[readerKey]*avro.Schema{}, protoReaders: map[string]protoreflect.FileDescriptor{}, writers: map[writerKey]*writer{}}, nil
}

// ErrUnavailable marks an error of a registry that did not answer (or
// answered with a server error): not the record's fault, so the engine
// fails the batch whatever its error policy says, rather than skip records
// while the registry is down.
var ErrUnavailable = errors.New("schema registry unavailable")

// ErrIncompatible marks a schema the registry refused under its subject's
// compatibility level (HTTP 409).
var ErrIncompatible = errors.New("incompatible schema")

// Error is a record that could not be encoded or decoded: it names the
// topic, the subject and the schema id (0: not known), and wraps what went
// wrong (serde.ErrMalformed for bytes or JSON that do not fit, ErrUnavailable,
// ErrIncompatible).
type Error struct {
	Topic   string
	Subject string
	ID      int
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("schema registry: topic ")
	b.WriteString(e.Topic)
	if e.Subject != "" {
		b.WriteString(", subject ")
		b.WriteString(e.Subject)
	}
	if e.ID != 0 {
		fmt.Fprintf(&b, ", schema id %d", e.ID)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Decode turns a record's key (key) or value of topic, written in serde
// name's wire format, into JSON appended to dst.
func (s *Serdes) Decode(ctx context.Context, dst []byte, name, topic string, key bool, b []byte) ([]byte, error) {
	format, readerText, ok := serde.ParseRegistry(name)
	if !ok {
		return nil, fmt.Errorf("schema registry: serde %q is not a Schema Registry serde", name)
	}
	if len(b) < 5 || b[0] != 0 {
		first := "no byte"
		if len(b) > 0 {
			first = fmt.Sprintf("first byte 0x%02x", b[0])
		}
		return nil, &Error{Topic: topic, Err: serde.Malformed(fmt.Errorf("%d bytes are not in the Confluent wire format (%s; want magic byte 0 and a 4-byte schema id)", len(b), first))}
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	sch, err := s.schemaByID(ctx, id, format)
	if err != nil {
		return nil, s.decodeError(topic, key, id, err)
	}
	if format == serde.JSONSchema {
		if err := validate(sch.json, b[5:]); err != nil {
			return nil, s.decodeError(topic, key, id, serde.Malformed(err))
		}
		return append(dst, b[5:]...), nil
	}
	if format == serde.Protobuf {
		var reader protoreflect.FileDescriptor
		if readerText != "" {
			if reader, err = s.protoReader(readerText); err != nil {
				return nil, s.decodeError(topic, key, id, serde.Malformed(err))
			}
		}
		out, err := decodeProtobuf(dst, sch.proto, reader, b[5:])
		if err != nil {
			return nil, s.decodeError(topic, key, id, serde.Malformed(err))
		}
		return out, nil
	}
	a := sch.avro
	if readerText != "" {
		if a, err = s.resolve(id, a, readerText); err != nil {
			return nil, s.decodeError(topic, key, id, serde.Malformed(err))
		}
	}
	var v any
	rest, err := a.Decode(b[5:], &v)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes left after the value", len(rest))
	}
	if err != nil {
		return nil, s.decodeError(topic, key, id, serde.Malformed(fmt.Errorf("the value does not decode with the schema: %w", err)))
	}
	out, err := a.AppendEncodeJSON(dst, v)
	if err != nil {
		return nil, s.decodeError(topic, key, id, serde.Malformed(fmt.Errorf("the value has no JSON form: %w", err)))
	}
	return out, nil
}

// validate checks that js is JSON that sch accepts.
func validate(sch *jsonschema.Schema, js []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return fmt.Errorf("the value is not JSON: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the value does not validate against the schema: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// decodeError names the subject the topic's strategy gives when it can
// (TopicNameStrategy), as the record's schema id does not say.
func (s *Serdes) decodeError(topic string, key bool, id int, err error) error {
	subject, _ := s.strategy(key).Subject(topic, key, "")
	return &Error{Topic: topic, Subject: subject, ID: id, Err: err}
}

func (s *Serdes) strategy(key bool) Strategy {
	if key {
		return s.cfg.KeyStrategy
	}
	return s.cfg.ValueStrategy
}

// schemaByID reads schema id, once; it must be of format.
func (s *Serdes) schemaByID(ctx context.Context, id int, format string) (*schema, error) {
	s.mu.Lock()
	sch := s.byID[id]
	s.mu.Unlock()
	if sch == nil {
		got, err := s.cl.SchemaByID(ctx, id)
		if err != nil {
			if notFound(err) {
				return nil, serde.Malformed(fmt.Errorf("schema id %d is not registered (%v)", id, err))
			}
			return nil, unavailable(err)
		}
		f := serde.Avro
		var imports map[string]string
		switch got.Type {
		case sr.TypeAvro:
		case sr.TypeJSON:
			f = serde.JSONSchema
		case sr.TypeProtobuf:
			f = serde.Protobuf
			if imports, err = s.references(ctx, got.References); err != nil {
				return nil, fmt.Errorf("schema id %d: %w", id, err)
			}
		default:
			return nil, serde.Malformed(fmt.Errorf("schema id %d is a %s schema: the serde reads %s", id, got.Type, format))
		}
		if sch, err = parse(f, got.Schema, imports); err != nil {
			return nil, serde.Malformed(fmt.Errorf("schema id %d %w", id, err))
		}
		s.mu.Lock()
		s.byID[id] = sch
		s.mu.Unlock()
	}
	if have := sch.format(); have != format {
		article := "a"
		if have == serde.Avro {
			article = "an"
		}
		return nil, serde.Malformed(fmt.Errorf("schema id %d is %s %s schema: the serde reads %s", id, article, have, format))
	}
	return sch, nil
}

// resolve is writer schema id read into the reader schema text.
func (s *Serdes) resolve(id int, w *avro.Schema, text string) (*avro.Schema, error) {
	k := readerKey{id, text}
	s.mu.Lock()
	r := s.readers[k]
	s.mu.Unlock()
	if r != nil {
		return r, nil
	}
	reader, err := avro.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("the reader schema does not parse as Avro: %w", err)
	}
	if r, err = avro.Resolve(w, reader); err != nil {
		return nil, fmt.Errorf("the record's schema (id %d) cannot be read into the source's schema: %w", id, err)
	}
	s.mu.Lock()
	s.readers[k] = r
	s.mu.Unlock()
	return r, nil
}

// protoReader is a source's Protobuf schema text, compiled once.
func (s *Serdes) protoReader(text string) (protoreflect.FileDescriptor, error) {
	s.mu.Lock()
	fd := s.protoReaders[text]
	s.mu.Unlock()
	if fd != nil {
		return fd, nil
	}
	fd, err := serde.CompileProtobuf(text, nil)
	if err != nil {
		return nil, fmt.Errorf("the source's schema does not compile as a .proto file: %w", err)
	}
	s.mu.Lock()
	s.protoReaders[text] = fd
	s.mu.Unlock()
	return fd, nil
}

// Encode turns js, the JSON of a record's key (key) or value, into serde
// name's wire format for topic, appended to dst: the schema name gives is
// registered under the topic's subject (or looked up, when
// auto.register.schemas is false); "avro" alone writes with the subject's
// latest schema.
func (s *Serdes) Encode(ctx context.Context, dst []byte, name, topic string, key bool, js []byte) ([]byte, error) {
	w, err := s.writer(ctx, name, topic, key)
	if err != nil {
		return nil, err
	}
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(w.id))
	if w.schema.json != nil {
		if err := validate(w.schema.json, js); err != nil {
			return nil, &Error{Topic: topic, Subject: w.subject, ID: w.id, Err: serde.Malformed(err)}
		}
		return append(dst, js...), nil
	}
	if w.schema.proto != nil {
		out, err := encodeProtobuf(dst, w.message, js)
		if err != nil {
			return nil, &Error{Topic: topic, Subject: w.subject, ID: w.id, Err: serde.Malformed(err)}
		}
		return out, nil
	}
	var v any
	if err := w.schema.avro.DecodeJSON(js, &v); err != nil {
		return nil, &Error{Topic: topic, Subject: w.subject, ID: w.id, Err: serde.Malformed(fmt.Errorf("the JSON does not fit the schema: %w", err))}
	}
	out, err := w.schema.avro.AppendEncode(dst, v)
	if err != nil {
		return nil, &Error{Topic: topic, Subject: w.subject, ID: w.id, Err: serde.Malformed(fmt.Errorf("the value does not encode with the schema: %w", err))}
	}
	return out, nil
}

// writer is the schema and id a sink of serde name writes topic's keys
// (key) or values with, registered or looked up once.
func (s *Serdes) writer(ctx context.Context, name, topic string, key bool) (*writer, error) {
	k := writerKey{name, topic, key}
	s.mu.Lock()
	w := s.writers[k]
	s.mu.Unlock()
	if w != nil {
		if w.err != nil {
			return nil, w.err
		}
		return w, nil
	}
	w, err := s.newWriter(ctx, name, topic, key)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err // asked again with the next record
		}
		w = &writer{err: err}
	}
	s.mu.Lock()
	s.writers[k] = w
	s.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

func (s *Serdes) newWriter(ctx context.Context, name, topic string, key bool) (*writer, error) {
	format, text, ok := serde.ParseRegistry(name)
	if !ok {
		return nil, fmt.Errorf("schema registry: serde %q is not a Schema Registry serde", name)
	}
	strategy := s.strategy(key)
	if text == "" {
		// The subject's latest schema (Confluent's use.latest.version).
		subject, err := strategy.Subject(topic, key, "")
		if err != nil {
			return nil, &Error{Topic: topic, Err: fmt.Errorf("serde %s without a schema writes with its subject's latest schema, which %s cannot name without one: use %s(<schema>)", format, strategy, format)}
		}
		got, err := s.cl.SchemaByVersion(ctx, subject, -1)
		if err != nil {
			if notFound(err) {
				return nil, &Error{Topic: topic, Subject: subject, Err: fmt.Errorf("the subject has no schema to write with (%v): register one, or name it with %s(<schema>)", err, format)}
			}
			return nil, &Error{Topic: topic, Subject: subject, Err: unavailable(err)}
		}
		if got.Schema.Type != srType(format) {
			return nil, &Error{Topic: topic, Subject: subject, ID: got.ID, Err: fmt.Errorf("the subject's latest schema is a %s schema: the serde writes %s", got.Schema.Type, format)}
		}
		imports, err := s.references(ctx, got.Schema.References)
		if err != nil {
			return nil, &Error{Topic: topic, Subject: subject, ID: got.ID, Err: err}
		}
		sch, err := parse(format, got.Schema.Schema, imports)
		if err != nil {
			return nil, &Error{Topic: topic, Subject: subject, ID: got.ID, Err: fmt.Errorf("the subject's latest schema %w", err)}
		}
		w := &writer{id: got.ID, subject: subject, schema: sch}
		if err := w.pickMessage(name); err != nil {
			return nil, &Error{Topic: topic, Subject: subject, ID: got.ID, Err: fmt.Errorf("the subject's latest schema: %w", err)}
		}
		return w, nil
	}
	sch, err := parse(format, text, nil)
	if err != nil {
		return nil, &Error{Topic: topic, Err: fmt.Errorf("the sink's schema %w", err)}
	}
	picked := &writer{schema: sch}
	if err := picked.pickMessage(name); err != nil {
		return nil, &Error{Topic: topic, Err: fmt.Errorf("the sink's schema: %w", err)}
	}
	subject, err := strategy.Subject(topic, key, sch.name)
	if err != nil {
		return nil, &Error{Topic: topic, Err: err}
	}
	in := sr.Schema{Schema: text, Type: srType(format)}
	var id int
	if s.cfg.AutoRegister {
		id, err = s.cl.RegisterSchema(ctx, subject, in, -1, -1)
	} else {
		var got sr.SubjectSchema
		if got, err = s.cl.LookupSchema(ctx, subject, in); err == nil {
			id = got.ID
		}
	}
	switch {
	case err == nil:
		return &writer{id: id, subject: subject, schema: sch, message: picked.message}, nil
	case status(err) == http.StatusConflict:
		return nil, &Error{Topic: topic, Subject: subject, Err: fmt.Errorf("%w: the registry refused the sink's schema under the subject's compatibility level: %v", ErrIncompatible, err)}
	case notFound(err) && !s.cfg.AutoRegister:
		return nil, &Error{Topic: topic, Subject: subject, Err: fmt.Errorf("the sink's schema is not registered under the subject, and auto.register.schemas is false (%v)", err)}
	case status(err) >= 400 && status(err) < 500:
		return nil, &Error{Topic: topic, Subject: subject, Err: fmt.Errorf("the registry refused the sink's schema: %v", err)}
	}
	return nil, &Error{Topic: topic, Subject: subject, Err: unavailable(err)}
}

// pickMessage sets the message a Protobuf writer writes: the one serde
// name names, else its schema's first; a record strategy names the
// subject after it.
func (w *writer) pickMessage(name string) error {
	if w.schema.proto == nil {
		return nil
	}
	w.message = w.schema.proto.Messages().Get(0)
	if _, message, _ := serde.ParseProtobuf(name); message != "" {
		m, err := serde.ProtobufMessage(w.schema.proto, message)
		if err != nil {
			return err
		}
		w.message = m
	}
	w.schema.name = string(w.message.FullName())
	return nil
}

// recordName is the full name of the schema's record, or "".
func recordName(sch *avro.Schema) string {
	if n := sch.Root(); n.Type == "record" {
		if n.Namespace != "" && !strings.Contains(n.Name, ".") {
			return n.Namespace + "." + n.Name
		}
		return n.Name
	}
	return ""
}

// status is the HTTP status of a registry's answer, or 0 when none came.
func status(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func notFound(err error) bool { return status(err) == http.StatusNotFound }

// unavailable wraps err, an answer that was not a 4xx, as ErrUnavailable.
func unavailable(err error) error {
	var ne net.Error
	what := "no answer"
	if code := status(err); code != 0 {
		what = fmt.Sprintf("HTTP %d", code)
	} else if errors.As(err, &ne) && ne.Timeout() {
		what = "timed out"
	}
	return fmt.Errorf("%w (%s): %v", ErrUnavailable, what, err)
}
