package streams_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A foreign-key join of tables that are not co-partitioned (orders: 3
// partitions, customers: 5): each order is joined with the customer its
// value names, and joined again when that customer changes.
func ExampleTable_ForeignKeyJoin() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders", "enriched"), kfake.SeedTopics(5, "customers"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	orders, err := b.Table("orders", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	customers, err := b.Table("customers", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	// An order's value is "<customer>/<item>".
	customerOf := func(order []byte) ([]byte, error) {
		c, _, _ := bytes.Cut(order, []byte("/"))
		return c, nil
	}
	enriched, err := orders.ForeignKeyJoin(customers, customerOf, func(order, customer []byte) ([]byte, error) {
		return fmt.Appendf(nil, "%s for %s", order, customer), nil
	})
	must(err)
	out, err := enriched.ToStream()
	must(err)
	must(out.To("enriched"))

	dir, err := os.MkdirTemp("", "streams-fkjoin")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "enrich",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100", "statestore.cache.max.bytes": "0"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("enriched"))
	must(err)
	defer cl.Close()
	produce := func(topic, key, value string) {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}).FirstErr())
	}
	last := map[string]string{}
	await := func(want map[string]string) {
		for !maps.Equal(last, want) {
			fs := cl.PollFetches(ctx)
			must(fs.Err0())
			fs.EachRecord(func(r *kgo.Record) { last[string(r.Key)] = string(r.Value) })
		}
		for _, k := range slices.Sorted(maps.Keys(last)) {
			fmt.Println(k, last[k])
		}
	}
	produce("customers", "alice", "Alice")
	produce("customers", "bob", "Bob")
	produce("orders", "o1", "alice/apples")
	produce("orders", "o2", "bob/pears")
	await(map[string]string{"o1": "alice/apples for Alice", "o2": "bob/pears for Bob"})
	produce("customers", "bob", "Robert")
	await(map[string]string{"o1": "alice/apples for Alice", "o2": "bob/pears for Robert"})
	// Output:
	// o1 alice/apples for Alice
	// o2 bob/pears for Bob
	// o1 alice/apples for Alice
	// o2 bob/pears for Robert
}
