package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Interactive queries across instances (docs/design/interactive-queries.md):
// an instance with an application.server answers a query through whichever
// engine the SDK is attached to. A key's query goes to the instance holding
// the key's partition (this one, or another engine called on its
// application.server with the engine's token); a range, prefix, all or
// fetch_all goes to every instance holding the store, each answering for
// its active partitions, merged in key order. A partition that is not where
// the last assignment put it, or still restoring, fails the query with
// CodeUnavailable naming store, key and partition: the group is
// rebalancing and the query may be retried.

// peerSession finds the session running appID whose application.server is
// server: the target of a query another engine forwarded.
func (s *Server) peerSession(appID, server string) (*session, error) {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.mu.Lock()
		app := ss.app
		ss.mu.Unlock()
		if ss.appID == appID && app != nil && app.ApplicationServer() == server {
			return ss, nil
		}
	}
	return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("Query: application %s has no running instance with application.server %s on this engine (stopped, or not started yet): retry",
		quoteBounded(appID, 64), quoteBounded(server, 64)))
}

// peer is a client of the engine at endpoint (another instance's
// application.server), carrying this engine's token.
func (s *Server) peer(endpoint string) polystreamsv1alpha1connect.EngineServiceClient {
	scheme := s.opts.PeerScheme
	if scheme == "" {
		scheme = "http"
	}
	var opts []connect.ClientOption
	if s.opts.PeerToken != "" {
		opts = append(opts, connect.WithInterceptors(bearer(s.opts.PeerToken)))
	}
	return polystreamsv1alpha1connect.NewEngineServiceClient(s.peers, scheme+"://"+endpoint, opts...)
}

// bearer sets "Authorization: Bearer <token>" on every request.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// queryKey is the key a query targets: a get's, or a window fetch's of
// one key; nil for scans.
func queryKey(m *pb.QueryRequest) []byte {
	switch q := m.Query.(type) {
	case *pb.QueryRequest_Get:
		return q.Get
	case *pb.QueryRequest_WindowFetch:
		return q.WindowFetch.Key
	case *pb.QueryRequest_VersionedGet:
		return q.VersionedGet.Key
	}
	return nil
}

// rebalancing is the retriable error of a partition not where it should be.
func rebalancing(st *topology.Store, key []byte, partition int32, why string) error {
	what := fmt.Sprintf("store %q partition %d", st.Name, partition)
	if key != nil {
		what = fmt.Sprintf("store %q key %s (partition %d)", st.Name, quoteBounded(string(key), 64), partition)
	}
	return connect.NewError(connect.CodeUnavailable, fmt.Errorf("Query: %s is not queryable here now: %s (the group is rebalancing, or an instance is unreachable): retry", what, why))
}

