// Package server serves the v1alpha1 handle protocol over Connect: sessions,
// builder calls, describe, start/stop and the data plane. It is the one place
// where errors get their Connect codes.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/observe/logging"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
	"github.com/polystreams/polystreams/core/internal/topology/frompb"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Options configure a Server.
type Options struct {
	// Brokers is the bootstrap.servers of sessions that name none.
	Brokers string
	// StateDir overrides the default state.dir of sessions that name none.
	StateDir string
	// SessionTimeout: a started session with no Exchange for this long is
	// stopped and closed (its host is gone); default 60s. An unstarted one
	// lives 10 times as long.
	SessionTimeout time.Duration
	// HostTimeout: bundles held by a worker silent this long are handed out
	// again; default 30s.
	HostTimeout time.Duration
	Logger      *slog.Logger
	// Recent holds the logger's recent warnings and errors, for /ui; nil
	// shows none.
	Recent *logging.Recent
	// Version is the engine's version, for /metrics and /ui.
	Version string
	// MetricsDisabled sets polystreams.metrics.enabled=false for sessions
	// that do not set it (the engine's --metrics=false).
	MetricsDisabled bool
	// MaxRequestBytes bounds one request message, overriding the default
	// DefaultMaxRequestBytes; a larger one is refused with
	// CodeResourceExhausted ("message size N is larger than configured max
	// M"). A body whose Content-Length says more is refused before a byte
	// of it is read; one without is cut off as it streams past the bound.
	MaxRequestBytes int
	// Embedded says Brokers is the engine's embedded broker (polystreams
	// dev). Sessions that name no bootstrap.servers of their own then
	// create the topics their topology reads or writes when missing
	// (config.App.CreateMissingTopics), and commit every
	// DevCommitInterval unless commit.interval.ms is set (under
	// exactly_once_v2 its default, 100 ms, is shorter already): results
	// show in about a second, not Kafka Streams' 30 s.
	Embedded bool
	// BrokerWait, when not nil, sets polystreams.broker.wait.ms for
	// sessions that do not set it (the engine's --broker-wait; 0 fails a
	// start at once when no broker answers); nil keeps the runtime's
	// default, config.DefaultBrokerWait.
	BrokerWait *time.Duration
	// MaxSessions bounds the sessions open at once, overriding the default
	// DefaultMaxSessions; OpenSession beyond it is refused with
	// CodeResourceExhausted.
	MaxSessions int
	// MaxCacheBytes bounds one application's record cache
	// (statestore.cache.max.bytes), overriding the default
	// DefaultMaxCacheBytes; a session asking for more is refused with
	// CodeInvalidArgument.
	MaxCacheBytes int64
	// MaxAppMemory is polystreams.memory.max.bytes of sessions that set
	// none, and the most a session may set (a session asking for more is
	// refused with CodeInvalidArgument); default
	// config.DefaultMemoryMaxBytes. What the engine holds in memory for
	// one application (engine/budget.go).
	MaxAppMemory int64
	// PeerToken is the bearer token this engine sends when it forwards an
	// interactive query to another instance's engine (its
	// application.server): the engine's own token, the one every engine of
	// the application shares. Empty sends none.
	PeerToken string
	// PeerScheme is how other engines are reached: "http" (the default)
	// or "https" (engines serving TLS).
	PeerScheme string
	// PeerTLS is the TLS configuration for https to other engines: the
	// roots their certificates chain to (nil: the system's) and the client
	// certificate presented to engines that verify one. Nil: the system's
	// roots and no client certificate.
	PeerTLS *tls.Config
}

// DevCommitInterval is commit.interval.ms of sessions on the embedded
// broker that set none (Options.Embedded), under at_least_once.
const DevCommitInterval = "1000"

