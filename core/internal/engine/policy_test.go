package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
)

func TestParseConfigErrorPolicies(t *testing.T) {
	cases := []struct {
		kv           map[string]string
		deser, proc  Policy
		topic, error string
	}{
		{kv: map[string]string{}, deser: PolicyFail, proc: PolicyFail},
		{kv: map[string]string{"default.deserialization.exception.handler": "log_and_continue", "processing.exception.handler": "log_and_fail"},
			deser: PolicyContinue, proc: PolicyFail},
		{kv: map[string]string{"deserialization.exception.handler": "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler",
			"processing.exception.handler": "LogAndContinueProcessingExceptionHandler"}, deser: PolicyContinue, proc: PolicyContinue},
		{kv: map[string]string{"processing.exception.handler": "dead_letter", "errors.deadletterqueue.topic.name": "dlq"},
			deser: PolicyFail, proc: PolicyDeadLetter, topic: "dlq"},
		// As Kafka Streams (KIP-1034): log_and_continue with a dead letter
		// topic writes there.
		{kv: map[string]string{"processing.exception.handler": "log_and_continue", "errors.deadletterqueue.topic.name": "dlq"},
			deser: PolicyFail, proc: PolicyDeadLetter, topic: "dlq"},
		{kv: map[string]string{"processing.exception.handler": "dead_letter(bad-records)", "default.deserialization.exception.handler": "dead_letter"},
			deser: PolicyDeadLetter, proc: PolicyDeadLetter, topic: "bad-records"},
		{kv: map[string]string{"processing.exception.handler": "dead_letter"},
			error: "processing.exception.handler = dead_letter needs errors.deadletterqueue.topic.name"},
		{kv: map[string]string{"processing.exception.handler": "skip"},
			error: `processing.exception.handler: want fail (log_and_fail), log_and_continue, dead_letter or dead_letter(<topic>), or LogAndFailProcessingExceptionHandler or LogAndContinueProcessingExceptionHandler`},
		{kv: map[string]string{"processing.exception.handler": "LogAndContinueExceptionHandler"},
			error: `processing.exception.handler: want`},
		{kv: map[string]string{"processing.exception.handler": "dead_letter(a)", "errors.deadletterqueue.topic.name": "b"},
			error: "processing.exception.handler = dead_letter(a) names another topic than b"},
	}
	for _, c := range cases {
		cfg, eff, err := ParseConfig("app", c.kv, "localhost:9092")
		if c.error != "" {
			if err == nil || !strings.Contains(err.Error(), c.error) {
				t.Errorf("%v: error %v, want it to contain %q", c.kv, err, c.error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.kv, err)
			continue
		}
		if cfg.DeserializationPolicy != c.deser || cfg.ProcessingPolicy != c.proc || cfg.DeadLetterTopic != c.topic {
			t.Errorf("%v: policies %s, %s, topic %q; want %s, %s, %q", c.kv, cfg.DeserializationPolicy, cfg.ProcessingPolicy, cfg.DeadLetterTopic, c.deser, c.proc, c.topic)
		}
		if eff["processing.exception.handler"] != c.proc.String() || eff["errors.deadletterqueue.topic.name"] != c.topic {
			t.Errorf("%v: effective config %v", c.kv, eff)
		}
	}
}

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
			HeaderStacktrace: "runtime: record at orders/3@1842 failed in node KSTREAM-MAPVALUES-0000000001: " + c.err.Error(),
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
