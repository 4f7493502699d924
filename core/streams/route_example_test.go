package streams_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"

	"github.com/polystreams/polystreams/core/streams"
)

// ToExtractor sends each order to the topic its region names (Kafka
// Streams' TopicNameExtractor), and Partitioner chooses its partition
// (Produced.streamPartitioner): here by the customer's name length; ok
// false would leave it to Kafka's default partitioner.
func ExampleStream_ToExtractor() {
	b := streams.NewBuilder()
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	byRegion := func(_, value []byte, _ streams.RecordContext) (string, error) {
		region, _, _ := bytes.Cut(value, []byte(":"))
		return "orders-" + string(region), nil
	}
	byCustomer := func(_ string, key, _ []byte, n int) ([]int, bool, error) {
		return streams.Partition(len(key) % n)
	}
	must(orders.ToExtractor(byRegion, "byRegion", streams.Partitioner(byCustomer)))

	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	must(d.PipeInput("orders", []byte("ann"), []byte("eu:book")))
	must(d.PipeInput("orders", []byte("bob"), []byte("us:pen")))
	for _, topic := range []string{"orders-eu", "orders-us"} {
		out, err := d.ReadOutput(topic)
		must(err)
		for _, r := range out {
			fmt.Printf("%s: %s=%s\n", topic, r.Key, r.Value)
		}
	}
	// Output:
	// orders-eu: ann=eu:book
	// orders-us: bob=us:pen
}
