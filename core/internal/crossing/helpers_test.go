package crossing

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The tests' records and steps: the engine's, as far as the crossing sees
// them, and the same adapters the engine has (engine/cross.go).

type rec struct {
	key, value []byte
	ts         int64
	in         *kgo.Record
	headers    []kgo.RecordHeader
	ownHeaders bool
}

type step struct {
	node                             *topology.Node
	chain                            []*topology.Node
	steps                            []*pb.Step
	keysChange                       bool
	inKey, inValue, outKey, outValue string
}

// failure is a Failure with its kind named.
type failure struct {
	index int
	node  string
	kind  string
	err   error
}

func (s *step) crossingChain() *Chain {
	return &Chain{Node: s.node.Name, Nodes: s.chain, Steps: s.steps, InKey: s.inKey, InValue: s.inValue, OutKey: s.outKey, OutValue: s.outValue, KeysChange: s.keysChange}
}

func (r *rec) crossed() Record {
	hs := r.headers
	if !r.ownHeaders {
		hs = r.in.Headers
	}
	return Record{Key: r.key, Value: r.value, Offset: r.in.Offset, Timestamp: r.ts, Headers: hs}
}

func encodeBundle(s *step, recs []rec) *pb.Bundle {
	return Encode(s.crossingChain(), recs[0].in.Topic, len(recs), func(i int) Record { return recs[i].crossed() })
}

func decodeResult(s *step, recs []rec, res *pb.BundleResult) ([]rec, []failure, error) {
	out, fails, err := Decode(s.crossingChain(), recs, res, func(in *rec, o *Output) rec {
		r := rec{key: in.key, value: o.Value, ts: in.ts, in: in.in, headers: in.headers, ownHeaders: in.ownHeaders}
		if s.keysChange {
			r.key = o.Key
		}
		if o.Written {
			r.ts = o.Timestamp
			if o.OwnHeaders {
				r.headers, r.ownHeaders = o.Headers, true
			}
		}
		return r
	})
	var fs []failure
	for _, f := range fails {
		kind := "processing"
		if f.Deserialization {
			kind = "deserialization"
		}
		fs = append(fs, failure{f.Index, f.Node, kind, f.Err})
	}
	return out, fs, err
}