// DefaultMaxCacheBytes bounds one application's statestore.cache.max.bytes
// unless Options.MaxCacheBytes says otherwise: 1 GiB, a hundred times Kafka
// Streams' default of 10 MiB. Kafka Streams has no bound (one JVM, one
// application); an engine that several applications share must not let
// one of them claim its memory.
const DefaultMaxCacheBytes = 1 << 30

// DefaultMaxSessions bounds the sessions of one engine unless
// Options.MaxSessions says otherwise. Each session is an application with
// its own Kafka clients and stores.
const DefaultMaxSessions = 64

// Server implements polystreamsv1alpha1connect.EngineServiceHandler. Safe
// for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex // guards sessions
	sessions map[string]*session

	stop chan struct{}
	once sync.Once
	// peers reaches other instances' engines (Options.PeerTLS).
	peers *http.Client
	// started is when the server was made (uptime, for /ui).
	started time.Time
}

var _ polystreamsv1alpha1connect.EngineServiceHandler = (*Server)(nil)

// New makes a Server; Handler serves it.
func New(o Options) *Server {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 60 * time.Second
	}
	if o.HostTimeout <= 0 {
		o.HostTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxCacheBytes <= 0 {
		o.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if o.MaxAppMemory <= 0 {
		o.MaxAppMemory = config.DefaultMemoryMaxBytes
	}
	s := &Server{opts: o, log: o.Logger, sessions: map[string]*session{}, stop: make(chan struct{}), started: time.Now(), peers: http.DefaultClient}
	if o.PeerTLS != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = o.PeerTLS.Clone()
		s.peers = &http.Client{Transport: t}
	}
	go s.janitor()
	return s
}

// Handler returns the Connect handler and the path it serves.
func (s *Server) Handler() (string, http.Handler) {
	opts := append(jsonCodecs(), connect.WithReadMaxBytes(s.opts.MaxRequestBytes), connect.WithInterceptors(boundErrors{}))
	path, h := polystreamsv1alpha1connect.NewEngineServiceHandler(s, opts...)
	return path, limitBody(s.opts.MaxRequestBytes, h)
}

// Close stops every session (committing what they processed).
func (s *Server) Close(ctx context.Context) {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for id, ss := range s.sessions {
		all = append(all, ss)
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.close(ctx)
	}
}

// session is one application's builder and runtime.
//
// Its id is the capability to control it: 128 random bits, answered only
// to the client that opened the session, and required by every call on it.
// Nothing else the engine says (logs, /ui, /metrics, errors about other
// sessions) contains it; they name the session by its label
// (docs/design/isolation.md).
type session struct {
	id       string
	label    string // sessionLabel(id): names the session where id must not show
	appID    string
	cfg      config.App
	lastSeen atomic.Int64 // unix nanos of the last call
	dispatch *dispatcher
	// ended: Stop was called. An ended session stays known until it
	// expires (calls answer STATE_STOPPED) but holds no application, so it
	// does not count toward Options.MaxSessions.
	ended atomic.Bool

	mu        sync.Mutex // guards builder, funcs, nextToken, app, stopped, reported, paused
	stopped   bool       // by Stop: calls answer STATE_STOPPED until it expires
	builder   *topology.Builder
	funcs     map[uint32]topology.Function // token -> display name and metadata
	nextToken uint32
	app       *engine.App
	// paused: PauseProcessing came and no ResumeProcessing since; Start
	// starts the application paused.
	paused bool
	// reported: per worker, the index (in app.Changes) of the next state
	// change to report to it. Each worker hears of every change once, in
	// order, however short the state lasted.
	reported map[string]int
	// test: a test driver session's broker, state and clock
	// (testdriver.go); nil for other sessions. Set at OpenSession.
	test *testdriver.Driver
}

func (ss *session) touch() { ss.lastSeen.Store(time.Now().UnixNano()) }

func (ss *session) started() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.app != nil
}

func (ss *session) isStopped() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.stopped
}

