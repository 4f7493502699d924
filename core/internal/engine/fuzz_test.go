package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

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

// FuzzChangelog: what the engine reads back from Kafka when it restores a
// store or consumes a grouped table's repartition topic (changelog keys of
// window, session, sliding and suppression stores; Kafka Streams' change
// encoding) decodes or fails with an error, never panics, and what decodes
// encodes back to the same store key.
func FuzzChangelog(f *testing.F) {
	f.Add(windowCodec{}.toLog(windowKey(1000, []byte("k"))), false)
	f.Add(sessionCodec{}.toLog(sessionKey([]byte("k"), session{5, 9})), false)
	f.Add(slidingCodec{}.toLog(slidingKey([]byte("k"), 7)), false)
	f.Add(metaLogKey, false)
	f.Add(storeTimeLogKey, false)
	f.Add(encodeChange([]byte("new"), []byte("old")), true)
	f.Add(encodeChange(nil, []byte("old")), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 2}, true)
	codecs := map[string]keyCodec{
		"window": windowCodec{}, "session": sessionCodec{}, "sliding": slidingCodec{},
		"suppress(time)":    suppressCodec{w: &topology.Windows{Kind: topology.TimeWindows, Size: 10, Advance: 10}},
		"suppress(session)": suppressCodec{w: &topology.Windows{Kind: topology.SessionWindows, Size: 10}},
	}
	f.Fuzz(func(t *testing.T, b []byte, change bool) {
		if change {
			nv, ov, err := decodeChange(b)
			if err != nil {
				return
			}
			if nv == nil && ov == nil {
				t.Fatalf("change %x decodes to neither value", b)
			}
			if again := encodeChange(nv, ov); !bytes.Equal(again, b) && !(nv != nil && ov != nil) {
				t.Fatalf("change %x decodes to %q %q, which encode to %x", b, nv, ov, again)
			}
			return
		}
		for name, c := range codecs {
			sk, err := c.fromLog(b)
			if err != nil {
				continue
			}
			lk := c.toLog(sk)
			if again, err := c.fromLog(lk); err != nil || !bytes.Equal(again, sk) {
				t.Fatalf("%s: log key %x -> store key %x -> log key %x -> %x, %v", name, b, sk, lk, again, err)
			}
		}
	})
}
