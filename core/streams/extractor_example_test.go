package streams_test

import (
	"encoding/json"
	"fmt"

	"github.com/polystreams/polystreams/core/streams"
)

// A TimestampExtractor reading each order's event time from its value; an
// order without one is dropped (a negative timestamp).
func ExampleTimestampExtractor() {
	eventTime := func(r streams.ExtractorRecord, _ int64) (int64, error) {
		var order struct{ At *int64 }
		if err := json.Unmarshal(r.Value, &order); err != nil || order.At == nil {
			return -1, nil
		}
		return *order.At, nil
	}
	b := streams.NewBuilder()
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.JSON), streams.TimestampExtractor(eventTime))
	must(err)
	must(orders.To("stamped"))
	d, err := streams.NewTestDriver(b, streams.Config{})
	must(err)
	defer d.Close()
	must(d.PipeInput("orders", []byte("o1"), []byte(`{"at":1700000000000}`), streams.Timestamp(5)))
	must(d.PipeInput("orders", []byte("o2"), []byte(`{"id":2}`), streams.Timestamp(6)))
	out, err := d.ReadOutput("stamped")
	must(err)
	for _, r := range out {
		fmt.Println(string(r.Key), r.Timestamp)
	}
	fmt.Println("dropped:", d.DroppedRecords())
	// Output:
	// o1 1700000000000
	// dropped: 1
}
