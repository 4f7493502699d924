package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// extract runs a source's TimestampExtractor (Consumed.withTimestampExtractor)
// over a run of its records before the source node takes them, as Kafka
// Streams' RecordQueue does when a record reaches the head of its
// partition's queue: each record's timestamp becomes the extractor's
// answer, from which stream time, windows and the outputs' timestamps
// follow. A negative answer drops the record (dropped-records, a warning
// naming topic, partition and offset); an extractor that fails stops the
// task (Kafka Streams: "Fatal user code error in TimestampExtractor
// callback"), except a host's failure to decode the key or value, which
// goes to the deserialization handler as the source node's would.
//
// The partition time the extractor is given is the largest timestamp
// extracted so far from the record's partition (-1 before any), kept
// per task and topic; it starts again at -1 when the task is made
// (Kafka Streams restores it from the committed offset's metadata).
//
// The inbox merges a task's topics by the records' own timestamps, not
// the extracted ones: a task reading two topics through extractors may
// take their records in another order than Kafka Streams would.
func (t *task) extract(ctx context.Context, s *step, recs []rec) ([]rec, error) {
	fn := s.node.Extractor
	if t.partTime == nil {
		t.partTime = map[string]int64{}
	}
	pt, ok := t.partTime[recs[0].in.Topic]
	if !ok {
		pt = -1
	}
	var tss []int64
	if fn.Native != nil {
		f := fn.Native.(topology.TimestampExtractorFunc)
		tss = make([]int64, len(recs))
		p := pt
		for i, r := range recs {
			ts, err := f(topology.ExtractorRecord{
				Key: r.key, Value: r.value, Topic: r.in.Topic, Partition: r.in.Partition, Offset: r.in.Offset, Timestamp: r.ts,
			}, p)
			if err != nil {
				return nil, recordError(r, s.node.Name, fmt.Errorf("timestamp extractor failed: %w", err))
			}
			tss[i] = ts
			if ts >= 0 {
				p = max(p, ts)
			}
		}
	} else {
		var err error
		if tss, err = t.extractOnHost(ctx, s, recs, pt); err != nil {
			return nil, err
		}
	}
	out := recs[:0:0]
	for i, r := range recs {
		ts := tss[i]
		if ts == deserializationFailed {
			continue // its policy skipped it
		}
		if ts < 0 {
			t.app.log.Warn("skipping record due to negative extracted timestamp", "node", s.node.Name,
				"topic", r.in.Topic, "partition", r.in.Partition, "offset", r.in.Offset, "extracted_timestamp", ts)
			t.app.dropped.Add(1)
			continue
		}
		pt = max(pt, ts)
		r.ts = ts
		out = append(out, r)
	}
	t.partTime[recs[0].in.Topic] = pt
	return out, nil
}

// deserializationFailed marks, among extracted timestamps, a record the
// host could not decode and the deserialization handler skipped.
const deserializationFailed = -1 << 63

// extractOnHost sends recs to the host's extractor in bundles of one
// OPERATION_EXTRACT_TIMESTAMP step and returns each record's answer.
func (t *task) extractOnHost(ctx context.Context, s *step, recs []rec, pt int64) ([]int64, error) {
	fn := s.node.Extractor
	st := &step{node: s.node, stats: s.stats, inKey: s.node.KeySerde, inValue: s.node.ValueSerde,
		steps: []*pb.Step{{Token: fn.Token, Operation: pb.Operation_OPERATION_EXTRACT_TIMESTAMP, Node: s.node.Name}}}
	tss := make([]int64, 0, len(recs))
	bounds := t.bundleBounds(len(recs), func(i int) int { return len(recs[i].key) + len(recs[i].value) })
	for j := 0; j+1 < len(bounds); j++ {
		part := recs[bounds[j]:bounds[j+1]]
		b := encodeBundle(st, part)
		b.PartitionTime = pt
		b.HeaderCounts, b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = encodeHeaders(part)
		b.Partition = t.id.partition
		res, err := t.app.host.Process(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("engine: task %s: timestamp extractor bundle for node %s: %w", t.id, s.node.Name, err)
		}
		got, err := decodeExtracted(s.node.Name, part, res)
		if err != nil {
			return nil, err
		}
		for i, ts := range got {
			if f, ok := ts.(failure); ok {
				if f.kind != kindDeserialization {
					return nil, recordError(part[i], s.node.Name, fmt.Errorf("timestamp extractor failed: %w", f.err))
				}
				if err := t.recordFailed(part[i], s.node.Name, kindDeserialization, f.err); err != nil {
					return nil, err
				}
				tss = append(tss, deserializationFailed)
				continue
			}
			v := ts.(int64)
			tss = append(tss, v)
			if v >= 0 {
				pt = max(pt, v)
			}
		}
	}
	return tss, nil
}

// decodeExtracted checks the host's answer to an extractor bundle: per
// record, an int64 timestamp or its failure.
func decodeExtracted(node string, recs []rec, res *pb.BundleResult) ([]any, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("engine: host answered timestamp extractor bundle %d for node %s malformed: %s", res.GetBundleId(), node, fmt.Sprintf(format, args...))
	}
	out := make([]any, len(recs))
	for _, f := range res.Failures {
		if f.Index < 0 || int(f.Index) >= len(recs) {
			return nil, bad("failure names record %d of %d", f.Index, len(recs))
		}
		kind := kindProcessing
		if f.Kind == pb.RecordFailure_KIND_DESERIALIZATION {
			kind = kindDeserialization
		}
		out[f.Index] = failure{index: int(f.Index), node: node, kind: kind, err: errors.New(f.Message)}
	}
	if len(res.Keys) != 0 || len(res.Values) != 0 || len(res.KeyLengths) != 0 || len(res.ValueLengths) != 0 {
		return nil, bad("keys or values; an extractor answers timestamps only")
	}
	if len(res.OutputCounts) != len(recs) && !(len(res.OutputCounts) == 0 && len(res.Failures) == len(recs)) {
		return nil, bad("%d output counts for %d records", len(res.OutputCounts), len(recs))
	}
	next := 0
	for i := range recs {
		c := int32(0)
		if len(res.OutputCounts) > 0 {
			c = res.OutputCounts[i]
		}
		switch {
		case out[i] != nil && c != 0:
			return nil, bad("record %d failed and has %d outputs", i, c)
		case out[i] != nil:
		case c != 1:
			return nil, bad("%d outputs for record %d; an extractor answers one timestamp", c, i)
		default:
			if next >= len(res.OutputTimestamps) {
				return nil, bad("%d timestamps for more outputs", len(res.OutputTimestamps))
			}
			out[i] = res.OutputTimestamps[next]
			next++
		}
	}
	if next != len(res.OutputTimestamps) {
		return nil, bad("%d timestamps for %d outputs", len(res.OutputTimestamps), next)
	}
	return out, nil
}
