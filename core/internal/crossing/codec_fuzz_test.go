package crossing

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// fuzzRecords reads records out of data: per record a flag byte (1: null
// key, 2: null value, 4: the host fails it), a key length (0-15) and a
// value length (0-63), then the bytes; what data does not hold is empty.
func fuzzRecords(data []byte) (recs []rec, failed []bool) {
	next := func(n int) []byte {
		n = min(n, len(data))
		b := data[:n:n]
		data = data[n:]
		return b
	}
	for i := 0; len(data) > 0 && i < 256; i++ {
		hdr := next(3)
		for len(hdr) < 3 {
			hdr = append(hdr, 0)
		}
		r := rec{key: bytes.Clone(next(int(hdr[1] % 16))), value: bytes.Clone(next(int(hdr[2] % 64))), ts: int64(i)*7919 - 1000,
			in: &kgo.Record{Topic: "orders", Partition: 3, Offset: int64(1000 + i)}}
		if r.key == nil {
			r.key = []byte{}
		}
		if r.value == nil {
			r.value = []byte{}
		}
		if hdr[0]&1 != 0 {
			r.key = nil
		}
		if hdr[0]&2 != 0 {
			r.value = nil
		}
		recs = append(recs, r)
		failed = append(failed, hdr[0]&4 != 0)
	}
	return recs, failed
}

