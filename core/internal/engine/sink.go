package engine

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sinkOp is a sink node: it turns records into output records of its
// topic, which the task hands to the producer when the batch succeeds. It
// forwards nothing. A sink with a TopicNameExtractor or a StreamPartitioner
// (route.go) asks them each record's topic and partitions first.
type sinkOp struct{ opBase }

func newSinkOp(t *task, s *step) operator { return &sinkOp{baseOf(t, s, nil)} }

func (o *sinkOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	s := o.s
	var rt *routes
	if s.node.TopicExtractor != nil || s.node.Partitioner != nil {
		var err error
		if rt, err = o.route(ctx, recs); err != nil {
			return nil, err
		}
	}
	wired := s.keyWire != "" || s.valueWire != ""
	for i, r := range recs {
		topic := s.topic
		if rt != nil {
			if rt.skip[i] {
				continue
			}
			if rt.topics != nil {
				topic = rt.topics[i]
			}
		}
		k, v := r.key, r.value
		if wired {
			// A record that does not encode is a processing failure
			// (Kafka Streams gives serialization errors at a sink to its
			// production handler, which polystreams does not have).
			var err error
			if k, v, err = encodeWire(ctx, o.t.app.registry, s.keyWire, s.valueWire, topic, k, v); err != nil {
				if wireUnavailable(err) {
					return nil, recordError(r, s.node.Name, err)
				}
				if err = o.t.recordFailed(r, s.node.Name, kindProcessing, err); err != nil {
					return nil, err
				}
				continue
			}
		}
		if s.change {
			if v == nil && r.old == nil {
				continue
			}
			v = encodeChange(r.value, r.old)
		}
		// The input record's headers go with what it became, as Kafka
		// Streams forwards them (to repartition topics too).
		out := &kgo.Record{Topic: topic, Key: k, Value: v, Timestamp: time.UnixMilli(r.ts)}
		if r.ownHeaders {
			out.Headers = r.headers
		} else if r.in != nil {
			out.Headers = r.in.Headers
		}
		if s.byPartition {
			p, err := fkResponsePartition(v)
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			out.Partition = p
		}
		if rt == nil || rt.parts == nil || rt.parts[i] == nil {
			o.t.out = append(o.t.out, out)
			continue
		}
		// A multicast: one record per partition, as Kafka Streams'
		// RecordCollectorImpl sends them, in the partitioner's order.
		for j, p := range rt.parts[i] {
			if j > 0 {
				c := *out
				out = &c
			}
			out.Partition, out.Context = int32(p), chosenPartition
			o.t.out = append(o.t.out, out)
		}
	}
	return nil, nil
}
