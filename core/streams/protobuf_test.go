package streams_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/streams"
)

const orderProto = "syntax = \"proto3\";\npackage shop;\nmessage Order { int64 id = 1; string item = 2; optional string note = 3; }\n"

const pricedProto = "syntax = \"proto3\";\npackage shop;\nmessage Priced { int64 id = 1; string item = 2; double total = 3; }\n"

// protoRecord is js as schema's first message in the Confluent wire format.
func protoRecord(t *testing.T, id int, schema, js string) []byte {
	t.Helper()
	fd, err := serde.CompileProtobuf(schema, nil)
	must(err)
	msg := dynamicpb.NewMessage(fd.Messages().Get(0))
	must(protojson.Unmarshal([]byte(js), msg))
	pb, err := proto.Marshal(msg)
	must(err)
	return append(append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), 0), pb...)
}

// protobufPipeline reads orders (protobuf), prices each in a Go function
// that sees JSON, and writes priced (protobuf with pricedProto).
func protobufPipeline(t *testing.T, url string, props map[string]string) *streams.TestDriver {
	t.Helper()
	return registryPipeline(t, url, props, streams.Protobuf, streams.ProtobufWith(pricedProto))
}

// Protobuf records decode to JSON for the function, whose JSON is encoded
// as the sink's message under its schema, registered under priced-value.
func TestProtobufThroughTheRegistry(t *testing.T) {
	reg, id := ordersRegistry(t, orderProto, sr.TypeProtobuf)
	d := protobufPipeline(t, reg.URL(), nil)
	defer d.Close()
	must(d.PipeInput("orders", []byte("k1"), protoRecord(t, id, orderProto, `{"id":7,"item":"pen"}`)))
	must(d.PipeInput("orders", []byte("k2"), protoRecord(t, id, orderProto, `{"id":8,"item":"ink","note":"gift"}`)))
	out, err := d.ReadOutput("priced")
	must(err)
	got, ok := reg.GetSchema("priced-value", 1)
	if !ok || got.Schema.Type != sr.TypeProtobuf {
		t.Fatalf("priced-value: %+v, %v; want a PROTOBUF schema", got, ok)
	}
	fd, err := serde.CompileProtobuf(got.Schema.Schema, nil)
	must(err)
	want := []string{`{"id":"7","item":"PEN","total":2.5}`, `{"id":"8","item":"INK","total":10}`}
	if len(out) != len(want) {
		t.Fatalf("priced: %d records, want %d", len(out), len(want))
	}
	for i, r := range out {
		if r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != got.ID || r.Value[5] != 0 {
			t.Fatalf("priced[%d] = %x: want magic byte 0, schema id %d, message index 0", i, r.Value[:min(6, len(r.Value))], got.ID)
		}
		msg := dynamicpb.NewMessage(fd.Messages().Get(0))
		must(proto.Unmarshal(r.Value[6:], msg))
		if js, _ := protojson.Marshal(msg); strings.ReplaceAll(string(js), " ", "") != want[i] {
			t.Errorf("priced[%d] = %s, want %s", i, js, want[i])
		}
	}
}

// Bad input is named as for Avro: an unknown id at the source under the
// deserialization policy, a schema the registry refuses (409) at the sink.
func TestProtobufErrorsNameSubjectIDAndRecord(t *testing.T) {
	reg, id := ordersRegistry(t, orderProto, sr.TypeProtobuf)
	d := protobufPipeline(t, reg.URL(), nil)
	var re *streams.RecordError
	err := d.PipeInput("orders", []byte("k"), protoRecord(t, 4242, orderProto, `{"id":1}`))
	if !errors.As(err, &re) || re.Topic != "orders" || re.Offset != 0 ||
		!strings.Contains(err.Error(), "value does not decode as protobuf: schema registry: topic orders, subject orders-value, schema id 4242: schema id 4242 is not registered") {
		t.Fatalf("unknown id: %v", err)
	}
	d.Close()

	d = protobufPipeline(t, reg.URL(), map[string]string{"default.deserialization.exception.handler": "log_and_continue"})
	must(d.PipeInput("orders", nil, protoRecord(t, 4242, orderProto, `{"id":1}`)))
	must(d.PipeInput("orders", nil, protoRecord(t, id, orderProto, `{"id":2}`)))
	if out, err := d.ReadOutput("priced"); err != nil || len(out) != 1 {
		t.Fatalf("log_and_continue: %d records, %v; want the good one", len(out), err)
	}
	d.Close()

	refusePricedSchemas(reg)
	d = protobufPipeline(t, reg.URL(), nil)
	defer d.Close()
	err = d.PipeInput("orders", nil, protoRecord(t, id, orderProto, `{"id":3}`))
	if !errors.As(err, &re) || re.Topic != "orders" || !strings.Contains(err.Error(), "value does not encode as protobuf(<schema>): schema registry: topic priced, subject priced-value: incompatible schema") {
		t.Fatalf("incompatible: %v", err)
	}
}

// A sink's schema is compiled when the topology is built: one that does
// not compile, or imports a file the serde cannot have (references come
// only from the registry), is refused there, named.
func TestProtobufSinkSchemaIsCheckedAtBuild(t *testing.T) {
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.ValueSerde(streams.JSON))
	must(err)
	importing := "syntax = \"proto3\";\nimport \"common/money.proto\";\nmessage Priced { common.Money total = 1; }\n"
	if err := in.To("out", streams.ValueSerde(streams.ProtobufWith(importing))); err == nil ||
		!strings.Contains(err.Error(), "does not compile as a .proto file") || !strings.Contains(err.Error(), "register a schema with references outside polystreams") {
		t.Fatalf("a sink's schema with an import: %v", err)
	}
	if err := in.To("out", streams.ValueSerde(streams.ProtobufWith("message {"))); err == nil || !strings.Contains(err.Error(), "does not compile as a .proto file") {
		t.Fatalf("a sink's schema that does not compile: %v", err)
	}
	if _, err := in.MapValues(func(v []byte) ([]byte, error) { return v, nil }, streams.ValueSerde(streams.Protobuf)); err == nil ||
		!strings.Contains(err.Error(), `serde "protobuf" is a topic's format`) {
		t.Fatalf("map_values with protobuf: %v", err)
	}
}
