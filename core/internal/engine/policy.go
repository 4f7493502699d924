package engine

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Policy is what happens to a record that fails: Kafka Streams' exception
// handlers (default.deserialization.exception.handler,
// processing.exception.handler) and its dead letter queue (KIP-1034).
type Policy int

const (
	// PolicyFail fails the application (LogAndFailExceptionHandler): the
	// failing batch is discarded and nothing of it is committed.
	PolicyFail Policy = iota
	// PolicyContinue logs the record and skips it
	// (LogAndContinueExceptionHandler); it counts as a dropped record.
	PolicyContinue
	// PolicyDeadLetter skips the record like PolicyContinue and writes it
	// to errors.deadletterqueue.topic.name, in the same transaction as the
	// outputs of its batch.
	PolicyDeadLetter
)

func (p Policy) String() string {
	switch p {
	case PolicyContinue:
		return "log_and_continue"
	case PolicyDeadLetter:
		return "dead_letter"
	}
	return "fail"
}

// parsePolicy reads a handler config value: a short name (fail,
// log_and_fail, log_and_continue, dead_letter, dead_letter(topic)) or one of
// Kafka Streams' handler classes, with or without its package. It returns
// the topic a dead_letter(topic) names.
func parsePolicy(key, v string) (Policy, string, error) {
	name := strings.TrimSpace(v)
	name = strings.TrimPrefix(name, "org.apache.kafka.streams.errors.")
	processing := key == "processing.exception.handler"
	switch name {
	case "fail", "log_and_fail":
		return PolicyFail, "", nil
	case "log_and_continue":
		return PolicyContinue, "", nil
	case "dead_letter":
		return PolicyDeadLetter, "", nil
	}
	if strings.HasPrefix(name, "dead_letter(") && strings.HasSuffix(name, ")") {
		topic := strings.TrimSpace(name[len("dead_letter(") : len(name)-1])
		if topic == "" {
			return PolicyFail, "", fmt.Errorf("%s: dead_letter() names no topic", key)
		}
		return PolicyDeadLetter, topic, nil
	}
	fail, cont := "LogAndFailExceptionHandler", "LogAndContinueExceptionHandler"
	if processing {
		fail, cont = "LogAndFailProcessingExceptionHandler", "LogAndContinueProcessingExceptionHandler"
	}
	switch name {
	case fail:
		return PolicyFail, "", nil
	case cont:
		return PolicyContinue, "", nil
	}
	return PolicyFail, "", fmt.Errorf("%s: want fail (log_and_fail), log_and_continue, dead_letter or dead_letter(<topic>), or %s or %s", key, fail, cont)
}

// resolveDeadLetter settles the dead letter topic: dead_letter(topic) in a
// handler sets it, and must agree with errors.deadletterqueue.topic.name and
// the other handler's; dead_letter needs one. As in Kafka Streams (KIP-1034)
// log_and_continue with a dead letter topic writes there too.
func (c *Config) resolveDeadLetter(named map[string]string) []error {
	var errs []error
	keys := make([]string, 0, len(named))
	for k := range named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch t := named[k]; {
		case c.DeadLetterTopic == "":
			c.DeadLetterTopic = t
		case c.DeadLetterTopic != t:
			errs = append(errs, fmt.Errorf("%s = dead_letter(%s) names another topic than %s", k, t, c.DeadLetterTopic))
		}
	}
	if c.DeadLetterTopic == "" {
		if c.DeserializationPolicy == PolicyDeadLetter {
			errs = append(errs, errors.New("default.deserialization.exception.handler = dead_letter needs errors.deadletterqueue.topic.name (or dead_letter(<topic>))"))
		}
		if c.ProcessingPolicy == PolicyDeadLetter {
			errs = append(errs, errors.New("processing.exception.handler = dead_letter needs errors.deadletterqueue.topic.name (or dead_letter(<topic>))"))
		}
		return errs
	}
	if c.DeserializationPolicy == PolicyContinue {
		c.DeserializationPolicy = PolicyDeadLetter
	}
	if c.ProcessingPolicy == PolicyContinue {
		c.ProcessingPolicy = PolicyDeadLetter
	}
	return errs
}

// failKind tells deserialization failures from processing ones.
type failKind int

const (
	kindProcessing failKind = iota
	kindDeserialization
)

func (k failKind) String() string {
	if k == kindDeserialization {
		return "deserialization"
	}
	return "processing"
}

