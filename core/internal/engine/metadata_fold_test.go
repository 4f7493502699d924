package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// foldMetaHost reduces string values by joining them with "+", each value
// tagged with its record's offset and, when the bundle carries headers,
// its "trace" header: the reducer of TestHostFoldMetadata.
type foldMetaHost struct {
	mu       sync.Mutex
	metadata []pb.Metadata
	headers  [][]int32 // per bundle: header counts sent
}

func (h *foldMetaHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b.Steps) != 1 || b.Steps[0].Operation != pb.Operation_OPERATION_REDUCE {
		return nil, fmt.Errorf("foldMetaHost: steps %v", b.Steps)
	}
	h.metadata = append(h.metadata, b.Steps[0].Metadata)
	h.headers = append(h.headers, b.HeaderCounts)
	values := split(b.ValueLengths, b.Values)
	aggs := split(b.AggregateLengths, b.Aggregates)
	var hkeys, hvalues [][]byte
	if len(b.HeaderCounts) > 0 {
		hkeys, hvalues = split(b.HeaderKeyLengths, b.HeaderKeys), split(b.HeaderValueLengths, b.HeaderValues)
	}
	trace := make([]string, len(values))
	hdr := 0
	for i := range b.HeaderCounts {
		for range b.HeaderCounts[i] {
			if string(hkeys[hdr]) == "trace" {
				trace[i] = string(hvalues[hdr])
			}
			hdr++
		}
	}
	res := &pb.BundleResult{BundleId: b.Id}
	i := 0
	for g, size := range b.GroupSizes {
		agg := aggs[g]
		for range size {
			v := fmt.Sprintf("%s@%d%s", values[i], b.Offsets[i], trace[i])
			if agg != nil {
				v = string(agg) + "+" + v
			}
			agg = []byte(v)
			res.OutputCounts = append(res.OutputCounts, 1)
			res.ValueLengths = append(res.ValueLengths, int32(len(agg)))
			res.Values = append(res.Values, agg...)
			i++
		}
	}
	return res, nil
}

// TestHostFoldMetadata: a reducer registered with METADATA_READ crosses
// with Step.metadata READ and, when a record has headers, the header
// columns (each value's record's); one that did not ask gets neither.
func TestHostFoldMetadata(t *testing.T) {
	for _, md := range []topology.Metadata{topology.MetadataRead, topology.MetadataNone} {
		t.Run(fmt.Sprint(md), func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			b := topology.NewBuilder()
			in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
			must(err)
			g, err := b.GroupByKey(in.ID, "", "", "")
			must(err)
			red, err := b.Reduce(g.ID, topology.Function{Token: 1, Name: "join", Metadata: md}, nil, "")
			must(err)
			s, err := b.ToStream(red.ID, "")
			must(err)
			must(b.To(s.ID, "out", "", "", ""))
			topo, err := b.Topology()
			must(err)
			host := &foldMetaHost{}
			td, _, ctx := driven(t, fmt.Sprintf("foldmeta%d", md), map[string]string{"statestore.cache.max.bytes": "0"}, topo, host, func(c *config.App) { c.HostMetadata = true })
			for _, r := range []struct {
				v  string
				hs []kgo.RecordHeader
			}{{"a", nil}, {"b", []kgo.RecordHeader{{Key: "trace", Value: []byte("#t1")}}}, {"c", nil}} {
				if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte("k"), Value: []byte(r.v), Headers: r.hs}}); err != nil || failure != nil {
					t.Fatalf("pipe %v: %v %v", r, failure, err)
				}
			}
			out, _, err := td.Output("out")
			must(err)
			var got []string
			for _, r := range out {
				got = append(got, string(r.Value))
			}
			want := "a@0; a@0+b@1#t1; a@0+b@1#t1+c@2"
			wantMD, wantHeaders := pb.Metadata_METADATA_READ, "[] [1] []"
			if md == topology.MetadataNone {
				want, wantMD, wantHeaders = "a@0; a@0+b@1; a@0+b@1+c@2", pb.Metadata_METADATA_UNSPECIFIED, "[] [] []"
			}
			if g := strings.Join(got, "; "); g != want {
				t.Errorf("out: %s\nwant %s", g, want)
			}
			host.mu.Lock()
			defer host.mu.Unlock()
			for _, m := range host.metadata {
				if m != wantMD {
					t.Errorf("step metadata %v, want %v", m, wantMD)
				}
			}
			if g := strings.Trim(fmt.Sprint(host.headers), "[]"); g != strings.Trim(wantHeaders, "[]") {
				t.Errorf("header counts per bundle %v, want %s", host.headers, wantHeaders)
			}
		})
	}
}

// TestHostMetadataWriteRefused: a joiner, reducer or aggregator returns
// a value only, its operator sets the output's timestamp and headers (as
// in Kafka Streams), so one registered with METADATA_WRITE is refused at
// Start, naming the node and the function's token.
func TestHostMetadataWriteRefused(t *testing.T) {
	b := topology.NewBuilder()
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.GroupByKey(in.ID, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	agg, err := b.Aggregate(g.ID, topology.Function{Token: 1, Name: "zero"}, topology.Function{Token: 2, Name: "sum", Metadata: topology.MetadataWrite}, nil, "summed")
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.ToStream(agg.ID, "")
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, app, err := startOnDriver(ctx, "foldmetawrite", nil, topo, &foldMetaHost{}, func(c *config.App) { c.HostMetadata = true })
	if err == nil {
		td.Close()
		app.Stop(ctx)
		t.Fatal("Start took an aggregator registered with METADATA_WRITE")
	}
	if msg := err.Error(); !strings.Contains(msg, "node summed") || !strings.Contains(msg, "token 2") || !strings.Contains(msg, "METADATA_WRITE") {
		t.Errorf("error %q does not name node summed, token 2 and METADATA_WRITE", msg)
	}
}
