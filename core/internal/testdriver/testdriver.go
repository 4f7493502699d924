// Package testdriver runs an application as Kafka Streams' TopologyTestDriver
// does: on its own in-process broker (topics of one partition) and state
// directory, one piped record at a time, each processed completely (through
// repartition topics) and committed before the next. The server's test
// driver sessions and the Go API's TestDriver both use it. See
// docs/design/test-driver.md.
package testdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
)

// ConfigKey is the configuration key that asks for a test driver.
const ConfigKey = "polystreams.test.driver"

// Enabled reports whether config asks for a test driver (ConfigKey true).
func Enabled(config map[string]string) bool {
	b, _ := strconv.ParseBool(config[ConfigKey])
	return b
}

// ErrUnknownTopic: a topic the topology does not read (piped to) or does
// not write (read from).
var ErrUnknownTopic = errors.New("unknown topic")

// topicError names the unknown topic and the topics there are; it is
// ErrUnknownTopic.
type topicError struct{ msg string }

func (e *topicError) Error() string        { return e.msg }
func (e *topicError) Is(target error) bool { return target == ErrUnknownTopic }

// Driver is one application's test broker, state directory and wall clock.
// Its methods are safe for concurrent use and serialize: one piped record is
// processed completely before anything else happens.
type Driver struct {
	broker *broker.Embedded
	dir    string
	cl     *kgo.Client // writes piped records
	closed sync.Once

	mu  sync.Mutex // guards app, clock; held for each call
	app *engine.App
	// clock is the virtual wall clock, epoch ms: the timestamp of records
	// piped without one.
	clock int64
	// wall mirrors clock for the engine's wall-clock punctuators.
	wall atomic.Int64
}

// New starts a test driver's broker and state directory and returns the
// configuration the application runs with: user's with ConfigKey true,
// bootstrap.servers and state.dir the driver's, processing.guarantee
// at_least_once (one instance with no failures writes the same either way,
// and quiescence needs writes visible before a commit), and a bundle linger
// of 0 unless set (a test pipes one record at a time).
func New(user map[string]string) (*Driver, map[string]string, error) {
	b, err := broker.Start(broker.Options{Partitions: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("test driver: %w", err)
	}
	dir, err := os.MkdirTemp("", "polystreams-test-driver-")
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("test driver: state directory: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Close()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("test driver: %w", err)
	}
	kv := make(map[string]string, len(user)+5)
	for k, v := range user {
		kv[k] = v
	}
	kv[ConfigKey] = "true"
	kv["bootstrap.servers"] = b.Addr()
	kv["state.dir"] = dir
	kv["processing.guarantee"] = config.AtLeastOnce
	if _, ok := kv["polystreams.bundle.linger.ms"]; !ok {
		kv["polystreams.bundle.linger.ms"] = "0"
	}
	return &Driver{broker: b, dir: dir, cl: cl, clock: time.Now().UnixMilli()}, kv, nil
}

// Start creates the topology's source topics (one partition each, as
// TopologyTestDriver runs every task as partition 0) and starts app, which
// must run with the configuration New returned. It does not wait for the
// tasks: Ready does.
func (d *Driver) Start(ctx context.Context, app *engine.App) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.app != nil {
		return errors.New("test driver: started already")
	}
	if topics := app.SourceTopics(); len(topics) > 0 {
		resp, err := kadm.NewClient(d.cl).CreateTopics(ctx, 1, 1, nil, topics...)
		if err != nil {
			return fmt.Errorf("test driver: creating source topics: %w", err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return fmt.Errorf("test driver: creating source topic %q: %w", r.Topic, r.Err)
			}
		}
	}
	// Wall-clock punctuators run by the virtual clock, read without d.mu
	// (AdvanceWallClock holds it while they run).
	d.wall.Store(d.clock)
	app.SetWallClock(d.wall.Load)
	if err := app.Start(ctx); err != nil {
		return err
	}
	d.app = app
	return nil
}

// started is the application, or an error before Start.
func (d *Driver) started() (*engine.App, error) {
	if d.app == nil {
		return nil, errors.New("test driver: the topology is not started")
	}
	return d.app, nil
}

// Record is a record to pipe. A nil Key or Value is a Kafka null.
type Record struct {
	Topic      string
	Key, Value []byte
	// Timestamp in epoch ms; nil: the wall clock's.
	Timestamp *int64
	Headers   []kgo.RecordHeader
}

