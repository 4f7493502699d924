package crossing

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Fold programs (Bundle.fold_bases): the folds of a pass over session or
// sliding windows, whose aggregates are symbols until the host has
// answered the whole batch's program in one crossing (docs/design/windows.md).

// Agg is what a fold of a program starts from or merges in: an earlier
// fold's output (Fold, its index, >= 0), stored bytes (Fold == Stored;
// nil Bytes is none) or the initializer's (Fold == Init).
type Agg struct {
	Bytes []byte
	Fold  int32
}

const (
	Stored int32 = -1 // Bytes holds it
	Init   int32 = -2 // initializer(), run by the host
)

// Fold is one fold of a program: from Base, merge Merges in, then fold
// Value in. A fold only refers to earlier folds of its key.
type Fold struct {
	Key, Value []byte
	Offset     int64
	Timestamp  int64
	// Input is the input record the value comes from: the folds of one
	// input send its value once.
	Input  *kgo.Record
	Base   Agg
	Merges []Agg
	// Headers are the record's: sent when the step asked for metadata.
	Headers []kgo.RecordHeader
}

// Program is a fold program in a bundle: Bundle is what goes to the host,
// Decode reads its answer.
type Program struct {
	Bundle *pb.Bundle
	chain  *Chain
	folds  []Fold
	// byPlace: the fold at each place of the bundle; order: their folds.
	byPlace []int
	order   []Fold
}

// NewProgram lays folds out in a program for c. Folds are grouped by key
// (first appearance), in their order within a key.
func NewProgram(c *Chain, topic string, partition int32, folds []Fold) *Program {
	index := map[string]int{}
	var groups [][]int
	for i, op := range folds {
		g, ok := index[string(op.Key)]
		if !ok {
			g = len(groups)
			index[string(op.Key)] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	n := len(folds)
	b := &pb.Bundle{
		Steps: c.Steps, KeySerde: c.InKey, ValueSerde: c.InValue,
		OutputKeySerde: c.OutKey, OutputValueSerde: c.OutValue, AggregateSerde: c.OutValue,
		Topic: topic, Partition: partition,
		GroupSizes:  make([]int32, len(groups)),
		KeyLengths:  make([]int32, len(groups)),
		ValueRefs:   make([]int32, 0, n),
		FoldBases:   make([]int32, 0, n),
		MergeCounts: make([]int32, 0, n),
	}
	pos := make([]int32, n)      // fold index -> its place in the bundle
	order := make([]Fold, 0, n)  // the bundle's folds
	byPlace := make([]int, 0, n) // place -> fold index
	for g, members := range groups {
		key := folds[members[0]].Key
		b.GroupSizes[g] = int32(len(members))
		b.KeyLengths[g] = int32(len(key))
		b.Keys = append(b.Keys, key...)
		for _, i := range members {
			pos[i] = int32(len(byPlace))
			byPlace = append(byPlace, i)
			order = append(order, folds[i])
		}
	}
	// The pool: every stored aggregate a fold starts from or merges.
	pooled := func(a Agg) {
		if a.Fold == Stored && a.Bytes != nil {
			b.AggregateLengths = append(b.AggregateLengths, int32(len(a.Bytes)))
			b.Aggregates = append(b.Aggregates, a.Bytes...)
		}
	}
	for _, i := range byPlace {
		pooled(folds[i].Base)
		for _, m := range folds[i].Merges {
			pooled(m)
		}
	}
	pool, nextPool := int32(len(b.AggregateLengths)), int32(0)
	ref := func(a Agg) int32 {
		switch {
		case a.Fold >= 0:
			return pool + pos[a.Fold]
		case a.Fold == Stored && a.Bytes != nil:
			nextPool++
			return nextPool - 1
		}
		return -1 // the initializer's, or none
	}
	recIndex := make(map[*kgo.Record]int32, n)
	var sent []int // the folds whose records were sent, for their headers
	meta := Metadata(c.Steps) != pb.Metadata_METADATA_UNSPECIFIED
	for _, i := range byPlace {
		op := folds[i]
		b.FoldBases = append(b.FoldBases, ref(op.Base))
		b.MergeCounts = append(b.MergeCounts, int32(len(op.Merges)))
		for _, m := range op.Merges {
			b.MergeRefs = append(b.MergeRefs, ref(m))
		}
		j, seen := recIndex[op.Input]
		if !seen {
			j = int32(len(recIndex))
			recIndex[op.Input] = j
			b.ValueLengths = append(b.ValueLengths, Length(op.Value))
			b.Values = append(b.Values, op.Value...)
			b.Offsets = append(b.Offsets, op.Offset)
			b.Timestamps = append(b.Timestamps, op.Timestamp)
			if meta {
				sent = append(sent, i)
			}
		}
		b.ValueRefs = append(b.ValueRefs, j)
	}
	if meta {
		b.HeaderCounts, b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = EncodeHeaders(len(sent), func(j int) Record {
			return Record{Headers: folds[sent[j]].Headers}
		})
	}
	return &Program{Bundle: b, chain: c, folds: folds, byPlace: byPlace, order: order}
}

// NullAggregate is a fold whose aggregate the host answered null.
type NullAggregate struct{ Fold int }

func (*NullAggregate) Error() string { return "the host returned a null aggregate" }

// Decode checks the host's answer and returns each fold's aggregate, by
// fold index; or the failures of the folds (Failure.Index a fold index)
// whose own fold failed: a fold that refers to a failed fold's output
// failed for that alone. A null aggregate is a *NullAggregate error.
func (p *Program) Decode(res *pb.BundleResult) ([][]byte, []Failure, error) {
	s, folds, byPlace := p.chain, p.folds, p.byPlace
	aggs, fails, err := Decode(s, p.order, res, func(_ *Fold, o *Output) []byte { return o.Value })
	if err != nil {
		return nil, nil, err
	}
	if len(fails) > 0 {
		failedFold := make(map[int]bool, len(fails))
		for _, fl := range fails {
			failedFold[byPlace[fl.Index]] = true
		}
		var own []Failure
		for _, fl := range fails {
			op := folds[byPlace[fl.Index]]
			dependent := op.Base.Fold >= 0 && failedFold[int(op.Base.Fold)]
			for _, m := range op.Merges {
				dependent = dependent || m.Fold >= 0 && failedFold[int(m.Fold)]
			}
			if !dependent {
				fl.Index = byPlace[fl.Index]
				own = append(own, fl)
			}
		}
		if len(own) == 0 {
			return nil, nil, fmt.Errorf("engine: host answered fold program %d for node %s with %d failures, each on a fold that refers to another failed one", res.BundleId, s.Node, len(fails))
		}
		return nil, own, nil
	}
	for i, c := range res.OutputCounts {
		if c != 1 {
			return nil, nil, fmt.Errorf("engine: host answered fold program %d for node %s with an output count of %d for fold %d; a fold program gives one aggregate per fold", res.BundleId, s.Node, c, i)
		}
	}
	outs := make([][]byte, len(folds))
	for place, a := range aggs {
		if a == nil {
			return nil, nil, &NullAggregate{Fold: byPlace[place]}
		}
		outs[byPlace[place]] = a
	}
	return outs, nil, nil
}
