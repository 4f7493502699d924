package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// globalJoinHost is a Host for a global join: token 1 maps a value "<product>/x"
// to the key "<product>" (OPERATION_SELECT_KEY; "none/..." maps to null),
// token 2 joins values as "v+other" (OPERATION_VALUE_JOIN; "v+null"). It
// counts the bundles of each operation and their records.
type globalJoinHost struct {
	mu      sync.Mutex
	bundles map[pb.Operation]int
	records map[pb.Operation]int
}

func cols(lens []int32, buf []byte) [][]byte {
	out := make([][]byte, len(lens))
	o := 0
	for i, l := range lens {
		if l >= 0 {
			out[i] = buf[o : o+int(l)]
			o += int(l)
		}
	}
	return out
}

func (h *globalJoinHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	op := b.Steps[0].Operation
	h.mu.Lock()
	h.bundles[op]++
	h.records[op] += len(b.ValueLengths)
	h.mu.Unlock()
	res := &pb.BundleResult{BundleId: b.Id}
	values := cols(b.ValueLengths, b.Values)
	for i, v := range values {
		res.OutputCounts = append(res.OutputCounts, 1)
		switch op {
		case pb.Operation_OPERATION_SELECT_KEY:
			k, _, _ := strings.Cut(string(v), "/")
			if k == "none" {
				res.KeyLengths = append(res.KeyLengths, -1)
			} else {
				res.KeyLengths = append(res.KeyLengths, int32(len(k)))
				res.Keys = append(res.Keys, k...)
			}
			res.ValueLengths = append(res.ValueLengths, int32(len(v)))
			res.Values = append(res.Values, v...)
		case pb.Operation_OPERATION_VALUE_JOIN:
			o := cols(b.OtherValueLengths, b.OtherValues)[i]
			j := string(v) + "+" + string(o)
			if o == nil {
				j = string(v) + "+null"
			}
			res.ValueLengths = append(res.ValueLengths, int32(len(j)))
			res.Values = append(res.Values, j...)
		default:
			return nil, fmt.Errorf("unexpected operation %v", op)
		}
	}
	return res, nil
}

