package crossing

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

func testRecs() []rec {
	in := func(off int64) *kgo.Record { return &kgo.Record{Topic: "t", Partition: 3, Offset: off} }
	return []rec{
		{key: []byte("k1"), value: []byte("a b"), ts: 10, in: in(100)},
		{key: nil, value: nil, ts: 11, in: in(101)},
		{key: []byte(""), value: []byte("c"), ts: 12, in: in(102)},
	}
}

func TestEncodeBundleIsColumnar(t *testing.T) {
	s := &step{node: &topology.Node{Name: "N"}, inKey: "string", inValue: "string", outKey: "string", outValue: "json"}
	b := encodeBundle(s, testRecs())
	if got, want := b.KeyLengths, []int32{2, -1, 0}; !equal(got, want) {
		t.Errorf("key lengths %v, want %v", got, want)
	}
	if got, want := b.ValueLengths, []int32{3, -1, 1}; !equal(got, want) {
		t.Errorf("value lengths %v, want %v", got, want)
	}
	if string(b.Keys) != "k1" || string(b.Values) != "a bc" {
		t.Errorf("columns %q %q", b.Keys, b.Values)
	}
	if !equal(b.Offsets, []int64{100, 101, 102}) || !equal(b.Timestamps, []int64{10, 11, 12}) {
		t.Errorf("offsets %v timestamps %v", b.Offsets, b.Timestamps)
	}
	if b.OutputValueSerde != "json" || b.KeySerde != "string" {
		t.Errorf("serdes %q %q", b.KeySerde, b.OutputValueSerde)
	}
}

func TestDecodeResultOutcomesPerRecord(t *testing.T) {
	s := &step{node: &topology.Node{Name: "N"}}
	// record 0 -> two outputs, record 1 -> none (filtered), record 2 -> one
	// null value and keeps its (empty, non-null) key.
	res := &pb.BundleResult{BundleId: 1, OutputCounts: []int32{2, 0, 1}, ValueLengths: []int32{1, 0, -1}, Values: []byte("a")}
	out, _, err := decodeResult(s, testRecs(), res)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d outputs, want 3", len(out))
	}
	if string(out[0].value) != "a" || out[1].value == nil || len(out[1].value) != 0 || out[2].value != nil {
		t.Errorf("values %q %q %q: want a, empty (not null), null", out[0].value, out[1].value, out[2].value)
	}
	if string(out[0].key) != "k1" || out[2].key == nil || out[2].in.Offset != 102 || out[1].ts != 10 {
		t.Errorf("outputs keep their input's key, timestamp and origin: %+v", out)
	}
}

func TestDecodeResultKeysWhenChainChangesKeys(t *testing.T) {
	s := &step{node: &topology.Node{Name: "N"}, keysChange: true}
	res := &pb.BundleResult{OutputCounts: []int32{1, 0, 1}, ValueLengths: []int32{1, 1}, Values: []byte("xy"), KeyLengths: []int32{-1, 2}, Keys: []byte("kk")}
	out, _, err := decodeResult(s, testRecs(), res)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].key != nil || string(out[1].key) != "kk" {
		t.Errorf("keys %q %q, want null and kk", out[0].key, out[1].key)
	}
}

