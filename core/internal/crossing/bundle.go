// Package crossing is the engine's side of the crossing to a host (an
// SDK's process running the user's functions): a bundle's columns from
// records (Encode), a host's answer checked and turned back into records
// and failures (Decode), fold bundles (EncodeFold, DecodeFold) and fold
// programs (Program) (docs/design/protocol.md). It knows the wire and the
// records' bytes; the engine (core/internal/engine) knows its records,
// stores and error policies, and drives the crossing from its tasks.
package crossing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
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

// Chain is what a bundle carries of the step it crosses for: the host's
// steps and serdes, and the nodes its errors name.
type Chain struct {
	// Node is the step's node (a host chain's first), named by the
	// errors of a malformed answer and by failures of no step.
	Node string
	// Nodes are the chain's nodes, step by step: a failure in step i
	// names Nodes[i].
	Nodes                            []*topology.Node
	Steps                            []*pb.Step
	InKey, InValue, OutKey, OutValue string
	// KeysChange: the chain changes keys, so the answer has a key column.
	KeysChange bool
}

// Record is what a bundle carries of one input record.
type Record struct {
	Key, Value []byte
	Offset     int64
	Timestamp  int64
	// Headers are the record's (its own or its input's): sent when a step
	// of the chain asked for metadata.
	Headers []kgo.RecordHeader
}

// Output is one output of a record in the host's answer.
type Output struct {
	// Value is the output's value; Key its key when the chain changes
	// keys (else the input's stays).
	Value, Key []byte
	// Written: the chain is METADATA_WRITE, so Timestamp is the output's
	// and, when OwnHeaders, Headers are its own (else its input's stay).
	Written    bool
	Timestamp  int64
	Headers    []kgo.RecordHeader
	OwnHeaders bool
}

// Failure is a record of a bundle that failed on the host.
type Failure struct {
	Index           int // into the bundle's records
	Node            string
	Deserialization bool // the host could not read the record (else its function failed)
	Err             error
}

