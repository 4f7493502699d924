package streams_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/polystreams/polystreams/core/streams"
)

// The Schema Registry tests here run against franz-go's in-process
// registry (srfake); tools/schema-registry's test (of core/cmd/schema-registry) runs the same serdes
// against a real registry server and confluent-kafka's serializers.

const orderSchema = `{"type":"record","name":"Order","namespace":"shop","fields":[
	{"name":"id","type":"long"},{"name":"item","type":"string"},
	{"name":"note","type":["null","string"],"default":null}]}`

const pricedSchema = `{"type":"record","name":"Priced","namespace":"shop","fields":[
	{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"total","type":"double"}]}`

// confluent is a record in the Confluent wire format: magic byte 0, the
// schema id, the Avro binary of v.
func confluent(t *testing.T, id int, schema string, v any) []byte {
	t.Helper()
	b, err := avro.MustParse(schema).AppendEncode(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// avroPipeline reads orders (avro), prices each in a Go function that sees
// JSON, and writes priced (avro with pricedSchema).
func avroPipeline(t *testing.T, url string, props map[string]string) *streams.TestDriver {
	t.Helper()
	return registryPipeline(t, url, props, streams.Avro, streams.AvroWith(pricedSchema))
}

// Records in the Confluent wire format decode to JSON for the function,
// and its JSON is encoded with the sink's schema, registered under
// <topic>-value; an independent decoder (twmb/avro, given the registered
// schema by id) reads what was written.
func TestAvroThroughTheRegistry(t *testing.T) {
	reg, id := ordersRegistry(t, orderSchema, sr.TypeAvro)
	d := avroPipeline(t, reg.URL(), nil)
	defer d.Close()
	note := "gift"
	must(d.PipeInput("orders", []byte("k1"), confluent(t, id, orderSchema, map[string]any{"id": int64(7), "item": "pen", "note": nil})))
	must(d.PipeInput("orders", []byte("k2"), confluent(t, id, orderSchema, map[string]any{"id": int64(8), "item": "ink", "note": &note})))
	out, err := d.ReadOutput("priced")
	must(err)
	got, ok := reg.GetSchema("priced-value", 1)
	if !ok {
		t.Fatalf("the sink registered no schema under priced-value")
	}
	want := []string{`{"id":7,"item":"PEN","total":2.5}`, `{"id":8,"item":"INK","total":10}`}
	if len(out) != len(want) {
		t.Fatalf("priced: %d records, want %d", len(out), len(want))
	}
	for i, r := range out {
		if r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != got.ID {
			t.Fatalf("priced[%d] = %x: want magic byte 0 and schema id %d", i, r.Value[:min(5, len(r.Value))], got.ID)
		}
		var v map[string]any
		if _, err := avro.MustParse(got.Schema.Schema).Decode(r.Value[5:], &v); err != nil {
			t.Fatalf("priced[%d]: %v", i, err)
		}
		js, _ := json.Marshal(v)
		if string(js) != want[i] {
			t.Errorf("priced[%d] = %s, want %s", i, js, want[i])
		}
	}
}

// The subject name strategies name the sink's subject: the record's full
// name (RecordNameStrategy) or the topic and record (TopicRecordNameStrategy).
func TestAvroSubjectNameStrategies(t *testing.T) {
	for _, c := range []struct{ strategy, subject string }{
		{"io.confluent.kafka.serializers.subject.RecordNameStrategy", "shop.Priced"},
		{"TopicRecordNameStrategy", "priced-shop.Priced"},
	} {
		reg, id := ordersRegistry(t, orderSchema, sr.TypeAvro)
		d := avroPipeline(t, reg.URL(), map[string]string{"value.subject.name.strategy": c.strategy})
		must(d.PipeInput("orders", nil, confluent(t, id, orderSchema, map[string]any{"id": int64(1), "item": "a", "note": nil})))
		if !reg.SubjectExists(c.subject) || reg.SubjectExists("priced-value") {
			t.Errorf("%s: subject %s exists: %v; priced-value: %v", c.strategy, c.subject, reg.SubjectExists(c.subject), reg.SubjectExists("priced-value"))
		}
		d.Close()
	}
}

// Bad input is named: an unknown schema id and bytes not in the wire
// format fail their record (subject, id, topic/partition/offset) under the
// deserialization policy; a schema the registry refuses (409) fails the
// record at the sink; a registry that is down fails the batch whatever the
// policy says.
func TestAvroErrorsNameSubjectIDAndRecord(t *testing.T) {
	reg, id := ordersRegistry(t, orderSchema, sr.TypeAvro)
	good := confluent(t, id, orderSchema, map[string]any{"id": int64(1), "item": "a", "note": nil})

	d := avroPipeline(t, reg.URL(), nil)
	var re *streams.RecordError
	err := d.PipeInput("orders", []byte("k"), confluent(t, 999, orderSchema, map[string]any{"id": int64(1), "item": "a", "note": nil}))
	if !errors.As(err, &re) || re.Topic != "orders" || re.Offset != 0 ||
		!strings.Contains(err.Error(), "subject orders-value, schema id 999: schema id 999 is not registered") {
		t.Fatalf("unknown id: %v", err)
	}
	// Under fail, nothing is committed past the record: the driver's next
	// batch meets it again.
	err = d.PipeInput("orders", []byte("k"), good)
	if !errors.As(err, &re) || re.Offset != 0 {
		t.Fatalf("the record after an unknown id: %v, want the failed record at offset 0 again", err)
	}
	d.Close()
	d = avroPipeline(t, reg.URL(), nil)
	err = d.PipeInput("orders", []byte("k"), []byte(`{"id":1}`))
	if !errors.As(err, &re) || re.Offset != 0 || !strings.Contains(err.Error(), "not in the Confluent wire format (first byte 0x7b") {
		t.Fatalf("not the wire format: %v", err)
	}
	d.Close()

	// Under log_and_continue the record is skipped and the next one goes on.
	d = avroPipeline(t, reg.URL(), map[string]string{"default.deserialization.exception.handler": "log_and_continue"})
	must(d.PipeInput("orders", nil, []byte("junk")))
	must(d.PipeInput("orders", nil, good))
	if out, err := d.ReadOutput("priced"); err != nil || len(out) != 1 {
		t.Fatalf("log_and_continue: %d records, %v; want the good one", len(out), err)
	}
	d.Close()

	// A real registry answers 409 to a schema its compatibility level refuses.
	refusePricedSchemas(reg)
	d = avroPipeline(t, reg.URL(), nil)
	err = d.PipeInput("orders", nil, good)
	if !errors.As(err, &re) || re.Topic != "orders" || !strings.Contains(err.Error(), "topic priced, subject priced-value: incompatible schema") ||
		!strings.Contains(err.Error(), "is incompatible with an earlier schema") {
		t.Fatalf("incompatible: %v", err)
	}
	d.Close()
	reg.ClearInterceptors()

	d = avroPipeline(t, reg.URL(), map[string]string{
		"default.deserialization.exception.handler": "log_and_continue", "processing.exception.handler": "log_and_continue",
	})
	defer d.Close()
	reg.Close()
	err = d.PipeInput("orders", nil, confluent(t, id+1, orderSchema, map[string]any{"id": int64(1), "item": "a", "note": nil}))
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "schema registry unavailable") || !strings.Contains(err.Error(), "schema id "+itoa(id+1)) {
		t.Fatalf("registry down: %v", err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// An avro serde is a topic's format: refused between operators, and at a
// sink whose records are not json.
func TestAvroIsATopicFormat(t *testing.T) {
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.ValueSerde(streams.String))
	must(err)
	if _, err := in.MapValues(func(v []byte) ([]byte, error) { return v, nil }, streams.ValueSerde(streams.Avro)); err == nil ||
		!strings.Contains(err.Error(), `serde "avro" is a topic's format`) {
		t.Fatalf("map_values with avro: %v", err)
	}
	if err := in.To("out", streams.ValueSerde(streams.AvroWith(pricedSchema))); err == nil ||
		!strings.Contains(err.Error(), "encodes json records, but the stream's values are string") {
		t.Fatalf("to avro from string values: %v", err)
	}
	if err := in.To("out", streams.ValueSerde(streams.AvroWith(`{"type":"recrd"}`))); err == nil ||
		!strings.Contains(err.Error(), "does not parse as Avro") {
		t.Fatalf("to avro with a bad schema: %v", err)
	}
	if _, err := streams.NewTestDriver(func() *streams.Builder {
		b := streams.NewBuilder()
		s, err := b.Stream([]string{"x"}, streams.ValueSerde(streams.Avro))
		must(err)
		must(s.To("y"))
		return b
	}(), streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil || !strings.Contains(err.Error(), "schema.registry.url is not set") {
		t.Fatalf("avro without schema.registry.url: %v", err)
	}
}

const pricedJSONSchema = `{"title":"Priced","type":"object","required":["id","item","total"],
	"properties":{"id":{"type":"integer"},"item":{"type":"string"},"total":{"type":"number","minimum":0}}}`

// The JSON Schema serde: the payload is the JSON itself, validated against
// the record's schema (by id) at the source and the sink's schema at the
// sink; a record the schema refuses fails, named.
func TestJSONSchemaThroughTheRegistry(t *testing.T) {
	orderJSONSchema := `{"type":"object","required":["id","item"],"properties":{"id":{"type":"integer"},"item":{"type":"string"}}}`
	reg, id := ordersRegistry(t, orderJSONSchema, sr.TypeJSON)
	build := func() *streams.TestDriver {
		b := streams.NewBuilder()
		orders, err := b.Stream([]string{"orders"}, streams.ValueSerde(streams.JSONSchema))
		must(err)
		priced, err := orders.MapValues(func(v []byte) ([]byte, error) {
			var o map[string]any
			if err := json.Unmarshal(v, &o); err != nil {
				return nil, err
			}
			total := 2.5
			if o["item"] == "refund" {
				total = -1
			}
			return json.Marshal(map[string]any{"id": o["id"], "item": o["item"], "total": total})
		})
		must(err)
		must(priced.To("priced", streams.ValueSerde(streams.JSONSchemaWith(pricedJSONSchema))))
		d, err := streams.NewTestDriver(b, streams.Config{Properties: map[string]string{"schema.registry.url": reg.URL()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(err)
		return d
	}
	wire := func(id int, js string) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), js...)
	}

	d := build()
	must(d.PipeInput("orders", nil, wire(id, `{"id":7,"item":"pen"}`)))
	out, err := d.ReadOutput("priced")
	must(err)
	got, ok := reg.GetSchema("priced-value", 1)
	if !ok || got.Type != sr.TypeJSON {
		t.Fatalf("priced-value: %+v, %v; want a JSON schema", got, ok)
	}
	if len(out) != 1 || string(out[0].Value) != string(wire(got.ID, `{"id":7,"item":"pen","total":2.5}`)) {
		t.Fatalf("priced: %+v", out)
	}
	var re *streams.RecordError
	if err := d.PipeInput("orders", nil, wire(id, `{"id":"seven","item":"pen"}`)); !errors.As(err, &re) || re.Offset != 1 ||
		!strings.Contains(err.Error(), "subject orders-value, schema id "+itoa(id)+": the value does not validate against the schema") {
		t.Fatalf("a value the source's schema refuses: %v", err)
	}
	d.Close()
	d = build()
	defer d.Close()
	if err := d.PipeInput("orders", nil, wire(id, `{"id":8,"item":"refund"}`)); !errors.As(err, &re) ||
		!strings.Contains(err.Error(), "topic priced, subject priced-value, schema id "+itoa(got.ID)+": the value does not validate against the schema") {
		t.Fatalf("a value the sink's schema refuses: %v", err)
	}
}

// auto.register.schemas=false: the sink's schema must be registered under
// its subject already (looked up, never registered); "avro" alone at a sink
// writes with the subject's latest schema.
func TestAvroSinkLooksUpOrTakesTheLatestSchema(t *testing.T) {
	reg, id := ordersRegistry(t, orderSchema, sr.TypeAvro)
	order := confluent(t, id, orderSchema, map[string]any{"id": int64(5), "item": "nib", "note": nil})

	d := avroPipeline(t, reg.URL(), map[string]string{"auto.register.schemas": "false"})
	var re *streams.RecordError
	if err := d.PipeInput("orders", nil, order); !errors.As(err, &re) ||
		!strings.Contains(err.Error(), "subject priced-value: the sink's schema is not registered under the subject, and auto.register.schemas is false") {
		t.Fatalf("lookup of an unregistered schema: %v", err)
	}
	d.Close()
	if reg.SubjectExists("priced-value") {
		t.Fatal("auto.register.schemas=false registered the sink's schema")
	}
	pid, _, err := reg.RegisterSchema("priced-value", sr.Schema{Schema: pricedSchema, Type: sr.TypeAvro})
	must(err)
	d = avroPipeline(t, reg.URL(), map[string]string{"auto.register.schemas": "false"})
	must(d.PipeInput("orders", nil, order))
	out, err := d.ReadOutput("priced")
	must(err)
	if len(out) != 1 || int(binary.BigEndian.Uint32(out[0].Value[1:5])) != pid {
		t.Fatalf("priced with the looked-up schema: %+v, want schema id %d", out, pid)
	}
	d.Close()

	// "avro" alone: the subject's latest schema.
	b := streams.NewBuilder()
	orders, err := b.Stream([]string{"orders"}, streams.ValueSerde(streams.Avro))
	must(err)
	trimmed, err := orders.MapValues(func(v []byte) ([]byte, error) {
		var o map[string]any
		must(json.Unmarshal(v, &o))
		return json.Marshal(map[string]any{"id": o["id"], "item": o["item"], "total": 1.5})
	})
	must(err)
	must(trimmed.To("priced", streams.ValueSerde(streams.Avro)))
	d, err = streams.NewTestDriver(b, streams.Config{Properties: map[string]string{"schema.registry.url": reg.URL()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	must(d.PipeInput("orders", nil, order))
	out, err = d.ReadOutput("priced")
	must(err)
	if len(out) != 1 || int(binary.BigEndian.Uint32(out[0].Value[1:5])) != pid {
		t.Fatalf("priced with the latest schema: %+v, want schema id %d", out, pid)
	}
}
