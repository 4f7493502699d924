package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Host runs bundles through the user's functions, on the other side of the
// wire. Process may be called concurrently (several tasks' bundles are in
// flight at once); it returns when the host answered or ctx is done. The
// engine sets the bundle's id.
type Host interface {
	Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error)
}

// empty is a value that is empty but not null (nil is null).
var empty = []byte{}

// failure is a record of a bundle that failed on the host.
type failure struct {
	index int // into the bundle's records
	node  string
	kind  failKind
	err   error
}

// applyFailures hands the failed records of a bundle, in record order, to
// the policy (recordFailed); the first it does not skip fails the batch. An
// input record that failed more than once (e.g. as a table change's old and
// new value) counts once.
func (t *task) applyFailures(recs []rec, fails []failure) error {
	var seen map[any]bool
	for _, f := range fails {
		r := recs[f.index]
		if len(fails) > 1 {
			if seen == nil {
				seen = map[any]bool{}
			}
			if seen[r.in] {
				continue
			}
			seen[r.in] = true
		}
		if err := t.recordFailed(r, f.node, f.kind, f.err); err != nil {
			return err
		}
	}
	return nil
}

// bundleBounds splits n records, record i of size(i) bytes, into bundles
// of at most polystreams.bundle.max.records and .max.bytes (a record
// larger than that goes alone): bundle j is [bounds[j], bounds[j+1]).
func (t *task) bundleBounds(n int, size func(i int) int) []int {
	maxRecs, maxBytes := t.app.cfg.BundleMaxRecords, t.app.cfg.BundleMaxBytes
	bounds := []int{0}
	start, bytes := 0, 0
	for i := range n {
		sz := size(i)
		if i > start && (i-start >= maxRecs || bytes+sz > maxBytes) {
			bounds = append(bounds, i)
			start, bytes = i, 0
		}
		bytes += sz
	}
	return append(bounds, n)
}

// crossOnce sends recs through s's chain in one bundle; it returns the
// outputs, the host's answer (its output counts say which record made
// which outputs) and the records that failed, whose policy the caller
// applies.
func (t *task) crossOnce(ctx context.Context, s *step, recs []rec) ([]rec, *pb.BundleResult, []failure, error) {
	return t.cross(ctx, s, recs, encodeBundle(s, recs))
}

