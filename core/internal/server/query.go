package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// maxQueryEntries bounds one Query answer.
const maxQueryEntries = 100_000

// Query answers interactive queries over a key-value store: get, range,
// prefix and all, over the store partitions this engine holds.
func (s *Server) Query(ctx context.Context, req *connect.Request[pb.QueryRequest]) (*connect.Response[pb.QueryResponse], error) {
	m := req.Msg
	var ss *session
	var err error
	if m.SessionId == "" && m.ApplicationId != "" {
		ss, err = s.peerSession(m.ApplicationId, m.ApplicationServer)
	} else {
		ss, err = s.session("Query", m.SessionId)
	}
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
	_, windowQuery := m.Query.(*pb.QueryRequest_WindowFetch)
	_, versionedQuery := m.Query.(*pb.QueryRequest_VersionedGet)
	switch {
	case st.Kind == topology.StoreVersioned && !versionedQuery:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: store %q is a versioned store: query it with versioned_get (get, or get as of a time), not get, range, prefix, all or window_fetch", m.Store))
	case st.Kind != topology.StoreVersioned && versionedQuery:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: store %q is not a versioned store: versioned_get is for a table materialized as versioned", m.Store))
	case st.Kind == topology.StoreWindow && !windowQuery:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: store %q is a window store: query it with window_fetch (fetch / fetch_all), not get, range, prefix or all", m.Store))
	case st.Kind == topology.StoreKeyValue && windowQuery:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: store %q is a key-value store: window_fetch is for window stores", m.Store))
	case st.Kind != topology.StoreKeyValue && st.Kind != topology.StoreWindow && st.Kind != topology.StoreVersioned:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Query: store %q (a suppression buffer or session store) is not queryable", m.Store))
	}
	if app.ApplicationServer() != "" && !st.Global {
		resp, err := s.routedQuery(ctx, app, st, m, limit)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(resp), nil
	}
	// No application.server: this instance answers from what it holds.
	parts, err := app.StorePartitions(m.Store)
	if err != nil {
		return nil, notQueryable(err)
	}
	found, err := collectEntries(parts, st, m, limit)
	if err != nil {
		return nil, err
	}
	resp := queryAnswer(found, st, limit)
	for _, p := range parts {
		resp.Partitions = append(resp.Partitions, p.Number)
	}
	resp.ServedBy = []string{app.ApplicationServer()}
	return connect.NewResponse(resp), nil
}

func notQueryable(err error) error {
	code := connect.CodeFailedPrecondition
	if !errors.Is(err, engine.ErrNotQueryable) {
		code = connect.CodeNotFound
	}
	return connect.NewError(code, fmt.Errorf("Query: %w", err))
}

// entry is one answer row: a store key, its value and timestamp (a
// version's: validFrom, and validTo when a later version replaced it).
type entry struct {
	k, v    []byte
	ts      int64
	validTo *int64
}

// collectEntries runs the query m over the store partitions parts: each
// contributes at most its first limit+1 keys (the first limit keys overall
// are among them, and one more tells truncation).
func collectEntries(parts []*state.Partition, st *topology.Store, m *pb.QueryRequest, limit int) ([]entry, error) {
	var found []entry
	var taken int
	collect := func(k, v []byte, ts int64) error {
		found = append(found, entry{k: append([]byte(nil), k...), v: append([]byte(nil), v...), ts: ts})
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
			var ts int64
			if v, ts, err = p.Get(q.Get); err == nil && v != nil {
				found = append(found, entry{k: q.Get, v: v, ts: ts})
			}
		case *pb.QueryRequest_Range:
			err = p.ScanRange(q.Range.From, state.UpperBound(q.Range.To), collect)
		case *pb.QueryRequest_Prefix:
			err = p.ScanRange(q.Prefix, state.PrefixEnd(q.Prefix), collect)
		case *pb.QueryRequest_All:
			err = p.Scan(collect)
		case *pb.QueryRequest_WindowFetch:
			err = engine.FetchWindows(p, st, q.WindowFetch.Key, q.WindowFetch.FromMs, q.WindowFetch.ToMs, collect)
		case *pb.QueryRequest_VersionedGet:
			g := q.VersionedGet
			var v state.Version
			var ok bool
			if v, ok, err = p.GetVersion(g.Key, g.AsOfMs == nil, g.GetAsOfMs(), st.Versioned.HistoryRetention); err == nil && ok {
				e := entry{k: g.Key, v: v.Value, ts: v.ValidFrom}
				if !v.Latest {
					e.validTo = &v.ValidTo
				}
				found = append(found, e)
			}
		default:
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("Query: the request names no query (get, range, prefix or all)"))
		}
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("Query: store %q partition %d: %w", st.Name, p.Number, err))
		}
	}
	return found, nil
}

// queryAnswer puts found in key order (window stores' keys are start ‖ key: in
// time order), cut to limit, into a QueryResponse.
func queryAnswer(found []entry, st *topology.Store, limit int) *pb.QueryResponse {
	sort.SliceStable(found, func(i, j int) bool { return bytes.Compare(found[i].k, found[j].k) < 0 })
	resp := &pb.QueryResponse{KeySerde: st.KeySerde, ValueSerde: st.ValueSerde}
	if len(found) > limit {
		found, resp.Truncated = found[:limit], true
	}
	if st.Kind == topology.StoreWindow {
		resp.KeySerde = st.Windows.KeySerde(st.KeySerde)
		for i, e := range found {
			start := int64(binary.BigEndian.Uint64(e.k))
			found[i].k = serde.AppendTimeWindowed(nil, e.k[8:], start)
		}
	}
	for _, e := range found {
		resp.KeyLengths = append(resp.KeyLengths, int32(len(e.k)))
		resp.Keys = append(resp.Keys, e.k...)
		resp.ValueLengths = append(resp.ValueLengths, int32(len(e.v)))
		resp.Values = append(resp.Values, e.v...)
		resp.Timestamps = append(resp.Timestamps, e.ts)
		if e.validTo != nil {
			resp.ValidToMs = e.validTo
		}
	}
	return resp
}