func TestDecodeResultRejectsMalformedAnswers(t *testing.T) {
	chain := []*topology.Node{{Name: "A"}, {Name: "B"}}
	s := &step{node: chain[0], chain: chain}
	cases := []struct {
		name string
		res  *pb.BundleResult
		want string
	}{
		{"count mismatch", &pb.BundleResult{OutputCounts: []int32{1}}, "1 output counts for 3 records"},
		{"values mismatch", &pb.BundleResult{OutputCounts: []int32{1, 1, 1}, ValueLengths: []int32{1}}, "1 values for 3 outputs"},
		{"short column", &pb.BundleResult{OutputCounts: []int32{1, 0, 0}, ValueLengths: []int32{5}, Values: []byte("ab")}, "value column is 2 bytes"},
		{"extra bytes", &pb.BundleResult{OutputCounts: []int32{1, 0, 0}, ValueLengths: []int32{1}, Values: []byte("ab")}, "more than their lengths"},
		{"keys not allowed", &pb.BundleResult{OutputCounts: []int32{0, 0, 0}, KeyLengths: []int32{1}}, "does not change keys"},
		{"failure out of range", &pb.BundleResult{Failures: []*pb.RecordFailure{{Index: 3, Message: "ValueError: x"}}}, "failure names record 3 of 3"},
	}
	for _, c := range cases {
		_, _, err := decodeResult(s, testRecs(), c.res)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestDecodeResultListsFailuresInRecordOrder(t *testing.T) {
	chain := []*topology.Node{{Name: "A"}, {Name: "B"}}
	s := &step{node: chain[0], chain: chain}
	// Record 1 failed in both steps (its first, step 0, names it); record 2
	// did not decode; record 0 went on. The counts may be left out.
	res := &pb.BundleResult{OutputCounts: []int32{1, 0, 0}, ValueLengths: []int32{1}, Values: []byte("a"), Failures: []*pb.RecordFailure{
		{Index: 2, Step: 1, Message: "ValueError: x", Kind: pb.RecordFailure_KIND_DESERIALIZATION},
		{Index: 1, Step: 1, Message: "KeyError: z"},
		{Index: 1, Step: 0, Message: "KeyError: y", Kind: pb.RecordFailure_KIND_PROCESSING},
	}}
	out, fails, err := decodeResult(s, testRecs(), res)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || string(out[0].value) != "a" {
		t.Errorf("outputs %+v, want record 0's only", out)
	}
	got := ""
	for _, f := range fails {
		got += fmt.Sprintf("%d %s %s %v; ", f.index, f.node, f.kind, f.err)
	}
	if want := "1 A processing KeyError: y; 2 B deserialization ValueError: x; "; got != want {
		t.Errorf("failures %q, want %q", got, want)
	}
	res = &pb.BundleResult{Failures: []*pb.RecordFailure{{Index: 0, Message: "E: e"}}}
	if out, fails, err = decodeResult(s, testRecs(), res); err != nil || len(out) != 0 || len(fails) != 1 {
		t.Errorf("failures without counts: %v outputs, %v failures, error %v", out, fails, err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMetadataColumns: header columns go only to chains with a step that
// asked for metadata; only a METADATA_WRITE chain takes output timestamps
// and headers, which must match its outputs; -1 keeps the input's headers,
// own ones too.
func TestMetadataColumns(t *testing.T) {
	recs := testRecs()
	recs[0].in.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}
	recs[2].headers, recs[2].ownHeaders = []kgo.RecordHeader{{Key: "own", Value: nil}}, true
	plain := &step{node: &topology.Node{Name: "N"}, steps: []*pb.Step{{Token: 1}}}
	if b := encodeBundle(plain, recs); len(b.HeaderCounts) != 0 {
		t.Errorf("header counts %v for a chain that asked for no metadata", b.HeaderCounts)
	}
	read := &step{node: &topology.Node{Name: "N"}, steps: []*pb.Step{{Token: 1}, {Token: 2, Metadata: pb.Metadata_METADATA_READ}}}
	b := encodeBundle(read, recs)
	if !equal(b.HeaderCounts, []int32{1, 0, 1}) || string(b.HeaderKeys) != "hown" || !equal(b.HeaderValueLengths, []int32{1, -1}) {
		t.Errorf("header columns %v %q %v", b.HeaderCounts, b.HeaderKeys, b.HeaderValueLengths)
	}
	ok := &pb.BundleResult{OutputCounts: []int32{1, 0, 1}, ValueLengths: []int32{1, 1}, Values: []byte("xy")}
	if _, _, err := decodeResult(read, recs, withOutputMetadata(ok, []int64{5, 6}, []int32{-1, -1})); err == nil || !strings.Contains(err.Error(), "METADATA_WRITE") {
		t.Errorf("output metadata for a READ chain: error %v", err)
	}
	write := &step{node: &topology.Node{Name: "N"}, steps: []*pb.Step{{Token: 1, Metadata: pb.Metadata_METADATA_WRITE}}}
	res := withOutputMetadata(ok, []int64{50, 60}, []int32{1, -1})
	res.OutputHeaderKeyLengths, res.OutputHeaderKeys, res.OutputHeaderValueLengths = []int32{1}, []byte("n"), []int32{-1}
	out, _, err := decodeResult(write, recs, res)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].ts != 50 || out[1].ts != 60 {
		t.Errorf("timestamps %d %d, want 50 60", out[0].ts, out[1].ts)
	}
	if !out[0].ownHeaders || len(out[0].headers) != 1 || out[0].headers[0].Key != "n" || out[0].headers[0].Value != nil {
		t.Errorf("output 0 headers %v (own %v), want n=null", out[0].headers, out[0].ownHeaders)
	}
	if !out[1].ownHeaders || len(out[1].headers) != 1 || out[1].headers[0].Key != "own" {
		t.Errorf("output 1 headers %v (own %v), want its input's own", out[1].headers, out[1].ownHeaders)
	}
	if out, _, err := decodeResult(plain, recs, ok); err != nil || !out[1].ownHeaders || out[1].headers[0].Key != "own" {
		t.Errorf("a plain chain's outputs keep their input's own headers: %v %v", out, err)
	}
	cases := []struct {
		name string
		res  *pb.BundleResult
		want string
	}{
		{"timestamps", withOutputMetadata(ok, []int64{1}, []int32{-1, -1}), "1 output timestamps for 2 outputs"},
		{"header counts", withOutputMetadata(ok, []int64{1, 2}, []int32{-1}), "1 output header counts for 2 outputs"},
		{"negative", withOutputMetadata(ok, []int64{1, 2}, []int32{-2, -1}), "header count -2"},
		{"headers", withOutputMetadata(ok, []int64{1, 2}, []int32{2, -1}), "0 output header keys and 0 output header values for 2 headers"},
	}
	for _, c := range cases {
		_, _, err := decodeResult(write, recs, c.res)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "node N") {
			t.Errorf("%s: error %v, want it to name node N and contain %q", c.name, err, c.want)
		}
	}
}

func withOutputMetadata(res *pb.BundleResult, ts []int64, hc []int32) *pb.BundleResult {
	r := &pb.BundleResult{OutputCounts: res.OutputCounts, ValueLengths: res.ValueLengths, Values: res.Values}
	r.OutputTimestamps, r.OutputHeaderCounts = ts, hc
	return r
}
