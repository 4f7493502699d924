package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Host runs bundles through the user's functions, on the other side of the
// wire. Process may be called concurrently (several tasks' bundles are in
// flight at once); it returns when the host answered or ctx is done. The
// engine sets the bundle's id.
type Host interface {
	Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error)
}

// runHost sends recs through a fused chain of host operators: split into
// bundles bounded by count and bytes, all in flight at once, answers
// reassembled in order.
func (t *task) runHost(ctx context.Context, s *step, recs []rec) ([]rec, error) {
	maxRecs, maxBytes := t.app.cfg.BundleMaxRecords, t.app.cfg.BundleMaxBytes
	var chunks [][]rec
	start, size := 0, 0
	for i, r := range recs {
		sz := len(r.key) + len(r.value)
		if i > start && (i-start >= maxRecs || size+sz > maxBytes) {
			chunks = append(chunks, recs[start:i])
			start, size = i, 0
		}
		size += sz
	}
	chunks = append(chunks, recs[start:])
	if len(chunks) == 1 {
		out, _, err := t.crossOnce(ctx, s, chunks[0])
		return out, err
	}
	outs := make([][]rec, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _, errs[i] = t.crossOnce(ctx, s, c)
		}()
	}
	wg.Wait()
	var out []rec
	for i := range chunks {
		// The first failing chunk in record order names the failure.
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, outs[i]...)
	}
	return out, nil
}

// crossOnce sends recs through s's chain in one bundle; it returns the
// outputs and the host's answer (its output counts say which record made
// which outputs).
func (t *task) crossOnce(ctx context.Context, s *step, recs []rec) ([]rec, *pb.BundleResult, error) {
	b := encodeBundle(s, recs)
	b.Partition = t.id.partition
	start := time.Now()
	res, err := t.app.host.Process(ctx, b)
	if s.stats != nil {
		s.stats.crossing.ObserveSince(start)
		s.stats.bundle.Observe(float64(len(recs)))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("runtime: task %s: bundle for node %s: %w", t.id, s.node.Name, err)
	}
	out, err := decodeResult(s, recs, res)
	return out, res, err
}

// encodeBundle lays recs out in columns.
func encodeBundle(s *step, recs []rec) *pb.Bundle {
	n := len(recs)
	kl := make([]int32, n)
	vl := make([]int32, n)
	offs := make([]int64, n)
	tss := make([]int64, n)
	ksz, vsz := 0, 0
	for i := range recs {
		ksz += len(recs[i].key)
		vsz += len(recs[i].value)
	}
	keys := make([]byte, 0, ksz)
	values := make([]byte, 0, vsz)
	for i := range recs {
		r := &recs[i]
		if r.key == nil {
			kl[i] = -1
		} else {
			kl[i] = int32(len(r.key))
			keys = append(keys, r.key...)
		}
		if r.value == nil {
			vl[i] = -1
		} else {
			vl[i] = int32(len(r.value))
			values = append(values, r.value...)
		}
		offs[i] = r.in.Offset
		tss[i] = r.ts
	}
	return &pb.Bundle{
		Steps:            s.steps,
		KeySerde:         s.inKey,
		ValueSerde:       s.inValue,
		OutputKeySerde:   s.outKey,
		OutputValueSerde: s.outValue,
		KeyLengths:       kl,
		Keys:             keys,
		ValueLengths:     vl,
		Values:           values,
		Topic:            recs[0].in.Topic,
		Offsets:          offs,
		Timestamps:       tss,
	}
}

// decodeResult checks the host's answer against the bundle and turns it
// into records. Under the fail policy the first failing record (in record
// order) fails the batch.
func decodeResult(s *step, recs []rec, res *pb.BundleResult) ([]rec, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("runtime: host answered bundle %d for node %s malformed: %s", res.GetBundleId(), s.node.Name, fmt.Sprintf(format, args...))
	}
	if len(res.Failures) > 0 {
		first := res.Failures[0]
		for _, f := range res.Failures[1:] {
			if f.Index < first.Index {
				first = f
			}
		}
		if first.Index < 0 || int(first.Index) >= len(recs) {
			return nil, bad("failure names record %d of %d", first.Index, len(recs))
		}
		node := s.node.Name
		if first.Step >= 0 && int(first.Step) < len(s.chain) {
			node = s.chain[first.Step].Name
		}
		return nil, recordError(recs[first.Index], node, errors.New(first.Message))
	}
	if len(res.OutputCounts) != len(recs) {
		return nil, bad("%d output counts for %d records", len(res.OutputCounts), len(recs))
	}
	total := 0
	most := maxOutputs(s.steps)
	for i, c := range res.OutputCounts {
		if c < 0 {
			return nil, bad("negative output count %d", c)
		}
		if most >= 0 && c > most {
			return nil, bad("%d outputs for record %d; its chain makes at most %d", c, i, most)
		}
		total += int(c)
	}
	if len(res.ValueLengths) != total {
		return nil, bad("%d values for %d outputs", len(res.ValueLengths), total)
	}
	if s.keysChange && len(res.KeyLengths) != total {
		return nil, bad("%d keys for %d outputs of a key-changing chain", len(res.KeyLengths), total)
	}
	if !s.keysChange && len(res.KeyLengths) != 0 {
		return nil, bad("keys for a chain that does not change keys")
	}
	out := make([]rec, 0, total)
	values, keys := res.Values, res.Keys
	vo, ko, j := 0, 0, 0
	slice := func(col []byte, off *int, l int32, what string) ([]byte, error) {
		if l < 0 {
			return nil, nil
		}
		if l == 0 {
			return empty, nil
		}
		end := *off + int(l)
		if end > len(col) {
			return nil, bad("%s column is %d bytes, lengths need more", what, len(col))
		}
		b := col[*off:end:end]
		*off = end
		return b, nil
	}
	for i, c := range res.OutputCounts {
		for range c {
			v, err := slice(values, &vo, res.ValueLengths[j], "value")
			if err != nil {
				return nil, err
			}
			k := recs[i].key
			if s.keysChange {
				if k, err = slice(keys, &ko, res.KeyLengths[j], "key"); err != nil {
					return nil, err
				}
			}
			out = append(out, rec{key: k, value: v, ts: recs[i].ts, in: recs[i].in, skey: recs[i].skey})
			j++
		}
	}
	if vo != len(values) || ko != len(keys) {
		return nil, bad("columns hold %d value and %d key bytes more than their lengths say", len(values)-vo, len(keys)-ko)
	}
	return out, nil
}
