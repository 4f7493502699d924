package frompb

import (
	"errors"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// TestMetadataWriteRefusedOutsideStatelessChains: a function whose
// operator sets its outputs' timestamp and headers (a reducer, aggregator,
// initializer, joiner, key selector, table operator's function) may read
// record metadata but not write it: the call fails naming role, token and
// function, and changes nothing; METADATA_READ is taken, and a stream's
// map_values may still write.
func TestMetadataWriteRefusedOutsideStatelessChains(t *testing.T) {
	b := topology.NewBuilder()
	funcs := map[uint32]topology.Function{
		1: {Name: "plain"},
		2: {Name: "reads", Metadata: topology.MetadataRead},
		3: {Name: "writes", Metadata: topology.MetadataWrite},
	}
	build := func(req *pb.BuildRequest) (*pb.BuildResponse, error) { return Build(b, funcs, req) }
	src, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Table{Table: &pb.TableOp{Topic: "t", KeySerde: "string", ValueSerde: "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_GroupByKey{GroupByKey: &pb.GroupByKeyOp{Input: src.Handle.Id}}})
	if err != nil {
		t.Fatal(err)
	}
	g, s, tb := grouped.Handle.Id, src.Handle.Id, table.Handle.Id
	for _, c := range []struct {
		req  *pb.BuildRequest
		want string
	}{
		{&pb.BuildRequest{Operation: &pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: g, Token: 3}}}, "Build(reduce): the reducer, token 3 (writes), was registered with METADATA_WRITE"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: g, InitializerToken: 3, AggregatorToken: 1}}}, "Build(aggregate): the initializer, token 3 (writes)"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: g, InitializerToken: 1, AggregatorToken: 3}}}, "Build(aggregate): the aggregator, token 3 (writes)"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_Join{Join: &pb.JoinOp{Input: s, Table: tb, JoinerToken: 3}}}, "Build(join): the joiner, token 3 (writes)"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_GroupBy{GroupBy: &pb.GroupByOp{Input: s, Token: 3}}}, "Build(group_by): the key selector, token 3 (writes)"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_Filter{Filter: &pb.FilterOp{Input: tb, Token: 3}}}, "Build(filter): the table predicate, token 3 (writes)"},
		{&pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: tb, Token: 3}}}, "Build(map_values): the table mapper, token 3 (writes)"},
	} {
		_, err := build(c.req)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, topology.ErrInvalid) {
			t.Errorf("%v: error %v, want %q... (ErrInvalid)", c.req.Operation, err, c.want)
		}
	}
	if _, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: g, Token: 2}}}); err != nil {
		t.Errorf("a reducer that reads metadata: %v", err)
	}
	if _, err := build(&pb.BuildRequest{Operation: &pb.BuildRequest_MapValues{MapValues: &pb.MapValuesOp{Input: s, Token: 3}}}); err != nil {
		t.Errorf("a stream's map_values that writes metadata: %v", err)
	}
}
