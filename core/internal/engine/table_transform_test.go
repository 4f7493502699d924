package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// transformHost is a Go host running a transform_values transformer as
// the SDKs do: a fixed-key processor forwarding each value upper-cased
// ("NULL" for a tombstone) once, or twice when dup is set.
type transformHost struct {
	dup   bool
	steps []pb.Operation
}

func (h *transformHost) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	return h.ProcessReads(ctx, b, nil)
}

func (h *transformHost) ProcessReads(_ context.Context, b *pb.Bundle, _ engine.ReadFunc) (*pb.BundleResult, error) {
	h.steps = append(h.steps, b.Steps[0].Operation)
	res := &pb.BundleResult{BundleId: b.Id}
	for range b.Inits {
		res.OpCounts = append(res.OpCounts, 0)
	}
	keys, values := split(b.KeyLengths, b.Keys), split(b.ValueLengths, b.Values)
	for i := range keys {
		out := []byte("NULL")
		if values[i] != nil {
			out = []byte(strings.ToUpper(string(values[i])))
		}
		n := 1
		if h.dup {
			n = 2
		}
		res.OpCounts = append(res.OpCounts, int32(n))
		for range n {
			res.OpKinds = append(res.OpKinds, pb.OpKind_OP_KIND_FORWARD)
			res.OpTargets = append(res.OpTargets, 0)
			res.OpKeyLengths = append(res.OpKeyLengths, int32(len(keys[i])))
			res.OpKeys = append(res.OpKeys, keys[i]...)
			res.OpValueLengths = append(res.OpValueLengths, int32(len(out)))
			res.OpValues = append(res.OpValues, out...)
			res.OpTimestamps = append(res.OpTimestamps, b.Timestamps[i])
			res.OpSchedules = append(res.OpSchedules, 0)
			res.OpHeaderCounts = append(res.OpHeaderCounts, -1)
		}
	}
	for range b.After {
		res.OpCounts = append(res.OpCounts, 0)
	}
	return res, nil
}

func transformTopology(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	b.HostProcessors = true
	tbl, err := b.Table(topology.TableOptions{Topic: "in", KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	tv, err := b.TableTransformValues(tbl.ID, topology.Function{Token: 5, Name: "upper"}, topology.TransformValuesOptions{Name: "up"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.ToStream(tv.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(s.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestHostTransformValues: a host transformer crosses as a fixed-key
// processor, is given a tombstone too, and its one forward per value
// becomes the change's new value.
func TestHostTransformValues(t *testing.T) {
	host := &transformHost{}
	td, _, ctx := driven(t, "hosttv", nil, transformTopology(t), host, nil)
	for _, v := range [][]byte{[]byte("x"), nil} {
		ts := int64(10)
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte("k"), Value: v, Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe %q: %v %v", v, failure, err)
		}
	}
	out, _, err := td.Output("out")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out {
		got = append(got, string(r.Key)+"="+string(r.Value))
	}
	if strings.Join(got, " ") != "k=X k=NULL" {
		t.Errorf("out %v, want k=X k=NULL", got)
	}
	for _, op := range host.steps {
		if op != pb.Operation_OPERATION_PROCESS_VALUES {
			t.Errorf("a transform_values bundle's step is %v, want OPERATION_PROCESS_VALUES", op)
		}
	}
}

// TestHostTransformValuesTwoForwards: a host that forwards two values for
// one is refused, naming the node and the record.
func TestHostTransformValuesTwoForwards(t *testing.T) {
	td, _, ctx := driven(t, "hosttv2", nil, transformTopology(t), &transformHost{dup: true}, nil)
	ts := int64(10)
	_, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte("k"), Value: []byte("x"), Timestamp: &ts}})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else if failure != nil {
		msg = failure.Error()
	}
	if !strings.Contains(msg, "transform_values node up forwarded two values for the record at in/0@0") {
		t.Errorf("two forwards for one value: %q", msg)
	}
}
