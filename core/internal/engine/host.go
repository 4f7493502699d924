package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/polystreams/polystreams/core/internal/crossing"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The task's side of the crossing (core/internal/crossing holds the
// bundles' codec, the fold bundles and programs, and the host contract):
// a step's chain, its records as the crossing sees them, and the records
// and failures an answer makes, whose policy the task applies.

// Host runs bundles through the user's functions (crossing.Host).
type Host = crossing.Host

// empty is a value that is empty but not null (nil is null).
var empty = []byte{}

// failure is a record of a bundle that failed on the host.
type failure struct {
	index int // into the bundle's records
	node  string
	kind  failKind
	err   error
}

// applyFailures hands the failed records of a bundle, in record order, to
// the policy (recordFailed); the first it does not skip fails the batch. An
// input record that failed more than once (e.g. as a table change's old and
// new value) counts once.
func (t *task) applyFailures(recs []rec, fails []failure) error {
	var seen map[any]bool
	for _, f := range fails {
		r := recs[f.index]
		if len(fails) > 1 {
			if seen == nil {
				seen = map[any]bool{}
			}
			if seen[r.in] {
				continue
			}
			seen[r.in] = true
		}
		if err := t.recordFailed(r, f.node, f.kind, f.err); err != nil {
			return err
		}
	}
	return nil
}

// bundleBounds splits n records, record i of size(i) bytes, into bundles
// of at most polystreams.bundle.max.records and .max.bytes (crossing.Bounds).
func (t *task) bundleBounds(n int, size func(i int) int) []int {
	return crossing.Bounds(n, t.app.cfg.BundleMaxRecords, t.app.cfg.BundleMaxBytes, size)
}

// crossOnce sends recs through s's chain in one bundle; it returns the
// outputs, the host's answer (its output counts say which record made
// which outputs) and the records that failed, whose policy the caller
// applies.
func (t *task) crossOnce(ctx context.Context, s *step, recs []rec) ([]rec, *pb.BundleResult, []failure, error) {
	return t.cross(ctx, s, recs, encodeBundle(s, recs))
}

// cross sends b, the bundle of recs for s, and decodes the answer as
// crossOnce does.
func (t *task) cross(ctx context.Context, s *step, recs []rec, b *pb.Bundle) ([]rec, *pb.BundleResult, []failure, error) {
	b.Partition = t.id.partition
	start := time.Now()
	res, err := t.app.host.Process(ctx, b)
	if s.stats != nil {
		s.stats.crossing.ObserveSince(start)
		s.stats.bundle.Observe(float64(len(recs)))
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: task %s: bundle for node %s: %w", t.id, s.node.Name, err)
	}
	out, fails, err := decodeResult(s, recs, res)
	return out, res, fails, err
}

// encodeBundle lays recs out in columns (crossing.Encode).
func encodeBundle(s *step, recs []rec) *pb.Bundle {
	return crossing.Encode(s.crossingChain(), recs[0].in.Topic, len(recs), func(i int) crossing.Record { return recs[i].crossed() })
}

// decodeResult checks the host's answer against the bundle of recs for s
// and turns it into records, and lists the records that failed in record
// order (crossing.Decode). An output keeps its input's key (unless the
// chain changes keys), timestamp and headers (unless the chain writes
// them), and its store key and origin.
func decodeResult(s *step, recs []rec, res *pb.BundleResult) ([]rec, []failure, error) {
	out, fails, err := crossing.Decode(s.crossingChain(), recs, res, func(in *rec, o *crossing.Output) rec {
		r := rec{key: in.key, value: o.Value, ts: in.ts, in: in.in, skey: in.skey, headers: in.headers, ownHeaders: in.ownHeaders}
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
	if err != nil {
		return nil, nil, err
	}
	return out, failuresOf(fails), nil
}

// failuresOf are the crossing's failures with the policy's kinds.
func failuresOf(fails []crossing.Failure) []failure {
	if len(fails) == 0 {
		return nil
	}
	out := make([]failure, len(fails))
	for i, f := range fails {
		kind := kindProcessing
		if f.Deserialization {
			kind = kindDeserialization
		}
		out[i] = failure{index: f.Index, node: f.Node, kind: kind, err: f.Err}
	}
	return out
}

// crossingChain is what a bundle carries of s.
func (s *step) crossingChain() *crossing.Chain {
	return &crossing.Chain{
		Node: s.node.Name, Nodes: s.chain, Steps: s.steps,
		InKey: s.inKey, InValue: s.inValue, OutKey: s.outKey, OutValue: s.outValue,
		KeysChange: s.keysChange,
	}
}

// crossed is what a bundle carries of r: its own headers, or its input's.
func (r *rec) crossed() crossing.Record {
	return crossing.Record{Key: r.key, Value: r.value, Offset: r.in.Offset, Timestamp: r.ts, Headers: headersOfRec(r)}
}

// length is a column length: -1 for null.
func length(b []byte) int32 { return crossing.Length(b) }

// encodeHeaders lays recs' headers out in a bundle's header columns.
func encodeHeaders(recs []rec) (counts, kl []int32, keys []byte, vl []int32, values []byte) {
	return crossing.EncodeHeaders(len(recs), func(i int) crossing.Record { return recs[i].crossed() })
}
