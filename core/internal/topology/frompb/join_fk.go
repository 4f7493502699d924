package frompb

import (
	"fmt"
	"strings"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// foreignKeyJoin is a JoinOp with foreign_key_token: KTable.join /
// leftJoin(other, foreignKeyExtractor, joiner[, Materialized]). The fields
// of other joins are refused here, naming them; the builder checks the
// handles.
func (c *call) foreignKeyJoin(v *pb.JoinOp) (*topology.Handle, error) {
	var bad []string
	if v.Windows != nil {
		bad = append(bad, "windows (for stream-stream joins)")
	}
	if v.KeyMapperToken != 0 {
		bad = append(bad, fmt.Sprintf("key_mapper_token %d (for stream-global-table joins)", v.KeyMapperToken))
	}
	if v.Outer {
		bad = append(bad, "outer (a foreign-key join is inner or left)")
	}
	if v.StoreName != "" {
		bad = append(bad, fmt.Sprintf("store_name %q (for stream-stream joins; name the result's store with materialized)", v.StoreName))
	}
	if len(bad) > 0 {
		return nil, c.invalid("foreign_key_token %d makes a foreign-key table-table join, which takes no %s", v.ForeignKeyToken, strings.Join(bad, "; "))
	}
	extractor, err := c.readFn(v.ForeignKeyToken, "foreign-key extractor")
	if err != nil {
		return nil, err
	}
	f, err := c.joiner(v)
	if err != nil {
		return nil, err
	}
	return c.b.ForeignKeyJoin(v.Input, v.Table, extractor, f, v.Left, materialized(v.Materialized), v.ValueSerde, v.Name)
}
