package engine

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sinkOp is a sink node: it turns records into output records of its
// topic, which the task hands to the producer when the batch succeeds. It
// forwards nothing.
type sinkOp struct{ opBase }

func newSinkOp(t *task, s *step) operator { return &sinkOp{baseOf(t, s, nil)} }

func (o *sinkOp) process(_ context.Context, recs []rec) ([]rec, error) {
	s := o.s
	for _, r := range recs {
		v := r.value
		if s.change {
			if v == nil && r.old == nil {
				continue
			}
			v = encodeChange(r.value, r.old)
		}
		// The input record's headers go with what it became, as Kafka
		// Streams forwards them (to repartition topics too).
		out := &kgo.Record{Topic: s.topic, Key: r.key, Value: v, Timestamp: time.UnixMilli(r.ts)}
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
		o.t.out = append(o.t.out, out)
	}
	return nil, nil
}