// routedQuery answers m for an instance with an application.server.
func (s *Server) routedQuery(ctx context.Context, app *engine.App, st *topology.Store, m *pb.QueryRequest, limit int) (*pb.QueryResponse, error) {
	self := app.ApplicationServer()
	active, standby, err := app.QueryPartitions(st.Name, m.EnableStaleStores)
	if err != nil {
		return nil, notQueryable(err)
	}
	if key := queryKey(m); key != nil {
		part, err := app.KeyPartition(st.Name, key)
		if err != nil {
			return nil, rebalancing(st, key, -1, err.Error())
		}
		local := func() (*pb.QueryResponse, error) {
			p, fromStandby := active[part], false
			if p == nil {
				p, fromStandby = standby[part], true
			}
			if p == nil {
				return nil, nil
			}
			found, err := collectEntries([]*state.Partition{p}, st, m, limit)
			if err != nil {
				return nil, err
			}
			resp := queryAnswer(found, st, limit)
			resp.Partition, resp.Partitions, resp.FromStandby, resp.ServedBy = &part, []int32{part}, fromStandby, []string{self}
			return resp, nil
		}
		if _, ok := active[part]; ok || m.LocalOnly {
			resp, err := local()
			if err == nil && resp == nil {
				err = rebalancing(st, key, part, "this instance ("+self+") holds it neither active nor, with stale stores enabled, as a standby")
			}
			return resp, err
		}
		md, err := app.QueryMetadataForKey(st.Name, key)
		if err != nil {
			return nil, rebalancing(st, key, part, err.Error())
		}
		var tried []string
		if a := md.Active.String(); md.Active.Port != 0 && a != self {
			resp, err := s.forward(ctx, app, a, m, false)
			if err == nil {
				return resp, nil
			}
			if !m.EnableStaleStores {
				if connect.CodeOf(err) == connect.CodeUnavailable {
					return nil, rebalancing(st, key, part, "its active instance does not answer ("+err.Error()+"); with stale stores enabled a standby would")
				}
				return nil, err
			}
			tried = append(tried, a+": "+err.Error())
		}
		if m.EnableStaleStores {
			if resp, err := local(); resp != nil || err != nil {
				return resp, err
			}
			for _, h := range md.Standbys {
				if h.String() == self {
					continue
				}
				resp, err := s.forward(ctx, app, h.String(), m, true)
				if err == nil {
					return resp, nil
				}
				tried = append(tried, h.String()+": "+err.Error())
			}
		}
		why := "no instance holds it active"
		if md.Active.Port != 0 {
			why = "its active instance " + md.Active.String() + " does not answer for it"
		}
		if len(tried) > 0 {
			why += " (tried " + strings.Join(tried, "; ") + ")"
		}
		return nil, rebalancing(st, key, part, why)
	}
	// A scan: this instance's active partitions, and every other
	// instance's, each once.
	var found []entry
	var covered []int32
	var servedBy []string
	var parts []*state.Partition
	for n, p := range active {
		parts = append(parts, p)
		covered = append(covered, n)
	}
	if len(parts) > 0 {
		f, err := collectEntries(parts, st, m, limit)
		if err != nil {
			return nil, err
		}
		found, servedBy = append(found, f...), append(servedBy, self)
	}
	truncated := false
	if !m.LocalOnly {
		mds, err := app.AllMetadata(st.Name)
		if err != nil {
			return nil, notQueryable(err)
		}
		for _, md := range mds {
			h := md.Host.String()
			if h == self || !slices.Contains(md.StateStores, st.Name) {
				continue
			}
			resp, err := s.forward(ctx, app, h, m, false)
			if err != nil {
				return nil, err
			}
			found = append(found, entriesOf(resp, st)...)
			covered = append(covered, resp.Partitions...)
			servedBy = append(servedBy, h)
			truncated = truncated || resp.Truncated
		}
		// Every partition must have answered once.
		n := app.PartitionCount(st.Name)
		slices.Sort(covered)
		for p := range n {
			if _, ok := slices.BinarySearch(covered, p); !ok {
				if sp := standby[p]; sp != nil {
					f, err := collectEntries([]*state.Partition{sp}, st, m, limit)
					if err != nil {
						return nil, err
					}
					found = append(found, f...)
					covered = append(covered, p)
					continue
				}
				return nil, rebalancing(st, nil, p, "no instance answered for it")
			}
		}
		slices.Sort(covered)
		if len(slices.Compact(slices.Clone(covered))) != len(covered) {
			return nil, rebalancing(st, nil, -1, fmt.Sprintf("partitions %v answered more than once", covered))
		}
	}
	resp := queryAnswer(found, st, limit)
	resp.Truncated = resp.Truncated || truncated
	slices.Sort(covered)
	resp.Partitions, resp.ServedBy = covered, servedBy
	for _, n := range covered {
		if _, ok := active[n]; !ok && standby[n] != nil {
			resp.FromStandby = true
		}
	}
	return resp, nil
}

// peerTimeout bounds one forwarded query: an instance that does not answer
// within it counts as unreachable (Unavailable, retriable).
const peerTimeout = 10 * time.Second

// forward asks the instance at endpoint to answer m from its own store
// partitions (local_only), stale ones too when stale.
func (s *Server) forward(ctx context.Context, app *engine.App, endpoint string, m *pb.QueryRequest, stale bool) (*pb.QueryResponse, error) {
	fm := &pb.QueryRequest{Store: m.Store, Query: m.Query, Limit: m.Limit, EnableStaleStores: stale || m.EnableStaleStores && m.LocalOnly,
		LocalOnly: true, ApplicationId: app.ApplicationID(), ApplicationServer: endpoint}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	resp, err := s.peer(endpoint).Query(ctx, connect.NewRequest(fm))
	if err != nil {
		var ce *connect.Error
		// The instance's own answers keep their code; anything else (a
		// connection refused or reset, a timeout) is Unavailable.
		if errors.As(err, &ce) && slices.Contains(peerCodes, ce.Code()) {
			return nil, connect.NewError(ce.Code(), fmt.Errorf("Query: instance %s: %s", endpoint, ce.Message()))
		}
		return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("Query: instance %s: %w", endpoint, err))
	}
	return resp.Msg, nil
}