// cross sends b, the bundle of recs for s, and decodes the answer as
// crossOnce does.
func (t *task) cross(ctx context.Context, s *step, recs []rec, b *pb.Bundle) ([]rec, *pb.BundleResult, []failure, error) {
	b.Partition = t.id.partition
	start := time.Now()
	res, err := t.app.host.Process(ctx, b)
	if s.stats != nil {
		s.stats.crossing.ObserveSince(start)
		s.stats.bundle.Observe(float64(len(recs)))
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: task %s: bundle for node %s: %w", t.id, s.node.Name, err)
	}
	out, fails, err := decodeResult(s, recs, res)
	return out, res, fails, err
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
	b := &pb.Bundle{
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
	if chainMetadata(s.steps) != pb.Metadata_METADATA_UNSPECIFIED {
		b.HeaderCounts, b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = encodeHeaders(recs)
	}
	return b
}

// decodeResult checks the host's answer against the bundle and turns it
// into records, and lists the records that failed in record order (one
// failure per record: the first step it failed in). A failed record's
// outputs are those its output count gives (0, unless e.g. a flat_map's
// other values went on); an answer with failures may leave the counts out
// (all 0).
func decodeResult(s *step, recs []rec, res *pb.BundleResult) ([]rec, []failure, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("engine: host answered bundle %d for node %s malformed: %s", res.GetBundleId(), s.node.Name, fmt.Sprintf(format, args...))
	}
	var fails []failure
	if len(res.Failures) > 0 {
		fs := slices.Clone(res.Failures)
		slices.SortStableFunc(fs, func(a, b *pb.RecordFailure) int {
			return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Step, b.Step))
		})
		for i, f := range fs {
			if f.Index < 0 || int(f.Index) >= len(recs) {
				return nil, nil, bad("failure names record %d of %d", f.Index, len(recs))
			}
			if i > 0 && fs[i-1].Index == f.Index {
				continue
			}
			node := s.node.Name
			if f.Step >= 0 && int(f.Step) < len(s.chain) {
				node = s.chain[f.Step].Name
			}
			kind := kindProcessing
			if f.Kind == pb.RecordFailure_KIND_DESERIALIZATION {
				kind = kindDeserialization
			}
			fails = append(fails, failure{index: int(f.Index), node: node, kind: kind, err: errors.New(f.Message)})
		}
		if len(res.OutputCounts) == 0 && len(res.ValueLengths) == 0 {
			res.OutputCounts = make([]int32, len(recs))
		}
	}
	if len(res.OutputCounts) != len(recs) {
		return nil, nil, bad("%d output counts for %d records", len(res.OutputCounts), len(recs))
	}
	total := 0
	most := maxOutputs(s.steps)
	for i, c := range res.OutputCounts {
		if c < 0 {
			return nil, nil, bad("negative output count %d", c)
		}
		if most >= 0 && c > most {
			return nil, nil, bad("%d outputs for record %d; its chain makes at most %d", c, i, most)
		}
		total += int(c)
	}
	if len(res.ValueLengths) != total {
		return nil, nil, bad("%d values for %d outputs", len(res.ValueLengths), total)
	}
	if s.keysChange && len(res.KeyLengths) != total {
		return nil, nil, bad("%d keys for %d outputs of a key-changing chain", len(res.KeyLengths), total)
	}
	if !s.keysChange && len(res.KeyLengths) != 0 {
		return nil, nil, bad("keys for a chain that does not change keys")
	}
	writes := chainMetadata(s.steps) == pb.Metadata_METADATA_WRITE
	var hkeys, hvalues [][]byte
	if writes {
		var err error
		if hkeys, hvalues, err = checkOutputMetadata(res, total); err != nil {
			return nil, nil, bad("%v", err)
		}
	} else if len(res.OutputTimestamps) != 0 || len(res.OutputHeaderCounts) != 0 || len(res.OutputHeaderKeyLengths) != 0 || len(res.OutputHeaderValueLengths) != 0 {
		return nil, nil, bad("output timestamps or headers for a chain none of whose steps was registered with METADATA_WRITE")
	}
	out := make([]rec, 0, total)
	values, keys := res.Values, res.Keys
	hdr := 0
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
				return nil, nil, err
			}
			k := recs[i].key
			if s.keysChange {
				if k, err = slice(keys, &ko, res.KeyLengths[j], "key"); err != nil {
					return nil, nil, err
				}
			}
			r := rec{key: k, value: v, ts: recs[i].ts, in: recs[i].in, skey: recs[i].skey, headers: recs[i].headers, ownHeaders: recs[i].ownHeaders}
			if writes {
				r.ts = res.OutputTimestamps[j]
				if hc := int(res.OutputHeaderCounts[j]); hc >= 0 {
					r.headers, r.ownHeaders = make([]kgo.RecordHeader, 0, hc), true
					for range hc {
						r.headers = append(r.headers, kgo.RecordHeader{Key: string(hkeys[hdr]), Value: hvalues[hdr]})
						hdr++
					}
				}
			}
			out = append(out, r)
			j++
		}
	}
	if vo != len(values) || ko != len(keys) {
		return nil, nil, bad("columns hold %d value and %d key bytes more than their lengths say", len(values)-vo, len(keys)-ko)
	}
	return out, fails, nil
}

// checkOutputMetadata checks a METADATA_WRITE chain's output timestamps
// and headers against its total outputs, and splits the header columns.
func checkOutputMetadata(res *pb.BundleResult, total int) (hkeys, hvalues [][]byte, err error) {
	if len(res.OutputTimestamps) != total {
		return nil, nil, fmt.Errorf("%d output timestamps for %d outputs of a METADATA_WRITE chain", len(res.OutputTimestamps), total)
	}
	if len(res.OutputHeaderCounts) != total {
		return nil, nil, fmt.Errorf("%d output header counts for %d outputs of a METADATA_WRITE chain", len(res.OutputHeaderCounts), total)
	}
	headers := 0
	for j, c := range res.OutputHeaderCounts {
		if c < -1 {
			return nil, nil, fmt.Errorf("output %d has header count %d (-1 is the input's headers)", j, c)
		}
		headers += max(int(c), 0)
	}
	if len(res.OutputHeaderKeyLengths) != headers || len(res.OutputHeaderValueLengths) != headers {
		return nil, nil, fmt.Errorf("%d output header keys and %d output header values for %d headers", len(res.OutputHeaderKeyLengths), len(res.OutputHeaderValueLengths), headers)
	}
	if hkeys, err = splitColumn(res.OutputHeaderKeyLengths, res.OutputHeaderKeys); err != nil {
		return nil, nil, fmt.Errorf("output header keys: %w", err)
	}
	for j, k := range hkeys {
		if k == nil {
			return nil, nil, fmt.Errorf("output header %d has a null key", j)
		}
	}
	if hvalues, err = splitColumn(res.OutputHeaderValueLengths, res.OutputHeaderValues); err != nil {
		return nil, nil, fmt.Errorf("output header values: %w", err)
	}
	return hkeys, hvalues, nil
}