// Pipe writes records one at a time, each processed completely (through
// repartition topics) and committed before the next. A topic the topology
// does not read fails the call (wrapping ErrUnknownTopic) before anything is
// written. When the application fails on a record (a function failed, with
// processing.exception.handler fail), Pipe stops there and returns how many
// records were processed and the failure (a *engine.RecordError for a
// record's); err is for the call itself (a write that failed, ctx).
func (d *Driver) Pipe(ctx context.Context, recs []Record) (processed int, failure, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	app, err := d.started()
	if err != nil {
		return 0, nil, err
	}
	sources := app.SourceTopics()
	for i, r := range recs {
		if !slices.Contains(sources, r.Topic) && !app.PatternReads(r.Topic) {
			return 0, nil, &topicError{fmt.Sprintf("record %d: topic %q is not read by the topology (it reads %s)", i, r.Topic, listOf(sources))}
		}
	}
	for _, r := range recs {
		if err := d.patternTopic(ctx, app, r.Topic); err != nil {
			return processed, nil, err
		}
		ts := d.clock
		if r.Timestamp != nil {
			ts = *r.Timestamp
		}
		rec := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(ts), Headers: r.Headers}
		if err := d.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return processed, nil, fmt.Errorf("writing to %q: %w", r.Topic, err)
		}
		if err := app.Quiesce(ctx); err != nil {
			if ctx.Err() != nil {
				return processed, nil, err
			}
			return processed, err, nil
		}
		processed++
	}
	return processed, nil, nil
}

// patternTopic makes a topic a pattern source reads exist and read, before
// the first record piped into it: TopologyTestDriver reads every topic its
// patterns match from the start.
func (d *Driver) patternTopic(ctx context.Context, app *engine.App, topic string) error {
	if !app.PatternReads(topic) || app.PatternReading(topic) {
		return nil
	}
	resp, err := kadm.NewClient(d.cl).CreateTopics(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("test driver: creating topic %q, which a pattern source reads: %w", topic, err)
	}
	// The application's metadata may be a moment old (its admin client
	// serves a listing from its cache for 100 ms): until it shows the
	// topic, it refreshes again.
	deadline := time.Now().Add(patternWait)
	for {
		if _, err := app.RefreshPatterns(ctx); err != nil {
			return fmt.Errorf("test driver: subscribing to topic %q, which a pattern source reads: %w", topic, err)
		}
		if app.PatternReading(topic) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("test driver: topic %q, which a pattern source reads, did not show in the application's metadata within %s", topic, patternWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("test driver: waiting for topic %q to show in the application's metadata: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// patternWait bounds the wait for a new topic a pattern source reads to
// show in the application's metadata.
const patternWait = 10 * time.Second

// Ready waits until the application's tasks are assigned and everything
// written so far is processed.
func (d *Driver) Ready(ctx context.Context) error {
	_, err := d.AdvanceWallClock(ctx, 0)
	return err
}

// Output returns the records the topology wrote to topic since the last
// Output of it, oldest first, and the serdes its sinks write (empty when
// they differ). A topic it does not write fails (wrapping ErrUnknownTopic).
func (d *Driver) Output(topic string) ([]*kgo.Record, [2]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	app, err := d.started()
	if err != nil {
		return nil, [2]string{}, err
	}
	sinks := app.SinkTopics()
	serdes, ok := sinks[topic]
	if !ok {
		serdes, ok = app.ExtractedSerdes() // a TopicNameExtractor may name it
	}
	if !ok {
		names := make([]string, 0, len(sinks))
		for t := range sinks {
			names = append(names, t)
		}
		slices.Sort(names)
		return nil, [2]string{}, &topicError{fmt.Sprintf("topic %q is not written by the topology (it writes %s)", topic, listOf(names))}
	}
	return app.TakeOutput(topic), serdes, nil
}

// AdvanceWallClock moves the wall clock forward by ms (not negative), runs
// the due wall-clock punctuators and commits, then waits for what they
// sent on (TopologyTestDriver.advanceWallClockTime); it returns the new
// wall clock in epoch ms.
func (d *Driver) AdvanceWallClock(ctx context.Context, ms int64) (int64, error) {
	if ms < 0 {
		return 0, fmt.Errorf("millis %d is negative; the wall clock only moves forward", ms)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	app, err := d.started()
	if err != nil {
		return 0, err
	}
	d.clock += ms
	d.wall.Store(d.clock)
	if err := app.PunctuateWallClock(ctx); err != nil {
		return 0, err
	}
	if err := app.Quiesce(ctx); err != nil {
		return 0, err
	}
	return d.clock, nil
}

// Close ends the broker and removes the state directory; the application
// must be stopped first. Safe to call more than once.
func (d *Driver) Close() {
	d.closed.Do(func() {
		d.cl.Close()
		d.broker.Close()
		os.RemoveAll(d.dir)
	})
}

// listOf names topics for an error: `"a", "b"` or "no topic".
func listOf(topics []string) string {
	if len(topics) == 0 {
		return "no topic"
	}
	q := make([]string, len(topics))
	for i, t := range topics {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, ", ")
}
