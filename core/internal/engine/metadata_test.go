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

// metaHost is a Go host for the chain tag (METADATA_WRITE) -> upper (no
// metadata): tag makes "topic:offset:value", moves the timestamp 100 on
// and adds header seen=value, except for value "same", whose headers it
// leaves (-1: the input's); upper upper-cases.
type metaHost struct {
	mu     sync.Mutex
	steps  []*pb.Step
	header [][]int32 // per bundle: header counts sent
}

func (h *metaHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = b.Steps
	h.header = append(h.header, b.HeaderCounts)
	if len(b.Steps) != 2 || b.Steps[0].Metadata != pb.Metadata_METADATA_WRITE || b.Steps[1].Metadata != pb.Metadata_METADATA_UNSPECIFIED {
		return nil, fmt.Errorf("metaHost: steps %v", b.Steps)
	}
	n := len(b.ValueLengths)
	values := split(b.ValueLengths, b.Values)
	res := &pb.BundleResult{BundleId: b.Id}
	var hkeys, hvalues [][]byte
	if len(b.HeaderCounts) > 0 {
		hkeys, hvalues = split(b.HeaderKeyLengths, b.HeaderKeys), split(b.HeaderValueLengths, b.HeaderValues)
	}
	hdr := 0
	for i := range n {
		var in []kgo.RecordHeader
		if len(b.HeaderCounts) > 0 {
			for range b.HeaderCounts[i] {
				in = append(in, kgo.RecordHeader{Key: string(hkeys[hdr]), Value: hvalues[hdr]})
				hdr++
			}
		}
		v := strings.ToUpper(fmt.Sprintf("%s:%d:%s", b.Topic, b.Offsets[i], values[i]))
		res.OutputCounts = append(res.OutputCounts, 1)
		res.ValueLengths = append(res.ValueLengths, int32(len(v)))
		res.Values = append(res.Values, v...)
		res.OutputTimestamps = append(res.OutputTimestamps, b.Timestamps[i]+100)
		if string(values[i]) == "same" {
			res.OutputHeaderCounts = append(res.OutputHeaderCounts, -1)
			continue
		}
		out := append(in, kgo.RecordHeader{Key: "seen", Value: values[i]})
		res.OutputHeaderCounts = append(res.OutputHeaderCounts, int32(len(out)))
		for _, hd := range out {
			res.OutputHeaderKeyLengths = append(res.OutputHeaderKeyLengths, int32(len(hd.Key)))
			res.OutputHeaderKeys = append(res.OutputHeaderKeys, hd.Key...)
			res.OutputHeaderValueLengths = append(res.OutputHeaderValueLengths, int32(len(hd.Value)))
			res.OutputHeaderValues = append(res.OutputHeaderValues, hd.Value...)
		}
	}
	return res, nil
}

// TestHostChainMetadata: a chain with a METADATA_WRITE step gets its
// steps' metadata levels and the records' headers, and its outputs take
// the timestamps and headers the host answered (-1: the input's).
func TestHostChainMetadata(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := topology.NewBuilder()
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	tag, err := b.MapValues(in.ID, topology.Function{Token: 1, Name: "tag", Metadata: topology.MetadataWrite}, "", "")
	must(err)
	up, err := b.MapValues(tag.ID, topology.Function{Token: 2, Name: "upper"}, "", "")
	must(err)
	must(b.To(up.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	host := &metaHost{}
	td, _, ctx := driven(t, "hostmeta", nil, topo, host, func(c *config.App) { c.HostMetadata = true })
	for _, r := range []struct {
		v  string
		ts int64
		hs []kgo.RecordHeader
	}{{"a", 1, nil}, {"b", 2, []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}}, {"same", 3, []kgo.RecordHeader{{Key: "trace", Value: []byte("t2")}}}} {
		ts := r.ts
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte("k"), Value: []byte(r.v), Timestamp: &ts, Headers: r.hs}}); err != nil || failure != nil {
			t.Fatalf("pipe %v: %v %v", r, failure, err)
		}
	}
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s@%d", r.Value, r.Timestamp.UnixMilli())
		for _, h := range r.Headers {
			got += fmt.Sprintf(" %s=%s", h.Key, h.Value)
		}
		got += "; "
	}
	if want := "IN:0:A@101 seen=a; IN:1:B@102 trace=t1 seen=b; IN:2:SAME@103 trace=t2; "; got != want {
		t.Errorf("out: %s\nwant %s", got, want)
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	// Header columns go with a bundle only when one of its records has headers.
	if len(host.header) != 3 || len(host.header[0]) != 0 || len(host.header[1]) != 1 || host.header[2][0] != 1 {
		t.Errorf("header counts per bundle %v, want [] [1] [1]", host.header)
	}
}
