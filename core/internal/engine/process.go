package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// processOp runs a Processor API processor (KStream.process /
// processValues, Topology.addProcessor) written in Go: one instance per
// task (ProcessorSupplier.get()), made and initialised before the task's
// first record, reading and writing its stores through the store
// transaction, so its writes join the batch, the changelog and, under
// exactly_once_v2, the Kafka transaction as a native operator's do
// (docs/design/processor.md). Forwards to all children are returned;
// forwards to one child are pushed to it after the run, as branchOp does.
// A record whose Process fails keeps what it did before the failure
// (Kafka Streams undoes nothing) and goes to the policy.
type processOp struct {
	opBase
	newP topology.NewProcessorFunc
	p    topology.NativeProcessor // nil until initialised
	// revived: an aborted transaction revived the operator (revive).
	revived atomic.Bool
	stores  map[string]*storeTx

	// cur is the record being processed (nil in init and punctuators);
	// punctTime is the running punctuator's time.
	cur       *rec
	punctTime int64
	// out collects the run's forwards to all children; byChild, to one.
	out     []rec
	byChild [][]rec
}

func newProcessOp(t *task, s *step) operator {
	o := &processOp{opBase: baseOf(t, s, nil), stores: map[string]*storeTx{}}
	o.newP, _ = s.node.Fn.Native.(topology.NewProcessorFunc)
	for _, name := range s.node.Stores {
		o.stores[name] = t.stores[name]
	}
	return o
}

// ensure makes and initialises the task's instance, once (again after a
// revival).
func (o *processOp) ensure() error {
	if o.p != nil {
		return nil
	}
	n := o.s.node
	p := o.newP()
	if p == nil {
		return fmt.Errorf("engine: the processor supplier of node %s in task %s returned nil", n.Name, o.t.id)
	}
	o.cur = nil
	o.p = p
	if err := p.Init(o); err != nil {
		o.p = nil
		o.t.dropSchedules(o)
		return fmt.Errorf("engine: init of node %s in task %s failed: %w", n.Name, o.t.id, err)
	}
	return nil
}

