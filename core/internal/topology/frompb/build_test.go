package frompb

import (
	"errors"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// TestBuildAnswersHandles: a source, a host map_values and a split answer
// the handles the builder made, with their kinds and node names.
func TestBuildAnswersHandles(t *testing.T) {
	b := topology.NewBuilder()
	funcs := map[uint32]topology.Function{1: {Name: "upper"}, 2: {Name: "is_a"}}
	src, err := Build(b, funcs, &pb.BuildRequest{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}})
	if err != nil || src.Handle == nil || src.Handle.Kind != pb.Kind_KIND_STREAM || src.Handle.Node != "KSTREAM-SOURCE-0000000000" {
		t.Fatalf("stream: %v, %v", src, err)
	}
	mv, err := Build(b, funcs, &pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: src.Handle.Id, Token: 1}}})
	if err != nil || mv.Handle == nil || mv.Handle.Node != "KSTREAM-MAPVALUES-0000000001" {
		t.Fatalf("map_values: %v, %v", mv, err)
	}
	split, err := Build(b, funcs, &pb.BuildRequest{Operation: &pb.BuildRequest_Split{Split: &pb.SplitOp{
		Input: mv.Handle.Id, Branches: []*pb.Branch{{PredicateToken: 2}}, DefaultBranch: true,
	}}})
	if err != nil || split.Handle != nil || len(split.Branches) != 2 {
		t.Fatalf("split: %v, %v; want two branches and no handle", split, err)
	}
}

// TestBuildErrors: every refusal names the method, and wraps ErrNotFound
// for a handle or token that does not exist, ErrInvalid for the rest (the
// server's Connect codes hang on that).
func TestBuildErrors(t *testing.T) {
	b := topology.NewBuilder()
	funcs := map[uint32]topology.Function{1: {Name: "f"}}
	src, err := Build(b, funcs, &pb.BuildRequest{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}})
	if err != nil {
		t.Fatal(err)
	}
	in := src.Handle.Id
	table, err := Build(b, funcs, &pb.BuildRequest{Operation: &pb.BuildRequest_Table{Table: &pb.TableOp{Topic: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.Handle.Id
	cases := []struct {
		about string
		req   *pb.BuildRequest
		kind  error
		want  string
	}{
		{"no operation", &pb.BuildRequest{}, topology.ErrInvalid, "Build: the request names no operation"},
		{"unregistered token", &pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: in, Token: 9}}},
			topology.ErrNotFound, "Build(map_values): token 9 is not registered in this session"},
		{"missing handle (the builder's error)", &pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: 77, Token: 1}}},
			topology.ErrNotFound, "Build(map_values): "},
		{"materialized on a stream", &pb.BuildRequest{Operation: &pb.BuildRequest_Filter{Filter: &pb.FilterOp{Input: in, Token: 1, Materialized: &pb.Materialized{}}}},
			topology.ErrInvalid, "Build(filter): materialized is for tables, but handle 1 is a stream"},
		{"reducer token and built-in", &pb.BuildRequest{Operation: &pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: in, Token: 1, Builtin: pb.Reducer_REDUCER_SUM}}},
			topology.ErrInvalid, "Build(reduce): names both token 1 and built-in"},
		{"unknown emit strategy", &pb.BuildRequest{Operation: &pb.BuildRequest_EmitStrategy{EmitStrategy: &pb.EmitStrategyOp{Input: in, Strategy: 42}}},
			topology.ErrInvalid, "Build(emit_strategy): topology: emit_strategy names strategy 42"},
		{"join without a joiner", &pb.BuildRequest{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: in, Table: in}}},
			topology.ErrInvalid, "Build(join): join names no joiner"},
		{"with_key map_values on a table", &pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: tbl, Token: 1, WithKey: true}}},
			topology.ErrInvalid, "Build(map_values): with_key (token 1) is for streams, but handle 2 is a table"},
		{"flat_map with an unregistered token", &pb.BuildRequest{Operation: &pb.BuildRequest_FlatMap{FlatMap: &pb.FlatMapOp{Input: in, Token: 5}}},
			topology.ErrNotFound, "Build(flat_map): token 5 is not registered in this session"},
		{"print on a table", &pb.BuildRequest{Operation: &pb.BuildRequest_Print{Print: &pb.PrintOp{Input: tbl, Token: 1}}},
			topology.ErrInvalid, "Build(print): topology: print needs a stream, but handle 2 is a table"},
		{"global join of a missing handle", &pb.BuildRequest{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: in, Table: 55, KeyMapperToken: 1}}},
			topology.ErrNotFound, "Build(join): join names handle 55, which does not exist"},
	}
	for _, c := range cases {
		_, err := Build(b, funcs, c.req)
		if err == nil {
			t.Errorf("%s: no error", c.about)
			continue
		}
		if !errors.Is(err, c.kind) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v (is %v: %v); want it to start %q", c.about, err, c.kind, errors.Is(err, c.kind), c.want)
		}
	}
}
