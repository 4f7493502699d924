package engine

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// BenchmarkProcessCount pushes 2,000-record batches over 1,000 keys
// through stream -> group_by_key -> count in Go, on a Pebble store, under
// exactly_once_v2 (the batches' writes join the open transaction, which
// never ends: nothing is produced): the stateful hot path, operator calls
// and store reads and writes included.
//
//	go test ./core/internal/engine -run '^$' -bench ProcessCount -count 10
func BenchmarkProcessCount(b *testing.B) {
	tb := topology.NewBuilder()
	s, err := tb.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	if err != nil {
		b.Fatal(err)
	}
	g, err := tb.GroupByKey(s.ID, "", "", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tb.Count(g.ID, nil, ""); err != nil {
		b.Fatal(err)
	}
	topo, err := tb.Topology()
	if err != nil {
		b.Fatal(err)
	}
	task := newOrderTask(b, topo, nil, map[string]string{"processing.guarantee": "exactly_once_v2"})
	batch := make([]*kgo.Record, 2000)
	for i := range batch {
		batch[i] = &kgo.Record{Topic: "in", Offset: int64(i), Key: []byte(fmt.Sprintf("key-%d", i%1000)), Value: []byte("v")}
	}
	benchProcess(b, task, batch)
}
