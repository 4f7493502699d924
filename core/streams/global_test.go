package streams_test

import (
	"bytes"
	"context"
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

// A stream-global-table left join with Go functions: each order ("<item>
// x<n>") is joined with the price of its item, which the key mapper takes
// from the order's value. The prices topic has 3 partitions and the orders
// 1: a global table needs no co-partitioning. Its store is restored before
// the first order is processed.
func ExampleStream_LeftJoinGlobal() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "priced"), kfake.SeedTopics(3, "prices"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("priced"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The prices first, one per partition: they are restored at start.
	for p, item := range []string{"apple", "pear", "plum"} {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "prices", Partition: int32(p), Key: []byte(item), Value: fmt.Appendf(nil, "%d", p+1)}).FirstErr())
	}

	b := streams.NewBuilder()
	prices, err := b.GlobalTable("prices", streams.KeySerde(streams.String), streams.ValueSerde(streams.String), streams.Store("prices"))
	must(err)
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	item := func(_, order []byte) ([]byte, error) { return bytes.Fields(order)[0], nil }
	priced, err := orders.LeftJoinGlobal(prices, item, func(order, price []byte) ([]byte, error) {
		if price == nil {
			return fmt.Appendf(nil, "%s@none", order), nil
		}
		return fmt.Appendf(nil, "%s@%s", order, price), nil
	})
	must(err)
	must(priced.To("priced"))
	d, err := b.Describe()
	must(err)
	fmt.Print(d)

	dir, err := os.MkdirTemp("", "streams-global")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "global-pricing",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	must(app.Start(ctx))
	defer app.Stop(ctx)

	for i, o := range []string{"pear x2", "kiwi x1", "apple x5", "plum x1"} {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "o%d", i), Value: []byte(o)}).FirstErr())
	}
	var out []string
	for len(out) < 4 {
		fs := cl.PollFetches(ctx)
		must(fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%s %s", r.Key, r.Value)) })
	}
	sort.Strings(out)
	for _, o := range out {
		fmt.Println(o)
	}
	// Output:
	// Topologies:
	//    Sub-topology: 0 for global store (will not generate tasks)
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [prices])
	//       --> KTABLE-SOURCE-0000000001
	//     Processor: KTABLE-SOURCE-0000000001 (stores: [prices])
	//       --> none
	//       <-- KSTREAM-SOURCE-0000000000
	//   Sub-topology: 1
	//     Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
	//       --> KSTREAM-LEFTJOIN-0000000003
	//     Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])
	//       --> KSTREAM-SINK-0000000004
	//       <-- KSTREAM-SOURCE-0000000002
	//     Sink: KSTREAM-SINK-0000000004 (topic: priced)
	//       <-- KSTREAM-LEFTJOIN-0000000003
	//
	// o0 pear x2@2
	// o1 kiwi x1@none
	// o2 apple x5@1
	// o3 plum x1@3
}