func (ss *session) close(ctx context.Context) {
	ss.mu.Lock()
	app := ss.app
	ss.mu.Unlock()
	if app != nil {
		if err := app.Stop(ctx); err != nil {
			slog.Warn("stopping session", "session", ss.label, "application.id", ss.appID, "error", err)
		}
	}
	ss.dispatch.close()
	if ss.test != nil {
		ss.test.Close()
	}
}

func (s *Server) janitor() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			var expired []*session
			for id, ss := range s.sessions {
				ss.dispatch.reclaim(now)
				idle := now.Sub(time.Unix(0, ss.lastSeen.Load()))
				limit := s.opts.SessionTimeout
				if !ss.started() && !ss.isStopped() {
					limit *= 10
				}
				if st, stalled, log := ss.dispatch.stalled(now); stalled && log && ss.started() {
					// No host serves this engine's tasks: they wait, and
					// hold their partitions, until the session expires and
					// the application leaves the group. Say so.
					s.log.Warn("no host is taking bundles: this engine's tasks are stalled until a host calls Exchange or the session expires",
						"session", ss.label, "application.id", ss.appID, "bundles.waiting", st.waiting,
						"no.exchange.for", st.idle.Round(time.Second), "session.expires.in", max(limit-idle, 0).Round(time.Second))
				}
				if idle > limit {
					expired = append(expired, ss)
					delete(s.sessions, id)
				}
			}
			s.mu.Unlock()
			for _, ss := range expired {
				s.log.Warn("session expired: no call for too long", "session", ss.label, "application.id", ss.appID)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				ss.close(ctx)
				cancel()
			}
		}
	}
}

func (s *Server) session(method, id string) (*session, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		// The id is the caller's own: echoing it gives nothing away, but
		// it is bounded (an answer is never much larger than its request).
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("%s: session %s does not exist (never opened, stopped, or expired)", method, quoteBounded(id, 64)))
	}
	ss.touch()
	return ss, nil
}