// kindOf is the kind of an engine-side failure: bytes that do not decode
// (serde.ErrMalformed, e.g. a built-in sum over a value that is not a long)
// are a deserialization failure, anything else a processing one.
func kindOf(err error) failKind {
	if errors.Is(err, serde.ErrMalformed) {
		return kindDeserialization
	}
	return kindProcessing
}

// Dead letter headers: Kafka Streams' (KIP-1034, ExceptionHandlerUtils), plus
// the node the record failed in and the kind of failure.
const (
	HeaderException  = "__streams.errors.exception"
	HeaderMessage    = "__streams.errors.message"
	HeaderStacktrace = "__streams.errors.stacktrace"
	HeaderTopic      = "__streams.errors.topic"
	HeaderPartition  = "__streams.errors.partition"
	HeaderOffset     = "__streams.errors.offset"
	HeaderNode       = "__streams.errors.node"
	HeaderKind       = "__streams.errors.kind"
)

// recordFailed applies the policy of kind to record r, which failed in node
// with err. It returns the RecordError that fails the batch under
// PolicyFail, else nil: the record was logged and skipped (and under
// PolicyDeadLetter its dead letter joins the batch's outputs, so it is
// written, and under exactly_once_v2 committed, with them or not at all).
func (t *task) recordFailed(r rec, node string, kind failKind, err error) error {
	re := &RecordError{Topic: r.in.Topic, Partition: r.in.Partition, Offset: r.in.Offset, Node: node, Err: err}
	p := t.app.cfg.ProcessingPolicy
	if kind == kindDeserialization {
		p = t.app.cfg.DeserializationPolicy
	}
	if p == PolicyFail {
		return re
	}
	t.app.dropped.Add(1)
	t.app.stats.failed.Add(1)
	if p == PolicyDeadLetter {
		t.out = append(t.out, deadLetter(t.app.cfg.DeadLetterTopic, r.in, node, kind, re))
		t.app.stats.deadLettered.Add(1)
		t.app.log.Warn("skipping record, sent to the dead letter topic", "policy", p.String(), "kind", kind.String(), "topic", t.app.cfg.DeadLetterTopic, "error", re.Error())
	} else {
		t.app.log.Warn("skipping record", "policy", p.String(), "kind", kind.String(), "error", re.Error())
	}
	return nil
}

// deadLetter is the dead letter of input record in: its key, value, headers
// and timestamp as read, plus headers naming the error, node, topic,
// partition and offset.
func deadLetter(topic string, in *kgo.Record, node string, kind failKind, re *RecordError) *kgo.Record {
	msg := re.Err.Error()
	h := make([]kgo.RecordHeader, 0, len(in.Headers)+8)
	h = append(h, in.Headers...)
	h = append(h,
		kgo.RecordHeader{Key: HeaderException, Value: []byte(exceptionName(msg, kind))},
		kgo.RecordHeader{Key: HeaderMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: HeaderStacktrace, Value: []byte(re.Error())},
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(in.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: []byte(strconv.Itoa(int(in.Partition)))},
		kgo.RecordHeader{Key: HeaderOffset, Value: []byte(strconv.FormatInt(in.Offset, 10))},
		kgo.RecordHeader{Key: HeaderNode, Value: []byte(node)},
		kgo.RecordHeader{Key: HeaderKind, Value: []byte(kind.String())},
	)
	ts := in.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	return &kgo.Record{Topic: topic, Key: in.Key, Value: in.Value, Headers: h, Timestamp: ts}
}

// exceptionName is the exception's name for the dead letter header: the
// host's exception type when its message starts with one ("ValueError: ..."),
// else the engine's name for the kind of failure.
func exceptionName(msg string, kind failKind) string {
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " \t\n()") {
		return msg[:i]
	}
	if kind == kindDeserialization {
		return "polystreams.DeserializationError"
	}
	return "polystreams.ProcessingError"
}

// RecordError is a record that failed in a node: its input record's topic,
// partition and offset, and the node.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Node      string
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("runtime: record at %s/%d@%d failed in node %s: %v", e.Topic, e.Partition, e.Offset, e.Node, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// recordError names the record, the node and what went wrong.
func recordError(r rec, node string, err error) error {
	return &RecordError{Topic: r.in.Topic, Partition: r.in.Partition, Offset: r.in.Offset, Node: node, Err: err}
}
