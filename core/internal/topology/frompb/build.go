// Package frompb applies the v1alpha1 protocol's builder calls to a
// topology.Builder: one BuildRequest, one operator, one function here
// (build.go dispatches; source.go, stateless.go, group.go, window.go,
// table.go and the join files translate). It checks what only the
// protocol can get wrong (tokens, fields that do not go together) and
// leaves the rest to the builder, which changes nothing on a refused call.
//
// Adding an operator: a oneof member in BuildRequest (proto/), one case in
// Build's switch, and one function taking the op's message.
//
// Errors start with the method ("Build(map_values): ...") and wrap
// topology.ErrNotFound (a handle or token that does not exist) or
// topology.ErrInvalid (the rest); the server gives them their Connect code.
package frompb

import (
	"errors"
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Build applies one BuildRequest to b. funcs are the session's registered
// host functions (token -> display name and metadata). It is not safe to call
// concurrently on one builder: the caller holds the session's lock.
func Build(b *topology.Builder, funcs map[uint32]topology.Function, m *pb.BuildRequest) (*pb.BuildResponse, error) {
	op := OperationName(m)
	if op == "" {
		return nil, &refusal{msg: "Build: the request names no operation", kind: topology.ErrInvalid}
	}
	c := &call{b: b, funcs: funcs, method: "Build(" + op + ")"}
	var h *topology.Handle
	var err error
	switch o := m.Operation.(type) {
	case *pb.BuildRequest_Stream:
		h, err = c.stream(o.Stream)
	case *pb.BuildRequest_Table:
		h, err = c.table(o.Table)
	case *pb.BuildRequest_GlobalTable:
		h, err = c.globalTable(o.GlobalTable) // global.go
	case *pb.BuildRequest_MapValues:
		h, err = c.mapValues(o.MapValues)
	case *pb.BuildRequest_Filter:
		h, err = c.filter(o.Filter)
	case *pb.BuildRequest_FilterNot:
		h, err = c.filterNot(o.FilterNot)
	case *pb.BuildRequest_FlatMapValues:
		h, err = c.flatMapValues(o.FlatMapValues)
	case *pb.BuildRequest_FlatMap:
		h, err = c.flatMap(o.FlatMap)
	case *pb.BuildRequest_Map:
		h, err = c.mapKeyValue(o.Map)
	case *pb.BuildRequest_SelectKey:
		h, err = c.selectKey(o.SelectKey)
	case *pb.BuildRequest_Peek:
		h, err = c.peek(o.Peek)
	case *pb.BuildRequest_Foreach:
		err = c.foreach(o.Foreach)
	case *pb.BuildRequest_Print:
		err = c.print(o.Print)
	case *pb.BuildRequest_Merge:
		h, err = c.merge(o.Merge)
	case *pb.BuildRequest_Repartition:
		h, err = c.repartition(o.Repartition)
	case *pb.BuildRequest_To:
		err = c.to(o.To)
	case *pb.BuildRequest_Split:
		var hs []*topology.Handle
		if hs, err = c.split(o.Split); err == nil {
			resp := &pb.BuildResponse{}
			for _, h := range hs {
				resp.Branches = append(resp.Branches, Handle(h))
			}
			return resp, nil
		}
	case *pb.BuildRequest_GroupByKey:
		h, err = c.groupByKey(o.GroupByKey) // group.go
	case *pb.BuildRequest_GroupBy:
		h, err = c.groupBy(o.GroupBy)
	case *pb.BuildRequest_Count:
		h, err = c.count(o.Count)
	case *pb.BuildRequest_Reduce:
		h, err = c.reduce(o.Reduce)
	case *pb.BuildRequest_Cogroup:
		h, err = c.cogroup(o.Cogroup)
	case *pb.BuildRequest_Aggregate:
		h, err = c.aggregate(o.Aggregate)
	case *pb.BuildRequest_WindowedBy:
		h, err = c.windowedBy(o.WindowedBy) // window.go
	case *pb.BuildRequest_EmitStrategy:
		h, err = c.emitStrategy(o.EmitStrategy)
	case *pb.BuildRequest_Suppress:
		h, err = c.suppress(o.Suppress)
	case *pb.BuildRequest_ToTable:
		h, err = c.toTable(o.ToTable) // table.go
	case *pb.BuildRequest_ToStream:
		h, err = c.toStream(o.ToStream)
	case *pb.BuildRequest_Join:
		h, err = c.join(o.Join) // join.go
	case *pb.BuildRequest_AddStateStore:
		err = c.addStateStore(o.AddStateStore) // process.go
	case *pb.BuildRequest_Process:
		h, err = c.process(o.Process)
	case *pb.BuildRequest_AddSource:
		err = c.addSource(o.AddSource)
	case *pb.BuildRequest_AddProcessor:
		err = c.addProcessor(o.AddProcessor)
	case *pb.BuildRequest_AddSink:
		err = c.addSink(o.AddSink)
	case *pb.BuildRequest_TransformValues:
		h, err = c.transformValues(o.TransformValues) // table.go
	}
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", c.method, err)
	}
	return &pb.BuildResponse{Handle: Handle(h)}, nil
}

// OperationName is the operator's name in the protocol (snake_case), or ""
// when the request names none.
func OperationName(m *pb.BuildRequest) string {
	if m.Operation == nil {
		return ""
	}
	return string(m.ProtoReflect().WhichOneof(m.ProtoReflect().Descriptor().Oneofs().ByName("operation")).Name())
}

