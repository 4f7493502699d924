package streams_test

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/streams"
)

// extractorDriver is a test driver of in -> out, the source taking opts,
// b's topology and props its configuration; closed when the test ends.
func extractorDriver(t *testing.T, b *streams.Builder, props map[string]string, opts ...streams.Option) *streams.TestDriver {
	t.Helper()
	in, err := b.Stream([]string{"in"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.To("out"); err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(b, streams.Config{Properties: props, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// outTimestamps reads out and answers its records' timestamps.
func outTimestamps(t *testing.T, d *streams.TestDriver) []int64 {
	t.Helper()
	out, err := d.ReadOutput("out")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range out {
		got = append(got, r.Timestamp)
	}
	return got
}

// A Go TimestampExtractor sets each record's timestamp from its value
// (outputs carry it), sees its partition's time, and a negative answer
// drops the record (dropped-records); an extractor's error stops the
// application naming the node and the record.
func TestTimestampExtractor(t *testing.T) {
	var seen []int64 // partition times, in order
	extract := func(r streams.ExtractorRecord, partitionTime int64) (int64, error) {
		seen = append(seen, partitionTime)
		if string(r.Value) == "boom" {
			return 0, errors.New("cannot read a timestamp from boom")
		}
		if r.Topic != "in" || r.Partition != 0 {
			t.Errorf("extractor record at %s/%d", r.Topic, r.Partition)
		}
		if len(r.Value) != 8 {
			return -1, nil
		}
		return int64(binary.BigEndian.Uint64(r.Value)), nil
	}
	d := extractorDriver(t, streams.NewBuilder(), nil, streams.KeySerde(streams.String), streams.ValueSerde(streams.Long), streams.TimestampExtractor(extract))
	for _, v := range [][]byte{long(500), []byte("x"), long(200), long(900)} {
		pipe(t, d, "in", "k", v, 7)
	}
	if got, want := outTimestamps(t, d), []int64{500, 200, 900}; !slices.Equal(got, want) {
		t.Errorf("output timestamps %v, want %v", got, want)
	}
	if want := []int64{-1, 500, 500, 500}; !slices.Equal(seen, want) {
		t.Errorf("partition times %v, want %v", seen, want)
	}
	if n := d.DroppedRecords(); n != 1 {
		t.Errorf("dropped records %d, want 1 (the negative timestamp)", n)
	}
	err := d.PipeInput("in", []byte("k"), []byte("boom"))
	if err == nil || !strings.Contains(err.Error(), "KSTREAM-SOURCE-0000000000") || !strings.Contains(err.Error(), "in/0@4") || !strings.Contains(err.Error(), "cannot read a timestamp from boom") {
		t.Errorf("a failing extractor: %v", err)
	}
}

// The built-in extractors by Kafka Streams' class names, on a source
// (BuiltinTimestampExtractor) or for every source that gives none
// (default.timestamp.extractor: NewBuilder's option, which Properties must
// repeat): valid timestamps are kept, out of order too; a negative one is
// dropped by LogAndSkipOnInvalidTimestamp and stamped with the partition's
// time by UsePartitionTimeOnInvalidTimestamp.
func TestBuiltinTimestampExtractors(t *testing.T) {
	for _, c := range []struct {
		what    string
		builder []streams.Option // NewBuilder's
		source  []streams.Option // the Stream's
		props   map[string]string
		in      []int64 // the records' own timestamps
		want    []int64 // the outputs'
		dropped int64
	}{
		{what: "UsePartitionTimeOnInvalidTimestamp, valid", source: []streams.Option{streams.BuiltinTimestampExtractor(streams.UsePartitionTimeOnInvalidTimestamp)},
			in: []int64{300, 100}, want: []int64{300, 100}},
		{what: "LogAndSkipOnInvalidTimestamp", source: []streams.Option{streams.BuiltinTimestampExtractor(streams.LogAndSkipOnInvalidTimestamp)},
			in: []int64{100, -1, 50}, want: []int64{100, 50}, dropped: 1},
		{what: "UsePartitionTimeOnInvalidTimestamp", source: []streams.Option{streams.BuiltinTimestampExtractor(streams.UsePartitionTimeOnInvalidTimestamp)},
			in: []int64{100, -1, 50}, want: []int64{100, 100, 50}},
		{what: "default LogAndSkipOnInvalidTimestamp", builder: []streams.Option{streams.BuiltinTimestampExtractor(streams.LogAndSkipOnInvalidTimestamp)},
			props: map[string]string{"default.timestamp.extractor": "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp"},
			in:    []int64{100, -1}, want: []int64{100}, dropped: 1},
	} {
		t.Run(c.what, func(t *testing.T) {
			d := extractorDriver(t, streams.NewBuilder(c.builder...), c.props, c.source...)
			for _, ts := range c.in {
				if err := d.PipeInput("in", nil, []byte("v"), streams.Timestamp(ts)); err != nil {
					t.Fatal(err)
				}
			}
			if got := outTimestamps(t, d); !slices.Equal(got, c.want) || d.DroppedRecords() != c.dropped {
				t.Errorf("timestamps %v, dropped %d; want %v, %d", got, d.DroppedRecords(), c.want, c.dropped)
			}
		})
	}
}

// An extractor name that is not a built-in one is refused naming it, on a
// source and in default.timestamp.extractor.
func TestBuiltinTimestampExtractorRefused(t *testing.T) {
	if _, err := streams.NewBuilder().Stream([]string{"in"}, streams.BuiltinTimestampExtractor("EventTime")); err == nil || !strings.Contains(err.Error(), `"EventTime" is not a built-in one`) {
		t.Errorf("an unknown built-in: %v", err)
	}
	b := streams.NewBuilder(streams.BuiltinTimestampExtractor(streams.LogAndSkipOnInvalidTimestamp))
	in, err := b.Stream([]string{"in"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.To("out"); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewTestDriver(b, streams.Config{Properties: map[string]string{"default.timestamp.extractor": "Clock"}}); err == nil || !strings.Contains(err.Error(), "default.timestamp.extractor: want one of Kafka Streams' built-in extractors") {
		t.Errorf("an unknown default.timestamp.extractor: %v", err)
	}
}
