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

// A table-table left join with a Go joiner: each customer's profile is
// updated whenever the customer or their address changes; a customer with
// no address keeps a profile, and deleting the customer deletes it
// (KTableKTableLeftJoin, and KTableKTableRightJoin on the address side).
func ExampleTable_LeftJoin() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "customers", "addresses", "profiles"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	customers, err := b.Table("customers", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	addresses, err := b.Table("addresses", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	profiles, err := customers.LeftJoin(addresses, func(name, address []byte) ([]byte, error) {
		if address == nil {
			return fmt.Appendf(nil, "%s@nowhere", name), nil
		}
		return fmt.Appendf(nil, "%s@%s", name, address), nil
	}, streams.Store("profiles"))
	must(err)
	changes, err := profiles.ToStream()
	must(err)
	must(changes.To("profiles"))

	dir, err := os.MkdirTemp("", "streams-table-join")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "profiles",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("profiles"))
	must(err)
	defer cl.Close()
	// One change at a time, each read back before the next.
	for _, r := range []*kgo.Record{
		{Topic: "customers", Key: []byte("c1"), Value: []byte("alice")},
		{Topic: "addresses", Key: []byte("c1"), Value: []byte("paris")},
		{Topic: "addresses", Key: []byte("c1")}, // address deleted
		{Topic: "customers", Key: []byte("c1")}, // customer deleted
	} {
		must(cl.ProduceSync(ctx, r).FirstErr())
		for n := 0; n < 1; {
			fs := cl.PollFetches(ctx)
			must(fs.Err0())
			fs.EachRecord(func(r *kgo.Record) {
				if r.Value == nil {
					fmt.Printf("%s deleted\n", r.Key)
				} else {
					fmt.Printf("%s %s\n", r.Key, r.Value)
				}
				n++
			})
		}
	}
	// Output:
	// c1 alice@nowhere
	// c1 alice@paris
	// c1 alice@nowhere
	// c1 deleted
}
