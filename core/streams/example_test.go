package streams_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A word count in Go: the functions run in the engine, no host crossing.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines", "counts"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	lines, err := b.Stream([]string{"lines"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	words, err := lines.FlatMapValues(func(line []byte) ([][]byte, error) { return bytes.Fields(line), nil })
	must(err)
	grouped, err := words.GroupBy(func(_, word []byte) ([]byte, error) { return word, nil })
	must(err)
	counts, err := grouped.Count(streams.Store("counts"))
	must(err)
	changes, err := counts.ToStream()
	must(err)
	must(changes.To("counts"))
	text, err := b.Describe()
	must(err)
	fmt.Print(text)

	dir, err := os.MkdirTemp("", "streams-example")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "wordcount",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("counts"))
	must(err)
	defer cl.Close()
	for _, line := range []string{"to be or", "not to be"} {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "lines", Value: []byte(line)}).FirstErr())
	}
	final := map[string]int64{}
	// With the record cache (on by default) a count may skip updates; read
	// until the last one per word is there.
	for len(final) < 4 || final["to"] < 2 || final["be"] < 2 {
		fs := cl.PollFetches(ctx)
		must(fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			final[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
		})
	}
	words2 := make([]string, 0, len(final))
	for w := range final {
		words2 = append(words2, w)
	}
	sort.Strings(words2)
	for _, w := range words2 {
		fmt.Println(w, final[w])
	}
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
	//       --> KSTREAM-FLATMAPVALUES-0000000001
	//     Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
	//       --> KSTREAM-KEY-SELECT-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
	//       --> counts-repartition-filter
	//       <-- KSTREAM-FLATMAPVALUES-0000000001
	//     Processor: counts-repartition-filter (stores: [])
	//       --> counts-repartition-sink
	//       <-- KSTREAM-KEY-SELECT-0000000002
	//     Sink: counts-repartition-sink (topic: counts-repartition)
	//       <-- counts-repartition-filter
	//
	//   Sub-topology: 1
	//     Source: counts-repartition-source (topics: [counts-repartition])
	//       --> KSTREAM-AGGREGATE-0000000003
	//     Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts])
	//       --> KTABLE-TOSTREAM-0000000007
	//       <-- counts-repartition-source
	//     Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
	//       --> KSTREAM-SINK-0000000008
	//       <-- KSTREAM-AGGREGATE-0000000003
	//     Sink: KSTREAM-SINK-0000000008 (topic: counts)
	//       <-- KTABLE-TOSTREAM-0000000007
	//
	// be 2
	// not 1
	// or 1
	// to 2
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// A refused call names the operator and the offender, wraps ErrInvalid and
// changes nothing.
func ExampleStream_MapValues_refused() {
	b := streams.NewBuilder()
	s, _ := b.Stream([]string{"in"})
	_, err := s.MapValues(func(v []byte) ([]byte, error) { return v, nil }, streams.ValueSerde("xml"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, streams.ErrInvalid))
	_, err = s.Filter(func(_, _ []byte) (bool, error) { return true, nil }, streams.ValueSerde("string"))
	fmt.Println(err)
	// Output:
	// topology: map_values (value serde): serde "xml" is not known (known: bytes, string, json, long, integer, double, avro, json-schema, protobuf)
	// true
	// streams: Filter does not take option ValueSerde: invalid argument
}

// A table regrouped and counted: Kafka Streams' names and describe() text
// (TopologyTest#tableNamedMaterializedCountShouldPreserveTopologyStructure);
// the source's store exists because the grouping needs old values. A
// built-in that cannot remove a value is refused on a grouped table.
func ExampleBuilder_Table() {
	b := streams.NewBuilder()
	users, err := b.Table("input-topic", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	byRegion, err := users.GroupBy(func(user, region []byte) ([]byte, []byte, error) { return region, user, nil })
	must(err)
	_, err = byRegion.ReduceBuiltin(streams.Max)
	fmt.Println(err)
	counts, err := byRegion.Count(streams.Store("count-store"))
	must(err)
	text, err := b.Describe()
	must(err)
	fmt.Print(text)
	fmt.Println(users.Store(), counts.Store())
	// Output:
	// topology: reduce: built-in max cannot remove a value, so it cannot reduce a grouped table; use a host reducer with a subtractor
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])
	//       --> KTABLE-SOURCE-0000000002
	//     Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])
	//       --> KTABLE-SELECT-0000000003
	//       <-- KSTREAM-SOURCE-0000000001
	//     Processor: KTABLE-SELECT-0000000003 (stores: [])
	//       --> KSTREAM-SINK-0000000004
	//       <-- KTABLE-SOURCE-0000000002
	//     Sink: KSTREAM-SINK-0000000004 (topic: count-store-repartition)
	//       <-- KTABLE-SELECT-0000000003
	//
	//   Sub-topology: 1
	//     Source: KSTREAM-SOURCE-0000000005 (topics: [count-store-repartition])
	//       --> KTABLE-AGGREGATE-0000000006
	//     Processor: KTABLE-AGGREGATE-0000000006 (stores: [count-store])
	//       --> none
	//       <-- KSTREAM-SOURCE-0000000005
	//
	// input-topic-STATE-STORE-0000000000 count-store
}

