package frompb

import (
	"errors"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// TestCogroupBuild: CogroupOp starts a cogroup from a grouped stream and adds
// to it; AggregateOp on a cogrouped stream takes the initializer only, and
// answers the merge node with the cogroup's store. A stray aggregator, or a
// grouped stream given where none belongs, is refused naming it.
func TestCogroupBuild(t *testing.T) {
	b := topology.NewBuilder()
	funcs := map[uint32]topology.Function{1: {Name: "agg"}, 2: {Name: "init"}}
	build := func(op *pb.BuildRequest) (*pb.BuildResponse, error) { return Build(b, funcs, op) }
	grouped := func(topic string) uint64 {
		t.Helper()
		s, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{topic}}}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: s.Handle.Id}}})
		if err != nil {
			t.Fatal(err)
		}
		return g.Handle.Id
	}
	one, two := grouped("one"), grouped("two")
	if _, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Cogroup{Cogroup: &pb.CogroupOp{Input: one, Grouped: two, AggregatorToken: 1}}}); !errors.Is(err, topology.ErrInvalid) ||
		!strings.Contains(err.Error(), "cogroup on grouped stream 2 names grouped stream 4 too") {
		t.Errorf("cogroup of a grouped stream naming another: %v", err)
	}
	cg, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Cogroup{Cogroup: &pb.CogroupOp{Input: one, AggregatorToken: 1}}})
	if err != nil || cg.Handle.Kind != pb.Kind_KIND_COGROUPED_STREAM {
		t.Fatalf("cogroup: %v, %v", cg, err)
	}
	cg, err = build(&pb.BuildRequest{Operation: &pb.BuildRequest_Cogroup{Cogroup: &pb.CogroupOp{Input: cg.Handle.Id, Grouped: two, AggregatorToken: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: cg.Handle.Id, InitializerToken: 2, AggregatorToken: 1}}}); !errors.Is(err, topology.ErrInvalid) ||
		!strings.Contains(err.Error(), "aggregator_token 1 has no place here") {
		t.Errorf("aggregate of a cogroup with an aggregator: %v", err)
	}
	table, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: cg.Handle.Id, InitializerToken: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := table.Handle; h.Kind != pb.Kind_KIND_TABLE || h.Node != "COGROUPKSTREAM-MERGE-0000000005" || h.Store != "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002" {
		t.Errorf("the cogroup's table: %v", h)
	}
}
