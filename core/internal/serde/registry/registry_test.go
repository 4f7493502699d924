package registry

import (
	"context"
	"testing"

	"github.com/twmb/avro"

	"github.com/polystreams/polystreams/core/internal/serde"
)

const benchSchema = `{"type":"record","name":"Order","namespace":"shop","fields":[
	{"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"item","type":"string"},
	{"name":"quantity","type":"int"},{"name":"price","type":"double"},
	{"name":"note","type":["null","string"],"default":null},
	{"name":"tags","type":{"type":"array","items":"string"}}]}`

const benchJSON = `{"id":1234567,"customer":"c-0042","item":"fountain pen","quantity":3,"price":12.5,"note":"gift wrap","tags":["a","bb"]}`

// A reader schema on a source reads each record's (writer) schema into
// it: a field the reader adds takes its default.
func TestDecodeIntoReaderSchema(t *testing.T) {
	_, s := testSerdes(t)
	ctx := context.Background()
	wire, err := s.Encode(ctx, nil, serde.AvroWith(benchSchema), "orders", false, []byte(benchJSON))
	if err != nil {
		t.Fatal(err)
	}
	reader := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"channel","type":"string","default":"web"}]}`
	got, err := s.Decode(ctx, nil, serde.AvroWith(reader), "orders", false, wire)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":1234567,"channel":"web"}`; string(got) != want {
		t.Fatalf("decoded into the reader schema: %s, want %s", got, want)
	}
	if _, err := s.Decode(ctx, nil, serde.AvroWith(`{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`), "orders", false, wire); err == nil {
		t.Fatal("a reader schema that cannot read the writer's decoded")
	}
}

// benchSerde benchmarks one record's decode (wire format to the JSON the
// host gets, read naming the serde as a source does) and encode (js, the
// host's JSON, to the wire format with the serde named write), with the
// schema cached, against an in-process registry; it answers the record's
// wire bytes, for benchmarks of the binary format alone.
func benchSerde(b *testing.B, write, read, js string) []byte {
	b.Helper()
	_, s := testSerdes(b)
	ctx := context.Background()
	wire, err := s.Encode(ctx, nil, write, "orders", false, []byte(js))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(wire)))
		var dst []byte
		for b.Loop() {
			if dst, err = s.Decode(ctx, dst[:0], read, "orders", false, wire); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(js)))
		in := []byte(js)
		var dst []byte
		for b.Loop() {
			if dst, err = s.Encode(ctx, dst[:0], write, "orders", false, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	return wire
}

// BenchmarkAvro measures one record's Avro decode (wire format to the JSON
// the host gets) and encode (the host's JSON to the wire format), with the
// schema cached: the engine's per-record cost of an avro serde.
func BenchmarkAvro(b *testing.B) {
	wire := benchSerde(b, serde.AvroWith(benchSchema), serde.Avro, benchJSON)
	// The Avro binary alone (twmb/avro into and out of any), for scale.
	sch := avro.MustParse(benchSchema)
	b.Run("binary-only", func(b *testing.B) {
		b.ReportAllocs()
		var v any
		for b.Loop() {
			if _, err := sch.Decode(wire[5:], &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSONSchema measures one record's JSON Schema decode and encode:
// the payload is the JSON itself, so the cost is the validation.
func BenchmarkJSONSchema(b *testing.B) {
	benchSerde(b, serde.JSONSchemaWith(`{"title":"Order","type":"object","required":["id","customer","item","quantity","price"],"properties":{
		"id":{"type":"integer"},"customer":{"type":"string"},"item":{"type":"string"},"quantity":{"type":"integer","minimum":0},
		"price":{"type":"number"},"note":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}}}}`), serde.JSONSchema, benchJSON)
}