// A grouped table's aggregations need a subtractor.
func ExampleGroupedTable_Aggregate_refused() {
	b := streams.NewBuilder()
	t, _ := b.Table("accounts", streams.ValueSerde(streams.Long))
	g, _ := t.GroupBy(func(k, v []byte) ([]byte, []byte, error) { return k, v, nil })
	zero := func() ([]byte, error) { return make([]byte, 8), nil }
	add := func(_, v, agg []byte) ([]byte, error) { return v, nil }
	_, err := g.Aggregate(zero, add, nil)
	fmt.Println(err)
	fmt.Println(errors.Is(err, streams.ErrInvalid))
	// Output:
	// topology: aggregate on a grouped table needs a subtractor: token 0 and no native function
	// true
}

// Final per-minute counts: a tumbling window closes once stream time passes
// its end plus grace, and Suppress forwards its count once, with the
// windowed key Kafka Streams' TimeWindowedSerializer writes (key, then the
// window start). The window of the last record is still open: no output.
func ExampleGroupedStream_WindowedBy() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "readings", "per-minute"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	readings, err := b.Stream([]string{"readings"}, streams.KeySerde(streams.String))
	must(err)
	grouped, err := readings.GroupByKey()
	must(err)
	windowed, err := grouped.WindowedBy(streams.TumblingWindows(time.Minute, 5*time.Second))
	must(err)
	counts, err := windowed.Count(streams.Store("readings-per-minute"))
	must(err)
	fmt.Println(counts.KeySerde())
	final, err := counts.Suppress(streams.UntilWindowCloses(streams.Unbounded()))
	must(err)
	changes, err := final.ToStream()
	must(err)
	must(changes.To("per-minute"))

	dir, err := os.MkdirTemp("", "streams-windows")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "per-minute",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("per-minute"))
	must(err)
	defer cl.Close()
	for _, s := range []int64{0, 10, 59, 66} { // 66 s: past the first minute's end + 5 s grace
		r := &kgo.Record{Topic: "readings", Key: []byte("sensor-1"), Value: []byte("x"), Timestamp: time.Unix(s, 0)}
		must(cl.ProduceSync(ctx, r).FirstErr())
	}
	fs := cl.PollFetches(ctx)
	must(fs.Err0())
	fs.EachRecord(func(r *kgo.Record) {
		n := len(r.Key) - 8
		start := int64(binary.BigEndian.Uint64(r.Key[n:]))
		fmt.Printf("%s [%d, %d) %d\n", r.Key[:n], start, start+60000, int64(binary.BigEndian.Uint64(r.Value)))
	})
	// Output:
	// windowed(string,60000)
	// sensor-1 [0, 60000) 3
}

// Rate-limiting a table's updates: at most one per key per 30 seconds of
// stream time, in a buffer of at most 10,000 keys that forwards its oldest
// early when full. A key keeps the time of its first held update; what
// comes out is its latest.
func ExampleUntilTimeLimit() {
	b := streams.NewBuilder()
	profiles, err := b.Table("profiles", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	throttled, err := profiles.Suppress(streams.UntilTimeLimit(30*time.Second, streams.MaxRecords(10_000)))
	must(err)
	changes, err := throttled.ToStream()
	must(err)
	must(changes.To("profiles-throttled"))

	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "profile-updates"})
	must(err)
	defer d.Close()
	must(d.PipeInput("profiles", []byte("ann"), []byte("v1"), streams.Timestamp(0)))
	must(d.PipeInput("profiles", []byte("ann"), []byte("v2"), streams.Timestamp(10_000))) // held: ann's first update was at 0
	must(d.PipeInput("profiles", []byte("bob"), []byte("v1"), streams.Timestamp(30_000))) // stream time 30 s: ann's latest goes
	out, err := d.ReadOutput("profiles-throttled")
	must(err)
	for _, r := range out {
		fmt.Printf("%s=%s @%d\n", r.Key, r.Value, r.Timestamp)
	}
	// Output:
	// ann=v2 @10000
}