func (s *Server) OpenSession(ctx context.Context, req *connect.Request[pb.OpenSessionRequest]) (*connect.Response[pb.OpenSessionResponse], error) {
	m := req.Msg
	kv := withDefault(m.Config, "state.dir", s.opts.StateDir)
	if s.opts.MetricsDisabled {
		kv = withDefault(kv, "polystreams.metrics.enabled", "false")
	}
	kv = withDefault(kv, "polystreams.memory.max.bytes", strconv.FormatInt(s.opts.MaxAppMemory, 10))
	if s.opts.BrokerWait != nil {
		kv = withDefault(kv, "polystreams.broker.wait.ms", strconv.FormatInt(s.opts.BrokerWait.Milliseconds(), 10))
	}
	var td *testdriver.Driver
	if testdriver.Enabled(kv) {
		var err error
		if td, kv, err = testdriver.New(kv); err != nil {
			return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("OpenSession: %w", err))
		}
	}
	_, ownBrokers := kv["bootstrap.servers"]
	embedded := s.opts.Embedded && td == nil && !ownBrokers
	if embedded && kv["processing.guarantee"] != config.ExactlyOnceV2 {
		kv = withDefault(kv, "commit.interval.ms", DevCommitInterval)
	}
	cfg, effective, err := config.Parse(m.ApplicationId, kv, s.opts.Brokers)
	if cfg.CacheMaxBytes > s.opts.MaxCacheBytes {
		err = errors.Join(err, fmt.Errorf("statestore.cache.max.bytes: at most %d on this engine (--max-cache-bytes)", s.opts.MaxCacheBytes))
	}
	if cfg.MemoryMaxBytes > s.opts.MaxAppMemory {
		err = errors.Join(err, fmt.Errorf("polystreams.memory.max.bytes: at most %d on this engine (--max-app-memory)", s.opts.MaxAppMemory))
	}
	if err != nil {
		if td != nil {
			td.Close()
		}
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("OpenSession: %w", err))
	}
	cfg.Logger = s.log
	cfg.CreateMissingTopics = embedded
	cfg.FoldValueRefs = slices.Contains(m.HostFeatures, "fold_value_refs")
	cfg.FoldPrograms = slices.Contains(m.HostFeatures, "fold_programs")
	cfg.HostProcessors = slices.Contains(m.HostFeatures, "processors")
	cfg.HostMetadata = slices.Contains(m.HostFeatures, "metadata")
	// One session per application.id per engine: a new one replaces the old
	// once the old one's host is gone (it restarted). The old one stops
	// first, so that its group membership and state directory are free; its
	// uncommitted work is done again by the new one. A session whose host
	// still serves it is not replaced: it belongs to the client that opened
	// it, and knowing its application.id is not enough to end it.
	if err := s.awaitSilent(ctx, m.ApplicationId); err != nil {
		if td != nil {
			td.Close()
		}
		return nil, err
	}
	s.mu.Lock()
	var old []*session
	for id, ss := range s.sessions {
		if ss.appID == m.ApplicationId {
			old = append(old, ss)
			delete(s.sessions, id)
		}
	}
	s.mu.Unlock()
	for _, ss := range old {
		s.log.Warn("session replaced by a new session for the same application.id", "session", ss.label, "application.id", ss.appID)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ss.close(ctx)
		cancel()
	}
	var raw [16]byte
	rand.Read(raw[:])
	builder := topology.NewBuilder()
	builder.FoldPrograms = cfg.FoldPrograms
	builder.HostProcessors = cfg.HostProcessors
	builder.DefaultKeySerde, builder.DefaultValueSerde = cfg.DefaultKeySerde, cfg.DefaultValueSerde
	id := hex.EncodeToString(raw[:])
	ss := &session{
		id: id, label: sessionLabel(id), appID: m.ApplicationId, cfg: cfg,
		builder: builder, funcs: map[uint32]topology.Function{}, reported: map[string]int{},
		dispatch: newDispatcher(s.opts.HostTimeout), test: td,
	}
	ss.touch()
	s.mu.Lock()
	if s.openSessionsLocked() >= s.opts.MaxSessions {
		s.mu.Unlock()
		ss.dispatch.close()
		if td != nil {
			td.Close()
		}
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("OpenSession: the engine holds %d sessions, its most (--max-sessions); stop one or raise the bound", s.opts.MaxSessions))
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.log.Info("session opened", "session", ss.label, "application.id", m.ApplicationId, "config", config.Redact(effective))
	return connect.NewResponse(&pb.OpenSessionResponse{SessionId: ss.id, Config: config.Redact(effective), Version: s.opts.Version}), nil
}

// A started session's host is live while a worker is in an Exchange call
// or called within liveHost; a new session for its application.id waits
// up to replaceWait for it to fall silent (a host that was killed, whose
// replacement is starting), then is refused.
const (
	liveHost    = 2 * time.Second
	replaceWait = 2*liveHost + time.Second
)

