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

// router sends each record to the child its value names.
type router struct{}

func (router) Init(streams.ProcessorContext) error { return nil }
func (router) Close() error                        { return nil }
func (router) Process(ctx streams.ProcessorContext, r streams.Record) error {
	return ctx.ForwardTo(string(r.Value), r)
}

// A topology built without the DSL (Kafka Streams' Topology): a source, a
// processor routing each record to a named child, two sinks.
func ExampleTopology() {
	t := streams.NewTopology()
	must(t.AddSource("orders", streams.String, streams.String, "orders"))
	must(t.AddProcessor("route", func() streams.Processor { return router{} }, "orders"))
	must(t.AddSink("eu", "orders-eu", "route"))
	must(t.AddSink("us", "orders-us", "route"))
	text, err := t.Describe()
	must(err)
	fmt.Print(text)

	d, err := streams.NewTestDriver(&t.Builder, streams.Config{ApplicationID: "orders"})
	must(err)
	defer d.Close()
	must(d.PipeInput("orders", []byte("o1"), []byte("eu")))
	must(d.PipeInput("orders", []byte("o2"), []byte("us")))
	must(d.PipeInput("orders", []byte("o3"), []byte("eu")))
	for _, topic := range []string{"orders-eu", "orders-us"} {
		out, err := d.ReadOutput(topic)
		must(err)
		for _, r := range out {
			fmt.Printf("%s: %s\n", topic, r.Key)
		}
	}
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: orders (topics: [orders])
	//       --> route
	//     Processor: route (stores: [])
	//       --> eu, us
	//       <-- orders
	//     Sink: eu (topic: orders-eu)
	//       <-- route
	//     Sink: us (topic: orders-us)
	//       <-- route
	//
	// orders-eu: o1
	// orders-eu: o3
	// orders-us: o2
}

// dedup forwards a record unless its key had one in the last minute,
// remembered in window store "seen" (one window per record time).
type dedup struct{ seen *streams.ProcessorStore }

func (d *dedup) Init(ctx streams.ProcessorContext) error {
	store, err := ctx.StateStore("seen")
	d.seen = store
	return err
}

func (d *dedup) Process(ctx streams.ProcessorContext, r streams.Record) error {
	dup := false
	err := d.seen.WindowFetch(r.Key, r.Timestamp-59_999, r.Timestamp, func(int64, []byte) bool { dup = true; return false })
	if err != nil || dup {
		return err
	}
	if err := d.seen.WindowPut(r.Key, r.Value, r.Timestamp); err != nil {
		return err
	}
	return ctx.Forward(r)
}

func (d *dedup) Close() error { return nil }

// A processor deduplicating over a window store: a key seen in the last
// minute is dropped, and windows older than the store's retention are
// forgotten.
func ExampleProcessorStore_WindowFetch() {
	b := streams.NewBuilder()
	must(b.AddStateStore(streams.WindowStoreBuilder("seen", 2*time.Minute, time.Minute, streams.String, streams.String)))
	events, err := b.Stream([]string{"events"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	unique, err := events.Process(func() streams.Processor { return &dedup{} }, streams.Stores("seen"))
	must(err)
	must(unique.To("unique"))

	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "dedup"})
	must(err)
	defer d.Close()
	for _, e := range []struct {
		id string
		at int64
	}{{"e1", 0}, {"e1", 30_000}, {"e2", 40_000}, {"e1", 90_000}, {"e1", 100_000}} {
		must(d.PipeInput("events", []byte(e.id), []byte("x"), streams.Timestamp(e.at)))
	}
	out, err := d.ReadOutput("unique")
	must(err)
	for _, r := range out {
		fmt.Printf("%s at %d ms\n", r.Key, r.Timestamp)
	}
	// Output:
	// e1 at 0 ms
	// e2 at 40000 ms
	// e1 at 90000 ms
}

// prices keeps each product's price history in a versioned store and
// forwards what each update did.
type prices struct{ history *streams.ProcessorStore }

func (p *prices) Init(ctx streams.ProcessorContext) error {
	s, err := ctx.StateStore("price-history")
	p.history = s
	return err
}

func (p *prices) Process(ctx streams.ProcessorContext, r streams.Record) error {
	validTo, err := p.history.VersionedPut(r.Key, r.Value, r.Timestamp)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("valid until %d", validTo)
	switch validTo {
	case streams.PutReturnCodeValidToUndefined:
		what = "latest"
	case streams.PutReturnCodeNotPut:
		what = "too old, dropped"
	}
	latest, _, err := p.history.VersionedGet(r.Key)
	if err != nil {
		return err
	}
	return ctx.Forward(r.WithValue(fmt.Appendf(nil, "%s at %d: %s (latest %s)", r.Value, r.Timestamp, what, latest.Value)))
}

func (p *prices) Close() error { return nil }

// A processor over a versioned store (Stores.persistentVersionedKeyValueStore):
// an update arriving late becomes a version in the past, one older than
// the history retention is dropped, and reads as of a time find the
// version valid then.
func ExampleProcessorStore_VersionedPut() {
	b := streams.NewBuilder()
	must(b.AddStateStore(streams.VersionedKeyValueStoreBuilder("price-history", time.Minute, streams.String, streams.String)))
	updates, err := b.Stream([]string{"price-updates"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	applied, err := updates.Process(func() streams.Processor { return &prices{} }, streams.Stores("price-history"))
	must(err)
	must(applied.To("applied"))

	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "prices"})
	must(err)
	defer d.Close()
	for _, u := range []struct {
		price string
		at    int64
	}{{"10", 0}, {"12", 120_000}, {"11", 60_000}, {"9", 30_000}} {
		must(d.PipeInput("price-updates", []byte("apple"), []byte(u.price), streams.Timestamp(u.at)))
	}
	out, err := d.ReadOutput("applied")
	must(err)
	for _, r := range out {
		fmt.Println(string(r.Value))
	}
	// Output:
	// 10 at 0: latest (latest 10)
	// 12 at 120000: latest (latest 12)
	// 11 at 60000: valid until 120000 (latest 12)
	// 9 at 30000: too old, dropped (latest 12)
}
