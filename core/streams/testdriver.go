package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// ErrUnknownTopic is wrapped by the errors of TestDriver calls naming a
// topic the topology does not read (PipeInput) or write (ReadOutput).
var ErrUnknownTopic = testdriver.ErrUnknownTopic

// TestDriver runs a topology the way Kafka Streams' TopologyTestDriver does:
// each piped record is processed completely, through repartition topics,
// and committed (the record cache flushed) before PipeInput returns. It runs
// the engine's own runtime on a private in-process broker (topics of one
// partition) and state directory, which Close removes. See
// docs/design/test-driver.md.
//
//	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "wordcount"})
//	defer d.Close()
//	err = d.PipeInput("lines", nil, []byte("a b a"))
//	out, err := d.ReadOutput("word-counts")
//
// Safe for concurrent use; calls serialize.
type TestDriver struct {
	app *App
	td  *testdriver.Driver
}

// TestRecord is a record the topology wrote (Kafka Streams' TestRecord):
// serialized key and value (nil: a Kafka null), timestamp in epoch ms,
// headers in order.
type TestRecord struct {
	Key, Value []byte
	Timestamp  int64
	Headers    []Header
}

// Header is a record header (nil Value: a null header value).
type Header struct {
	Key   string
	Value []byte
}

// PipeOption sets a piped record's timestamp or headers.
type PipeOption func(*testdriver.Record)

// Timestamp sets a piped record's timestamp in epoch ms (default: the
// driver's wall clock, see AdvanceWallClock).
func Timestamp(ms int64) PipeOption { return func(r *testdriver.Record) { r.Timestamp = &ms } }

// WithHeader adds a header to a piped record.
func WithHeader(key string, value []byte) PipeOption {
	return func(r *testdriver.Record) { r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: value}) }
}

// startTimeout bounds NewTestDriver's wait for the tasks.
const startTimeout = time.Minute

