package streams_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A StreamPartitioner chooses each record's partitions, read back with an
// independent client: one partition, several (multicast), none (the record
// is dropped) or no answer (Kafka's default partitioner: murmur2 of the
// key). A partition out of range fails that record under the processing
// policy, naming it. Repartition's partitioner routes the repartition
// topic, and a TopicNameExtractor names each record's topic.
func TestStreamPartitionerAndTopicNameExtractor(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"), kfake.SeedTopics(4, "out", "dyn-a", "dyn-b"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	route := func(topic string, key, value []byte, n int) ([]int, bool, error) {
		if n != 4 {
			t.Errorf("numPartitions of %s = %d, want 4", topic, n)
		}
		switch v := string(value); {
		case v == "all":
			return []int{3, 0, 3, 1}, true, nil
		case v == "drop":
			return []int{}, true, nil
		case v == "default":
			return nil, false, nil
		case v == "bad":
			return []int{7}, true, nil
		case strings.HasPrefix(v, "p"):
			return streams.Partition(int(v[1] - '0'))
		}
		return streams.Partition(2)
	}
	must(in.To("out", streams.Partitioner(route)))
	re, err := in.Repartition(4, streams.Name("re"), streams.Partitioner(func(_ string, _, _ []byte, _ int) ([]int, bool, error) {
		return streams.Partition(1)
	}))
	must(err)
	must(re.ToExtractor(func(key, value []byte, rc streams.RecordContext) (string, error) {
		if !strings.HasSuffix(rc.Topic, "re-repartition") {
			t.Errorf("record context topic %q, want the repartition topic", rc.Topic)
		}
		if rc.Partition != 1 {
			t.Errorf("record %s read from partition %d of the repartition topic; its partitioner chose 1", value, rc.Partition)
		}
		return "dyn-" + string(key), nil
	}, "dynTopics"))

	desc, err := b.Describe()
	must(err)
	if !strings.Contains(desc, "Sink: KSTREAM-SINK-0000000005 (extractor class: dynTopics)") {
		t.Errorf("describe() has no extractor sink:\n%s", desc)
	}

	app, err := streams.New(b, streams.Config{
		ApplicationID: "route",
		Brokers:       brokers,
		Properties: map[string]string{
			"state.dir":                    t.TempDir(),
			"processing.exception.handler": "LogAndContinueProcessingExceptionHandler",
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out", "dyn-a", "dyn-b"))
	must(err)
	defer cl.Close()
	for _, kv := range [][2]string{{"a", "p0"}, {"b", "all"}, {"a", "drop"}, {"b", "default"}, {"a", "bad"}, {"b", "p3"}, {"a", "x"}} {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte(kv[0]), Value: []byte(kv[1])}).FirstErr())
	}
	got := map[string][]string{}
	n := 0
	for n < 7+7 { // out: p0, all x3, default, p3, x; dyn-*: every record
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records (%v): %v", n, got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			got[r.Topic] = append(got[r.Topic], string(r.Value)+"@"+string(rune('0'+r.Partition)))
		})
	}
	defaultPart := kgo.StickyKeyPartitioner(nil).ForTopic("out").Partition(&kgo.Record{Key: []byte("b")}, 4)
	byValue := map[string][]string{}
	for _, s := range got["out"] {
		v, p, _ := strings.Cut(s, "@")
		byValue[v] = append(byValue[v], p)
	}
	want := map[string]string{"p0": "0", "all": "0,1,3", "default": string(rune('0' + defaultPart)), "p3": "3", "x": "2"}
	for v, p := range want {
		if g := strings.Join(sortedCopy(byValue[v]), ","); g != p {
			t.Errorf("out: value %s in partitions %q, want %q (all: %v)", v, g, p, got["out"])
		}
	}
	for _, v := range []string{"drop", "bad"} {
		if byValue[v] != nil {
			t.Errorf("out: value %s was written (%v)", v, byValue[v])
		}
	}
	// The extractor's sink routes by key, to the default partitioner's
	// partition.
	pa := string(rune('0' + kgo.StickyKeyPartitioner(nil).ForTopic("dyn-a").Partition(&kgo.Record{Key: []byte("a")}, 4)))
	pb := string(rune('0' + kgo.StickyKeyPartitioner(nil).ForTopic("dyn-b").Partition(&kgo.Record{Key: []byte("b")}, 4)))
	if g, w := strings.Join(got["dyn-a"], " "), "p0@"+pa+" drop@"+pa+" bad@"+pa+" x@"+pa; g != w {
		t.Errorf("dyn-a: %s, want %s", g, w)
	}
	if g, w := strings.Join(got["dyn-b"], " "), "all@"+pb+" default@"+pb+" p3@"+pb; g != w {
		t.Errorf("dyn-b: %s, want %s", g, w)
	}
	if st, err := app.State(); err != nil {
		t.Errorf("state %v: %v", st, err)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}
