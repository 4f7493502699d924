package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Bad flat_map, with-key mapper and print calls get errors naming the method,
// handle, kind, token or serde, and the session survives them.
func TestFlatMapBadInput(t *testing.T) {
	e := newEnv(t, "t1", "s1")
	h := e.open("flat-map-bad", nil)
	tok := h.register("f", predicateFn(func(_, _ []byte) (bool, error) { return true, nil }))
	tbl := h.mustBuild(&pb.TableOp{Topic: "t1"})
	st := h.mustBuild(&pb.StreamOp{Topics: []string{"s1"}})
	tests := []struct {
		name string
		op   any
		code connect.Code
		want []string
	}{
		{"flat_map on a table", &pb.FlatMapOp{Input: tbl.Id, Token: tok}, connect.CodeInvalidArgument, []string{"Build(flat_map)", "needs a stream", "is a table"}},
		{"flat_map with an unregistered token", &pb.FlatMapOp{Input: st.Id, Token: 999}, connect.CodeNotFound, []string{"Build(flat_map)", "token 999"}},
		{"flat_map of a missing handle", &pb.FlatMapOp{Input: 77, Token: tok}, connect.CodeNotFound, []string{"flat_map", "handle 77"}},
		{"flat_map with an unknown key serde", &pb.FlatMapOp{Input: st.Id, Token: tok, KeySerde: "avro"}, connect.CodeInvalidArgument, []string{"flat_map", `"avro"`}},
		{"map_values with a key on a table", &pb.MapValuesOp{Input: tbl.Id, Token: tok, WithKey: true}, connect.CodeInvalidArgument, []string{"Build(map_values)", "with_key", fmt.Sprintf("token %d", tok), "is a table"}},
		{"print on a table", &pb.PrintOp{Input: tbl.Id, Token: tok}, connect.CodeInvalidArgument, []string{"Build(print)", "needs a stream", "is a table"}},
		{"print with an unregistered token", &pb.PrintOp{Input: st.Id, Token: 0}, connect.CodeNotFound, []string{"Build(print)", "token 0"}},
		{"print with an illegal name", &pb.PrintOp{Input: st.Id, Token: tok, Name: "a b"}, connect.CodeInvalidArgument, []string{"print", `"a b"`, "illegal"}},
		{"flat_map_values with a key on a table", &pb.FlatMapValuesOp{Input: tbl.Id, Token: tok, WithKey: true}, connect.CodeInvalidArgument, []string{"flat_map_values", "needs a stream", "is a table"}},
	}
	for _, tt := range tests {
		_, err := h.build(tt.op)
		if connect.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want code %v", tt.name, err, tt.code)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tt.name, err, w)
			}
		}
	}
	// The session survives, and the refused calls took no number: the
	// table's store is 0, its source 1 and KTABLE-SOURCE 2, the stream 3.
	fm := h.mustBuild(&pb.FlatMapOp{Input: st.Id, Token: tok})
	if fm.Node != "KSTREAM-FLATMAP-0000000004" {
		t.Errorf("flat_map's node is %s, want KSTREAM-FLATMAP-0000000004", fm.Node)
	}
	mv := h.mustBuild(&pb.MapValuesOp{Input: fm.Id, Token: tok, WithKey: true})
	if _, err := h.build(&pb.PrintOp{Input: mv.Id, Token: tok}); err != nil {
		t.Fatalf("print: %v", err)
	}
	d, err := h.cl.Describe(context.Background(), connect.NewRequest(&pb.DescribeRequest{SessionId: h.session}))
	if err != nil {
		t.Fatal(err)
	}
	if text := d.Msg.Text; !strings.Contains(text, "Processor: KSTREAM-PRINTER-0000000006 (stores: [])\n      --> none\n      <-- KSTREAM-MAPVALUES-0000000005") {
		t.Errorf("describe() has no printer after the map_values:\n%s", d.Msg.Text)
	}
}
