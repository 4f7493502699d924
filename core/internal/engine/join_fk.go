package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The foreign-key table-table join (KIP-213), as Kafka Streams' processors
// run it (SubscriptionSendProcessorSupplier, SubscriptionReceive-
// ProcessorSupplier, SubscriptionJoinProcessorSupplier, ForeignTable-
// JoinProcessorSupplier, ResponseJoinProcessorSupplier). The left and the
// right table need not be co-partitioned: subscriptions travel to the right
// table's partitions through the registration topic, keyed by foreign key,
// and answers come back through the response topic to the partition the
// subscription came from. The records on both topics are polystreams' own
// (docs/design/joins.md):
//
//	subscription: version 0 | instruction | 1 if a hash follows, else 0 | [16-byte hash] | 4-byte primary partition | primary key
//	response:     version 0 | flags (1: hash follows, 2: right value follows) | [16-byte hash] | 4-byte primary partition | [right value]
//
// The hash is FNV-1a 128 of the left value the subscription was sent for
// (Kafka: Murmur3 128): the resolver drops an answer whose hash is not the
// one of the left value it holds now, so a quick foreign-key change never
// emits the join with the old right row. The subscription store's keys are
// Kafka's CombinedKeySchema layout: 4-byte foreign key length, foreign key,
// primary key.

// Subscription instructions (SubscriptionWrapper.Instruction).
const (
	fkDeleteNoPropagate  = 0 // remove the subscription, answer nothing
	fkDeleteAndPropagate = 1 // remove it, answer null (the join result is gone)
	fkPropagateNull      = 2 // subscribe; answer the right value, or null when none
	fkPropagateOnlyIfSet = 3 // subscribe; answer only when the right value exists
)

const fkHashLen = 16

type subscription struct {
	instruction byte
	hash        []byte // nil: the left value was deleted
	partition   int32
	pk          []byte
}

func encodeSubscription(s subscription) []byte {
	b := make([]byte, 0, 3+fkHashLen+4+len(s.pk))
	b = append(b, 0, s.instruction)
	if s.hash != nil {
		b = append(append(b, 1), s.hash...)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(s.partition))
	return append(b, s.pk...)
}

func decodeSubscription(b []byte) (subscription, error) {
	var s subscription
	if len(b) < 3 {
		return s, fmt.Errorf("a subscription is %d bytes, too short", len(b))
	}
	if b[0] != 0 {
		return s, fmt.Errorf("a subscription of version %d; this engine reads version 0", b[0])
	}
	s.instruction = b[1]
	if s.instruction > fkPropagateOnlyIfSet {
		return s, fmt.Errorf("a subscription with instruction %d", s.instruction)
	}
	rest := b[3:]
	if b[2] == 1 {
		if len(rest) < fkHashLen {
			return s, errors.New("a subscription's hash is cut short")
		}
		s.hash, rest = rest[:fkHashLen:fkHashLen], rest[fkHashLen:]
	}
	if len(rest) < 4 {
		return s, errors.New("a subscription's partition is cut short")
	}
	s.partition, s.pk = int32(binary.BigEndian.Uint32(rest)), rest[4:]
	return s, nil
}

type response struct {
	hash      []byte
	partition int32
	value     []byte // the right value; nil: none
}

func encodeResponse(r response) []byte {
	b := make([]byte, 0, 2+fkHashLen+4+len(r.value))
	var flags byte
	if r.hash != nil {
		flags |= 1
	}
	if r.value != nil {
		flags |= 2
	}
	b = append(b, 0, flags)
	b = append(b, r.hash...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.partition))
	return append(b, r.value...)
}

func decodeResponse(b []byte) (response, error) {
	var r response
	if len(b) < 2 {
		return r, fmt.Errorf("a response is %d bytes, too short", len(b))
	}
	if b[0] != 0 {
		return r, fmt.Errorf("a response of version %d; this engine reads version 0", b[0])
	}
	flags, rest := b[1], b[2:]
	if flags&1 != 0 {
		if len(rest) < fkHashLen {
			return r, errors.New("a response's hash is cut short")
		}
		r.hash, rest = rest[:fkHashLen:fkHashLen], rest[fkHashLen:]
	}
	if len(rest) < 4 {
		return r, errors.New("a response's partition is cut short")
	}
	r.partition, rest = int32(binary.BigEndian.Uint32(rest)), rest[4:]
	if flags&2 != 0 {
		r.value = rest
	}
	return r, nil
}

