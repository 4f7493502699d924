package streams_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// StreamsBuilder.stream(Pattern) in the test driver: records piped into
// any topic the pattern matches as a whole come through one source (as
// TopologyTestDriver#getInputTopicOrPatternPartition matches piped topics
// against the pattern); a topic it does not match is not read. describe()
// prints the pattern where a source prints its topic list
// (InternalTopologyBuilder.Source#toString).
func TestStreamPatternTestDriver(t *testing.T) {
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	orders, err := b.StreamPattern(regexp.MustCompile(`orders-.*`))
	must(err)
	grouped, err := orders.GroupByKey()
	must(err)
	counts, err := grouped.Count()
	must(err)
	st, err := counts.ToStream()
	must(err)
	must(st.To("counts", streams.ValueSerde(streams.Long)))
	text, err := b.Describe()
	must(err)
	if !strings.Contains(text, "Source: KSTREAM-SOURCE-0000000000 (topics: orders-.*)\n      --> KSTREAM-AGGREGATE-0000000002\n") {
		t.Fatalf("describe:\n%s", text)
	}
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	for _, in := range [][2]string{{"orders-eu", "a"}, {"orders-us", "a"}, {"orders-eu", "b"}, {"orders-us", "a"}} {
		must(d.PipeInput(in[0], []byte(in[1]), []byte("x")))
	}
	// The whole name must match: "orders" and "xorders-eu" are not read.
	for _, topic := range []string{"orders", "xorders-eu"} {
		if err := d.PipeInput(topic, []byte("a"), []byte("x")); !errors.Is(err, streams.ErrUnknownTopic) {
			t.Fatalf("PipeInput(%s): %v, want ErrUnknownTopic", topic, err)
		}
	}
	out, err := d.ReadOutput("counts")
	must(err)
	var got []string
	for _, r := range out {
		got = append(got, string(r.Key)+"="+string(rune('0'+r.Value[7])))
	}
	if want := []string{"a=1", "a=2", "b=1", "a=3"}; !slices.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

// A pattern is refused when Go's RE2 cannot read it (Java's lookaround,
// backreferences), naming the pattern; and, as Kafka Streams' addSource
// does, when it matches a topic another source reads or a later source
// names a topic it matches.
func TestStreamPatternRefused(t *testing.T) {
	b := streams.NewBuilder()
	if _, err := b.StreamPattern(regexp.MustCompile(`orders-.*`), streams.Name("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stream([]string{"orders-eu"}); err == nil || !strings.Contains(err.Error(), `stream reads topic "orders-eu", which matches pattern "orders-.*" of source a`) {
		t.Fatalf("Stream(orders-eu) after the pattern: %v", err)
	}
	b = streams.NewBuilder()
	if _, err := b.Stream([]string{"orders-eu"}, streams.Name("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StreamPattern(regexp.MustCompile(`orders-.*`)); err == nil || !strings.Contains(err.Error(), `stream pattern "orders-.*" matches topic "orders-eu", which source s reads already`) {
		t.Fatalf("StreamPattern after Stream(orders-eu): %v", err)
	}
	if _, err := b.StreamPattern(nil); err == nil {
		t.Fatal("StreamPattern(nil): no error")
	}
}

// A topic the pattern matches that is created while the application runs
// is read from the next metadata refresh (metadata.max.age.ms) on, its
// partitions joining the tasks of their partition number (the group
// rebalances); topics the pattern does not match as a whole, and the
// application's own internal topics, are never read.
func TestStreamPatternReadsTopicCreatedLater(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders-eu", "orders", "xorders-eu", "out"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(topic string, partition int32, value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(value), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("producing to %s/%d: %v", topic, partition, err)
		}
	}
	produce("orders-eu", 1, "eu-1")
	produce("orders", 0, "not-read-1")
	produce("xorders-eu", 0, "not-read-2")

	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	orders, err := b.StreamPattern(regexp.MustCompile(`orders-.*`))
	must(err)
	// A grouping with a store: its changelog
	// (orders-app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog)
	// matches the pattern, and must not be read as one of its topics.
	grouped, err := orders.GroupByKey()
	must(err)
	counts, err := grouped.Count()
	must(err)
	st, err := counts.ToStream()
	must(err)
	must(st.To("out", streams.ValueSerde(streams.Long)))
	app, err := streams.New(b, streams.Config{
		ApplicationID: "orders-app", Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100", "metadata.max.age.ms": "200",
			"statestore.cache.max.bytes": "0", "application.server": "localhost:7070"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	must(app.Start(ctx))
	defer app.Stop(context.Background())

	out, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out"))
	must(err)
	defer out.Close()
	var got []string
	await := func(what string, want ...string) {
		t.Helper()
		for !slices.Equal(got, want) {
			if len(got) > len(want) {
				t.Fatalf("%s: output %v, want %v", what, got, want)
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := out.PollFetches(pctx)
			pcancel()
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: output %v, want %v", what, got, want)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)) })
			slices.Sort(got)
		}
	}
	await("the record of the topic matched at the start", "eu-1")
	// A new topic; its partitions join the tasks of their number (a
	// topic with more partitions than the store's changelog fails the
	// application, as Kafka Streams' InternalTopicManager does).
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "orders-us"); err != nil {
		t.Fatal(err)
	}
	produce("orders-us", 0, "us-0")
	produce("orders-us", 1, "us-1")
	produce("orders-eu", 0, "eu-0")
	await("the records of a topic created after the start", "eu-0", "eu-1", "us-0", "us-1")
	time.Sleep(300 * time.Millisecond) // a record of a topic not matched would come now
	pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer pcancel()
	out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)) })
	if len(got) != 4 {
		t.Fatalf("output %v: a topic the pattern does not match was read", got)
	}
	// Interactive queries know the store's partitions by the matched
	// topics' (the sub-topology reads no named topic).
	md, err := app.QueryMetadataForKey("KSTREAM-AGGREGATE-STATE-STORE-0000000001", []byte("eu-1"))
	if err != nil || md.ActiveHost.Port != 7070 || md.Partition < 0 || md.Partition > 1 {
		t.Fatalf("QueryMetadataForKey: %+v, %v", md, err)
	}
}

