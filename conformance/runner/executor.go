package main

import (
	"encoding/json"
	"strings"
	"sync"
)

// event is one line an executor reports on its standard output (Go's, in
// process, sends the same values).
type event struct {
	Event string `json:"event"` // built | build_error | started | failed | dropped_records | stopped
	// built: the topology's describe() text.
	Describe string `json:"describe,omitempty"`
	// build_error: the refused step's index; build_error and failed: the
	// error's Connect code (snake case) and message.
	Step    int    `json:"step,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// failed: the failed record, when the failure was a record's.
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition,omitempty"`
	Offset    int64  `json:"offset,omitempty"`
	Node      string `json:"node,omitempty"`
	// dropped_records: the application's dropped-records-total, reported
	// when a started executor is told to stop (before it stops).
	Count int64 `json:"count,omitempty"`
	// started: the engine session the executor's app runs in (test driver
	// mode pipes into it).
	Session string `json:"session,omitempty"`
}

// spec is what an executor is told: the case and where and as what to
// run it. Subprocess executors read it as JSON from the file named by their
// first argument.
type spec struct {
	Case          json.RawMessage   `json:"case"`
	Engine        string            `json:"engine"`
	ApplicationID string            `json:"application_id"`
	TopicPrefix   string            `json:"topic_prefix"`
	Config        map[string]string `json:"config"`
	Start         bool              `json:"start"`

	c       *Case  // the parsed case (Go's executor uses it)
	brokers string // the broker (Go's executor connects to it itself)
}

// execution is one executor running one case.
type execution interface {
	// Events delivers the executor's events; it is closed when the
	// executor has ended.
	Events() <-chan event
	// Stop asks the executor to stop its application and end.
	Stop()
	// Kill ends it now.
	Kill()
	// Diagnostics is the tail of what it wrote besides events (stderr),
	// and how it ended, for a report.
	Diagnostics() string
	// Printed are the lines print steps wrote so far, in order: what a
	// process executor wrote to standard output besides events.
	Printed() []string
}

// language runs cases in one language.
type language interface {
	Name() string
	Launch(s spec) (execution, error)
}

// tail keeps the last max bytes written to it. Safe for concurrent use.
type tail struct {
	mu  sync.Mutex // guards buf
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
