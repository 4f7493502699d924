package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// globalTable applies GlobalTableOp (StreamsBuilder.globalTable). Whether
// the topic exists is checked at Start, where the engine first reads the
// brokers' metadata, and the error names it.
func (c *call) globalTable(v *pb.GlobalTableOp) (*topology.Handle, error) {
	return c.b.GlobalTable(topology.GlobalTableOptions{Topic: v.Topic, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name, Materialized: materialized(v.Materialized), OffsetReset: v.OffsetReset})
}

// isGlobalJoin reports whether a JoinOp is a stream-global-table join: its
// other side is a global table, or it names a key mapper (which only that
// join takes; globalJoin then refuses it naming the handle's kind).
func (c *call) isGlobalJoin(v *pb.JoinOp) bool {
	k, _ := c.b.Kind(v.Table)
	return k == topology.KindGlobalTable || v.KeyMapperToken != 0
}

// globalJoin applies a stream-global-table JoinOp: the key mapper
// (key_mapper_token, required) and the joiner resolve through c.fn, which
// names an unregistered token; options of other joins are refused.
func (c *call) globalJoin(v *pb.JoinOp) (*topology.Handle, error) {
	invalid := c.invalid
	k, ok := c.b.Kind(v.Table)
	switch {
	case !ok:
		return nil, c.notFound("join names handle %d, which does not exist", v.Table)
	case k != topology.KindGlobalTable:
		return nil, invalid("key_mapper_token %d is for joins with a global table, but handle %d is a %s", v.KeyMapperToken, v.Table, k)
	case v.KeyMapperToken == 0:
		return nil, invalid("handle %d is a global table: joining it needs a key mapper (key_mapper_token), mapping each stream record to the global table's key", v.Table)
	case v.Outer:
		return nil, invalid("a stream joins global table handle %d inner or left, not outer", v.Table)
	case v.Windows != nil:
		return nil, invalid("windows are for stream-stream joins; handle %d is a global table", v.Table)
	case v.StoreName != "" || v.Materialized != nil:
		return nil, invalid("store_name and materialized are for stream-stream and table-table joins; handle %d is a global table", v.Table)
	case v.ForeignKeyToken != 0:
		return nil, invalid("foreign_key_token is for foreign-key table joins; handle %d is a global table", v.Table)
	}
	mapper, err := c.readFn(v.KeyMapperToken, "key mapper")
	if err != nil {
		return nil, err
	}
	f, err := c.joiner(v)
	if err != nil {
		return nil, err
	}
	return c.b.GlobalJoin(v.Input, v.Table, mapper, f, v.Left, v.ValueSerde, v.Name)
}