// globalJoinTask is a task of stream(orders) -> join(global products) ->
// to(out) (left: leftJoin) with host functions, over a real Pebble store
// but no broker: batches are pushed through the plan, outputs read from
// t.out.
func globalJoinTask(t *testing.T, left bool) (*task, *globalJoinHost, *state.Partition) {
	t.Helper()
	b := topology.NewBuilder()
	g, err := b.GlobalTable(topology.GlobalTableOptions{Topic: "products", KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := b.Stream(topology.StreamOptions{Topics: []string{"orders"}, KeySerde: "string", ValueSerde: "string"})
	j, err := b.GlobalJoin(s.ID, g.ID, topology.Function{Token: 1, Name: "mapper"}, topology.Function{Token: 2, Name: "joiner"}, left, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(j.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	h := &globalJoinHost{bundles: map[pb.Operation]int{}, records: map[pb.Operation]int{}}
	a := unstartedApp(t, "global", map[string]string{"polystreams.bundle.max.records": "2"}, topo, h, nil)
	if len(a.plans) != 1 {
		t.Fatalf("%d plans: a global table makes no tasks", len(a.plans))
	}
	tk := newTask(a, taskID{1, 0}, a.plans[0])
	tk.restored.Store(true)
	return tk, h, a.db.Partition(g.Node.Stores[0], globalDataPartition)
}

func (tk *task) pushOrders(t *testing.T, kvs ...[2]string) []string {
	t.Helper()
	var recs []rec
	for i, kv := range kvs {
		r := rec{key: []byte(kv[0]), value: []byte(kv[1]), ts: int64(100 + i), in: &kgo.Record{Topic: "orders", Offset: int64(i)}}
		if kv[1] == "<null>" {
			r.value = nil
		}
		recs = append(recs, r)
	}
	tk.begin()
	if err := tk.push(context.Background(), tk.plan.sources["orders"], recs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range tk.out {
		out = append(out, r.Topic+" "+string(r.Key)+"="+string(r.Value))
	}
	return out
}

// KStreamGlobalKTableJoin through a task: each order is joined with the
// row its mapped key has in the global store as the store is when the
// order is processed (a later update is seen by later orders); the output
// keeps the order's key. The inner join drops orders whose product is
// missing, and null values and null mapped keys are dropped and counted.
// The key mapper and the joiner each cross once per bundle (2 records per
// bundle here), never per record.
func TestGlobalJoinSemanticsAndBundles(t *testing.T) {
	tk, h, global := globalJoinTask(t, false)
	if err := global.Apply([]state.Write{{Key: []byte("p1"), Value: []byte("apple")}, {Key: []byte("p2"), Value: []byte("pear")}}); err != nil {
		t.Fatal(err)
	}
	got := tk.pushOrders(t,
		[2]string{"o1", "p1/a"}, [2]string{"o2", "p2/b"}, [2]string{"o3", "p9/c"},
		[2]string{"o4", "<null>"}, [2]string{"o5", "none/d"}, [2]string{"o6", "p1/e"})
	want := []string{"out o1=p1/a+apple", "out o2=p2/b+pear", "out o6=p1/e+apple"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("inner join gave %v, want %v", got, want)
	}
	if d := tk.app.DroppedRecords(); d != 2 {
		t.Errorf("dropped %d records, want 2 (a null value, a null mapped key)", d)
	}
	// 5 records to map (the null value is not mapped): 3 bundles of at
	// most 2; 3 joined: 2 bundles.
	if h.bundles[pb.Operation_OPERATION_SELECT_KEY] != 3 || h.records[pb.Operation_OPERATION_SELECT_KEY] != 5 ||
		h.bundles[pb.Operation_OPERATION_VALUE_JOIN] != 2 || h.records[pb.Operation_OPERATION_VALUE_JOIN] != 3 {
		t.Errorf("crossings %v with records %v; want 3 key-mapper bundles of 5 records and 2 joiner bundles of 3", h.bundles, h.records)
	}
	// An update of the global table is seen by the orders after it.
	if err := global.Apply([]state.Write{{Key: []byte("p1"), Value: []byte("green apple")}, {Key: []byte("p9"), Value: []byte("plum")}, {Key: []byte("p2")}}); err != nil {
		t.Fatal(err)
	}
	got = tk.pushOrders(t, [2]string{"o7", "p1/f"}, [2]string{"o8", "p9/g"}, [2]string{"o9", "p2/h"})
	want = []string{"out o7=p1/f+green apple", "out o8=p9/g+plum"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the update the join gave %v, want %v", got, want)
	}
}

// A left join joins an order whose product is missing with null, and one
// whose mapped key is null, keyed or not (KIP-962; Kafka 4.1's
// KStreamKTableJoinProcessor#maybeDropRecord drops it only in an inner
// join).
func TestGlobalLeftJoinMissingKey(t *testing.T) {
	tk, _, global := globalJoinTask(t, true)
	if err := global.Apply([]state.Write{{Key: []byte("p1"), Value: []byte("apple")}}); err != nil {
		t.Fatal(err)
	}
	var recs [][2]string
	recs = append(recs, [2]string{"o1", "p1/a"}, [2]string{"o2", "p7/b"}, [2]string{"o3", "none/c"})
	got := tk.pushOrders(t, recs...)
	want := []string{"out o1=p1/a+apple", "out o2=p7/b+null", "out o3=none/c+null"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("left join gave %v, want %v", got, want)
	}
	tk.begin()
	if err := tk.push(context.Background(), tk.plan.sources["orders"], []rec{{key: nil, value: []byte("none/z"), in: &kgo.Record{Topic: "orders"}}}); err != nil {
		t.Fatal(err)
	}
	if len(tk.out) != 1 || tk.out[0].Key != nil || string(tk.out[0].Value) != "none/z+null" {
		t.Errorf("a null-key order in a left join gave %v, want one output none/z+null with a null key", tk.out)
	}
}
