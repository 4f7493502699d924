package crossing

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Fold bundles: a reduce's or aggregate's records grouped by key (first
// appearance order), each group's current aggregate once, then its values
// in order. One crossing however many values a hot key has.

// FoldOptions say what a fold bundle carries besides its values.
type FoldOptions struct {
	Topic     string
	Partition int32
	// Table: each value is a table change; its old value rides beside it,
	// and the new one may be null.
	Table bool
	// FinalOnly: the host may answer only each group's last aggregate
	// (the record cache keeps only each key's last update).
	FinalOnly bool
	// ValueRefs: a record folded more than once (into each of its windows)
	// is sent once, its folds referring to it (value_refs).
	ValueRefs bool
}

// FoldGroup is one key's part of a fold bundle: its aggregate before the
// bundle (nil: none) and its records, as indexes, in order.
type FoldGroup struct {
	Key, Agg []byte
	Members  []int
}

// FoldValue is what a fold bundle carries of one record.
type FoldValue struct {
	Value, Old []byte
	Offset     int64
	Timestamp  int64
	// Input is the input record the value comes from: with ValueRefs,
	// the values of one input go once.
	Input *kgo.Record
	// Headers are the record's: sent when the step asked for metadata.
	Headers []kgo.RecordHeader
}

// EncodeFold lays groups out in a fold bundle for c, record i being
// rec(i). It returns the bundle and, by the value's position in it, the
// index of its record and its group; the answer is one output (the
// aggregate after it) per value position, and DecodeFold's records follow
// that order.
func EncodeFold(c *Chain, o FoldOptions, groups []FoldGroup, n int, rec func(i int) FoldValue) (b *pb.Bundle, order []int, groupOf []int32) {
	b = &pb.Bundle{
		Steps: c.Steps, KeySerde: c.InKey, ValueSerde: c.InValue,
		OutputKeySerde: c.OutKey, OutputValueSerde: c.OutValue, AggregateSerde: c.OutValue,
		Topic: o.Topic, Partition: o.Partition,
		GroupSizes:       make([]int32, len(groups)),
		AggregateLengths: make([]int32, len(groups)),
		KeyLengths:       make([]int32, len(groups)),
		ValueLengths:     make([]int32, 0, n),
		Offsets:          make([]int64, 0, n),
		Timestamps:       make([]int64, 0, n),
	}
	if o.Table {
		b.OldValueLengths = make([]int32, 0, n)
	} else {
		b.FinalOnly = o.FinalOnly
	}
	// The records sent, for their headers when the step reads metadata.
	var sent []int
	meta := Metadata(c.Steps) != pb.Metadata_METADATA_UNSPECIFIED
	var recIndex map[*kgo.Record]int32
	if o.ValueRefs {
		recIndex = make(map[*kgo.Record]int32, n)
		b.ValueRefs = make([]int32, 0, n)
	}
	order = make([]int, 0, n)     // value position -> index of its record
	groupOf = make([]int32, 0, n) // value position -> its group
	for g, grp := range groups {
		b.GroupSizes[g] = int32(len(grp.Members))
		b.KeyLengths[g] = int32(len(grp.Key))
		b.Keys = append(b.Keys, grp.Key...)
		if grp.Agg == nil {
			b.AggregateLengths[g] = -1
		} else {
			b.AggregateLengths[g] = int32(len(grp.Agg))
			b.Aggregates = append(b.Aggregates, grp.Agg...)
		}
		for _, i := range grp.Members {
			r := rec(i)
			order = append(order, i)
			groupOf = append(groupOf, int32(g))
			if recIndex != nil {
				ref, seen := recIndex[r.Input]
				if !seen {
					ref = int32(len(recIndex))
					recIndex[r.Input] = ref
				}
				if b.ValueRefs = append(b.ValueRefs, ref); seen {
					continue // sent with its first window
				}
			}
			b.ValueLengths = append(b.ValueLengths, Length(r.Value))
			b.Values = append(b.Values, r.Value...)
			if o.Table {
				b.OldValueLengths = append(b.OldValueLengths, Length(r.Old))
				b.OldValues = append(b.OldValues, r.Old...)
			}
			b.Offsets = append(b.Offsets, r.Offset)
			b.Timestamps = append(b.Timestamps, r.Timestamp)
			if meta {
				sent = append(sent, i)
			}
		}
	}
	if meta {
		b.HeaderCounts, b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = EncodeHeaders(len(sent), func(j int) Record {
			return Record{Headers: rec(sent[j]).Headers}
		})
	}
	return b, order, groupOf
}

// CheckFold checks the output counts of the answer res to fold bundle b
// (whose value positions are in groupOf's groups), once Decode has checked
// the rest: a failed value has no aggregate and leaves its group's as it
// was before it; every other has one, or with final_only possibly only
// each group's last that did not fail. It returns the positions that
// failed.
func CheckFold(c *Chain, b *pb.Bundle, groupOf []int32, groups int, res *pb.BundleResult) (failedAt map[int]bool, err error) {
	if len(res.Failures) > 0 {
		failedAt = make(map[int]bool, len(res.Failures))
		for _, f := range res.Failures {
			failedAt[int(f.Index)] = true
		}
	}
	// With final_only a group's aggregate comes after its last value that
	// did not fail: lastOK[g] is that value's position.
	lastOK := make([]int, groups)
	for j := range res.OutputCounts {
		if !failedAt[j] {
			lastOK[groupOf[j]] = j
		}
	}
	for j, n := range res.OutputCounts {
		if failedAt[j] {
			if n != 0 {
				return nil, fmt.Errorf("engine: host answered fold bundle %d for node %s with an output count of %d for value %d, which failed; a failed value has no aggregate", res.BundleId, c.Node, n, j)
			}
			continue
		}
		last := j == lastOK[groupOf[j]]
		if n != 1 && !(b.FinalOnly && n == 0 && !last) {
			return nil, fmt.Errorf("engine: host answered fold bundle %d for node %s with an output count of %d for value %d; a fold gives one aggregate per value (with final_only: per group, after its last value)", res.BundleId, c.Node, n, j)
		}
	}
	return failedAt, nil
}
