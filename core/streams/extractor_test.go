package streams_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/streams"
)

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
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.Long), streams.TimestampExtractor(extract))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.To("out"); err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(b, streams.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	long := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	for _, v := range [][]byte{long(500), []byte("x"), long(200), long(900)} {
		if err := d.PipeInput("in", []byte("k"), v, streams.Timestamp(7)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := d.ReadOutput("out")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range out {
		got = append(got, r.Timestamp)
	}
	if want := []int64{500, 200, 900}; !slices.Equal(got, want) {
		t.Errorf("output timestamps %v, want %v", got, want)
	}
	if want := []int64{-1, 500, 500, 500}; !slices.Equal(seen, want) {
		t.Errorf("partition times %v, want %v", seen, want)
	}
	if n := d.DroppedRecords(); n != 1 {
		t.Errorf("dropped records %d, want 1 (the negative timestamp)", n)
	}
	err = d.PipeInput("in", []byte("k"), []byte("boom"))
	if err == nil || !strings.Contains(err.Error(), "KSTREAM-SOURCE-0000000000") || !strings.Contains(err.Error(), "in/0@4") || !strings.Contains(err.Error(), "cannot read a timestamp from boom") {
		t.Errorf("a failing extractor: %v", err)
	}
}

// The built-in extractors by Kafka Streams' class names; another name is
// refused naming it.
func TestBuiltinTimestampExtractor(t *testing.T) {
	if _, err := streams.NewBuilder().Stream([]string{"in"}, streams.BuiltinTimestampExtractor("EventTime")); err == nil || !strings.Contains(err.Error(), `"EventTime" is not a built-in one`) {
		t.Errorf("an unknown built-in: %v", err)
	}
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.BuiltinTimestampExtractor(streams.UsePartitionTimeOnInvalidTimestamp))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.To("out"); err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(b, streams.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, ts := range []int64{300, 100} {
		if err := d.PipeInput("in", nil, []byte("v"), streams.Timestamp(ts)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := d.ReadOutput("out")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Timestamp != 300 || out[1].Timestamp != 100 {
		t.Errorf("UsePartitionTimeOnInvalidTimestamp kept valid timestamps: %+v", out)
	}
}

// A record whose own timestamp is negative: LogAndSkipOnInvalidTimestamp
// drops it, UsePartitionTimeOnInvalidTimestamp stamps it with the
// partition's time.
func TestBuiltinExtractorsOnNegativeTimestamps(t *testing.T) {
	for _, c := range []struct {
		name    string
		want    []int64
		dropped int64
	}{
		{streams.LogAndSkipOnInvalidTimestamp, []int64{100, 50}, 1},
		{streams.UsePartitionTimeOnInvalidTimestamp, []int64{100, 100, 50}, 0},
	} {
		b := streams.NewBuilder()
		in, err := b.Stream([]string{"in"}, streams.BuiltinTimestampExtractor(c.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := in.To("out"); err != nil {
			t.Fatal(err)
		}
		d, err := streams.NewTestDriver(b, streams.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range []int64{100, -1, 50} {
			if err := d.PipeInput("in", nil, []byte("v"), streams.Timestamp(ts)); err != nil {
				t.Fatal(err)
			}
		}
		out, err := d.ReadOutput("out")
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range out {
			got = append(got, r.Timestamp)
		}
		if !slices.Equal(got, c.want) || d.DroppedRecords() != c.dropped {
			t.Errorf("%s: timestamps %v, dropped %d; want %v, %d", c.name, got, d.DroppedRecords(), c.want, c.dropped)
		}
		d.Close()
	}
}

// default.timestamp.extractor: NewBuilder's BuiltinTimestampExtractor
// option stamps every Stream and Table that gives none; in Properties it
// must be the Builder's, and an unknown class name is refused.
func TestDefaultTimestampExtractor(t *testing.T) {
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
	d, err := streams.NewTestDriver(b, streams.Config{Properties: map[string]string{"default.timestamp.extractor": "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, ts := range []int64{100, -1} {
		if err := d.PipeInput("in", nil, []byte("v"), streams.Timestamp(ts)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := d.ReadOutput("out")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || d.DroppedRecords() != 1 {
		t.Errorf("default LogAndSkipOnInvalidTimestamp: %d outputs, %d dropped; want 1, 1", len(out), d.DroppedRecords())
	}
}
