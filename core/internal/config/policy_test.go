package config

import (
	"strings"
	"testing"
)

func TestParseErrorPolicies(t *testing.T) {
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
		cfg, eff, err := Parse("app", c.kv, "localhost:9092")
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