// call is one BuildRequest being applied: the builder, the session's
// functions, and the method every error names.
type call struct {
	b      *topology.Builder
	funcs  map[uint32]topology.Function
	method string
}

// refusal is an error of this package's own checks: its text is complete
// (it names the method), and it wraps topology.ErrNotFound or ErrInvalid.
type refusal struct {
	msg  string
	kind error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func (c *call) invalid(format string, args ...any) error {
	return &refusal{msg: c.method + ": " + fmt.Sprintf(format, args...), kind: topology.ErrInvalid}
}

func (c *call) notFound(format string, args ...any) error {
	return &refusal{msg: c.method + ": " + fmt.Sprintf(format, args...), kind: topology.ErrNotFound}
}

// fn resolves a host function's token.
func (c *call) fn(token uint32) (topology.Function, error) {
	f, ok := c.funcs[token]
	if !ok {
		return topology.Function{}, c.notFound("token %d is not registered in this session (RegisterFunction mints tokens)", token)
	}
	f.Token = token
	return f, nil
}

// readFn resolves the token of a function that returns a value or key
// only (role: "joiner", "reducer", ...): as in Kafka Streams its operator
// sets the output's timestamp and headers, so it may read record metadata
// (METADATA_READ) but one registered with METADATA_WRITE is refused.
func (c *call) readFn(token uint32, role string) (topology.Function, error) {
	f, err := c.fn(token)
	if err == nil && f.Metadata == topology.MetadataWrite {
		return topology.Function{}, c.invalid("the %s, token %d (%s), was registered with METADATA_WRITE, but a %s's operator sets its outputs' timestamp and headers itself (as in Kafka Streams): register it with METADATA_READ to read the record's metadata", role, token, f.Name, role)
	}
	return f, err
}

// tableFn refuses a table operator's function registered with
// METADATA_WRITE (readFn): a table's changes keep their timestamps.
func (c *call) tableFn(f topology.Function, role string) (topology.Function, error) {
	return c.readFn(f.Token, "table "+role)
}

// subtractor resolves a grouped table's subtractor token (0: none, which
// the builder refuses when one is needed); a grouped stream takes none.
func (c *call) subtractor(input uint64, token uint32) (topology.Function, error) {
	if token == 0 {
		return topology.Function{}, nil
	}
	if k, ok := c.b.Kind(input); ok && k != topology.KindGroupedTable {
		return topology.Function{}, c.invalid("subtractor token %d is for grouped tables, but handle %d is a %s", token, input, k)
	}
	return c.readFn(token, "subtractor")
}

// kind is the kind of an input handle (0 when it does not exist). Operators
// shared by streams and tables go to the table operator when their input
// is a table (or grouped table); the builder names a missing handle.
func (c *call) kind(input uint64) topology.Kind {
	k, _ := c.b.Kind(input)
	return k
}

// streamOnly refuses a table-only option on an input that is no table.
func (c *call) streamOnly(input uint64, m *pb.Materialized) error {
	if m != nil {
		return c.invalid("materialized is for tables, but handle %d is a %s", input, c.kind(input))
	}
	return nil
}

func versioned(v *pb.VersionedStore) *topology.Versioned {
	if v == nil {
		return nil
	}
	return &topology.Versioned{HistoryRetention: v.HistoryRetentionMs, SegmentInterval: v.SegmentIntervalMs}
}

func materialized(m *pb.Materialized) *topology.Materialized {
	if m == nil {
		return nil
	}
	return &topology.Materialized{StoreName: m.StoreName, KeySerde: m.KeySerde, ValueSerde: m.ValueSerde, ChangelogConfig: m.ChangelogConfig, Retention: m.RetentionMs, Versioned: versioned(m.Versioned)}
}

var kinds = map[topology.Kind]pb.Kind{
	topology.KindStream:        pb.Kind_KIND_STREAM,
	topology.KindGroupedStream: pb.Kind_KIND_GROUPED_STREAM,
	topology.KindTable:         pb.Kind_KIND_TABLE,
	topology.KindGroupedTable:  pb.Kind_KIND_GROUPED_TABLE,

	topology.KindWindowedStream:        pb.Kind_KIND_WINDOWED_STREAM,
	topology.KindSessionWindowedStream: pb.Kind_KIND_SESSION_WINDOWED_STREAM,
	topology.KindGlobalTable:           pb.Kind_KIND_GLOBAL_TABLE,

	topology.KindCogroupedStream:                pb.Kind_KIND_COGROUPED_STREAM,
	topology.KindWindowedCogroupedStream:        pb.Kind_KIND_WINDOWED_COGROUPED_STREAM,
	topology.KindSessionWindowedCogroupedStream: pb.Kind_KIND_SESSION_WINDOWED_COGROUPED_STREAM,
}

// Handle is a builder's handle as the protocol answers it (nil for none).
func Handle(h *topology.Handle) *pb.Handle {
	if h == nil {
		return nil
	}
	out := &pb.Handle{Id: h.ID, Kind: kinds[h.Kind], KeySerde: h.KeySerde, ValueSerde: h.ValueSerde}
	if h.Node != nil {
		out.Node = h.Node.Name
		if (h.Kind == topology.KindTable || h.Kind == topology.KindGlobalTable) && len(h.Node.Stores) == 1 {
			out.Store = h.Node.Stores[0]
		}
		if h.Kind == topology.KindTable && h.Node.Op == topology.OpCogroupMerge {
			out.Store = h.Node.Predecessors[0].Stores[0] // the cogroup's one store
		}
	}
	return out
}