// fkHash is the hash of a left value (nil for none).
func fkHash(v []byte) []byte {
	if v == nil {
		return nil
	}
	h := fnv.New128a()
	h.Write(v)
	return h.Sum(nil)
}

// combinedKey is the subscription store's key of (fk, pk); its first
// 4+len(fk) bytes are the prefix of every subscription of fk.
func combinedKey(fk, pk []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)+len(pk)), uint32(len(fk)))
	return append(append(b, fk...), pk...)
}

// compileFK compiles the processors of a foreign-key join.
func compileFK(t *topology.Topology, p *plan, s *step, n *topology.Node) error {
	fk := n.FK
	store := func(name string) (*topology.Store, error) {
		st := t.Stores[name]
		if st == nil {
			return nil, fmt.Errorf("engine: node %s needs store %q, which the topology lacks", n.Name, name)
		}
		// A store read (and, for subscriptions, written) beside its
		// owner: restored once per task, never cached.
		if !slices.Contains(p.stores, st) {
			p.stores = append(p.stores, st)
		}
		return st, nil
	}
	var err error
	switch n.Op {
	case topology.OpFKSend:
		s.open = newFKSendOp
		if n.Fn.Token != 0 {
			s.chain = []*topology.Node{n}
			md, err := readMetadata(n, n.Fn)
			if err != nil {
				return err
			}
			s.steps = []*pb.Step{{Token: n.Fn.Token, Operation: pb.Operation_OPERATION_MAP_VALUES, Node: n.Name, Metadata: md}}
			s.inKey, s.inValue, s.outKey, s.outValue = fk.LeftKeySerde, fk.LeftValueSerde, fk.LeftKeySerde, fk.RightKeySerde
		}
	case topology.OpFKReceive:
		s.open = newFKReceiveOp
		s.table, err = store(fk.SubscriptionStore)
	case topology.OpFKSubscriptionJoin:
		s.open = newFKSubscriptionJoinOp
		if s.table, err = store(fk.RightStore); err == nil {
			err = compileGetter(s, n)
		}
	case topology.OpFKForeignJoin:
		s.open = newFKForeignJoinOp
		s.table, err = store(fk.SubscriptionStore)
	case topology.OpFKResolve:
		s.open = newFKResolveOp
		if s.table, err = store(fk.LeftStore); err == nil {
			err = compileGetter(s, n)
		}
		if n.Fn.Token != 0 && err == nil {
			var st *pb.Step
			if st, err = joinerStep(n); err != nil {
				return err
			}
			s.chain = []*topology.Node{n}
			s.steps = []*pb.Step{st}
			s.inKey, s.inValue, s.outKey, s.outValue = fk.LeftKeySerde, fk.LeftValueSerde, fk.LeftKeySerde, n.ValueSerde
		}
	case topology.OpFKOutput:
		// The result is a KTableSource: stored (when materialized) and
		// forwarded with the value it replaced.
		s.open = newTableSourceOp
		if len(n.Stores) == 1 {
			if s.store = t.Stores[n.Stores[0]]; s.store == nil {
				return fmt.Errorf("engine: node %s needs store %q, which the topology lacks", n.Name, n.Stores[0])
			}
			p.stores = append(p.stores, s.store)
		}
	default:
		return fmt.Errorf("engine: node %s (op %d) is no foreign-key join processor", n.Name, n.Op)
	}
	return err
}

// fkSendOp is SubscriptionSendProcessorSupplier: each change of the left
// table unsubscribes from its old foreign key when that changed, and
// subscribes to its new one; the instructions say which answers the
// subscription wants. An extractor runs over the new and the old values of
// the batch in one crossing per bundle.
type fkSendOp struct{ opBase }

func newFKSendOp(t *task, s *step) operator { return &fkSendOp{baseOf(t, s, nil)} }