// awaitSilent returns once no session of appID has a live host, or an
// error when one stays live for replaceWait.
func (s *Server) awaitSilent(ctx context.Context, appID string) error {
	deadline := time.Now().Add(replaceWait)
	for {
		now := time.Now()
		if !s.liveHost(appID, now) {
			return nil
		}
		if now.After(deadline) {
			return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("OpenSession: application.id %s has a session on this engine whose host is serving it (it called Exchange within the last %v); one engine runs one session per application.id: stop that session first, or open this one on another engine", appID, liveHost))
		}
		select {
		case <-ctx.Done():
			return connect.NewError(connect.CodeCanceled, fmt.Errorf("OpenSession: %w", ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) liveHost(appID string, now time.Time) bool {
	var same []*session
	s.mu.Lock()
	for _, ss := range s.sessions {
		if ss.appID == appID {
			same = append(same, ss)
		}
	}
	s.mu.Unlock()
	// Outside s.mu: a session's own lock may be held through its Start.
	for _, ss := range same {
		if ss.started() && !ss.isStopped() && ss.dispatch.peek(now).idle < liveHost {
			return true
		}
	}
	return false
}

func withDefault(kv map[string]string, key, value string) map[string]string {
	if value == "" {
		return kv
	}
	if _, ok := kv[key]; ok {
		return kv
	}
	out := make(map[string]string, len(kv)+1)
	for k, v := range kv {
		out[k] = v
	}
	out[key] = value
	return out
}

func (s *Server) RegisterFunction(_ context.Context, req *connect.Request[pb.RegisterFunctionRequest]) (*connect.Response[pb.RegisterFunctionResponse], error) {
	ss, err := s.session("RegisterFunction", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return nil, errStopped("RegisterFunction")
	}
	if ss.app != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("RegisterFunction: the topology is started; functions are registered before Start"))
	}
	md := topology.MetadataNone
	switch req.Msg.Metadata {
	case pb.Metadata_METADATA_UNSPECIFIED:
	case pb.Metadata_METADATA_READ:
		md = topology.MetadataRead
	case pb.Metadata_METADATA_WRITE:
		md = topology.MetadataWrite
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("RegisterFunction(%s): metadata %d is none of METADATA_UNSPECIFIED, METADATA_READ, METADATA_WRITE", req.Msg.Name, req.Msg.Metadata))
	}
	if md != topology.MetadataNone && !ss.cfg.HostMetadata {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("RegisterFunction(%s): the function asks for record metadata, but the host did not advertise host feature \"metadata\" in OpenSession", req.Msg.Name))
	}
	ss.nextToken++
	ss.funcs[ss.nextToken] = topology.Function{Name: req.Msg.Name, Metadata: md}
	return connect.NewResponse(&pb.RegisterFunctionResponse{Token: ss.nextToken}), nil
}

// Build applies one operator (frompb translates it). Everything is checked
// before the builder is touched, and the builder itself changes nothing on a
// refused call.
func (s *Server) Build(_ context.Context, req *connect.Request[pb.BuildRequest]) (*connect.Response[pb.BuildResponse], error) {
	m := req.Msg
	ss, err := s.session("Build", m.SessionId)
	if err != nil {
		return nil, err
	}
	op := frompb.OperationName(m)
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
	resp, err := frompb.Build(ss.builder, ss.funcs, m)
	if err != nil {
		return nil, connect.NewError(topologyCode(err), err)
	}
	return connect.NewResponse(resp), nil
}

// topologyCode is the Connect code of a topology error: NotFound for a
// handle (or token) that does not exist, InvalidArgument for the rest.
func topologyCode(err error) connect.Code {
	if errors.Is(err, topology.ErrNotFound) {
		return connect.CodeNotFound
	}
	return connect.CodeInvalidArgument
}

func (s *Server) Describe(_ context.Context, req *connect.Request[pb.DescribeRequest]) (*connect.Response[pb.DescribeResponse], error) {
	ss, err := s.session("Describe", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	topo, err := ss.builder.Topology()
	ss.mu.Unlock()
	if err != nil {
		return nil, builderError("Describe", err)
	}
	resp := &pb.DescribeResponse{Text: topo.Describe(), Topology: describeProto(topo)}
	if f := req.Msg.Format; f != "" {
		if resp.Output, err = topo.Description().Render(f); err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Describe: %w", err))
		}
	}
	return connect.NewResponse(resp), nil
}

