package streams_test

import (
	"fmt"
	"strconv"

	"github.com/polystreams/polystreams/core/streams"
)

// versioner tags each value of a key with how many values the key has had,
// counted in store "versions"; a tombstone is tagged too (Kafka Streams
// transforms it: the result is not null).
type versioner struct{ versions *streams.ProcessorStore }

func (v *versioner) Init(ctx streams.ProcessorContext) error {
	store, err := ctx.StateStore("versions")
	v.versions = store
	return err
}

func (v *versioner) Transform(key, value []byte) ([]byte, error) {
	old, err := v.versions.Get(key)
	if err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(string(old))
	if err := v.versions.Put(key, []byte(strconv.Itoa(n+1))); err != nil {
		return nil, err
	}
	if value == nil {
		return []byte(fmt.Sprintf("%s deleted (v%d)", key, n+1)), nil
	}
	return []byte(fmt.Sprintf("%s (v%d)", value, n+1)), nil
}

func (v *versioner) Close() error { return nil }

// A table's values transformed with state (KTable.transformValues), the
// result materialized in a queryable store.
func ExampleTable_TransformValues() {
	b := streams.NewBuilder()
	must(b.AddStateStore(streams.KeyValueStoreBuilder("versions", streams.String, streams.String)))
	users, err := b.Table("users", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	tagged, err := users.TransformValues(func() streams.ValueTransformerWithKey { return &versioner{} },
		streams.Stores("versions"), streams.Store("tagged"))
	must(err)
	changes, err := tagged.ToStream()
	must(err)
	must(changes.To("tagged-users"))
	text, err := b.Describe()
	must(err)
	fmt.Print(text)

	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "tags"})
	must(err)
	defer d.Close()
	must(d.PipeInput("users", []byte("ann"), []byte("paris"), streams.Timestamp(1)))
	must(d.PipeInput("users", []byte("ann"), []byte("rome"), streams.Timestamp(2)))
	must(d.PipeInput("users", []byte("ann"), nil, streams.Timestamp(3)))
	out, err := d.ReadOutput("tagged-users")
	must(err)
	for _, r := range out {
		fmt.Printf("%s: %s\n", r.Key, r.Value)
	}
	store, err := d.GetStore("tagged")
	must(err)
	v, err := store.Get([]byte("ann"))
	must(err)
	fmt.Printf("tagged[ann] = %s\n", v)
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000001 (topics: [users])
	//       --> KTABLE-SOURCE-0000000002
	//     Processor: KTABLE-SOURCE-0000000002 (stores: [])
	//       --> KTABLE-TRANSFORMVALUES-0000000003
	//       <-- KSTREAM-SOURCE-0000000001
	//     Processor: KTABLE-TRANSFORMVALUES-0000000003 (stores: [tagged, versions])
	//       --> KTABLE-TOSTREAM-0000000004
	//       <-- KTABLE-SOURCE-0000000002
	//     Processor: KTABLE-TOSTREAM-0000000004 (stores: [])
	//       --> KSTREAM-SINK-0000000005
	//       <-- KTABLE-TRANSFORMVALUES-0000000003
	//     Sink: KSTREAM-SINK-0000000005 (topic: tagged-users)
	//       <-- KTABLE-TOSTREAM-0000000004
	//
	// ann: paris (v1)
	// ann: rome (v2)
	// ann: ann deleted (v3)
	// tagged[ann] = ann deleted (v3)
}