func (o *fkSendOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	left := s.node.FK.Left
	var ins []rec
	for _, r := range recs {
		if r.value != nil {
			ins = append(ins, r)
		}
		if r.old != nil {
			ins = append(ins, rec{key: r.key, value: r.old, ts: r.ts, in: r.in})
		}
	}
	fks, failed, err := o.extractFK(ctx, ins)
	if err != nil {
		return nil, err
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for _, r := range recs {
		var newFK, oldFK []byte
		skip := false
		if r.value != nil {
			newFK, skip = fks[j], failed[j]
			j++
		}
		if r.old != nil {
			oldFK, skip = fks[j], skip || failed[j]
			j++
		}
		if skip || r.key == nil {
			continue
		}
		hash := fkHash(r.value)
		emit := func(fk []byte, instruction byte) {
			v := encodeSubscription(subscription{instruction: instruction, hash: hash, partition: t.id.partition, pk: r.key})
			out = append(out, rec{key: fk, value: v, ts: r.ts, in: r.in})
		}
		if left {
			if r.value == nil && r.old == nil {
				continue
			}
			if oldFK != nil && !bytes.Equal(newFK, oldFK) {
				emit(oldFK, fkDeleteNoPropagate)
			}
			// A null new key still goes out: its answer (null) is the
			// left join's result.
			emit(newFK, fkPropagateNull)
			continue
		}
		switch {
		case r.value == nil:
			if oldFK != nil {
				emit(oldFK, fkDeleteAndPropagate)
			}
		case newFK == nil:
			t.app.dropped.Add(1) // "Skipping record due to null foreign key"
			if oldFK != nil {
				emit(oldFK, fkDeleteAndPropagate)
			}
		case oldFK == nil:
			emit(newFK, fkPropagateOnlyIfSet)
		case !bytes.Equal(newFK, oldFK):
			emit(oldFK, fkDeleteNoPropagate)
			emit(newFK, fkPropagateNull)
		default:
			emit(newFK, fkPropagateOnlyIfSet)
		}
	}
	return out, nil
}

// extractFK runs the foreign-key extractor over ins: natively per record,
// or for a host function in bundles, one crossing each. A value whose
// extraction failed is marked failed (its policy skipped it).
func (o *fkSendOp) extractFK(ctx context.Context, ins []rec) ([][]byte, []bool, error) {
	t, s := o.t, o.s
	fks := make([][]byte, len(ins))
	failed := make([]bool, len(ins))
	n := s.node
	if n.Fn.Token == 0 {
		f, ok := n.Fn.Native.(topology.MapValuesFunc)
		if !ok {
			return nil, nil, fmt.Errorf("engine: node %s has a native extractor of type %T; want MapValuesFunc", n.Name, n.Fn.Native)
		}
		for i, r := range ins {
			fk, err := f(r.value)
			if err != nil {
				if err := t.recordFailed(r, n.Name, kindOf(err), err); err != nil {
					return nil, nil, err
				}
				failed[i] = true
				continue
			}
			fks[i] = fk
		}
		return fks, failed, nil
	}
	bounds := t.bundleBounds(len(ins), func(i int) int { return len(ins[i].key) + len(ins[i].value) })
	for b := range len(bounds) - 1 {
		start, end := bounds[b], bounds[b+1]
		chunk := ins[start:end]
		got, res, fails, err := t.crossOnce(ctx, s, chunk)
		if err != nil {
			return nil, nil, err
		}
		if err := t.applyFailures(chunk, fails); err != nil {
			return nil, nil, err
		}
		for _, f := range fails {
			failed[start+f.index] = true
		}
		k := 0
		for i, c := range res.OutputCounts {
			switch {
			case failed[start+i]:
			case c != 1:
				return nil, nil, fmt.Errorf("engine: host answered bundle %d for node %s with %d outputs for record %d; a foreign-key extractor gives one", res.BundleId, n.Name, c, i)
			default:
				fks[start+i] = got[k].value
			}
			k += int(c)
		}
	}
	return fks, failed, nil
}

// fkReceiveOp is SubscriptionReceiveProcessorSupplier: it records each
// subscription in the subscription store (or removes it) and passes it on.
// A subscription without a foreign key is dropped unless it asks for a
// null answer (a left join's).
type fkReceiveOp struct{ opBase }

func newFKReceiveOp(t *task, s *step) operator { return &fkReceiveOp{baseOf(t, s, s.table)} }

func (o *fkReceiveOp) process(_ context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		sub, err := decodeSubscription(r.value)
		if err != nil {
			if err := t.recordFailed(r, s.node.Name, kindDeserialization, err); err != nil {
				return nil, err
			}
			continue
		}
		if r.key == nil {
			if sub.instruction != fkPropagateNull {
				t.app.dropped.Add(1)
				continue
			}
		} else {
			ck := combinedKey(r.key, sub.pk)
			if sub.instruction == fkDeleteNoPropagate || sub.instruction == fkDeleteAndPropagate {
				tx.Put(ck, nil, r.ts)
			} else {
				tx.Put(ck, r.value, r.ts)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// fkSubscriptionJoinOp is SubscriptionJoinProcessorSupplier: it answers a
// subscription with the right table's value for its foreign key, as its
// instruction says, keyed by the left key; the answer's timestamp is the
// later of the subscription's and the right row's.
type fkSubscriptionJoinOp struct{ opBase }

func newFKSubscriptionJoinOp(t *task, s *step) operator {
	return &fkSubscriptionJoinOp{baseOf(t, s, s.table)}
}

func (o *fkSubscriptionJoinOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	fvs := make([][]byte, len(recs))
	vtss := make([]int64, len(recs))
	for i, r := range recs {
		if r.key != nil {
			v, vts, err := tx.Get(r.key)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			fvs[i], vtss[i] = v, vts
		}
	}
	// A derived right table's value is its value getter's (getter.go).
	skip, err := t.readThrough(ctx, s, recs, fvs)
	if err != nil {
		return nil, err
	}
	out := make([]rec, 0, len(recs))
	for i, r := range recs {
		if skip[i] {
			continue
		}
		sub, err := decodeSubscription(r.value)
		if err != nil {
			return nil, recordError(r, s.node.Name, err) // fkReceive decoded it
		}
		fv, ts := fvs[i], r.ts
		if fv != nil {
			ts = max(ts, vtss[i])
		}
		answer := func(v []byte) {
			out = append(out, rec{key: sub.pk, value: encodeResponse(response{hash: sub.hash, partition: sub.partition, value: v}), ts: ts, in: r.in})
		}
		switch sub.instruction {
		case fkDeleteAndPropagate:
			answer(nil)
		case fkPropagateNull:
			answer(fv)
		case fkPropagateOnlyIfSet:
			if fv != nil {
				answer(fv)
			}
		}
	}
	return out, nil
}

// fkForeignJoinOp is ForeignTableJoinProcessorSupplier: a change of a right
// table key answers every subscription to it (a prefix scan of the
// subscription store), with the new value (null: deleted).
type fkForeignJoinOp struct{ opBase }

func newFKForeignJoinOp(t *task, s *step) operator { return &fkForeignJoinOp{baseOf(t, s, s.table)} }

func (o *fkForeignJoinOp) process(_ context.Context, recs []rec) ([]rec, error) {
	t, s, tx := o.t, o.s, o.tx
	var out []rec
	for _, r := range recs {
		if r.key == nil {
			t.app.dropped.Add(1)
			continue
		}
		prefix := combinedKey(r.key, nil)
		err := tx.ScanPrefix(prefix, func(key, value []byte) error {
			sub, err := decodeSubscription(value)
			if err != nil {
				return fmt.Errorf("subscription store %s holds a bad subscription: %w", s.table.Name, err)
			}
			v := encodeResponse(response{hash: sub.hash, partition: sub.partition, value: r.value})
			out = append(out, rec{key: bytes.Clone(key[len(prefix):]), value: v, ts: r.ts, in: r.in})
			return nil
		})
		if err != nil {
			return nil, recordError(r, s.node.Name, err)
		}
	}
	return out, nil
}

// fkResolveOp is ResponseJoinProcessorSupplier: an answer whose hash is not
// the hash of the left value held now is stale (the left row changed since)
// and dropped; otherwise a null right value is a tombstone (inner join) and
// any other is joined with the left value. A host joiner crosses once per
// bundle, the right values beside the left ones.
type fkResolveOp struct{ opBase }

func newFKResolveOp(t *task, s *step) operator { return &fkResolveOp{baseOf(t, s, s.table)} }

func (o *fkResolveOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	left := s.node.FK.Left
	tx := o.tx
	type result struct {
		r     rec
		join  bool   // the joiner makes the value
		other []byte // the right value
	}
	results := make([]result, 0, len(recs))
	var lefts []rec
	var others [][]byte
	resps := make([]response, 0, len(recs))
	keyed := make([]rec, 0, len(recs))
	curs := make([][]byte, 0, len(recs))
	for _, r := range recs {
		resp, err := decodeResponse(r.value)
		if err != nil {
			if err := t.recordFailed(r, s.node.Name, kindDeserialization, err); err != nil {
				return nil, err
			}
			continue
		}
		cur, _, err := tx.Get(r.key)
		if err != nil {
			return nil, recordError(r, s.node.Name, err)
		}
		resps, keyed, curs = append(resps, resp), append(keyed, r), append(curs, cur)
	}
	// A derived left table's value is its value getter's (getter.go).
	skip, err := t.readThrough(ctx, s, keyed, curs)
	if err != nil {
		return nil, err
	}
	for i, r := range keyed {
		resp, cur := resps[i], curs[i]
		if skip[i] {
			continue
		}
		if !bytes.Equal(resp.hash, fkHash(cur)) {
			continue // stale: "Dropping FK-join response due to hash mismatch"
		}
		res := result{r: rec{key: r.key, ts: r.ts, in: r.in}}
		if cur != nil && (resp.value != nil || left) {
			res.join, res.other = true, resp.value
			lefts = append(lefts, rec{key: r.key, value: cur, ts: r.ts, in: r.in})
			others = append(others, resp.value)
		}
		results = append(results, res)
	}
	joined, failed, err := o.fkJoinValues(ctx, lefts, others)
	if err != nil {
		return nil, err
	}
	out := make([]rec, 0, len(results))
	j := 0
	for _, res := range results {
		if res.join {
			res.r.value = joined[j]
			skip := failed[j]
			j++
			if skip {
				continue
			}
		}
		out = append(out, res.r)
	}
	return out, nil
}

// fkJoinValues joins each left value with its right one (nil: none).
func (o *fkResolveOp) fkJoinValues(ctx context.Context, lefts []rec, others [][]byte) ([][]byte, []bool, error) {
	t, s := o.t, o.s
	vals := make([][]byte, len(lefts))
	failed := make([]bool, len(lefts))
	n := s.node
	if len(lefts) == 0 {
		return vals, failed, nil
	}
	if n.Fn.Token == 0 {
		f, ok := n.Fn.Native.(topology.ValueJoinerFunc)
		if !ok {
			return nil, nil, fmt.Errorf("engine: node %s has a native joiner of type %T; want ValueJoinerFunc", n.Name, n.Fn.Native)
		}
		for i, r := range lefts {
			v, err := f(r.value, others[i])
			if err != nil {
				if err := t.recordFailed(r, n.Name, kindOf(err), err); err != nil {
					return nil, nil, err
				}
				failed[i] = true
				continue
			}
			vals[i] = v
		}
		return vals, failed, nil
	}
	bounds := t.bundleBounds(len(lefts), func(i int) int { return len(lefts[i].value) + len(others[i]) })
	for b := range len(bounds) - 1 {
		start, end := bounds[b], bounds[b+1]
		chunk := lefts[start:end]
		bundle := encodeBundle(s, chunk)
		bundle.OtherValueSerde = n.FK.RightValueSerde
		bundle.OtherValueLengths = make([]int32, len(chunk))
		for i, o := range others[start:end] {
			bundle.OtherValueLengths[i] = length(o)
			bundle.OtherValues = append(bundle.OtherValues, o...)
		}
		got, res, fails, err := t.cross(ctx, s, chunk, bundle)
		if err != nil {
			return nil, nil, err
		}
		if err := t.applyFailures(chunk, fails); err != nil {
			return nil, nil, err
		}
		for _, f := range fails {
			failed[start+f.index] = true
		}
		k := 0
		for i, c := range res.OutputCounts {
			switch {
			case failed[start+i]:
			case c != 1:
				return nil, nil, fmt.Errorf("engine: host answered bundle %d for node %s with %d outputs for record %d; a joiner gives one", res.BundleId, n.Name, c, i)
			default:
				vals[start+i] = got[k].value
			}
			k += int(c)
		}
	}
	return vals, failed, nil
}

// fkResponsePartition is the partition a response goes to: the one its
// subscription came from, which holds the left row (Kafka's
// SubscriptionResponseWrapper.primaryPartition).
func fkResponsePartition(v []byte) (int32, error) {
	r, err := decodeResponse(v)
	return r.partition, err
}
