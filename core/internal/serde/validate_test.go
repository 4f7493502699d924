package serde

import "testing"

func TestParseRegistryNames(t *testing.T) {
	for _, c := range []struct {
		name, format, schema string
		ok                   bool
	}{
		{"avro", Avro, "", true},
		{`avro({"type":"string"})`, Avro, `{"type":"string"}`, true},
		{"json-schema({})", JSONSchema, "{}", true},
		{"protobuf(message=M)", Protobuf, "", true},
		{"avro()", "", "", false},
		{"avro(x", "", "", false},
		{"avrox", "", "", false},
		{"avro x)", "", "", false},
		{"json-schema", JSONSchema, "", true},
		{"string", "", "", false},
	} {
		format, schema, ok := ParseRegistry(c.name)
		if format != c.format || schema != c.schema || ok != c.ok {
			t.Errorf("ParseRegistry(%q) = %q, %q, %v; want %q, %q, %v", c.name, format, schema, ok, c.format, c.schema, c.ok)
		}
	}
}

// Sources validate every record they read (engine/source.go), so telling
// a serde name's kind is on the hot path: it had been ~7% of a word
// count's CPU (docs/performance.md, issue 23).
func BenchmarkValidate(b *testing.B) {
	word := []byte("word")
	for b.Loop() {
		if err := Validate(String, word); err != nil {
			b.Fatal(err)
		}
	}
}
