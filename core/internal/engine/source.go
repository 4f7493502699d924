package engine

import (
	"context"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// sourceOp is a source node (KStream/KTable source, a repartition topic's
// reader): records enter the plan through it.
type sourceOp struct{ opBase }

func newSourceOp(t *task, s *step) operator { return &sourceOp{baseOf(t, s, nil)} }

// process checks a source's records against its serdes, as Kafka
// Streams' source node deserializes them, and for a change source splits
// each value into new and old. A record that does not decode goes to the
// deserialization policy: skipped, or its error fails the batch.
func (o *sourceOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	// A side decoded from a Schema Registry serde is json by construction.
	checkKey := serde.Checks(s.keySerde) && s.keyWire == ""
	checkValue := serde.Checks(s.valueSerde) && s.valueWire == ""
	wired := s.keyWire != "" || s.valueWire != ""
	if !checkKey && !checkValue && !s.change && !wired {
		return recs, nil
	}
	// A change source, or one whose topic has a Schema Registry serde,
	// rewrites every record; otherwise the records go on as they came,
	// copied only from the first one that fails on.
	copied := s.change || wired
	var out []rec
	if copied {
		out = make([]rec, 0, len(recs))
	}
	for i, r := range recs {
		var err error
		if wired {
			if r.key, r.value, err = decodeWire(ctx, t.app.registry, s.keyWire, s.valueWire, r.in.Topic, r.key, r.value); err != nil && wireUnavailable(err) {
				return nil, recordError(r, s.node.Name, err)
			}
		}
		if err == nil && checkKey && r.key != nil {
			if e := serde.Validate(s.keySerde, r.key); e != nil {
				err = fmt.Errorf("key does not decode as %s: %w", s.keySerde, e)
			}
		}
		if err == nil && checkValue && r.value != nil {
			if e := serde.Validate(s.valueSerde, r.value); e != nil {
				err = fmt.Errorf("value does not decode as %s: %w", s.valueSerde, e)
			}
		}
		if err == nil && s.change {
			nv, ov, e := decodeChange(r.value)
			if e != nil {
				err = fmt.Errorf("value is not a change: %w", e)
			}
			r.value, r.old = nv, ov
		}
		if err != nil {
			if err = t.recordFailed(r, s.node.Name, kindDeserialization, err); err != nil {
				return nil, err
			}
			if !copied {
				out, copied = append(make([]rec, 0, len(recs)-1), recs[:i]...), true
			}
			continue
		}
		if copied {
			out = append(out, r)
		}
	}
	if !copied {
		return recs, nil
	}
	return out, nil
}
