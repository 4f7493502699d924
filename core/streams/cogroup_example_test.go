package streams_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/polystreams/polystreams/core/streams"
)

// Cogroup aggregates several grouped streams into one table, each with its
// own aggregator (KIP-150): clicks count one, orders add their amount, into
// one aggregate per customer in one store. The table forwards one update
// per record.
func ExampleGroupedStream_Cogroup() {
	b := streams.NewBuilder()
	clicks, err := b.Stream([]string{"clicks"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.Long))
	must(err)
	byCustomer, err := clicks.GroupByKey()
	must(err)
	ordersByCustomer, err := orders.GroupByKey()
	must(err)
	// The aggregate is 16 bytes: clicks, then the amount spent.
	add := func(agg []byte, clicks, spent int64) []byte {
		out := make([]byte, 16)
		binary.BigEndian.PutUint64(out, uint64(int64(binary.BigEndian.Uint64(agg))+clicks))
		binary.BigEndian.PutUint64(out[8:], uint64(int64(binary.BigEndian.Uint64(agg[8:]))+spent))
		return out
	}
	cogrouped, err := byCustomer.Cogroup(func(_, _, agg []byte) ([]byte, error) { return add(agg, 1, 0), nil })
	must(err)
	cogrouped, err = cogrouped.Cogroup(ordersByCustomer, func(_, amount, agg []byte) ([]byte, error) {
		return add(agg, 0, int64(binary.BigEndian.Uint64(amount))), nil
	})
	must(err)
	activity, err := cogrouped.Aggregate(func() ([]byte, error) { return make([]byte, 16), nil },
		streams.Store("activity"), streams.StoreSerdes(streams.String, streams.Bytes), streams.Name("activity"))
	must(err)
	out, err := activity.ToStream()
	must(err)
	must(out.To("activity"))

	text, err := b.Describe()
	must(err)
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Processor: activity") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	must(d.PipeInput("clicks", []byte("ann"), []byte("/home")))
	must(d.PipeInput("orders", []byte("ann"), long(30)))
	must(d.PipeInput("clicks", []byte("bob"), []byte("/cart")))
	recs, err := d.ReadOutput("activity")
	must(err)
	for _, r := range recs {
		fmt.Printf("%s: %d clicks, spent %d\n", r.Key, binary.BigEndian.Uint64(r.Value), binary.BigEndian.Uint64(r.Value[8:]))
	}
	// Output:
	// Processor: activity-cogroup-agg-0 (stores: [activity])
	// Processor: activity-cogroup-agg-1 (stores: [activity])
	// Processor: activity-cogroup-merge (stores: [])
	// ann: 1 clicks, spent 0
	// ann: 1 clicks, spent 30
	// bob: 1 clicks, spent 0
}
