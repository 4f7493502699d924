package crossing

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// programFolds: fold 0 (key a) starts from the initializer's; fold 1
// (key b) from a stored aggregate; fold 2 (key a) from fold 0's output,
// merging a stored one in. Folds 0 and 2 fold the same input record.
func programFolds() []Fold {
	in0, in1 := &kgo.Record{Offset: 10}, &kgo.Record{Offset: 11}
	return []Fold{
		{Key: []byte("a"), Value: []byte("v0"), Offset: 10, Timestamp: 100, Input: in0, Base: Agg{Fold: Init}},
		{Key: []byte("b"), Value: []byte("v1"), Offset: 11, Timestamp: 101, Input: in1, Base: Agg{Bytes: []byte("x"), Fold: Stored}},
		{Key: []byte("a"), Value: []byte("v0"), Offset: 10, Timestamp: 100, Input: in0, Base: Agg{Fold: 0}, Merges: []Agg{{Bytes: []byte("y"), Fold: Stored}}},
	}
}

func programChain() *Chain {
	return &Chain{Node: "N", Steps: []*pb.Step{{Token: 1, Operation: pb.Operation_OPERATION_AGGREGATE}}, OutValue: "long"}
}

// A program groups folds by key (places a0 a2 b1), pools the stored
// aggregates in place order after which the folds' outputs are referred to,
// and sends each input record's value once.
func TestProgramLayout(t *testing.T) {
	b := NewProgram(programChain(), "t", 3, programFolds()).Bundle
	if !equal(b.GroupSizes, []int32{2, 1}) || string(b.Keys) != "ab" {
		t.Errorf("groups %v keys %q, want [2 1] ab", b.GroupSizes, b.Keys)
	}
	if string(b.Aggregates) != "yx" || !equal(b.AggregateLengths, []int32{1, 1}) {
		t.Errorf("pool %q %v, want y x", b.Aggregates, b.AggregateLengths)
	}
	// place 0: the initializer's; place 1: fold 0's output (pool 2 + place 0),
	// merging pool 0; place 2: pool 1.
	if !equal(b.FoldBases, []int32{-1, 2, 1}) || !equal(b.MergeCounts, []int32{0, 1, 0}) || !equal(b.MergeRefs, []int32{0}) {
		t.Errorf("bases %v merge counts %v refs %v", b.FoldBases, b.MergeCounts, b.MergeRefs)
	}
	if !equal(b.ValueRefs, []int32{0, 0, 1}) || string(b.Values) != "v0v1" || !equal(b.Offsets, []int64{10, 11}) {
		t.Errorf("value refs %v values %q offsets %v", b.ValueRefs, b.Values, b.Offsets)
	}
	if b.Partition != 3 || b.AggregateSerde != "long" {
		t.Errorf("partition %d aggregate serde %q", b.Partition, b.AggregateSerde)
	}
}

// The answer, in place order, comes back by fold; a fold that refers to a
// failed one is not reported as failed itself; a null aggregate names its
// fold.
func TestProgramDecode(t *testing.T) {
	p := NewProgram(programChain(), "t", 0, programFolds())
	outs, fails, err := p.Decode(&pb.BundleResult{OutputCounts: []int32{1, 1, 1}, ValueLengths: []int32{1, 1, 1}, Values: []byte("ABC")})
	if err != nil || len(fails) != 0 || string(outs[0]) != "A" || string(outs[1]) != "C" || string(outs[2]) != "B" {
		t.Fatalf("outs %q fails %v error %v, want A C B by fold", outs, fails, err)
	}
	_, fails, err = p.Decode(&pb.BundleResult{Failures: []*pb.RecordFailure{{Index: 0, Message: "E: a"}, {Index: 1, Message: "E: depends"}}})
	if err != nil || len(fails) != 1 || fails[0].Index != 0 || fails[0].Node != "N" {
		t.Fatalf("failures %+v error %v, want fold 0's only", fails, err)
	}
	_, fails, err = p.Decode(&pb.BundleResult{Failures: []*pb.RecordFailure{{Index: 2, Message: "E: b"}}})
	if err != nil || len(fails) != 1 || fails[0].Index != 1 {
		t.Fatalf("failures %+v error %v, want fold 1 (place 2)", fails, err)
	}
	_, _, err = p.Decode(&pb.BundleResult{OutputCounts: []int32{1, 1, 1}, ValueLengths: []int32{1, 1, -1}, Values: []byte("AB")})
	var null *NullAggregate
	if !errors.As(err, &null) || null.Fold != 1 {
		t.Fatalf("error %v, want a null aggregate of fold 1", err)
	}
}

// A fold bundle's answer gives one aggregate per value; with final_only a
// group's values before its last that did not fail may have none; a
// failed value has none.
func TestCheckFold(t *testing.T) {
	c := &Chain{Node: "N", Nodes: []*topology.Node{{Name: "N"}}}
	groupOf := []int32{0, 0, 1}
	final := &pb.Bundle{FinalOnly: true}
	for _, tc := range []struct {
		name   string
		b      *pb.Bundle
		counts []int32
		failed []int32
		want   string
	}{
		{"every value", &pb.Bundle{}, []int32{1, 1, 1}, nil, ""},
		{"final only", final, []int32{0, 1, 1}, nil, ""},
		{"final only, last missing", final, []int32{1, 0, 1}, nil, "output count of 0 for value 1"},
		{"final only, last failed", final, []int32{1, 0, 1}, []int32{1}, ""},
		{"not final only", &pb.Bundle{}, []int32{0, 1, 1}, nil, "output count of 0 for value 0"},
		{"failed with an aggregate", &pb.Bundle{}, []int32{1, 1, 1}, []int32{2}, "which failed"},
	} {
		res := &pb.BundleResult{BundleId: 7, OutputCounts: tc.counts}
		for _, i := range tc.failed {
			res.Failures = append(res.Failures, &pb.RecordFailure{Index: i})
		}
		failedAt, err := CheckFold(c, tc.b, groupOf, 2, res)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "node N")):
			t.Errorf("%s: error %v, want it to name node N and contain %q", tc.name, err, tc.want)
		case err == nil && len(failedAt) != len(tc.failed):
			t.Errorf("%s: failed positions %v, want %v", tc.name, failedAt, tc.failed)
		}
	}
}