// initProcessors initialises the task's processors before its first
// records (Kafka Streams initialises every processor of a task when the
// task starts, so a processor behind a filter schedules too).
func (t *task) initProcessors(ctx context.Context) error {
	t.applyRevivals()
	for _, s := range t.plan.steps {
		if s.node.Op != topology.OpProcess && s.node.Op != topology.OpProcessValues && s.node.Op != topology.OpTableTransformValues {
			continue
		}
		switch o := innerOp(t.op(s)).(type) {
		case *processOp:
			if err := o.ensure(); err != nil {
				return err
			}
		case *hostProcessOp:
			if err := o.ensure(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *processOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	n := o.s.node
	if err := o.ensure(); err != nil {
		return nil, err
	}
	o.out, o.byChild = nil, make([][]rec, len(o.s.next))
	for i := range recs {
		r := &recs[i]
		o.cur = r
		err := o.p.Process(o, topology.NativeRecord{Key: r.key, Value: r.value, Timestamp: r.ts, Headers: headersOf(r)})
		if err != nil {
			var refused *processorRefusal
			if errors.As(err, &refused) && refused.fatal {
				return nil, err
			}
			if err := o.t.recordFailed(*r, n.Name, kindOf(err), err); err != nil {
				return nil, err
			}
		}
	}
	o.cur = nil
	for i, c := range o.s.next {
		if len(o.byChild[i]) > 0 {
			if err := o.t.push(ctx, c, o.byChild[i]); err != nil {
				return nil, err
			}
		}
	}
	out := o.out
	o.out, o.byChild = nil, nil
	return out, nil
}

// revive marks the instance for closing (an aborted transaction; it may
// be called off the task's goroutine): before its next work the task
// closes it and drops its schedules, and a new one is made and
// initialised, whose init schedules again, as Kafka Streams closes a
// corrupted task and runs init again (applyRevivals).
func (o *processOp) revive() { o.revived.Store(true) }

// applyRevival closes a revived instance, on the task's goroutine.
func (o *processOp) applyRevival() {
	if !o.revived.Swap(false) {
		return
	}
	if o.p != nil {
		_ = o.p.Close()
		o.p = nil
	}
	o.t.dropSchedules(o)
}

// closeProcessors closes the task's processors as the task stops
// (Processor.close): Go processors here, host processors by a bundle of
// their close entries (hostProcessOp.close).
func (t *task) closeProcessors(ctx context.Context) {
	for _, op := range t.ops {
		switch o := innerOp(op).(type) {
		case *processOp:
			if o.p == nil {
				continue
			}
			if err := o.p.Close(); err != nil {
				t.app.log.Warn("closing a processor as its task stops", "task", t.id.String(), "node", o.s.node.Name, "error", err)
			}
			o.p = nil
			t.dropSchedules(o)
		case *hostProcessOp:
			o.close(ctx)
		}
	}
}

// applyRevivals closes the processors an aborted transaction revived,
// before the task's next records or punctuation.
func (t *task) applyRevivals() {
	for _, op := range t.ops {
		switch o := innerOp(op).(type) {
		case *processOp:
			o.applyRevival()
		case *hostProcessOp:
			o.applyRevival()
		}
	}
}

// innerOp is the processor operator op runs its function with: a
// transform_values node's transformer, else op.
func innerOp(op operator) operator {
	if o, ok := op.(*tableTransformValuesOp); ok {
		return o.inner
	}
	return op
}

// Schedule registers a punctuator (ProcessorContext.schedule).
func (o *processOp) Schedule(interval int64, typ topology.PunctuationType, fn func(ts int64) error) (topology.Cancellable, error) {
	if interval < 1 {
		return nil, fmt.Errorf("schedule: node %s: interval %d ms; the minimum is 1 ms", o.s.node.Name, interval)
	}
	if typ != topology.StreamTime && typ != topology.WallClockTime {
		return nil, fmt.Errorf("schedule: node %s: unknown punctuation type %d", o.s.node.Name, typ)
	}
	if fn == nil {
		return nil, fmt.Errorf("schedule: node %s: no punctuator", o.s.node.Name)
	}
	s := &schedule{op: o, typ: typ, interval: interval, fn: fn}
	o.t.addSchedule(s)
	return s, nil
}

// punctuate calls s's punctuator at now with no input record, and pushes
// what it forwards.
func (o *processOp) punctuate(ctx context.Context, s *schedule, now int64) error {
	o.cur, o.punctTime = nil, now
	defer func() { o.punctTime = 0 }()
	o.out, o.byChild = nil, make([][]rec, len(o.s.next))
	if err := s.fn(now); err != nil {
		var refused *processorRefusal
		if errors.As(err, &refused) && refused.fatal {
			return err
		}
		if err := o.t.punctuatorFailed(o.s.node.Name, s.typ, now, err); err != nil {
			return err
		}
	}
	return o.flushForwards(ctx)
}

// flushForwards pushes the forwards collected to their children.
func (o *processOp) flushForwards(ctx context.Context) error {
	out, byChild := o.out, o.byChild
	o.out, o.byChild = nil, nil
	for i, c := range o.s.next {
		recs := slices.Concat(out, byChild[i])
		if len(recs) > 0 {
			if err := o.t.push(ctx, c, recs); err != nil {
				return err
			}
		}
	}
	return nil
}

// processorRefusal is a call the engine refuses (a processValues forward
// that changes the key): it fails the batch, not the record.
type processorRefusal struct {
	msg   string
	fatal bool
}

func (e *processorRefusal) Error() string { return e.msg }

// Node is the processor's node name.
func (o *processOp) Node() string { return o.s.node.Name }

// Stores are the stores connected to the processor.
func (o *processOp) Stores() []string { return slices.Clone(o.s.node.Stores) }

// Forward sends r to every child, or to the one named.
func (o *processOp) Forward(r topology.NativeRecord, child string) error {
	n := o.s.node
	if n.Op == topology.OpProcessValues && o.cur != nil && string(r.Key) != string(o.cur.key) {
		return &processorRefusal{msg: fmt.Sprintf("forward: node %s is a process_values processor, which keeps the input's key, and forwarded key %q for input key %q", n.Name, r.Key, o.cur.key), fatal: true}
	}
	out := rec{key: r.Key, value: r.Value, ts: r.Timestamp, ownHeaders: true}
	for _, h := range r.Headers {
		out.headers = append(out.headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if o.cur != nil {
		out.in = o.cur.in
	} else {
		// A punctuator's record context: its time, no topic, partition -1,
		// offset -1 (ProcessorContextImpl in a punctuation).
		out.in = &kgo.Record{Partition: -1, Offset: -1, Timestamp: time.UnixMilli(r.Timestamp)}
	}
	if child == "" {
		o.out = append(o.out, out)
		return nil
	}
	for i, c := range o.s.next {
		if c.node.Name == child {
			o.byChild[i] = append(o.byChild[i], out)
			return nil
		}
	}
	names := make([]string, len(o.s.next))
	for i, c := range o.s.next {
		names[i] = c.node.Name
	}
	return fmt.Errorf("forward: node %s has no child %q (children: [%s])", n.Name, child, strings.Join(names, ", "))
}

// store returns a connected key-value store.
func (o *processOp) store(call, name string) (*storeTx, error) {
	tx := o.stores[name]
	if tx == nil {
		return nil, fmt.Errorf("%s: node %s has no access to store %q (its stores: [%s])", call, o.s.node.Name, name, strings.Join(o.s.node.Stores, ", "))
	}
	if st := tx.store.Processor; st != nil && st.Type.Windowed() {
		return nil, fmt.Errorf("%s: store %q of node %s is a %s; read it with WindowPut and WindowFetch", call, name, o.s.node.Name, st.Type)
	}
	if versionedStore(tx.store) {
		return nil, fmt.Errorf("%s: store %q of node %s is a versioned key-value store; use its versioned put, get and delete (with timestamps)", call, name, o.s.node.Name)
	}
	return tx, nil
}

// rowTime is the timestamp a processor's write is stored with: the input
// record's, in a punctuator its time (0 in init).
func (o *processOp) rowTime() int64 {
	if o.cur == nil {
		return o.punctTime
	}
	return o.cur.ts
}

func (o *processOp) Get(store string, key []byte) ([]byte, error) {
	tx, err := o.store("get", store)
	if err != nil {
		return nil, err
	}
	v, _, err := tx.Get(key)
	return v, err
}

func (o *processOp) Put(store string, key, value []byte) error {
	tx, err := o.store("put", store)
	if err != nil {
		return err
	}
	if key == nil {
		return fmt.Errorf("put: node %s: store %q takes no null key", o.s.node.Name, store)
	}
	tx.Put(slices.Clone(key), slices.Clone(value), o.rowTime())
	return nil
}

func (o *processOp) Delete(store string, key []byte) ([]byte, error) {
	tx, err := o.store("delete", store)
	if err != nil {
		return nil, err
	}
	old, _, err := tx.Get(key)
	if err != nil {
		return nil, err
	}
	if old != nil {
		tx.Put(slices.Clone(key), nil, o.rowTime())
	}
	return old, nil
}

func (o *processOp) Range(store string, lo, hi []byte, f func(key, value []byte) bool) error {
	tx, err := o.store("range", store)
	if err != nil {
		return err
	}
	return tx.Scan(lo, state.UpperBound(hi), func(k, v []byte, _ int64) bool { return f(k, v) })
}

// windowStore returns a connected window store.
func (o *processOp) windowStore(call, name string) (*storeTx, error) {
	tx := o.stores[name]
	if tx == nil {
		return nil, fmt.Errorf("%s: node %s has no access to store %q (its stores: [%s])", call, o.s.node.Name, name, strings.Join(o.s.node.Stores, ", "))
	}
	if st := tx.store.Processor; st == nil || !st.Type.Windowed() {
		return nil, fmt.Errorf("%s: store %q of node %s is not a window store", call, name, o.s.node.Name)
	}
	return tx, nil
}

func (o *processOp) WindowPut(store string, key, value []byte, windowStart int64) error {
	tx, err := o.windowStore("window put", store)
	if err != nil {
		return err
	}
	if key == nil {
		return fmt.Errorf("window put: node %s: store %q takes no null key", o.s.node.Name, store)
	}
	return o.t.windowPut(tx, o.s.node.Name, key, value, windowStart, o.rowTime())
}

func (o *processOp) WindowFetch(store string, key []byte, from, to int64, f func(key []byte, windowStart int64, value []byte) bool) error {
	tx, err := o.windowStore("window fetch", store)
	if err != nil {
		return err
	}
	rows, err := windowFetch(tx, key, from, to)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if !f(r.key, r.start, r.value) {
			return nil
		}
	}
	return nil
}

// versionedStore returns a connected versioned store.
func (o *processOp) versionedStore(call, name string, key []byte) (*storeTx, error) {
	tx := o.stores[name]
	if tx == nil {
		return nil, fmt.Errorf("%s: node %s has no access to store %q (its stores: [%s])", call, o.s.node.Name, name, strings.Join(o.s.node.Stores, ", "))
	}
	if !versionedStore(tx.store) {
		return nil, fmt.Errorf("%s: store %q of node %s is not a versioned key-value store", call, name, o.s.node.Name)
	}
	if key == nil {
		return nil, fmt.Errorf("%s: node %s: store %q takes no null key", call, o.s.node.Name, name)
	}
	return tx, nil
}

func (o *processOp) VersionedPut(store string, key, value []byte, ts int64) (int64, error) {
	tx, err := o.versionedStore("versioned put", store, key)
	if err != nil {
		return 0, err
	}
	p, err := tx.putVersion(o.t.app.eos, slices.Clone(key), slices.Clone(value), ts)
	if err != nil {
		return 0, err
	}
	if !p.Put {
		// RocksDBVersionedStore counts an expired put or delete in
		// dropped-records (its expiredRecordSensor).
		o.t.app.dropped.Add(1)
	}
	return putCode(p), nil
}

func (o *processOp) VersionedGet(store string, key []byte, latest bool, asOf int64) (topology.NativeVersion, bool, error) {
	tx, err := o.versionedStore("versioned get", store, key)
	if err != nil {
		return topology.NativeVersion{}, false, err
	}
	v, ok, err := tx.getVersion(key, latest, asOf)
	if err != nil || !ok {
		return topology.NativeVersion{}, false, err
	}
	return nativeVersion(v), true, nil
}

func (o *processOp) VersionedDelete(store string, key []byte, ts int64) (topology.NativeVersion, bool, error) {
	tx, err := o.versionedStore("versioned delete", store, key)
	if err != nil {
		return topology.NativeVersion{}, false, err
	}
	v, ok, put, err := tx.deleteVersion(o.t.app.eos, slices.Clone(key), ts)
	if err == nil && !put {
		o.t.app.dropped.Add(1)
	}
	if err != nil || !ok {
		return topology.NativeVersion{}, false, err
	}
	return nativeVersion(v), true, nil
}

// nativeVersion is a version as a processor's store read returns it:
// without its validTo, as Kafka Streams 4.1.1's does (its
// MeteredVersionedKeyValueStore rebuilds the VersionedRecord from value
// and timestamp only; conformance: process_versioned_store).
func nativeVersion(v state.Version) topology.NativeVersion {
	return topology.NativeVersion{Value: v.Value, Timestamp: v.ValidFrom}
}

func (o *processOp) RecordMetadata() (topology.RecordMetadata, bool) {
	if o.cur == nil || o.cur.in == nil {
		return topology.RecordMetadata{}, false
	}
	in := o.cur.in
	return topology.RecordMetadata{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset}, true
}

// headersOf is r's headers: its own, else its input record's.
func headersOf(r *rec) []topology.Header {
	src := r.headers
	if !r.ownHeaders {
		if r.in == nil {
			return nil
		}
		src = r.in.Headers
	}
	if len(src) == 0 {
		return nil
	}
	hs := make([]topology.Header, len(src))
	for i, h := range src {
		hs[i] = topology.Header{Key: h.Key, Value: h.Value}
	}
	return hs
}
