package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// cogroupMetaHost runs a cogroup's aggregators: a key's first value starts
// its aggregate with the initializer, "init@<offset><trace>" (the offset
// and "trace" header of the record being folded, when the bundle carries
// headers), and each value is appended as "+<value>".
type cogroupMetaHost struct {
	mu       sync.Mutex
	metadata map[string]pb.Metadata // per node: the Step.metadata its bundles came with
}

func (h *cogroupMetaHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b.Steps) != 1 || b.Steps[0].Operation != pb.Operation_OPERATION_AGGREGATE {
		return nil, fmt.Errorf("cogroupMetaHost: steps %v", b.Steps)
	}
	st := b.Steps[0]
	if prev, ok := h.metadata[st.Node]; ok && prev != st.Metadata {
		return nil, fmt.Errorf("cogroupMetaHost: node %s came with metadata %v, then %v", st.Node, prev, st.Metadata)
	}
	h.metadata[st.Node] = st.Metadata
	values := split(b.ValueLengths, b.Values)
	aggs := split(b.AggregateLengths, b.Aggregates)
	trace := make([]string, len(values))
	if len(b.HeaderCounts) > 0 {
		hkeys, hvalues := split(b.HeaderKeyLengths, b.HeaderKeys), split(b.HeaderValueLengths, b.HeaderValues)
		hdr := 0
		for i := range b.HeaderCounts {
			for range b.HeaderCounts[i] {
				if string(hkeys[hdr]) == "trace" {
					trace[i] = string(hvalues[hdr])
				}
				hdr++
			}
		}
	}
	res := &pb.BundleResult{BundleId: b.Id}
	i := 0
	for g, size := range b.GroupSizes {
		agg := aggs[g]
		for range size {
			if agg == nil {
				agg = []byte(fmt.Sprintf("init@%d%s", b.Offsets[i], trace[i]))
			}
			agg = []byte(string(agg) + "+" + string(values[i]))
			res.OutputCounts = append(res.OutputCounts, 1)
			res.ValueLengths = append(res.ValueLengths, int32(len(agg)))
			res.Values = append(res.Values, agg...)
			i++
		}
	}
	return res, nil
}

// TestCogroupInitializerMetadata: a cogroup's initializer registered with
// METADATA_READ makes every aggregation node's bundles cross with
// Step.metadata READ and the records' headers, although none of the
// aggregators asked (Kafka Streams calls the initializer for the record
// being folded, whichever grouped stream it came from); with no function
// asking, neither crosses.
func TestCogroupInitializerMetadata(t *testing.T) {
	for _, md := range []topology.Metadata{topology.MetadataRead, topology.MetadataNone} {
		t.Run(fmt.Sprint(md), func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			b := topology.NewBuilder()
			grouped := func(topic string) uint64 {
				in, err := b.Stream(topology.StreamOptions{Topics: []string{topic}, KeySerde: "string", ValueSerde: "string"})
				must(err)
				g, err := b.GroupByKey(in.ID, "", "", "")
				must(err)
				return g.ID
			}
			one, two := grouped("one"), grouped("two")
			cg, err := b.Cogroup(one, 0, topology.Function{Token: 2, Name: "fromOne"})
			must(err)
			cg, err = b.Cogroup(cg.ID, two, topology.Function{Token: 3, Name: "fromTwo"})
			must(err)
			table, err := b.CogroupAggregate(cg.ID, topology.Function{Token: 1, Name: "init", Metadata: md}, nil, nil, "tagged")
			must(err)
			s, err := b.ToStream(table.ID, "")
			must(err)
			must(b.To(s.ID, "out", "", "", ""))
			topo, err := b.Topology()
			must(err)
			host := &cogroupMetaHost{metadata: map[string]pb.Metadata{}}
			td, _, ctx := driven(t, fmt.Sprintf("cogroupmeta%d", md), map[string]string{"statestore.cache.max.bytes": "0"}, topo, host, func(c *config.App) { c.HostMetadata = true })
			for _, r := range []struct {
				topic, key, v string
				hs            []kgo.RecordHeader
			}{
				{"two", "a", "x", []kgo.RecordHeader{{Key: "trace", Value: []byte("#t1")}}},
				{"one", "a", "y", nil},
				{"one", "b", "z", []kgo.RecordHeader{{Key: "trace", Value: []byte("#t2")}}},
			} {
				if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: r.topic, Key: []byte(r.key), Value: []byte(r.v), Headers: r.hs}}); err != nil || failure != nil {
					t.Fatalf("pipe %v: %v %v", r, failure, err)
				}
			}
			out, _, err := td.Output("out")
			must(err)
			var got []string
			for _, r := range out {
				got = append(got, string(r.Key)+"="+string(r.Value))
			}
			want, wantMD := "a=init@0#t1+x; a=init@0#t1+x+y; b=init@1#t2+z", pb.Metadata_METADATA_READ
			if md == topology.MetadataNone {
				want, wantMD = "a=init@0+x; a=init@0+x+y; b=init@1+z", pb.Metadata_METADATA_UNSPECIFIED
			}
			if g := strings.Join(got, "; "); g != want {
				t.Errorf("out: %s\nwant %s", g, want)
			}
			host.mu.Lock()
			defer host.mu.Unlock()
			for _, node := range []string{"tagged-cogroup-agg-0", "tagged-cogroup-agg-1"} {
				if m, ok := host.metadata[node]; !ok || m != wantMD {
					t.Errorf("node %s: step metadata %v (seen %v), want %v", node, m, ok, wantMD)
				}
			}
		})
	}
}
