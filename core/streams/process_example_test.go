package streams_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

// counter counts records per key in store "counts" and, every 10 seconds
// of stream time, forwards each key's count and clears it.
type counter struct{ counts *streams.ProcessorStore }

func (c *counter) Init(ctx streams.ProcessorContext) error {
	store, err := ctx.StateStore("counts")
	if err != nil {
		return err
	}
	c.counts = store
	_, err = ctx.Schedule(10*time.Second, streams.StreamTime, func(ts int64) error {
		var keys [][]byte
		err := c.counts.All(func(k, v []byte) bool {
			keys = append(keys, k)
			return ctx.Forward(streams.Record{Key: k, Value: v, Timestamp: ts}) == nil
		})
		for _, k := range keys {
			if _, err := c.counts.Delete(k); err != nil {
				return err
			}
		}
		return err
	})
	return err
}

func (c *counter) Process(_ streams.ProcessorContext, r streams.Record) error {
	old, err := c.counts.Get(r.Key)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(string(old))
	return c.counts.Put(r.Key, []byte(strconv.Itoa(n+1)))
}

func (c *counter) Close() error { return nil }

// A processor with a state store and a stream-time punctuator (the
// Processor API), run by the test driver: the punctuator runs after the
// record that makes stream time reach its next multiple of 10 s.
func ExampleStream_Process() {
	b := streams.NewBuilder()
	must(b.AddStateStore(streams.KeyValueStoreBuilder("counts", streams.String, streams.String)))
	clicks, err := b.Stream([]string{"clicks"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	counts, err := clicks.Process(func() streams.Processor { return &counter{} }, streams.Stores("counts"))
	must(err)
	must(counts.To("click-counts"))
	text, err := b.Describe()
	must(err)
	fmt.Print(text)

	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "clicks"})
	must(err)
	defer d.Close()
	for i, user := range []string{"ann", "bob", "ann", "ann", "bob"} {
		// 1 s, 4 s, ... 13 s: stream time passes 0 s (the first record)
		// and 10 s (the fourth).
		must(d.PipeInput("clicks", []byte(user), []byte("click"), streams.Timestamp(int64(1000+3000*i))))
	}
	out, err := d.ReadOutput("click-counts")
	must(err)
	for _, r := range out {
		fmt.Printf("%s: %s clicks (at %d ms)\n", r.Key, r.Value, r.Timestamp)
	}
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
	//       --> KSTREAM-PROCESSOR-0000000001
	//     Processor: KSTREAM-PROCESSOR-0000000001 (stores: [counts])
	//       --> KSTREAM-SINK-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Sink: KSTREAM-SINK-0000000002 (topic: click-counts)
	//       <-- KSTREAM-PROCESSOR-0000000001
	//
	// ann: 1 clicks (at 1000 ms)
	// ann: 2 clicks (at 10000 ms)
	// bob: 1 clicks (at 10000 ms)
}
