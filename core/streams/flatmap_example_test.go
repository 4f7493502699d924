package streams_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"

	"github.com/polystreams/polystreams/core/streams"
)

// FlatMap re-keys: each word of a line becomes a record keyed by the word,
// so the count after it repartitions (KSTREAM-FLATMAP, then a repartition
// topic). MapValuesWithKey reads the key without changing it, and
// ToStreamKeyed keys a table's changes anew (toStream then selectKey).
func ExampleStream_FlatMap() {
	b := streams.NewBuilder()
	lines, err := b.Stream([]string{"lines"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	words, err := lines.FlatMap(func(user, line []byte) ([]streams.KeyValue, error) {
		var out []streams.KeyValue
		for _, w := range bytes.Fields(line) {
			out = append(out, streams.KeyValue{Key: w, Value: user})
		}
		return out, nil
	})
	must(err)
	tagged, err := words.MapValuesWithKey(func(word, user []byte) ([]byte, error) {
		return fmt.Appendf(nil, "%s by %s", word, user), nil
	})
	must(err)
	must(tagged.To("tagged"))
	grouped, err := words.GroupByKey()
	must(err)
	counts, err := grouped.Count()
	must(err)
	upper, err := counts.ToStreamKeyed(func(word, _ []byte) ([]byte, error) { return bytes.ToUpper(word), nil })
	must(err)
	must(upper.To("counts", streams.ValueSerde(streams.Long)))

	d, err := streams.NewTestDriver(b, streams.Config{
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Properties: map[string]string{"statestore.cache.max.bytes": "0"},
	})
	must(err)
	defer d.Close()
	must(d.PipeInput("lines", []byte("ann"), []byte("to be")))
	must(d.PipeInput("lines", []byte("bob"), []byte("be")))
	tags, err := d.ReadOutput("tagged")
	must(err)
	for _, r := range tags {
		fmt.Printf("%s: %s\n", r.Key, r.Value)
	}
	out, err := d.ReadOutput("counts")
	must(err)
	for _, r := range out {
		fmt.Printf("%s=%d\n", r.Key, int64(binary.BigEndian.Uint64(r.Value)))
	}
	// Output:
	// to: to by ann
	// be: be by ann
	// be: be by bob
	// TO=1
	// BE=1
	// BE=2
}

// Print writes "[label]: key, value" per record (KStream.print); without a
// label, the label is the name of the node the stream comes from.
func ExampleStream_Print() {
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"clicks"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.Long))
	must(err)
	must(in.Print(streams.Printed{}))
	must(in.Print(streams.Printed{Label: "clicks"}, streams.Name("show")))
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	must(d.PipeInput("clicks", []byte("ann"), binary.BigEndian.AppendUint64(nil, 3)))
	must(d.PipeInput("clicks", nil, nil))
	// Output:
	// [KSTREAM-SOURCE-0000000000]: ann, 3
	// [clicks]: ann, 3
	// [KSTREAM-SOURCE-0000000000]: null, null
	// [clicks]: null, null
}
