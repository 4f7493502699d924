package server

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

var kinds = map[topology.Kind]pb.Kind{
	topology.KindStream:        pb.Kind_KIND_STREAM,
	topology.KindGroupedStream: pb.Kind_KIND_GROUPED_STREAM,
	topology.KindTable:         pb.Kind_KIND_TABLE,
	topology.KindGroupedTable:  pb.Kind_KIND_GROUPED_TABLE,

	topology.KindWindowedStream:        pb.Kind_KIND_WINDOWED_STREAM,
	topology.KindSessionWindowedStream: pb.Kind_KIND_SESSION_WINDOWED_STREAM,
	topology.KindGlobalTable:           pb.Kind_KIND_GLOBAL_TABLE,
}

func handleProto(h *topology.Handle) *pb.Handle {
	if h == nil {
		return nil
	}
	out := &pb.Handle{Id: h.ID, Kind: kinds[h.Kind], KeySerde: h.KeySerde, ValueSerde: h.ValueSerde}
	if h.Node != nil {
		out.Node = h.Node.Name
		if (h.Kind == topology.KindTable || h.Kind == topology.KindGlobalTable) && len(h.Node.Stores) == 1 {
			out.Store = h.Node.Stores[0]
		}
	}
	return out
}

// Build applies one operator. Everything is checked before the builder is
// touched, and the builder itself changes nothing on a refused call.
func (s *Server) Build(_ context.Context, req *connect.Request[pb.BuildRequest]) (*connect.Response[pb.BuildResponse], error) {
	m := req.Msg
	ss, err := s.session("Build", m.SessionId)
	if err != nil {
		return nil, err
	}
	op := operationName(m)
	method := "Build(" + op + ")"
	if op == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("Build: the request names no operation"))
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return nil, errStopped(method)
	}
	if ss.app != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: the topology is started; builder calls are refused after Start", method))
	}
	// subtractor resolves a grouped table's subtractor token (0: none, which
	// the builder refuses when one is needed); a grouped stream takes none.
	var subtractor func(input uint64, token uint32) (topology.Function, error)
	fn := func(token uint32) (topology.Function, error) {
		name, ok := ss.funcs[token]
		if !ok {
			return topology.Function{}, connect.NewError(connect.CodeNotFound, fmt.Errorf("%s: token %d is not registered in this session (RegisterFunction mints tokens)", method, token))
		}
		return topology.Function{Token: token, Name: name}, nil
	}
	subtractor = func(input uint64, token uint32) (topology.Function, error) {
		if token == 0 {
			return topology.Function{}, nil
		}
		if k, ok := ss.builder.Kind(input); ok && k != topology.KindGroupedTable {
			return topology.Function{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: subtractor token %d is for grouped tables, but handle %d is a %s", method, token, input, k))
		}
		return fn(token)
	}
	b := ss.builder
	// Operators shared by streams and tables go to the table operator when
	// their input is a table (or grouped table); the builder names a
	// missing handle. Options that only tables take are refused on streams.
	kind := func(input uint64) topology.Kind {
		k, _ := b.Kind(input)
		return k
	}
	// streamOnly refuses a table-only option on an input that is no table.
	streamOnly := func(input uint64, m *pb.Materialized) error {
		if m != nil {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: materialized is for tables, but handle %d is a %s", method, input, kind(input)))
		}
		return nil
	}
	var h *topology.Handle
	switch o := m.Operation.(type) {
	case *pb.BuildRequest_Stream:
		v := o.Stream
		h, err = b.Stream(topology.StreamOptions{Topics: v.Topics, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name})
	case *pb.BuildRequest_Table:
		v := o.Table
		h, err = b.Table(topology.TableOptions{Topic: v.Topic, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name, Materialized: materialized(v.Materialized)})
	case *pb.BuildRequest_MapValues:
		v := o.MapValues
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			switch {
			case kind(v.Input) == topology.KindTable && v.WithKey:
				err = connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: map_values with_key (token %d) is for streams, but handle %d is a table", method, v.Token, v.Input))
			case kind(v.Input) == topology.KindTable:
				h, err = b.TableMapValues(v.Input, f, v.ValueSerde, materialized(v.Materialized), v.Name)
			case v.WithKey:
				if err = streamOnly(v.Input, v.Materialized); err == nil {
					h, err = b.MapValuesWithKey(v.Input, f, v.ValueSerde, v.Name)
				}
			default:
				if err = streamOnly(v.Input, v.Materialized); err == nil {
					h, err = b.MapValues(v.Input, f, v.ValueSerde, v.Name)
				}
			}
		}
	case *pb.BuildRequest_Filter:
		v := o.Filter
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			if kind(v.Input) == topology.KindTable {
				h, err = b.TableFilter(v.Input, f, materialized(v.Materialized), v.Name)
			} else if err = streamOnly(v.Input, v.Materialized); err == nil {
				h, err = b.Filter(v.Input, f, v.Name)
			}
		}
	case *pb.BuildRequest_FilterNot:
		v := o.FilterNot
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			if kind(v.Input) == topology.KindTable {
				h, err = b.TableFilterNot(v.Input, f, materialized(v.Materialized), v.Name)
			} else if err = streamOnly(v.Input, v.Materialized); err == nil {
				h, err = b.FilterNot(v.Input, f, v.Name)
			}
		}
	case *pb.BuildRequest_FlatMapValues:
		v := o.FlatMapValues
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			if v.WithKey {
				h, err = b.FlatMapValuesWithKey(v.Input, f, v.ValueSerde, v.Name)
			} else {
				h, err = b.FlatMapValues(v.Input, f, v.ValueSerde, v.Name)
			}
		}
	case *pb.BuildRequest_FlatMap:
		v := o.FlatMap
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			h, err = b.FlatMap(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
		}
	case *pb.BuildRequest_Map:
		v := o.Map
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			h, err = b.Map(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
		}
	case *pb.BuildRequest_SelectKey:
		v := o.SelectKey
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			h, err = b.SelectKey(v.Input, f, v.KeySerde, v.Name)
		}
	case *pb.BuildRequest_Peek:
		v := o.Peek
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			h, err = b.Peek(v.Input, f, v.Name)
		}
	case *pb.BuildRequest_Foreach:
		v := o.Foreach
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			err = b.Foreach(v.Input, f, v.Name)
		}
	case *pb.BuildRequest_GroupByKey:
		v := o.GroupByKey
		h, err = b.GroupByKey(v.Input, v.KeySerde, v.ValueSerde, v.Name)
	case *pb.BuildRequest_GroupBy:
		v := o.GroupBy
		var f topology.Function
		if f, err = fn(v.Token); err == nil {
			if kind(v.Input) == topology.KindTable {
				h, err = b.TableGroupBy(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
			} else {
				h, err = b.GroupBy(v.Input, f, v.KeySerde, v.ValueSerde, v.Name)
			}
		}
	case *pb.BuildRequest_Count:
		v := o.Count
		if kind(v.Input) == topology.KindGroupedTable {
			h, err = b.TableCount(v.Input, materialized(v.Materialized), v.Name)
		} else {
			h, err = b.Count(v.Input, materialized(v.Materialized), v.Name)
		}
	case *pb.BuildRequest_Reduce:
		v := o.Reduce
		var f topology.Function
		switch {
		case v.Token != 0 && v.Builtin != pb.Reducer_REDUCER_UNSPECIFIED:
			err = connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: names both token %d and built-in %v; give one", method, v.Token, v.Builtin))
		case v.Builtin != pb.Reducer_REDUCER_UNSPECIFIED:
			name, ok := builtinReducers[v.Builtin]
			if !ok {
				err = connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: built-in reducer %d is not known", method, v.Builtin))
			}
			f = topology.Function{Builtin: name, Name: name}
		default:
			f, err = fn(v.Token)
		}
		var sub topology.Function
		if err == nil {
			sub, err = subtractor(v.Input, v.SubtractorToken)
		}
		if err == nil {
			if kind(v.Input) == topology.KindGroupedTable {
				h, err = b.TableReduce(v.Input, f, sub, materialized(v.Materialized), v.Name)
			} else {
				h, err = b.Reduce(v.Input, f, materialized(v.Materialized), v.Name)
			}
		}
	case *pb.BuildRequest_Aggregate:
		v := o.Aggregate
		var init, agg, sub topology.Function
		if init, err = fn(v.InitializerToken); err == nil {
			if agg, err = fn(v.AggregatorToken); err == nil {
				if sub, err = subtractor(v.Input, v.SubtractorToken); err == nil {
					switch {
					case kind(v.Input) == topology.KindGroupedTable:
						h, err = b.TableAggregate(v.Input, init, agg, sub, materialized(v.Materialized), v.Name)
					case v.MergerToken != 0:
						var merger topology.Function
						if merger, err = fn(v.MergerToken); err == nil {
							h, err = b.AggregateSessions(v.Input, init, agg, merger, materialized(v.Materialized), v.Name)
						}
					default:
						h, err = b.Aggregate(v.Input, init, agg, materialized(v.Materialized), v.Name)
					}
				}
			}
		}
	case *pb.BuildRequest_WindowedBy:
		v := o.WindowedBy
		var w topology.Windows
		switch ws := v.Windows.(type) {
		case *pb.WindowedByOp_Time:
			w = topology.Windows{Kind: topology.TimeWindows, Size: ws.Time.SizeMs, Advance: ws.Time.AdvanceMs, Grace: ws.Time.GraceMs}
		case *pb.WindowedByOp_Sliding:
			w = topology.Windows{Kind: topology.SlidingWindows, Size: ws.Sliding.TimeDifferenceMs, Grace: ws.Sliding.GraceMs}
		case *pb.WindowedByOp_Session:
			w = topology.Windows{Kind: topology.SessionWindows, Size: ws.Session.InactivityGapMs, Grace: ws.Session.GraceMs}
		}
		h, err = b.WindowedBy(v.Input, w)
	case *pb.BuildRequest_EmitStrategy:
		v := o.EmitStrategy
		switch v.Strategy {
		case pb.EmitStrategy_EMIT_STRATEGY_UNSPECIFIED, pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_UPDATE:
			h, err = b.EmitStrategy(v.Input, false)
		case pb.EmitStrategy_EMIT_STRATEGY_ON_WINDOW_CLOSE:
			h, err = b.EmitStrategy(v.Input, true)
		default:
			err = fmt.Errorf("topology: emit_strategy names strategy %d, which does not exist (on_window_update or on_window_close): %w", v.Strategy, topology.ErrInvalid)
		}
	case *pb.BuildRequest_ToTable:
		v := o.ToTable
		h, err = b.ToTable(v.Input, v.Name, materialized(v.Materialized))
	case *pb.BuildRequest_Suppress:
		v := o.Suppress
		h, err = b.Suppress(v.Input, v.Name)
	case *pb.BuildRequest_ToStream:
		v := o.ToStream
		h, err = b.ToStream(v.Input, v.Name)
	case *pb.BuildRequest_To:
		v := o.To
		err = b.To(v.Input, v.Topic, v.KeySerde, v.ValueSerde, v.Name)
	case *pb.BuildRequest_GlobalTable:
		h, err = globalTable(b, o.GlobalTable) // global.go
	case *pb.BuildRequest_Join:
		v := o.Join
		switch {
		case v.ForeignKeyToken != 0:
			h, err = foreignKeyJoin(b, method, v, fn) // join_fk.go
		case isGlobalJoin(b, v):
			h, err = globalJoin(b, method, v, fn) // global.go
		default:
			var f topology.Function
			if f, err = joiner(method, v, fn); err == nil {
				h, err = join(b, method, v, f) // join_table.go
			}
		}
	case *pb.BuildRequest_Merge:
		v := o.Merge
		h, err = b.Merge(v.Input, v.Other, v.Name)
	case *pb.BuildRequest_Repartition:
		v := o.Repartition
		h, err = b.Repartition(v.Input, v.Name, v.Partitions)
	case *pb.BuildRequest_Split:
		v := o.Split
		var branches []topology.Branch
		for _, br := range v.Branches {
			f, ferr := fn(br.PredicateToken)
			if ferr != nil {
				err = ferr // names the token
				break
			}
			branches = append(branches, topology.Branch{Predicate: f, Name: br.Name})
		}
		if err == nil {
			var hs []*topology.Handle
			if hs, err = b.Split(v.Input, v.Name, branches, v.DefaultBranch, v.DefaultName); err == nil {
				resp := &pb.BuildResponse{}
				for _, h := range hs {
					resp.Branches = append(resp.Branches, handleProto(h))
				}
				return connect.NewResponse(resp), nil
			}
		}
	}
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, builderError(method, err)
	}
	return connect.NewResponse(&pb.BuildResponse{Handle: handleProto(h)}), nil
}

var builtinReducers = map[pb.Reducer]string{
	pb.Reducer_REDUCER_SUM:    topology.BuiltinSum,
	pb.Reducer_REDUCER_MIN:    topology.BuiltinMin,
	pb.Reducer_REDUCER_MAX:    topology.BuiltinMax,
	pb.Reducer_REDUCER_LATEST: topology.BuiltinLatest,
}

func materialized(m *pb.Materialized) *topology.Materialized {
	if m == nil {
		return nil
	}
	return &topology.Materialized{StoreName: m.StoreName, KeySerde: m.KeySerde, ValueSerde: m.ValueSerde, ChangelogConfig: m.ChangelogConfig, Retention: m.RetentionMs}
}

// operationName is the operator's name in the protocol (snake_case).
func operationName(m *pb.BuildRequest) string {
	if m.Operation == nil {
		return ""
	}
	return string(m.ProtoReflect().WhichOneof(m.ProtoReflect().Descriptor().Oneofs().ByName("operation")).Name())
}
