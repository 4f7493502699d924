package registry

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/polystreams/polystreams/core/internal/serde"
)

const orderProto = `syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  string customer = 2;
  string item = 3;
  int32 quantity = 4;
  double price = 5;
  optional string note = 6;
  repeated string tags = 7;
  message Line {
    string sku = 1;
    message Detail { string text = 1; }
  }
}

message Refund {
  int64 order_id = 1;
  double amount = 2;
}
`

const orderProtoJSON = `{"id":"1234567","customer":"c-0042","item":"fountain pen","quantity":3,"price":12.5,"note":"gift wrap","tags":["a","bb"]}`

func newSerdes(t testing.TB, reg *srfake.Registry) *Serdes {
	t.Helper()
	s, err := New(Config{URLs: []string{reg.URL()}, AutoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testSerdes is an in-process registry, closed when the test ends, and
// serdes that register schemas in it (newSerdes).
func testSerdes(t testing.TB) (*srfake.Registry, *Serdes) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	return reg, newSerdes(t, reg)
}

// A sink registers its .proto under the topic's subject and writes its
// first message with the index [0] as the single byte 0; a source reads
// it back as protojson with proto field names and every field.
func TestProtobufRoundTrip(t *testing.T) {
	reg, s := testSerdes(t)
	ctx := context.Background()
	wire, err := s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(orderProtoJSON))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := reg.GetSchema("orders-value", 1)
	if !ok || got.Schema.Type != sr.TypeProtobuf || got.Schema.Schema != orderProto {
		t.Fatalf("orders-value version 1: %+v, %v; want the .proto as a PROTOBUF schema", got, ok)
	}
	if wire[0] != 0 || int(binary.BigEndian.Uint32(wire[1:5])) != got.ID || wire[5] != 0 {
		t.Fatalf("wire %x: want magic 0, id %d, message index byte 0", wire[:6], got.ID)
	}
	js, err := s.Decode(ctx, nil, serde.Protobuf, "orders", false, wire)
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != orderProtoJSON {
		t.Fatalf("decoded %s, want %s", js, orderProtoJSON)
	}
	// Fields at their defaults are present, with proto names.
	wire, err = s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(`{"id":5}`))
	if err != nil {
		t.Fatal(err)
	}
	js, err = s.Decode(ctx, nil, serde.Protobuf, "orders", false, wire)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"5","customer":"","item":"","quantity":0,"price":0,"tags":[]}`; string(js) != want {
		t.Fatalf("decoded %s, want %s", js, want)
	}
}

// The message indexes select the record's message: another top-level one
// ([1]) or a nested one ([0, 0, 0]); appendIndexes writes what readIndexes
// reads.
func TestProtobufMessageIndexes(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := serde.CompileProtobuf(orderProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSerdes(t, reg)
	for _, c := range []struct {
		md      string
		index   []byte
		js      string
		message string
	}{
		{"shop.Refund", []byte{2, 2}, `{"order_id":"9","amount":1.5}`, "Refund"},
		{"shop.Order.Line.Detail", []byte{6, 0, 0, 0}, `{"text":"engraved"}`, "Detail"},
		{"shop.Order", []byte{0}, `{"id":"1","customer":"","item":"","quantity":0,"price":0,"tags":[]}`, "Order"},
	} {
		md := messageNamed(fd, protoFullName(c.md))
		if md == nil {
			t.Fatalf("no message %s", c.md)
		}
		if got := appendIndexes(nil, md); string(got) != string(c.index) {
			t.Errorf("%s: indexes %v, want %v", c.md, got, c.index)
		}
		msg := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal([]byte(c.js), msg); err != nil {
			t.Fatal(err)
		}
		pb, _ := proto.Marshal(msg)
		wire := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), c.index...)
		got, err := s.Decode(context.Background(), nil, serde.Protobuf, "orders", false, append(wire, pb...))
		if err != nil {
			t.Fatalf("%s: %v", c.md, err)
		}
		if string(got) != c.js {
			t.Errorf("%s: decoded %s, want %s", c.md, got, c.js)
		}
	}
	// An index past the schema's messages fails the record, named.
	wire := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), 2, 6)
	_, err = s.Decode(context.Background(), nil, serde.Protobuf, "orders", false, wire)
	var re *Error
	if !errors.As(err, &re) || re.ID != id || re.Subject != "orders-value" || !errors.Is(err, serde.ErrMalformed) ||
		!strings.Contains(err.Error(), "message indexes [3] name no message") {
		t.Fatalf("bad index: %v", err)
	}
}

// A schema with references compiles with the referenced schemas fetched
// from the registry; one registered as a base64 FileDescriptorProto (what
// confluent-kafka's Python serializer registers) reads too.
func TestProtobufReferencesAndDescriptors(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	const money = "syntax = \"proto3\";\npackage common;\nmessage Money { string currency = 1; int64 units = 2; }\n"
	const priced = "syntax = \"proto3\";\npackage shop;\nimport \"common/money.proto\";\nimport \"google/protobuf/timestamp.proto\";\n" +
		"message Priced { int64 id = 1; common.Money total = 2; google.protobuf.Timestamp at = 3; }\n"
	if _, _, err := reg.RegisterSchema("common/money.proto", sr.Schema{Schema: money, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	id, _, err := reg.RegisterSchema("priced-value", sr.Schema{Schema: priced, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common/money.proto", Subject: "common/money.proto", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	s := newSerdes(t, reg)
	ctx := context.Background()
	const js = `{"id":"3","total":{"currency":"EUR","units":"12"},"at":"2024-01-02T03:04:05Z"}`
	wire, err := s.Encode(ctx, nil, serde.Protobuf, "priced", false, []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if int(binary.BigEndian.Uint32(wire[1:5])) != id {
		t.Fatalf("protobuf alone wrote with id %d, want the subject's latest, %d", binary.BigEndian.Uint32(wire[1:5]), id)
	}
	got, err := s.Decode(ctx, nil, serde.Protobuf, "priced", false, wire)
	if err != nil || string(got) != js {
		t.Fatalf("decoded %s, %v; want %s", got, err, js)
	}
	// A sink's own schema cannot carry references: refused, named.
	_, err = s.Encode(ctx, nil, serde.ProtobufWith(priced), "priced2", false, []byte(js))
	if err == nil || !strings.Contains(err.Error(), "common/money.proto") || !strings.Contains(err.Error(), "register a schema with references outside polystreams") {
		t.Fatalf("a sink's schema with an import: %v", err)
	}

	fd, err := serde.CompileProtobuf(orderProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As protoc's Python code embeds it (and confluent-kafka registers
	// it): without json_name.
	fdp := protodesc.ToFileDescriptorProto(fd)
	for _, m := range fdp.GetMessageType() {
		for _, f := range m.GetField() {
			f.JsonName = nil
		}
	}
	b, _ := proto.Marshal(fdp)
	id, _, err = reg.RegisterSchema("orders-value", sr.Schema{Schema: base64.StdEncoding.EncodeToString(b), Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(fd.Messages().Get(0))
	must(t, protojson.Unmarshal([]byte(orderProtoJSON), msg))
	pb, _ := proto.Marshal(msg)
	wire = append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), 0)
	got, err = s.Decode(ctx, nil, serde.Protobuf, "orders", false, append(wire, pb...))
	if err != nil || string(got) != orderProtoJSON {
		t.Fatalf("decoded %s, %v; want %s", got, err, orderProtoJSON)
	}
}

// A source naming a schema reads each record into its message of the same
// name: a field the reader adds takes its default, one it lacks is dropped.
func TestProtobufReaderSchema(t *testing.T) {
	_, s := testSerdes(t)
	ctx := context.Background()
	wire, err := s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(orderProtoJSON))
	if err != nil {
		t.Fatal(err)
	}
	reader := "syntax = \"proto3\";\npackage shop;\nmessage Other { int32 x = 1; }\nmessage Order { int64 id = 1; string channel = 9; }\n"
	got, err := s.Decode(ctx, nil, serde.ProtobufWith(reader), "orders", false, wire)
	if want := `{"id":"1234567","channel":""}`; err != nil || string(got) != want {
		t.Fatalf("decoded into the reader schema: %s, %v; want %s", got, err, want)
	}
}

// Bad input is named: an unknown id, a schema of another format, JSON
// that does not fit the sink's message.
func TestProtobufErrors(t *testing.T) {
	reg, s := testSerdes(t)
	ctx := context.Background()
	var re *Error
	_, err := s.Decode(ctx, nil, serde.Protobuf, "orders", false, []byte{0, 0, 0, 0x10, 0x92, 0})
	if !errors.As(err, &re) || re.ID != 4242 || !errors.Is(err, serde.ErrMalformed) ||
		!strings.Contains(err.Error(), "subject orders-value, schema id 4242: schema id 4242 is not registered") {
		t.Fatalf("unknown id: %v", err)
	}
	avroID, _, err := reg.RegisterSchema("x-value", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Decode(ctx, nil, serde.Protobuf, "x", false, append(binary.BigEndian.AppendUint32([]byte{0}, uint32(avroID)), 0, 2, 'h', 'i'))
	if err == nil || !strings.Contains(err.Error(), "schema id 1 is an avro schema: the serde reads protobuf") {
		t.Fatalf("an Avro id read as protobuf: %v", err)
	}
	_, err = s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(`{"id":1,"colour":"red"}`))
	if !errors.As(err, &re) || re.Subject != "orders-value" || re.ID == 0 || !errors.Is(err, serde.ErrMalformed) ||
		!strings.Contains(err.Error(), "the JSON does not fit message shop.Order") || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("JSON that does not fit: %v", err)
	}
	if err := serde.Check(serde.ProtobufWith("message {")); err == nil || !strings.Contains(err.Error(), "does not compile as a .proto file") {
		t.Fatalf("a bad .proto: %v", err)
	}
}

// BenchmarkProtobuf measures one record's Protobuf decode (wire format to
// the JSON the host gets) and encode (the host's JSON to the wire
// format), with the schema cached, on the record BenchmarkAvro uses.
func BenchmarkProtobuf(b *testing.B) {
	wire := benchSerde(b, serde.ProtobufWith(orderProto), serde.Protobuf, orderProtoJSON)
	// The protobuf binary alone (into a dynamic message), for scale.
	fd, _ := serde.CompileProtobuf(orderProto, nil)
	b.Run("binary-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(wire[6:], dynamicpb.NewMessage(fd.Messages().Get(0))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func protoFullName(s string) protoreflect.FullName { return protoreflect.FullName(s) }

// A sink's subject under the record strategies is its first message's full
// name; with auto.register.schemas=false the schema is looked up, and one
// not registered fails, named.
func TestProtobufSubjectsAndLookup(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	ctx := context.Background()
	for strategy, subject := range map[Strategy]string{RecordName: "shop.Order", TopicRecordName: "orders-shop.Order"} {
		s, err := New(Config{URLs: []string{reg.URL()}, AutoRegister: true, ValueStrategy: strategy})
		must(t, err)
		if _, err := s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(`{"id":1}`)); err != nil {
			t.Fatal(err)
		}
		if !reg.SubjectExists(subject) {
			t.Errorf("%s: no subject %s", strategy, subject)
		}
	}
	s, err := New(Config{URLs: []string{reg.URL()}, AutoRegister: false})
	must(t, err)
	_, err = s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(`{"id":1}`))
	if err == nil || !strings.Contains(err.Error(), "subject orders-value: the sink's schema is not registered under the subject, and auto.register.schemas is false") {
		t.Fatalf("lookup of an unregistered schema: %v", err)
	}
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf})
	must(t, err)
	s, err = New(Config{URLs: []string{reg.URL()}, AutoRegister: false})
	must(t, err)
	wire, err := s.Encode(ctx, nil, serde.ProtobufWith(orderProto), "orders", false, []byte(`{"id":1}`))
	if err != nil || int(binary.BigEndian.Uint32(wire[1:5])) != id {
		t.Fatalf("lookup of a registered schema: %x, %v; want id %d", wire, err, id)
	}
}

// A reference registered as a base64 descriptor (as confluent-kafka's
// Python serializer registers an import) resolves under its import name.
func TestProtobufDescriptorReference(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	money, err := serde.CompileProtobuf("syntax = \"proto3\";\npackage common;\nmessage Money { string currency = 1; int64 units = 2; }\n", nil)
	must(t, err)
	b, _ := proto.Marshal(protodesc.ToFileDescriptorProto(money)) // named polystreams-schema.proto, not the import's name
	if _, _, err := reg.RegisterSchema("money.proto", sr.Schema{Schema: base64.StdEncoding.EncodeToString(b), Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	const priced = "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nmessage Priced { int64 id = 1; common.Money total = 2; }\n"
	id, _, err := reg.RegisterSchema("priced-value", sr.Schema{Schema: priced, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "money.proto", Subject: "money.proto", Version: 1}}})
	must(t, err)
	s := newSerdes(t, reg)
	const js = `{"id":"3","total":{"currency":"EUR","units":"12"}}`
	wire, err := s.Encode(context.Background(), nil, serde.Protobuf, "priced", false, []byte(js))
	if err != nil || int(binary.BigEndian.Uint32(wire[1:5])) != id {
		t.Fatalf("encode: %x, %v", wire, err)
	}
	got, err := s.Decode(context.Background(), nil, serde.Protobuf, "priced", false, wire)
	if err != nil || string(got) != js {
		t.Fatalf("decoded %s, %v; want %s", got, err, js)
	}
}

// A sink writes the message its serde names (protobuf(<schema>,
// message=<name>), by full name or by its name in the package, nested
// ones as Outer.Inner), with that message's indexes, and a record
// strategy names the subject after it; protobuf(message=<name>) picks it
// from the subject's latest schema. A name the schema lacks fails the
// sink, listing the schema's messages.
func TestProtobufSinkNamesItsMessage(t *testing.T) {
	reg, s := testSerdes(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, js string
		index    []byte
	}{
		{serde.ProtobufWithMessage(orderProto, "shop.Refund"), `{"order_id":"9","amount":1.5}`, []byte{2, 2}},
		{serde.ProtobufWithMessage(orderProto, "Refund"), `{"order_id":"8","amount":2}`, []byte{2, 2}},
		{serde.ProtobufWithMessage(orderProto, "Order.Line.Detail"), `{"text":"engraved"}`, []byte{6, 0, 0, 0}},
		{serde.ProtobufWithMessage("", "Refund"), `{"order_id":"7","amount":3}`, []byte{2, 2}},
		{serde.ProtobufWithMessage(orderProto, "Order"), `{"id":"1","customer":"","item":"","quantity":0,"price":0,"tags":[]}`, []byte{0}},
	} {
		wire, err := s.Encode(ctx, nil, c.name, "orders", false, []byte(c.js))
		if err != nil {
			t.Fatalf("%.60s...: %v", c.name, err)
		}
		if got := wire[5 : 5+len(c.index)]; string(got) != string(c.index) {
			t.Errorf("%s: message indexes %v, want %v", c.js, got, c.index)
		}
		got, err := s.Decode(ctx, nil, serde.Protobuf, "orders", false, wire)
		if err != nil || string(got) != c.js {
			t.Errorf("decoded %s, %v; want %s", got, err, c.js)
		}
	}
	if v, ok := reg.GetSchema("orders-value", 1); !ok || v.Schema.Schema != orderProto {
		t.Errorf("orders-value version 1: %+v; want the .proto without the message option", v)
	}
	rs, err := New(Config{URLs: []string{reg.URL()}, AutoRegister: true, ValueStrategy: RecordName})
	must(t, err)
	if _, err := rs.Encode(ctx, nil, serde.ProtobufWithMessage(orderProto, "Refund"), "orders", false, []byte(`{"order_id":"1"}`)); err != nil {
		t.Fatal(err)
	}
	if !reg.SubjectExists("shop.Refund") {
		t.Errorf("RecordNameStrategy: no subject shop.Refund")
	}
	_, err = s.Encode(ctx, nil, serde.ProtobufWithMessage(orderProto, "Invoice"), "orders", false, []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), `message "Invoice" is not in the schema (its messages: shop.Order, shop.Order.Line, shop.Order.Line.Detail, shop.Refund)`) {
		t.Errorf("an unknown message: %v", err)
	}
	if err := serde.Check(serde.ProtobufWithMessage(orderProto, "Invoice")); err == nil || !strings.Contains(err.Error(), `message "Invoice" is not in the schema`) {
		t.Errorf("Check of an unknown message: %v", err)
	}
	if sch, msg, ok := serde.ParseProtobuf("protobuf(" + orderProto + " , message = shop.Order.Line)"); !ok || sch != orderProto || msg != "shop.Order.Line" {
		t.Errorf("ParseProtobuf: %q, %q, %v", sch, msg, ok)
	}
}

// The message option is recognised only where it ends the argument.
func TestParseProtobufMessage(t *testing.T) {
	for _, c := range []struct{ name, schema, message string }{
		{"protobuf", "", ""},
		{"protobuf(message M { int64 id = 1; })", "message M { int64 id = 1; }", ""},
		{"protobuf(message M { string message = 1; })", "message M { string message = 1; }", ""},
		{"protobuf(message=shop.my_message_v2)", "", "shop.my_message_v2"},
		{"protobuf(message M {}\n, message=M)", "message M {}\n", "M"},
		{"protobuf(message M {},message = Outer.Inner )", "message M {}", "Outer.Inner"},
	} {
		schema, message, ok := serde.ParseProtobuf(c.name)
		if !ok || schema != c.schema || message != c.message {
			t.Errorf("ParseProtobuf(%q) = %q, %q, %v; want %q, %q", c.name, schema, message, ok, c.schema, c.message)
		}
	}
}
