package engine

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// A sink with a windowed key serde partitions by the inner key, as Kafka
// Streams' WindowedStreamPartitioner does: every window of a key lands in
// the partition Kafka's default partitioner gives the key itself.
func TestWindowedSinkPartitionsByInnerKey(t *testing.T) {
	p := changelogPartitioner(nil, map[string]int{"wcounts": 8, "sessions": 16})
	plain := kgo.StickyKeyPartitioner(nil).ForTopic("counts")
	const n = 16
	spread := map[int]bool{}
	for _, key := range []string{"alice", "bob", "carol", "dave", "eve", "kafka", "streams"} {
		want := plain.Partition(&kgo.Record{Key: []byte(key)}, n)
		spread[want] = true
		for _, start := range []int64{0, 10_000, 1_767_225_600_000} {
			k := serde.AppendTimeWindowed(nil, []byte(key), start)
			if got := p.ForTopic("wcounts").Partition(&kgo.Record{Key: k}, n); got != want {
				t.Errorf("key %q window %d: partition %d, want %d (the inner key's)", key, start, got, want)
			}
			s := serde.AppendSessionWindowed(nil, []byte(key), start, start+5)
			if got := p.ForTopic("sessions").Partition(&kgo.Record{Key: s}, n); got != want {
				t.Errorf("key %q session at %d: partition %d, want %d (the inner key's)", key, start, got, want)
			}
		}
	}
	if len(spread) < 2 {
		t.Fatalf("the keys all hash to one partition of %d: the test shows nothing", n)
	}
	// Other topics keep Kafka's default partitioner.
	if _, ok := p.ForTopic("other").(innerKeyPartitioner); ok {
		t.Error("a topic no windowed sink writes is partitioned by inner keys")
	}
}