// column reads entry i of a columnar field as an SDK does (protocol.md:
// lengths in order, -1 a null, the bytes concatenated).
func column(lengths []int32, col []byte, off *int, i int) ([]byte, error) {
	l := lengths[i]
	if l < 0 {
		return nil, nil
	}
	if l == 0 {
		return []byte{}, nil
	}
	if *off+int(l) > len(col) {
		return nil, fmt.Errorf("entry %d: length %d past a %d-byte column", i, l, len(col))
	}
	b := col[*off : *off+int(l)]
	*off += int(l)
	return b, nil
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// appendColumn appends b to a columnar field the way an SDK answers.
func appendColumn(lengths []int32, col []byte, b []byte) ([]int32, []byte) {
	if b == nil {
		return append(lengths, -1), col
	}
	return append(lengths, int32(len(b))), append(col, b...)
}

// FuzzBundleRoundTrip: records the engine puts in a bundle reach a host
// whole, and a host's answer made from them comes back whole. The bundle
// encodeBundle makes, marshalled and read back by an SDK's rules, holds
// every record's key, value (null and empty kept apart), offset and
// timestamp; a host that answers each record with its value (map_values),
// its value twice (flat_map_values) or its key and value swapped
// (a key-changing chain), and fails the records marked so, has its answer
// decoded by decodeResult into exactly those records, in order, with the
// input's timestamps.
func FuzzBundleRoundTrip(f *testing.F) {
	f.Add([]byte("\x00\x01\x01ka\x03\x00\x00\x04\x02\x03kkvvv"), uint8(0))
	f.Add([]byte("\x02\x05\x00hello\x01\x00\x3fxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), uint8(1))
	f.Add([]byte("\x07\x00\x00\x00\x00\x00\x06\x01\x01ab"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, shape uint8) {
		recs, failed := fuzzRecords(data)
		if len(recs) == 0 {
			return
		}
		ops := []pb.Operation{pb.Operation_OPERATION_MAP_VALUES}
		flat, keyed := shape%3 == 1, shape%3 == 2
		if flat {
			ops = []pb.Operation{pb.Operation_OPERATION_FLAT_MAP_VALUES}
		}
		if keyed {
			ops = append(ops, pb.Operation_OPERATION_SELECT_KEY)
		}
		s := fuzzStep(ops, keyed)
		wire, err := proto.Marshal(encodeBundle(s, recs))
		if err != nil {
			t.Fatal(err)
		}
		var b pb.Bundle
		if err := proto.Unmarshal(wire, &b); err != nil {
			t.Fatalf("the bundle does not decode: %v", err)
		}
		if len(b.KeyLengths) != len(recs) || len(b.ValueLengths) != len(recs) || len(b.Offsets) != len(recs) || len(b.Timestamps) != len(recs) || b.Topic != "orders" {
			t.Fatalf("a bundle of %d records has %d keys, %d values, %d offsets, %d timestamps, topic %q",
				len(recs), len(b.KeyLengths), len(b.ValueLengths), len(b.Offsets), len(b.Timestamps), b.Topic)
		}
		// The host's side: read each record, answer it.
		res := &pb.BundleResult{BundleId: b.Id}
		ko, vo := 0, 0
		want := []rec{}
		for i := range recs {
			k, err := column(b.KeyLengths, b.Keys, &ko, i)
			if err != nil {
				t.Fatalf("keys: %v", err)
			}
			v, err := column(b.ValueLengths, b.Values, &vo, i)
			if err != nil {
				t.Fatalf("values: %v", err)
			}
			if !sameBytes(k, recs[i].key) || !sameBytes(v, recs[i].value) || b.Offsets[i] != recs[i].in.Offset || b.Timestamps[i] != recs[i].ts {
				t.Fatalf("record %d: the host reads key %q value %q offset %d ts %d; the engine had %q %q %d %d",
					i, k, v, b.Offsets[i], b.Timestamps[i], recs[i].key, recs[i].value, recs[i].in.Offset, recs[i].ts)
			}
			if failed[i] {
				res.OutputCounts = append(res.OutputCounts, 0)
				res.Failures = append(res.Failures, &pb.RecordFailure{Index: int32(i), Message: fmt.Sprintf("record %d failed", i)})
				continue
			}
			switch {
			case flat:
				res.OutputCounts = append(res.OutputCounts, 2)
				for range 2 {
					res.ValueLengths, res.Values = appendColumn(res.ValueLengths, res.Values, v)
					want = append(want, rec{key: recs[i].key, value: v, ts: recs[i].ts})
				}
			case keyed:
				res.OutputCounts = append(res.OutputCounts, 1)
				res.KeyLengths, res.Keys = appendColumn(res.KeyLengths, res.Keys, v)
				res.ValueLengths, res.Values = appendColumn(res.ValueLengths, res.Values, k)
				want = append(want, rec{key: v, value: k, ts: recs[i].ts})
			default:
				res.OutputCounts = append(res.OutputCounts, 1)
				res.ValueLengths, res.Values = appendColumn(res.ValueLengths, res.Values, v)
				want = append(want, rec{key: recs[i].key, value: v, ts: recs[i].ts})
			}
		}
		wire, err = proto.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var back pb.BundleResult
		if err := proto.Unmarshal(wire, &back); err != nil {
			t.Fatalf("the answer does not decode: %v", err)
		}
		out, fails, err := decodeResult(s, recs, &back)
		if err != nil {
			t.Fatalf("a well-formed answer refused: %v", err)
		}
		if len(out) != len(want) {
			t.Fatalf("%d records out, want %d", len(out), len(want))
		}
		for i := range want {
			// An empty value or key may come back as another empty slice,
			// but never as a null, nor a null as an empty one.
			if !sameBytes(out[i].key, want[i].key) || !sameBytes(out[i].value, want[i].value) || out[i].ts != want[i].ts {
				t.Fatalf("output %d: key %q value %q ts %d, want %q %q %d", i, out[i].key, out[i].value, out[i].ts, want[i].key, want[i].value, want[i].ts)
			}
		}
		j := 0
		for i, fl := range failed {
			if !fl {
				continue
			}
			if j >= len(fails) || fails[j].index != i || fails[j].err.Error() != fmt.Sprintf("record %d failed", i) {
				t.Fatalf("the failure of record %d is not reported in order: %+v", i, fails)
			}
			j++
		}
		if j != len(fails) {
			t.Fatalf("%d failures reported, %d made", len(fails), j)
		}
	})
}

// fuzzStep is a chain of the given operations, and whether it changes keys.
func fuzzStep(ops []pb.Operation, keysChange bool) *step {
	s := &step{node: &topology.Node{Name: "KSTREAM-MAPVALUES-0000000001"}, keysChange: keysChange}
	for i, op := range ops {
		s.chain = append(s.chain, &topology.Node{Name: "N" + string(rune('0'+i))})
		s.steps = append(s.steps, &pb.Step{Token: uint32(i + 1), Operation: op})
	}
	return s
}

func fuzzRecs(n int) []rec {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{key: []byte{byte(i)}, value: []byte("v"), ts: int64(i), in: &kgo.Record{Topic: "t", Partition: 1, Offset: int64(i)}}
	}
	return recs
}

func marshal(f *testing.F, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzDecodeResult: a host's answer, however malformed, is checked against
// the bundle it answers: decodeResult returns records consistent with it or
// a named error ("engine: host answered bundle ... malformed: ..." or a
// record's failure), never panics, and never returns more outputs than the
// chain can make or bytes the answer did not hold.
func FuzzDecodeResult(f *testing.F) {
	good := &pb.BundleResult{BundleId: 1, OutputCounts: []int32{1, 0, 1}, ValueLengths: []int32{2, -1}, Values: []byte("AB")}
	flat := &pb.BundleResult{BundleId: 2, OutputCounts: []int32{2, 0, 3}, ValueLengths: []int32{1, 1, 0, 1, 1}, Values: []byte("abcd")}
	keyed := &pb.BundleResult{BundleId: 3, OutputCounts: []int32{1, 1, 1}, KeyLengths: []int32{1, -1, 2}, Keys: []byte("kkk"), ValueLengths: []int32{1, 1, 1}, Values: []byte("xyz")}
	failed := &pb.BundleResult{BundleId: 4, Failures: []*pb.RecordFailure{{Index: 2, Step: 0, Message: "ValueError: boom"}}}
	for _, seed := range []struct {
		res   *pb.BundleResult
		n     uint8
		flat  bool
		keyed bool
	}{{good, 3, false, false}, {flat, 3, true, false}, {keyed, 3, false, true}, {failed, 3, false, false}, {good, 2, true, true}} {
		f.Add(marshal(f, seed.res), seed.n, seed.flat, seed.keyed)
	}
	f.Add([]byte{0x12, 0x05, 0xfe, 0xff, 0xff, 0xff, 0x0f}, uint8(1), true, false) // output_counts [2^31-1]
	f.Fuzz(func(t *testing.T, data []byte, n uint8, flatMap, keysChange bool) {
		var res pb.BundleResult
		if proto.Unmarshal(data, &res) != nil {
			return // Connect refuses it before the engine sees it
		}
		ops := []pb.Operation{pb.Operation_OPERATION_MAP_VALUES}
		if flatMap {
			ops = append(ops, pb.Operation_OPERATION_FLAT_MAP_VALUES)
		}
		if keysChange {
			ops = append(ops, pb.Operation_OPERATION_SELECT_KEY)
		}
		s := fuzzStep(ops, keysChange)
		recs := fuzzRecs(int(n % 64))
		out, fails, err := decodeResult(s, recs, &res)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "engine: ") {
				t.Fatalf("error does not name its component: %q", msg)
			}
			return
		}
		if len(fails) > len(recs) {
			t.Fatalf("%d failures for %d records", len(fails), len(recs))
		}
		for _, fl := range fails {
			if fl.index < 0 || fl.index >= len(recs) || fl.node == "" {
				t.Fatalf("failure of record %d of %d in node %q", fl.index, len(recs), fl.node)
			}
		}
		total := 0
		for i, c := range res.OutputCounts {
			if !flatMap && c > 1 {
				t.Fatalf("record %d: %d outputs from a chain without flat_map_values", i, c)
			}
			total += int(c)
		}
		if len(out) != total {
			t.Fatalf("%d outputs for counts %v", len(out), res.OutputCounts)
		}
		size := 0
		for _, r := range out {
			size += len(r.value)
			if keysChange {
				size += len(r.key)
			}
		}
		if size != len(res.Values)+len(res.Keys) {
			t.Fatalf("outputs hold %d bytes, the answer %d", size, len(res.Values)+len(res.Keys))
		}
	})
}

// A chain that makes at most one output per record refuses an answer
// claiming more, naming the record.
func TestDecodeResultRefusesMoreOutputsThanTheChainMakes(t *testing.T) {
	s := fuzzStep([]pb.Operation{pb.Operation_OPERATION_MAP_VALUES, pb.Operation_OPERATION_FILTER}, false)
	res := &pb.BundleResult{BundleId: 9, OutputCounts: []int32{1, 2, 0}, ValueLengths: []int32{1, 1, 1}, Values: []byte("abc")}
	_, _, err := decodeResult(s, fuzzRecs(3), res)
	if err == nil || !strings.Contains(err.Error(), "malformed: 2 outputs for record 1; its chain makes at most 1") {
		t.Fatalf("decodeResult: %v", err)
	}
	s = fuzzStep([]pb.Operation{pb.Operation_OPERATION_FLAT_MAP_VALUES}, false)
	if out, _, err := decodeResult(s, fuzzRecs(3), res); err != nil || len(out) != 3 {
		t.Fatalf("flat_map_values: %v %v", out, err)
	}
}
