package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
)

func TestDeadLetterRecord(t *testing.T) {
	in := &kgo.Record{Topic: "orders", Partition: 3, Offset: 1842, Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}, Timestamp: time.UnixMilli(1700000000000)}
	for _, c := range []struct {
		err      error
		kind     failKind
		exc      string
		kindText string
	}{
		{errors.New("ValueError: invalid literal for int() with base 10: 'x'"), kindProcessing, "ValueError", "processing"},
		{errors.New("value does not decode as json: not valid JSON"), kindDeserialization, "polystreams.DeserializationError", "deserialization"},
		{errors.New("the aggregate is null"), kindProcessing, "polystreams.ProcessingError", "processing"},
	} {
		re := &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Node: "KSTREAM-MAPVALUES-0000000001", Err: c.err}
		r := deadLetter("dlq", in, re.Node, c.kind, re)
		if r.Topic != "dlq" || string(r.Key) != "k" || string(r.Value) != "v" || !r.Timestamp.Equal(in.Timestamp) {
			t.Errorf("dead letter %+v is not the input record", r)
		}
		got := map[string]string{}
		for i, h := range r.Headers {
			if i == 0 && h.Key != "trace" {
				t.Errorf("the input's headers come first, got %s", h.Key)
			}
			got[h.Key] = string(h.Value)
		}
		want := map[string]string{
			"trace": "t1", HeaderException: c.exc, HeaderMessage: c.err.Error(),
			HeaderStacktrace: "engine: record at orders/3@1842 failed in node KSTREAM-MAPVALUES-0000000001: " + c.err.Error(),
			HeaderTopic:      "orders", HeaderPartition: "3", HeaderOffset: "1842", HeaderNode: "KSTREAM-MAPVALUES-0000000001", HeaderKind: c.kindText,
		}
		if len(got) != len(want) {
			t.Errorf("headers %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("header %s = %q, want %q", k, got[k], v)
			}
		}
	}
}

func TestKindOfEngineErrors(t *testing.T) {
	if k := kindOf(fmt.Errorf("value: %w", serde.Malformed(errors.New("long needs 8 bytes, got 3")))); k != kindDeserialization {
		t.Errorf("a malformed long is %s", k)
	}
	if k := kindOf(errors.New("boom")); k != kindProcessing {
		t.Errorf("an error of a function is %s", k)
	}
}