// peerCodes are the codes another engine's refusal keeps when forwarded.
var peerCodes = []connect.Code{connect.CodeNotFound, connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeInternal,
	connect.CodeResourceExhausted, connect.CodeUnauthenticated, connect.CodePermissionDenied}

// entriesOf reads a forwarded answer back into entries (window stores:
// back to start ‖ key, as queryAnswer expects).
func entriesOf(r *pb.QueryResponse, st *topology.Store) []entry {
	var out []entry
	var ko, vo int
	for i := range r.KeyLengths {
		k := r.Keys[ko : ko+int(r.KeyLengths[i])]
		v := r.Values[vo : vo+int(r.ValueLengths[i])]
		ko, vo = ko+int(r.KeyLengths[i]), vo+int(r.ValueLengths[i])
		var ts int64
		if i < len(r.Timestamps) {
			ts = r.Timestamps[i]
		}
		if st.Kind == topology.StoreWindow && len(k) >= 8 {
			inner := k[:len(k)-8]
			k = append(slices.Clone(k[len(k)-8:]), inner...)
		}
		e := entry{k: k, v: v, ts: ts}
		if len(r.KeyLengths) == 1 {
			e.validTo = r.ValidToMs
		}
		out = append(out, e)
	}
	return out
}

// startedApp is the running application of a session, for metadata calls.
func (s *Server) startedApp(method, sessionID string) (*engine.App, error) {
	ss, err := s.session(method, sessionID)
	if err != nil {
		return nil, err
	}
	if ss.test != nil {
		// No group, no assignment, no other instance: the metadata would
		// say "rebalancing" for ever (TopologyTestDriver has none either).
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: a test driver session has no instances to describe (as TopologyTestDriver); read its stores with Query", method))
	}
	ss.mu.Lock()
	app := ss.app
	ss.mu.Unlock()
	if app == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: the application is not started: its metadata comes with the group's assignment", method))
	}
	return app, nil
}

func hostPB(h engine.HostInfo) *pb.HostInfo { return &pb.HostInfo{Host: h.Host, Port: int32(h.Port)} }

// QueryMetadataForKey answers KafkaStreams.queryMetadataForKey.
func (s *Server) QueryMetadataForKey(_ context.Context, req *connect.Request[pb.QueryMetadataForKeyRequest]) (*connect.Response[pb.QueryMetadataForKeyResponse], error) {
	m := req.Msg
	app, err := s.startedApp("QueryMetadataForKey", m.SessionId)
	if err != nil {
		return nil, err
	}
	md, err := app.QueryMetadataForKey(m.Store, m.Key)
	switch {
	case errors.Is(err, engine.ErrRebalancing):
		return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("QueryMetadataForKey: store %q: %w: retry", m.Store, err))
	case err != nil:
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("QueryMetadataForKey: %w", err))
	}
	resp := &pb.QueryMetadataForKeyResponse{Partition: md.Partition}
	if md.Active.Port != 0 {
		resp.ActiveHost = hostPB(md.Active)
	}
	for _, h := range md.Standbys {
		resp.StandbyHosts = append(resp.StandbyHosts, hostPB(h))
	}
	return connect.NewResponse(resp), nil
}

// StreamsMetadata answers metadataForAllStreamsClients (no store) and
// streamsMetadataForStore.
func (s *Server) StreamsMetadata(_ context.Context, req *connect.Request[pb.StreamsMetadataRequest]) (*connect.Response[pb.StreamsMetadataResponse], error) {
	m := req.Msg
	app, err := s.startedApp("StreamsMetadata", m.SessionId)
	if err != nil {
		return nil, err
	}
	mds, err := app.AllMetadata(m.Store)
	if err != nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("StreamsMetadata: %w", err))
	}
	tps := func(in []engine.TopicPartition) []*pb.TopicPartition {
		var out []*pb.TopicPartition
		for _, tp := range in {
			out = append(out, &pb.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
		}
		return out
	}
	resp := &pb.StreamsMetadataResponse{LocalHost: app.ApplicationServer()}
	for _, md := range mds {
		resp.Metadata = append(resp.Metadata, &pb.StreamsMetadata{HostInfo: hostPB(md.Host), StateStoreNames: md.StateStores,
			TopicPartitions: tps(md.TopicPartitions), StandbyStateStoreNames: md.StandbyStateStores, StandbyTopicPartitions: tps(md.StandbyTopicPartitions)})
	}
	return connect.NewResponse(resp), nil
}