func describeProto(t *topology.Topology) *pb.TopologyDescription {
	out := &pb.TopologyDescription{}
	names := func(ns []*topology.Node) []string {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = n.Name
		}
		return s
	}
	for _, sub := range t.Subtopologies {
		ps := &pb.Subtopology{Id: int32(sub.ID)}
		for _, n := range sub.Nodes {
			succ, pred := sub.DescribedEdges(n)
			pn := &pb.Node{Name: n.Name, Stores: n.Stores, Successors: names(succ), Predecessors: names(pred)}
			switch n.Type {
			case topology.Source:
				pn.Type, pn.Topics = pb.Node_TYPE_SOURCE, n.Topics
			case topology.Sink:
				pn.Type, pn.Topic = pb.Node_TYPE_SINK, n.Topic
			default:
				pn.Type = pb.Node_TYPE_PROCESSOR
			}
			ps.Nodes = append(ps.Nodes, pn)
		}
		out.Subtopologies = append(out.Subtopologies, ps)
	}
	return out
}

func (s *Server) Start(ctx context.Context, req *connect.Request[pb.StartRequest]) (*connect.Response[pb.StartResponse], error) {
	ss, err := s.session("Start", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return nil, errStopped("Start")
	}
	if ss.app != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("Start: the topology is started already"))
	}
	topo, err := ss.builder.Topology()
	if err != nil {
		return nil, builderError("Start", err)
	}
	app, err := engine.New(ss.cfg, topo, ss.dispatch)
	if err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("Start: %w", err))
	}
	if ss.paused {
		app.Pause()
	}
	start := app.Start
	if ss.test != nil {
		start = func(ctx context.Context) error { return ss.test.Start(ctx, app) }
	}
	if err := start(ctx); err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("Start: %w", err))
	}
	ss.app = app
	go func() {
		<-app.Done()
		ss.dispatch.close()
	}()
	s.log.Info("session started", "session", ss.label, "application.id", ss.appID)
	return connect.NewResponse(&pb.StartResponse{}), nil
}

// maxWorkerID bounds an Exchange's worker_id.
const maxWorkerID = 256

func (s *Server) Exchange(ctx context.Context, req *connect.Request[pb.ExchangeRequest]) (*connect.Response[pb.ExchangeResponse], error) {
	m := req.Msg
	ss, err := s.session("Exchange", m.SessionId)
	if err != nil {
		return nil, err
	}
	if m.WorkerId == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("Exchange: worker_id is empty"))
	}
	if len(m.WorkerId) > maxWorkerID {
		// The engine keeps every worker id it hears of while the session lives.
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("Exchange: worker_id is %d bytes; at most %d", len(m.WorkerId), maxWorkerID))
	}
	ss.dispatch.deliver(m.Results)
	ss.mu.Lock()
	app, stopped, next := ss.app, ss.stopped, ss.reported[m.WorkerId]
	ss.mu.Unlock()
	resp := &pb.ExchangeResponse{State: pb.State_STATE_CREATED}
	if stopped && app == nil {
		resp.State = pb.State_STATE_STOPPED
	} else if app != nil {
		wait := time.Duration(min(max(m.WaitMs, 0), 5000)) * time.Millisecond
		states, _, changed := app.Changes(next)
		if len(states) > 1 {
			wait = 0 // changes not reported yet: report the next one now
		}
		// A change while waiting for bundles ends the wait: the worker
		// hears of it at once.
		tctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-tctx.Done():
			}
		}()
		resp.Bundles = ss.dispatch.take(tctx, m.WorkerId, int(m.MaxBundles), wait)
		cancel()
		states, at, _ := app.Changes(next)
		ss.mu.Lock()
		ss.reported[m.WorkerId] = at + 1
		ss.mu.Unlock()
		_, err := app.State()
		resp.State, resp.Error, resp.FailedRecord = stateProto(states[0], err)
		resp.Restore = restoreProto(app)
	}
	return connect.NewResponse(resp), nil
}

func restoreProto(app *engine.App) *pb.RestoreProgress {
	p := app.Restore()
	return &pb.RestoreProgress{
		RestoredRecords: p.RestoredRecords, TotalRecords: p.TotalRecords,
		RestoringPartitions: int32(p.RestoringPartitions), TotalPartitions: int32(p.TotalPartitions),
	}
}