// Bounds splits n records, record i of size(i) bytes, into bundles of at
// most maxRecs records and maxBytes bytes (a record larger than that goes
// alone): bundle j is [bounds[j], bounds[j+1]).
func Bounds(n, maxRecs, maxBytes int, size func(i int) int) []int {
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

// Encode lays n records, record i being rec(i), out in columns: a bundle
// of topic's records for c.
func Encode(c *Chain, topic string, n int, rec func(i int) Record) *pb.Bundle {
	kl := make([]int32, n)
	vl := make([]int32, n)
	offs := make([]int64, n)
	tss := make([]int64, n)
	ksz, vsz := 0, 0
	for i := range n {
		r := rec(i)
		ksz += len(r.Key)
		vsz += len(r.Value)
	}
	keys := make([]byte, 0, ksz)
	values := make([]byte, 0, vsz)
	for i := range n {
		r := rec(i)
		if r.Key == nil {
			kl[i] = -1
		} else {
			kl[i] = int32(len(r.Key))
			keys = append(keys, r.Key...)
		}
		if r.Value == nil {
			vl[i] = -1
		} else {
			vl[i] = int32(len(r.Value))
			values = append(values, r.Value...)
		}
		offs[i] = r.Offset
		tss[i] = r.Timestamp
	}
	b := &pb.Bundle{
		Steps:            c.Steps,
		KeySerde:         c.InKey,
		ValueSerde:       c.InValue,
		OutputKeySerde:   c.OutKey,
		OutputValueSerde: c.OutValue,
		KeyLengths:       kl,
		Keys:             keys,
		ValueLengths:     vl,
		Values:           values,
		Topic:            topic,
		Offsets:          offs,
		Timestamps:       tss,
	}
	if Metadata(c.Steps) != pb.Metadata_METADATA_UNSPECIFIED {
		b.HeaderCounts, b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = EncodeHeaders(n, rec)
	}
	return b
}

// EncodeHeaders lays the records' headers out in columns; none when no
// record has headers.
func EncodeHeaders(n int, rec func(i int) Record) (counts, kl []int32, keys []byte, vl []int32, values []byte) {
	any := false
	for i := range n {
		if len(rec(i).Headers) > 0 {
			any = true
			break
		}
	}
	if !any {
		return
	}
	for i := range n {
		hs := rec(i).Headers
		counts = append(counts, int32(len(hs)))
		for _, h := range hs {
			kl = append(kl, int32(len(h.Key)))
			keys = append(keys, h.Key...)
			vl = append(vl, Length(h.Value))
			values = append(values, h.Value...)
		}
	}
	return counts, kl, keys, vl, values
}

// Decode checks the host's answer against the bundle of recs and turns it
// into records, each made by out from its input record and its output,
// and lists the records that failed in record order (one failure per
// record: the first step it failed in). A failed record's outputs are those
// its output count gives (0, unless e.g. a flat_map's other values went
// on); an answer with failures may leave the counts out (all 0).
func Decode[In, Out any](c *Chain, recs []In, res *pb.BundleResult, out func(in *In, o *Output) Out) ([]Out, []Failure, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("engine: host answered bundle %d for node %s malformed: %s", res.GetBundleId(), c.Node, fmt.Sprintf(format, args...))
	}
	var fails []Failure
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
			node := c.Node
			if f.Step >= 0 && int(f.Step) < len(c.Nodes) {
				node = c.Nodes[f.Step].Name
			}
			fails = append(fails, Failure{Index: int(f.Index), Node: node, Deserialization: f.Kind == pb.RecordFailure_KIND_DESERIALIZATION, Err: errors.New(f.Message)})
		}
		if len(res.OutputCounts) == 0 && len(res.ValueLengths) == 0 {
			res.OutputCounts = make([]int32, len(recs))
		}
	}
	if len(res.OutputCounts) != len(recs) {
		return nil, nil, bad("%d output counts for %d records", len(res.OutputCounts), len(recs))
	}
	total := 0
	most := maxOutputs(c.Steps)
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
	if c.KeysChange && len(res.KeyLengths) != total {
		return nil, nil, bad("%d keys for %d outputs of a key-changing chain", len(res.KeyLengths), total)
	}
	if !c.KeysChange && len(res.KeyLengths) != 0 {
		return nil, nil, bad("keys for a chain that does not change keys")
	}
	writes := Metadata(c.Steps) == pb.Metadata_METADATA_WRITE
	var hkeys, hvalues [][]byte
	if writes {
		var err error
		if hkeys, hvalues, err = checkOutputMetadata(res, total); err != nil {
			return nil, nil, bad("%v", err)
		}
	} else if len(res.OutputTimestamps) != 0 || len(res.OutputHeaderCounts) != 0 || len(res.OutputHeaderKeyLengths) != 0 || len(res.OutputHeaderValueLengths) != 0 {
		return nil, nil, bad("output timestamps or headers for a chain none of whose steps was registered with METADATA_WRITE")
	}
	outs := make([]Out, 0, total)
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
	keysChange := c.KeysChange
	for i, c := range res.OutputCounts {
		for range c {
			v, err := slice(values, &vo, res.ValueLengths[j], "value")
			if err != nil {
				return nil, nil, err
			}
			o := Output{Value: v}
			if keysChange {
				if o.Key, err = slice(keys, &ko, res.KeyLengths[j], "key"); err != nil {
					return nil, nil, err
				}
			}
			if writes {
				o.Written, o.Timestamp = true, res.OutputTimestamps[j]
				if hc := int(res.OutputHeaderCounts[j]); hc >= 0 {
					o.Headers, o.OwnHeaders = make([]kgo.RecordHeader, 0, hc), true
					for range hc {
						o.Headers = append(o.Headers, kgo.RecordHeader{Key: string(hkeys[hdr]), Value: hvalues[hdr]})
						hdr++
					}
				}
			}
			outs = append(outs, out(&recs[i], &o))
			j++
		}
	}
	if vo != len(values) || ko != len(keys) {
		return nil, nil, bad("columns hold %d value and %d key bytes more than their lengths say", len(values)-vo, len(keys)-ko)
	}
	return outs, fails, nil
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
	if hkeys, err = SplitColumn(res.OutputHeaderKeyLengths, res.OutputHeaderKeys); err != nil {
		return nil, nil, fmt.Errorf("output header keys: %w", err)
	}
	for j, k := range hkeys {
		if k == nil {
			return nil, nil, fmt.Errorf("output header %d has a null key", j)
		}
	}
	if hvalues, err = SplitColumn(res.OutputHeaderValueLengths, res.OutputHeaderValues); err != nil {
		return nil, nil, fmt.Errorf("output header values: %w", err)
	}
	return hkeys, hvalues, nil
}

// SplitColumn cuts a length-prefixed column (-1: null).
func SplitColumn(lens []int32, data []byte) ([][]byte, error) {
	out := make([][]byte, len(lens))
	off := 0
	for i, l := range lens {
		switch {
		case l == -1:
		case l < -1:
			return nil, fmt.Errorf("length %d at %d", l, i)
		case off+int(l) > len(data):
			return nil, fmt.Errorf("length %d at %d runs past the column's %d bytes", l, i, len(data))
		default:
			out[i] = data[off : off+int(l) : off+int(l)]
			off += int(l)
		}
	}
	if off != len(data) {
		return nil, fmt.Errorf("%d bytes left over", len(data)-off)
	}
	return out, nil
}

// Length is a column length: -1 for null.
func Length(b []byte) int32 {
	if b == nil {
		return -1
	}
	return int32(len(b))
}