// NewTestDriver starts the topology b has built so far under a test driver.
// c.Brokers is not used (the driver brings its broker); c.ApplicationID
// defaults to "test-driver"; c.Properties are the application's settings
// (e.g. statestore.cache.max.bytes=0 turns the record cache off; it is on
// by default, as in Kafka Streams); c.Logger nil logs warnings and errors to
// standard error.
func NewTestDriver(b *Builder, c Config) (*TestDriver, error) {
	if c.ApplicationID == "" {
		c.ApplicationID = "test-driver"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	td, kv, err := testdriver.New(c.Properties)
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	app, err := New(b, Config{ApplicationID: c.ApplicationID, Properties: kv, Logger: c.Logger})
	if err != nil {
		td.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := td.Start(ctx, app.rt); err != nil {
		td.Close()
		return nil, fmt.Errorf("streams: %w", err)
	}
	d := &TestDriver{app: app, td: td}
	if err := td.Ready(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("streams: %w", err)
	}
	return d, nil
}

// PipeInput writes one record to topic and returns once the topology has
// processed it completely (TestInputTopic.pipeInput). A topic the topology
// does not read fails, naming it (wrapping ErrUnknownTopic); a record whose
// function fails stops the application and returns its *RecordError.
func (d *TestDriver) PipeInput(topic string, key, value []byte, opts ...PipeOption) error {
	r := testdriver.Record{Topic: topic, Key: key, Value: value}
	for _, o := range opts {
		o(&r)
	}
	_, failure, err := d.td.Pipe(context.Background(), []testdriver.Record{r})
	if err != nil {
		return fmt.Errorf("streams: PipeInput: %w", err)
	}
	return failure
}

// ReadOutput returns the records the topology wrote to topic since the last
// read of it, oldest first (TestOutputTopic.readRecordsToList). A topic the
// topology does not write fails, naming it (wrapping ErrUnknownTopic).
func (d *TestDriver) ReadOutput(topic string) ([]TestRecord, error) {
	recs, _, err := d.td.Output(topic)
	if err != nil {
		return nil, fmt.Errorf("streams: ReadOutput: %w", err)
	}
	out := make([]TestRecord, len(recs))
	for i, r := range recs {
		out[i] = TestRecord{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()}
		for _, h := range r.Headers {
			out[i].Headers = append(out[i].Headers, Header{Key: h.Key, Value: h.Value})
		}
	}
	return out, nil
}

// ReadKeyValuesToMap returns the latest value per key the topology wrote to
// topic since the last read (TestOutputTopic.readKeyValuesToMap), keyed by
// the serialized key as a string; a tombstone maps its key to nil. A record
// with a null key fails, as in Kafka Streams.
func (d *TestDriver) ReadKeyValuesToMap(topic string) (map[string][]byte, error) {
	recs, err := d.ReadOutput(topic)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(recs))
	for _, r := range recs {
		if r.Key == nil {
			return nil, fmt.Errorf("streams: ReadKeyValuesToMap(%q): a record has a null key; use ReadOutput", topic)
		}
		out[string(r.Key)] = r.Value
	}
	return out, nil
}

// KeyValueStore reads a store of a TestDriver's topology: serialized keys
// and values, as the store's serdes write them.
type KeyValueStore struct {
	d    *TestDriver
	name string
}

// GetStore returns the store name (TopologyTestDriver.getKeyValueStore). A
// name the topology has no store of fails naming it and the stores there
// are (wrapping ErrNotFound).
func (d *TestDriver) GetStore(name string) (*KeyValueStore, error) {
	if _, ok := d.app.topo.Stores[name]; !ok {
		names := make([]string, 0, len(d.app.topo.Stores))
		for n := range d.app.topo.Stores {
			names = append(names, n)
		}
		sort.Strings(names)
		known := "none"
		if len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("streams: store %q does not exist (stores: %s): %w", name, known, ErrNotFound)
	}
	if d.app.topo.Stores[name].Kind == topology.StoreVersioned {
		return nil, fmt.Errorf("streams: store %q is a versioned store: read it with GetVersionedStore: %w", name, ErrInvalid)
	}
	return &KeyValueStore{d: d, name: name}, nil
}

// VersionedStore reads a versioned store of a TestDriver's topology
// (TopologyTestDriver.getVersionedKeyValueStore... as a VersionedKeyValueStore).
type VersionedStore struct {
	d         *TestDriver
	name      string
	retention int64
}

// GetVersionedStore returns the versioned store name (a table materialized
// with Versioned); another store fails wrapping ErrInvalid, an unknown one
// ErrNotFound.
func (d *TestDriver) GetVersionedStore(name string) (*VersionedStore, error) {
	r, err := versionedRetention(d.app.topo, name)
	if err != nil {
		return nil, fmt.Errorf("streams: GetVersionedStore: %w", err)
	}
	return &VersionedStore{d: d, name: name, retention: r}, nil
}

// Get returns key's latest version (VersionedKeyValueStore.get(key)); ok
// is false when there is none or it is a tombstone.
func (s *VersionedStore) Get(key []byte) (VersionedRecord, bool, error) {
	return s.get(key, LatestVersion)
}

// GetAsOf returns the version of key valid at asOf
// (VersionedKeyValueStore.get(key, asOfTimestamp)).
func (s *VersionedStore) GetAsOf(key []byte, asOf int64) (VersionedRecord, bool, error) {
	return s.get(key, At(asOf))
}

func (s *VersionedStore) get(key []byte, at AsOf) (VersionedRecord, bool, error) {
	parts, err := s.d.app.rt.StorePartitions(s.name)
	if err != nil {
		return VersionedRecord{}, false, fmt.Errorf("streams: %w", err)
	}
	for _, p := range parts {
		v, ok, err := p.GetVersion(key, at.Latest, at.Timestamp, s.retention)
		if err != nil {
			return VersionedRecord{}, false, fmt.Errorf("streams: store %q: %w", s.name, err)
		}
		if ok {
			return versionedRecord(v), true, nil
		}
	}
	return VersionedRecord{}, false, nil
}

// Get returns key's value, nil when the store holds none.
func (s *KeyValueStore) Get(key []byte) ([]byte, error) {
	parts, err := s.d.app.rt.StorePartitions(s.name)
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	for _, p := range parts {
		v, _, err := p.Get(key)
		if err != nil {
			return nil, fmt.Errorf("streams: %w", err)
		}
		if v != nil {
			return v, nil
		}
	}
	return nil, nil
}

// All returns every entry, by serialized key as a string.
func (s *KeyValueStore) All() (map[string][]byte, error) {
	parts, err := s.d.app.rt.StorePartitions(s.name)
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	out := map[string][]byte{}
	for _, p := range parts {
		if err := p.Scan(func(k, v []byte, _ int64) error {
			out[string(k)] = append([]byte(nil), v...)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("streams: %w", err)
		}
	}
	return out, nil
}

// AdvanceWallClock moves the driver's wall clock forward
// (TopologyTestDriver.advanceWallClockTime) and commits; it returns the new
// wall clock in epoch ms. Records piped without a timestamp take its time.
func (d *TestDriver) AdvanceWallClock(by time.Duration) (int64, error) {
	ms, err := d.td.AdvanceWallClock(context.Background(), by.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("streams: AdvanceWallClock: %w", err)
	}
	return ms, nil
}

// DroppedRecords counts the records the topology dropped (Kafka Streams'
// dropped-records-total): a null key or value an aggregation skips, a
// record too late for its windows.
func (d *TestDriver) DroppedRecords() int64 { return d.app.DroppedRecords() }

// Close stops the application and removes the driver's broker and state.
func (d *TestDriver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := d.app.Stop(ctx)
	d.td.Close()
	if st, appErr := d.app.State(); st == Failed && appErr != nil {
		var re *RecordError
		if errors.As(appErr, &re) {
			return nil // PipeInput reported it
		}
	}
	return err
}
