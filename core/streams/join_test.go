package streams_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A stream-table left join with a Go joiner: each order is joined with the
// price its table holds now; an order for an unknown item gets none.
func ExampleStream_LeftJoin() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "prices", "orders", "priced"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	prices, err := b.Table("prices", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	priced, err := orders.LeftJoin(prices, func(order, price []byte) ([]byte, error) {
		if price == nil {
			return fmt.Appendf(nil, "%s@none", order), nil
		}
		return fmt.Appendf(nil, "%s@%s", order, price), nil
	})
	must(err)
	must(priced.To("priced"))

	dir, err := os.MkdirTemp("", "streams-join")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "pricing",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("priced"))
	must(err)
	defer cl.Close()
	// The table's rows first, older than the orders.
	for _, r := range []*kgo.Record{
		{Topic: "prices", Key: []byte("apple"), Value: []byte("3"), Timestamp: time.UnixMilli(1)},
		{Topic: "orders", Key: []byte("apple"), Value: []byte("o1"), Timestamp: time.UnixMilli(10)},
		{Topic: "orders", Key: []byte("plum"), Value: []byte("o2"), Timestamp: time.UnixMilli(11)},
	} {
		must(cl.ProduceSync(ctx, r).FirstErr())
	}
	for n := 0; n < 2; {
		fs := cl.PollFetches(ctx)
		must(fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			fmt.Printf("%s %s\n", r.Key, r.Value)
			n++
		})
	}
	// Output:
	// apple o1@3
	// plum o2@none
}