// brokerOutageProto says which brokers the application cannot reach, and
// since when.
func brokerOutageProto(app *engine.App) *pb.BrokerOutage {
	b := app.Brokers()
	o := &pb.BrokerOutage{Brokers: b.Brokers, LastError: b.LastError, Outages: b.Outages}
	if !b.Since.IsZero() {
		o.SinceMs = b.Since.UnixMilli()
	}
	return o
}

// stateProto gives st its protocol form; with STATE_ERROR, err (the
// application's error) too.
func stateProto(st engine.State, err error) (pb.State, string, *pb.RecordContext) {
	var ps pb.State
	switch st {
	case engine.Rebalancing:
		ps = pb.State_STATE_REBALANCING
	case engine.Restoring:
		ps = pb.State_STATE_RESTORING
	case engine.Running:
		ps = pb.State_STATE_RUNNING
	case engine.Degraded:
		ps = pb.State_STATE_DEGRADED
	case engine.Stopped:
		ps = pb.State_STATE_STOPPED
		if err != nil {
			ps = pb.State_STATE_ERROR
		}
	case engine.Failed:
		ps = pb.State_STATE_ERROR
	default:
		ps = pb.State_STATE_CREATED
	}
	if ps != pb.State_STATE_ERROR || err == nil {
		return ps, "", nil
	}
	var rc *pb.RecordContext
	var re *engine.RecordError
	if errors.As(err, &re) {
		rc = &pb.RecordContext{Topic: re.Topic, Partition: re.Partition, Offset: re.Offset, Node: re.Node}
	}
	return ps, err.Error(), rc
}

func (s *Server) GetState(_ context.Context, req *connect.Request[pb.GetStateRequest]) (*connect.Response[pb.GetStateResponse], error) {
	ss, err := s.session("GetState", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	app, stopped, paused := ss.app, ss.stopped, ss.paused
	ss.mu.Unlock()
	resp := &pb.GetStateResponse{State: pb.State_STATE_CREATED, Paused: paused}
	if stopped && app == nil {
		resp.State = pb.State_STATE_STOPPED
	} else if app != nil {
		resp.State, resp.Error, resp.FailedRecord = stateProto(app.State())
		if resp.State == pb.State_STATE_DEGRADED {
			resp.BrokerOutage = brokerOutageProto(app)
		}
		resp.Restore = restoreProto(app)
		resp.DroppedRecords = app.DroppedRecords()
		resp.Paused = app.Paused()
		st := ss.dispatch.peek(time.Now())
		resp.BundlesWaiting, resp.HostIdleMs, resp.HostStalled = int32(st.waiting), st.idle.Milliseconds(), st.stalled()
	}
	return connect.NewResponse(resp), nil
}

func (s *Server) Stop(ctx context.Context, req *connect.Request[pb.StopRequest]) (*connect.Response[pb.StopResponse], error) {
	ss, err := s.session("Stop", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	// The session stays known (answering STATE_STOPPED) until it expires, so
	// that a host loop in another thread ends cleanly rather than on an
	// unknown session.
	ss.mu.Lock()
	ss.stopped = true
	ss.mu.Unlock()
	ss.ended.Store(true)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ss.close(ctx)
	s.log.Info("session stopped", "session", ss.label, "application.id", ss.appID)
	return connect.NewResponse(&pb.StopResponse{}), nil
}

// openSessionsLocked counts the sessions that hold (or may still start) an
// application: the ones Stop has not ended. s.mu is held.
func (s *Server) openSessionsLocked() int {
	n := 0
	for _, ss := range s.sessions {
		if !ss.ended.Load() {
			n++
		}
	}
	return n
}

func errStopped(method string) error {
	return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: the session is stopped", method))
}

// builderError gives a topology error its Connect code.
func builderError(method string, err error) error {
	return connect.NewError(topologyCode(err), fmt.Errorf("%s: %w", method, err))
}
