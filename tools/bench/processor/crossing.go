package main

// The host's side (decode, the processor with its overlay, the op
// columns) and the engine applying the answer.

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// store is the host's view of one store for the length of a bundle: the
// prefetched entries under the host's own writes (the overlay), and for
// keys it does not know a fallback read.
type store struct {
	known    map[string][]byte // prefetched or written; nil value: absent
	fallback func(key []byte) ([]byte, error)
	calls    int
}

func (s *store) get(key []byte) ([]byte, error) {
	if v, ok := s.known[string(key)]; ok {
		return v, nil
	}
	s.calls++
	v, err := s.fallback(key)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ops is a processor answer's op columns, per record in order.
type ops struct {
	counts  []int32
	kinds   []int64
	targets []int64
	keys    column
	values  column
	tss     []int64
}

// What the user's processor does with each record.
const (
	// getPut reads the key's state, puts the new state and forwards one
	// record. The new state carries a running count in its first 8 bytes,
	// so the work is real and depends on what was read.
	getPut = iota
	// forwardOnly forwards the record and touches no store (to price a
	// prefetch nobody reads).
	forwardOnly
)

func process(st *store, what int, key, value []byte, ts int64, o *ops) error {
	if what == forwardOnly {
		o.kinds = append(o.kinds, opForward)
		o.targets = append(o.targets, 0)
		o.keys.add(key)
		o.values.add(value)
		o.tss = append(o.tss, ts)
		o.counts = append(o.counts, 1)
		return nil
	}
	cur, err := st.get(key)
	if err != nil {
		return err
	}
	n := uint64(0)
	if len(cur) >= 8 {
		n = binary.BigEndian.Uint64(cur)
	}
	next := make([]byte, len(value))
	copy(next, value)
	binary.BigEndian.PutUint64(next, n+1)
	st.known[string(key)] = next // the overlay: later records of the key read it
	o.kinds = append(o.kinds, opPut, opForward)
	o.targets = append(o.targets, 0, 0) // store 0; all children
	o.keys.add(key)
	o.values.add(next)
	o.tss = append(o.tss, ts)
	o.keys.add(key)
	o.values.add(next)
	o.tss = append(o.tss, ts)
	o.counts = append(o.counts, 2)
	return nil
}

func encodeOps(o *ops) []byte {
	b := make([]byte, 0, len(o.values.data)+len(o.keys.data)+16*len(o.kinds))
	b = appendLens(b, rOpCounts, o.counts)
	b = appendInts(b, rOpKinds, o.kinds)
	b = appendInts(b, rOpTargets, o.targets)
	b = appendLens(b, rOpKeyLengths, o.keys.lens)
	b = appendBytes(b, rOpKeys, o.keys.data)
	b = appendLens(b, rOpValLengths, o.values.lens)
	b = appendBytes(b, rOpValues, o.values.data)
	return appendInts(b, rOpTimestamps, o.tss)
}

var (
	bundleLens = []protowire.Number{fKeyLengths, fValueLengths}
	bundleInts = []protowire.Number{fOffsets, fTimestamps}
	viewLens   = []protowire.Number{svKeyLengths, svValueLengths}
	viewInts   = []protowire.Number{svTimestamps}
	resultLens = []protowire.Number{rOpCounts, rOpKeyLengths, rOpValLengths, rOutputCounts, rValueLengths}
	resultInts = []protowire.Number{rOpKinds, rOpTargets, rOpTimestamps}
)

// host runs a processor bundle: decode, the processor per record with the
// overlay, encode the ops. fallback serves keys the bundle did not bring.
func host(msg []byte, what int, fallback func([]byte) ([]byte, error)) ([]byte, int, error) {
	d, err := decode(msg, bundleLens, bundleInts)
	if err != nil {
		return nil, 0, err
	}
	keys, err := split(d.lens[fKeyLengths], d.bytes[fKeys])
	if err != nil {
		return nil, 0, err
	}
	values, err := split(d.lens[fValueLengths], d.bytes[fValues])
	if err != nil {
		return nil, 0, err
	}
	st := &store{known: make(map[string][]byte, len(keys)), fallback: fallback}
	for _, v := range d.views {
		sv, err := decode(v, viewLens, viewInts)
		if err != nil {
			return nil, 0, err
		}
		ks, err := split(sv.lens[svKeyLengths], sv.bytes[svKeys])
		if err != nil {
			return nil, 0, err
		}
		vs, err := split(sv.lens[svValueLengths], sv.bytes[svValues])
		if err != nil {
			return nil, 0, err
		}
		for i, k := range ks {
			st.known[string(k)] = vs[i]
		}
	}
	tss := d.ints[fTimestamps]
	o := &ops{}
	for i := range keys {
		if err := process(st, what, keys[i], values[i], tss[i], o); err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return encodeOps(o), st.calls, nil
}

// apply is the engine reading an answer: per record, its ops in order; puts
// and deletes join the batch's writes, forwards become records.
func (e *engine) apply(res []byte, recs []rec) ([]rec, error) {
	d, err := decode(res, resultLens, resultInts)
	if err != nil {
		return nil, err
	}
	counts, kinds, targets, tss := d.lens[rOpCounts], d.ints[rOpKinds], d.ints[rOpTargets], d.ints[rOpTimestamps]
	keys, err := split(d.lens[rOpKeyLengths], d.bytes[rOpKeys])
	if err != nil {
		return nil, err
	}
	values, err := split(d.lens[rOpValLengths], d.bytes[rOpValues])
	if err != nil {
		return nil, err
	}
	if len(counts) != len(recs) {
		return nil, fmt.Errorf("%d op counts for %d records", len(counts), len(recs))
	}
	n := len(kinds)
	if len(targets) != n || len(keys) != n || len(values) != n || len(tss) != n {
		return nil, fmt.Errorf("op columns of %d, %d, %d, %d for %d ops", len(targets), len(keys), len(values), len(tss), n)
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for i, c := range counts {
		for range c {
			switch kinds[j] {
			case opPut:
				e.dirty[string(keys[j])] = row{values[j], tss[j]}
			case opDelete:
				e.dirty[string(keys[j])] = row{nil, tss[j]}
			case opForward:
				out = append(out, rec{key: keys[j], value: values[j], ts: tss[j], offset: recs[i].offset})
			default:
				return nil, fmt.Errorf("op %d of record %d: kind %d", j, i, kinds[j])
			}
			j++
		}
	}
	return out, nil
}

// stateless is the floor: a map_values bundle and its answer.
func stateless(recs []rec) (int, error) {
	msg := encodeRecords(nil, recs)
	d, err := decode(msg, bundleLens, bundleInts)
	if err != nil {
		return 0, err
	}
	values, err := split(d.lens[fValueLengths], d.bytes[fValues])
	if err != nil {
		return 0, err
	}
	var out column
	counts := make([]int32, len(values))
	for i, v := range values {
		next := make([]byte, len(v))
		copy(next, v)
		next[0] = 'X'
		out.add(next)
		counts[i] = 1
	}
	res := appendLens(nil, rOutputCounts, counts)
	res = appendLens(res, rValueLengths, out.lens)
	res = appendBytes(res, rValues, out.data)
	rd, err := decode(res, resultLens, resultInts)
	if err != nil {
		return 0, err
	}
	got, err := split(rd.lens[rValueLengths], rd.bytes[rValues])
	if err != nil {
		return 0, err
	}
	if len(got) != len(recs) {
		return 0, fmt.Errorf("%d outputs for %d records", len(got), len(recs))
	}
	return len(msg) + len(res), nil
}
