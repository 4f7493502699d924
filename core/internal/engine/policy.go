package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/serde"
)

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
	if p == config.PolicyFail {
		return re
	}
	t.app.dropped.Add(1)
	t.app.stats.failed.Add(1)
	if p == config.PolicyDeadLetter {
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
	return fmt.Sprintf("engine: record at %s/%d@%d failed in node %s: %v", e.Topic, e.Partition, e.Offset, e.Node, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// recordError names the record, the node and what went wrong.
func recordError(r rec, node string, err error) error {
	return &RecordError{Topic: r.in.Topic, Partition: r.in.Partition, Offset: r.in.Offset, Node: node, Err: err}
}
