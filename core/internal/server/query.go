package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/runtime"
	"github.com/polystreams/polystreams/core/internal/state"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// maxQueryEntries bounds one Query answer.
const maxQueryEntries = 100_000

// Query answers interactive queries over a key-value store: get, range,
// prefix and all, over the store partitions this engine holds.
func (s *Server) Query(_ context.Context, req *connect.Request[pb.QueryRequest]) (*connect.Response[pb.QueryResponse], error) {
	m := req.Msg
	ss, err := s.session("Query", m.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	app := ss.app
	topo, terr := ss.builder.Topology()
	ss.mu.Unlock()
	if terr != nil {
		return nil, builderError("Query", terr)
	}
	st, ok := topo.Stores[m.Store]
	if !ok {
		names := make([]string, 0, len(topo.Stores))
		for n := range topo.Stores {
			names = append(names, n)
		}
		sort.Strings(names)
		known := "none"
		if len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("Query: store %q does not exist (stores: %s)", m.Store, known))
	}
	if app == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("Query: store %q is not queryable before Start: the topology is not running", m.Store))
	}
	limit := int(m.Limit)
	switch {
	case limit < 0 || limit > maxQueryEntries:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: limit %d is out of range (1..%d, or 0 for %d)", m.Limit, maxQueryEntries, maxQueryEntries))
	case limit == 0:
		limit = maxQueryEntries
	}
	parts, err := app.StorePartitions(m.Store)
	if err != nil {
		code := connect.CodeFailedPrecondition
		if !errors.Is(err, runtime.ErrNotQueryable) {
			code = connect.CodeNotFound
		}
		return nil, connect.NewError(code, fmt.Errorf("Query: %w", err))
	}
	type entry struct{ k, v []byte }
	var found []entry
	// Each partition contributes at most its first limit+1 keys: the first
	// limit keys overall are among them (and one more tells truncation).
	var taken int
	collect := func(k, v []byte, _ int64) error {
		found = append(found, entry{append([]byte(nil), k...), append([]byte(nil), v...)})
		if taken++; taken > limit {
			return state.ErrStop
		}
		return nil
	}
	for _, p := range parts {
		taken = 0
		var err error
		switch q := m.Query.(type) {
		case *pb.QueryRequest_Get:
			var v []byte
			if v, _, err = p.Get(q.Get); err == nil && v != nil {
				found = append(found, entry{q.Get, v})
			}
		case *pb.QueryRequest_Range:
			var upper []byte
			if q.Range.To != nil {
				upper = append(append([]byte(nil), q.Range.To...), 0) // inclusive: the next key after to
			}
			err = p.ScanRange(q.Range.From, upper, collect)
		case *pb.QueryRequest_Prefix:
			err = p.ScanRange(q.Prefix, prefixEnd(q.Prefix), collect)
		case *pb.QueryRequest_All:
			err = p.Scan(collect)
		default:
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("Query: the request names no query (get, range, prefix or all)"))
		}
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("Query: store %q partition %d: %w", m.Store, p.Number, err))
		}
	}
	sort.Slice(found, func(i, j int) bool { return bytes.Compare(found[i].k, found[j].k) < 0 })
	resp := &pb.QueryResponse{KeySerde: st.KeySerde, ValueSerde: st.ValueSerde}
	if len(found) > limit {
		found, resp.Truncated = found[:limit], true
	}
	for _, e := range found {
		resp.KeyLengths = append(resp.KeyLengths, int32(len(e.k)))
		resp.Keys = append(resp.Keys, e.k...)
		resp.ValueLengths = append(resp.ValueLengths, int32(len(e.v)))
		resp.Values = append(resp.Values, e.v...)
	}
	return connect.NewResponse(resp), nil
}

// prefixEnd is the first key after every key starting with p, or nil (open)
// when p is all 0xff.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
