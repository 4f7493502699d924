package frompb

import (
	"fmt"
	"strings"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// keyJoin builds a JoinOp that names a joiner and neither a foreign key nor
// a global table: stream-stream (join_stream.go), table-table or
// stream-table.
func (c *call) keyJoin(v *pb.JoinOp, f topology.Function) (*topology.Handle, error) {
	if h, handled, err := c.streamStreamJoin(v, f); handled {
		return h, err
	}
	if k, _ := c.b.Kind(v.Input); k == topology.KindTable {
		return c.tableJoin(v, f)
	}
	if k, _ := c.b.Kind(v.Table); k == topology.KindTable {
		if err := c.streamTableJoinOptions(v); err != nil {
			return nil, err
		}
	}
	return c.b.Join(v.Input, v.Table, f, v.Left, v.ValueSerde, v.Name)
}

// tableJoin builds a JoinOp whose input and other side are tables and which
// names no foreign key: KTable.join / leftJoin / outerJoin(KTable). Options
// of other joins are refused, every one named.
func (c *call) tableJoin(v *pb.JoinOp, f topology.Function) (*topology.Handle, error) {
	var bad []string
	if v.Windows != nil {
		bad = append(bad, "windows are for stream-stream joins; a table-table join has none")
	}
	if v.KeyMapperToken != 0 {
		bad = append(bad, fmt.Sprintf("key_mapper_token %d is for stream-global-table joins; a table-table join joins on the key", v.KeyMapperToken))
	}
	if v.StoreName != "" {
		bad = append(bad, fmt.Sprintf("store_name %q is StreamJoined's (stream-stream joins); name a table-table join's store with materialized", v.StoreName))
	}
	if len(bad) > 0 {
		return nil, c.invalid("table handle %d with handle %d: %s", v.Input, v.Table, strings.Join(bad, "; "))
	}
	return c.b.TableJoin(v.Input, v.Table, f, topology.TableJoinOptions{
		Left: v.Left, Outer: v.Outer, ValueSerde: v.ValueSerde, Name: v.Name, Materialized: materialized(v.Materialized),
	})
}

// streamTableJoinOptions refuses the options a stream-table join does not
// take (KStream has no outerJoin(KTable), and the result is a stream).
func (c *call) streamTableJoinOptions(v *pb.JoinOp) error {
	var bad []string
	if v.Outer {
		bad = append(bad, "outer joins are for stream-stream and table-table joins; KStream joins a KTable with join or left_join")
	}
	if v.Materialized != nil {
		bad = append(bad, "materialized is for table-table and foreign-key joins; a stream-table join makes a stream")
	}
	if v.Windows != nil {
		bad = append(bad, "windows are for stream-stream joins; a stream-table join joins with the table's current value")
	}
	if len(bad) > 0 {
		return c.invalid("stream handle %d with table handle %d: %s", v.Input, v.Table, strings.Join(bad, "; "))
	}
	return nil
}

// builtinJoiners are JoinOp.builtin_joiner's names in the builder.
var builtinJoiners = map[pb.Joiner]string{
	pb.Joiner_JOINER_PAIR:  topology.JoinerPair,
	pb.Joiner_JOINER_THIS:  topology.JoinerThis,
	pb.Joiner_JOINER_OTHER: topology.JoinerOther,
}

// joiner resolves a JoinOp's joiner, for every kind of join: a host
// function (joiner_token, through c.fn, which names an unregistered token)
// or a built-in (builtin_joiner), which the builder resolves for the
// serdes of the values it joins. It names the fields when the JoinOp gives
// both or neither.
func (c *call) joiner(v *pb.JoinOp) (topology.Function, error) {
	switch {
	case v.JoinerToken != 0 && v.BuiltinJoiner != pb.Joiner_JOINER_UNSPECIFIED:
		return topology.Function{}, c.invalid("join names both joiner_token %d and builtin_joiner %v; give one", v.JoinerToken, v.BuiltinJoiner)
	case v.BuiltinJoiner != pb.Joiner_JOINER_UNSPECIFIED:
		name, ok := builtinJoiners[v.BuiltinJoiner]
		if !ok {
			return topology.Function{}, c.invalid("builtin_joiner %d is not known (known: JOINER_PAIR, JOINER_THIS, JOINER_OTHER)", v.BuiltinJoiner)
		}
		return topology.Function{Builtin: name, Name: name}, nil
	case v.JoinerToken == 0:
		return topology.Function{}, c.invalid("join names no joiner; give joiner_token (a host function) or builtin_joiner (JOINER_PAIR, JOINER_THIS, JOINER_OTHER)")
	}
	return c.readFn(v.JoinerToken, "joiner")
}
