package serde

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzValidate: any serde name and any bytes give an answer, never a panic
// or a runaway recursion; a name Check accepts nests windowed serdes at most
// MaxWindowedDepth deep.
func FuzzValidate(f *testing.F) {
	for _, seed := range []struct {
		name string
		b    []byte
	}{
		{"long", AppendLong(nil, 42)}, {"integer", []byte{0, 0, 0, 7}}, {"double", make([]byte, 8)},
		{"string", []byte("héllo")}, {"string", []byte{0xff}}, {"json", []byte(`{"a":[1,2]}`)}, {"json", []byte(`{`)},
		{"bytes", nil}, {"", []byte("x")},
		{TimeWindowed("string", 5000), AppendTimeWindowed(nil, []byte("k"), 1000)},
		{SessionWindowed("long"), AppendSessionWindowed(nil, AppendLong(nil, 1), 10, 20)},
		{TimeWindowed(TimeWindowed("string", 5), 10), []byte("short")},
		{"windowed(string,-1)", nil}, {"session-windowed(", nil}, {"windowed(,5)", nil},
		{strings.Repeat("windowed(", 50) + "string" + strings.Repeat(",5)", 50), make([]byte, 400)},
	} {
		f.Add(seed.name, seed.b)
	}
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		checkErr := Check(name)
		if d := windowedDepth(name); checkErr == nil && d > MaxWindowedDepth {
			t.Fatalf("Check accepts %.80q, nesting %d deep", name, d)
		}
		if checkErr != nil {
			return // the engine refuses the name before any record meets it
		}
		err := Validate(name, b)
		switch name {
		case Long, Double:
			if (err == nil) != (len(b) == 8) {
				t.Fatalf("Validate(%s, %d bytes) = %v", name, len(b), err)
			}
		case Integer:
			if (err == nil) != (len(b) == 4) {
				t.Fatalf("Validate(integer, %d bytes) = %v", len(b), err)
			}
		case Bytes, "":
			if err != nil {
				t.Fatalf("Validate(%q) = %v", name, err)
			}
		}
	})
}

// FuzzWindowedKeys: splitting a windowed key never panics, and what it
// splits appends back to the same bytes.
func FuzzWindowedKeys(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 7))
	f.Add(AppendTimeWindowed(nil, []byte("key"), 1700000000000))
	f.Add(AppendSessionWindowed(nil, []byte("key"), 1, 2))
	f.Add(binary.BigEndian.AppendUint64(make([]byte, 8), 1<<63))
	f.Fuzz(func(t *testing.T, b []byte) {
		if key, start, err := SplitTimeWindowed(b); err == nil {
			if got := AppendTimeWindowed(nil, key, start); !bytes.Equal(got, b) {
				t.Fatalf("time-windowed %x split and joined is %x", b, got)
			}
		} else if len(b) >= 8 {
			t.Fatalf("time-windowed %x (%d bytes): %v", b, len(b), err)
		}
		if key, start, end, err := SplitSessionWindowed(b); err == nil {
			if got := AppendSessionWindowed(nil, key, start, end); !bytes.Equal(got, b) {
				t.Fatalf("session-windowed %x split and joined is %x", b, got)
			}
		} else if len(b) >= 16 {
			t.Fatalf("session-windowed %x (%d bytes): %v", b, len(b), err)
		}
		if v, err := DecodeLong(b); err == nil && !bytes.Equal(AppendLong(nil, v), b) {
			t.Fatalf("long %x decodes to %d", b, v)
		}
	})
}

func TestDeeplyNestedSerdeIsRefused(t *testing.T) {
	name := strings.Repeat("windowed(", 100000) + "string" + strings.Repeat(",5)", 100000)
	if err := Check(name); err == nil || !strings.Contains(err.Error(), "nests windowed serdes more than 4 deep") {
		t.Fatalf("Check of a 100000-deep name: %v", err)
	}
	ok := TimeWindowed(SessionWindowed(TimeWindowed(TimeWindowed("long", 5), 5)), 5)
	if err := Check(ok); err != nil {
		t.Fatalf("Check(%s): %v", ok, err)
	}
}