// A pattern source's Consumed.withOffsetResetPolicy applies to the topics
// it matches: with latest, a partition with no committed offset starts at
// its end, so what was written before the start is not read.
func TestStreamPatternOffsetReset(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders-eu", "out"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic("orders-eu"))
	must(err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())
	b := streams.NewBuilder()
	orders, err := b.StreamPattern(regexp.MustCompile(`orders-.*`), streams.OffsetReset("latest"))
	must(err)
	must(orders.To("out"))
	app, err := streams.New(b, streams.Config{
		ApplicationID: "pattern-latest", Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	must(app.Start(ctx))
	defer app.Stop(context.Background())
	out, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out"))
	must(err)
	defer out.Close()
	// Written until the application reads one: the first ones may come
	// before its partition is assigned (and are skipped by latest too).
	for {
		must(cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr())
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := out.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatal("waiting for the application to read a record written after its start")
		}
		var got []string
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) == 0 {
			continue
		}
		if slices.Contains(got, "before") {
			t.Fatalf("output %v: the record written before the start was read under latest", got)
		}
		return
	}
}

// Topology.addSource(name, Pattern): a Processor API source reading the
// topics a pattern matches; describe() prints the pattern.
func TestAddSourcePattern(t *testing.T) {
	topo := streams.NewTopology()
	must(topo.AddSourcePattern("orders", streams.String, streams.String, regexp.MustCompile(`orders-[a-z]{2}`)))
	must(topo.AddSink("all", "all-orders", "orders"))
	text, err := topo.Describe()
	must(err)
	if !strings.Contains(text, "Source: orders (topics: orders-[a-z]{2})\n      --> all\n") {
		t.Fatalf("describe:\n%s", text)
	}
	d, err := streams.NewTestDriver(&topo.Builder, streams.Config{ApplicationID: "add-source-pattern", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	must(d.PipeInput("orders-eu", []byte("o1"), []byte("eu")))
	must(d.PipeInput("orders-us", []byte("o2"), []byte("us")))
	out, err := d.ReadOutput("all-orders")
	must(err)
	var got []string
	for _, r := range out {
		got = append(got, string(r.Key))
	}
	if !slices.Equal(got, []string{"o1", "o2"}) {
		t.Fatalf("all-orders: %v", got)
	}
}
