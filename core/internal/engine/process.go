package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

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
	newP   topology.NewProcessorFunc
	p      topology.NativeProcessor // nil until initialised
	stores map[string]*storeTx

	// cur is the record being processed (nil in init).
	cur *rec
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

func (o *processOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	n := o.s.node
	if o.p == nil {
		p := o.newP()
		if p == nil {
			return nil, fmt.Errorf("runtime: the processor supplier of node %s in task %s returned nil", n.Name, o.t.id)
		}
		o.cur = nil
		if err := p.Init(o); err != nil {
			return nil, fmt.Errorf("runtime: init of node %s in task %s failed: %w", n.Name, o.t.id, err)
		}
		o.p = p
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

// revive closes the instance: the next record makes and initialises a
// new one, as Kafka Streams closes a corrupted task and runs init again.
func (o *processOp) revive() {
	if o.p != nil {
		_ = o.p.Close()
		o.p = nil
	}
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
		return nil, fmt.Errorf("%s: store %q of node %s is a %s; the Go processor API reads key-value stores only", call, name, o.s.node.Name, st.Type)
	}
	return tx, nil
}

// rowTime is the timestamp a processor's write is stored with: the input
// record's (0 in a punctuator or init).
func (o *processOp) rowTime() int64 {
	if o.cur == nil {
		return 0
	}
	return o.cur.ts
}

func (o *processOp) Get(store string, key []byte) ([]byte, error) {
	tx, err := o.store("get", store)
	if err != nil {
		return nil, err
	}
	v, _, err := tx.get(key)
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
	tx.put(slices.Clone(key), slices.Clone(value), o.rowTime())
	return nil
}

func (o *processOp) Delete(store string, key []byte) ([]byte, error) {
	tx, err := o.store("delete", store)
	if err != nil {
		return nil, err
	}
	old, _, err := tx.get(key)
	if err != nil {
		return nil, err
	}
	if old != nil {
		tx.put(slices.Clone(key), nil, o.rowTime())
	}
	return old, nil
}

func (o *processOp) Range(store string, lo, hi []byte, f func(key, value []byte) bool) error {
	tx, err := o.store("range", store)
	if err != nil {
		return err
	}
	return tx.scan(lo, hi, func(k, v []byte, _ int64) bool { return f(k, v) })
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
