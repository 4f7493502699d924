package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// stream applies StreamOp (StreamsBuilder.stream).
func (c *call) stream(v *pb.StreamOp) (*topology.Handle, error) {
	return c.b.Stream(topology.StreamOptions{Topics: v.Topics, Pattern: v.TopicPattern, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name, OffsetReset: v.OffsetReset, Extractor: extractor(v.TimestampExtractor)})
}

// table applies TableOp (StreamsBuilder.table).
func (c *call) table(v *pb.TableOp) (*topology.Handle, error) {
	return c.b.Table(topology.TableOptions{Topic: v.Topic, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name, Materialized: materialized(v.Materialized), OffsetReset: v.OffsetReset, Extractor: extractor(v.TimestampExtractor)})
}

// extractor is a source's Consumed.withTimestampExtractor; nil when it
// gives none.
func extractor(v *pb.TimestampExtractor) *topology.Function {
	if v == nil {
		return nil
	}
	return &topology.Function{Token: v.Token, Builtin: v.Builtin}
}
