package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/observe/metrics"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Observability: GetMetrics, /metrics (Prometheus), /describe and the JSON
// that /ui polls. None of them shows configuration values, so no
// credential can appear in them.

// appView is one session, as the observability endpoints see it.
type appView struct {
	session, appID string      // session: the label, never the id
	app            *engine.App // nil before Start
	topo           *topology.Topology
	stopped        bool
	dispatch       *dispatcher
}

// views returns the sessions, by application.id.
func (s *Server) views() []appView {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	out := make([]appView, 0, len(all))
	for _, ss := range all {
		ss.mu.Lock()
		v := appView{session: ss.label, appID: ss.appID, app: ss.app, stopped: ss.stopped, dispatch: ss.dispatch}
		v.topo, _ = ss.builder.Topology()
		ss.mu.Unlock()
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b appView) int {
		if a.appID < b.appID {
			return -1
		}
		if a.appID > b.appID {
			return 1
		}
		return 0
	})
	return out
}

func (s *Server) GetMetrics(_ context.Context, req *connect.Request[pb.GetMetricsRequest]) (*connect.Response[pb.GetMetricsResponse], error) {
	ss, err := s.session("GetMetrics", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	app, stopped := ss.app, ss.stopped
	ss.mu.Unlock()
	resp := &pb.GetMetricsResponse{State: pb.State_STATE_CREATED, MetricsEnabled: !ss.cfg.MetricsDisabled}
	if stopped && app == nil {
		resp.State = pb.State_STATE_STOPPED
	}
	if app == nil {
		return connect.NewResponse(resp), nil
	}
	st := app.Stats()
	resp.State, _, _ = stateProto(st.State, st.Err)
	resp.Restore = restoreProto(app)
	resp.DroppedRecords, resp.FailedRecords = st.DroppedRecords, st.FailedRecords
	for _, n := range st.Nodes {
		nm := &pb.NodeMetrics{Name: n.Name, Subtopology: int32(n.Subtopology), Records: n.Records, FusedInto: n.FusedInto}
		if n.Crossing != nil && n.Crossing.Count > 0 {
			nm.Bundles = int64(n.Crossing.Count)
			nm.MeanCrossingSeconds = n.Crossing.Sum / float64(n.Crossing.Count)
		}
		resp.Nodes = append(resp.Nodes, nm)
	}
	for _, t := range st.Tasks {
		tm := &pb.TaskMetrics{Id: t.ID, Restored: t.Restored}
		for _, in := range t.Inputs {
			tm.Inputs = append(tm.Inputs, &pb.PartitionLag{Topic: in.Topic, Partition: in.Partition, Position: in.Position, End: in.End, Lag: in.Lag})
		}
		for _, sto := range t.Stores {
			tm.Stores = append(tm.Stores, &pb.StoreMetrics{Name: sto.Name, Entries: sto.Entries})
		}
		resp.Tasks = append(resp.Tasks, tm)
	}
	return connect.NewResponse(resp), nil
}

// MetricsHandler serves every session's metrics, and the Go runtime's, in
// Prometheus' text format.
func (s *Server) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// collector reads the sessions' engine.Stats at each scrape. It is
// unchecked (Describe sends nothing): its series come and go with sessions.
type collector struct{ s *Server }

func (collector) Describe(chan<- *prometheus.Desc) {}

var (
	app             = []string{"application_id"}
	descBuild       = prometheus.NewDesc("polystreams_build_info", "The engine's version; always 1.", []string{"version"}, nil)
	descState       = prometheus.NewDesc("polystreams_application_state", "1 for the state the application is in (created, rebalancing, restoring, running, degraded, stopped, error), 0 for the others.", append(app, "state"), nil)
	descTasks       = prometheus.NewDesc("polystreams_tasks", "Tasks (sub-topology x partition) this engine runs.", app, nil)
	descRecords     = prometheus.NewDesc("polystreams_node_records_total", "Records into a node (into its first node, for a chain of host operators fused into one crossing).", append(app, "subtopology", "node"), nil)
	descProduction  = prometheus.NewDesc("polystreams_production_errors_total", "Output and changelog records the broker refused for good (RecordTooLarge, ...) that default.production.exception.handler = continue skipped.", app, nil)
	descDropped     = prometheus.NewDesc("polystreams_dropped_records_total", "Records the tasks dropped (Kafka Streams' dropped-records): a null key or value an aggregation skips, a record too late for its window, a failed record its error policy skipped.", app, nil)
	descDeadLetter  = prometheus.NewDesc("polystreams_dead_lettered_records_total", "Failed records written to the dead letter topic (errors.deadletterqueue.topic.name).", app, nil)
	descFailed      = prometheus.NewDesc("polystreams_failed_records_total", "Records that failed in a node.", app, nil)
	descCrossing    = prometheus.NewDesc("polystreams_crossing_duration_seconds", "Round trip of a bundle to the host and back, by the node whose chain crosses and the tokens of its functions.", append(app, "node", "tokens"), nil)
	descBundle      = prometheus.NewDesc("polystreams_bundle_size_records", "Records per bundle crossing to the host.", append(app, "node", "tokens"), nil)
	descLag         = prometheus.NewDesc("polystreams_consumer_lag_records", "Records between a task's committable position and the partition's end at the last fetch (its high watermark; its last stable offset under exactly_once_v2).", append(app, "topic", "partition"), nil)
	descEnforced    = prometheus.NewDesc("polystreams_enforced_processing_total", "Records a task processed while one of its partitions, empty and caught up, was given up on after max.task.idle.ms (Kafka Streams' enforced-processing-total).", app, nil)
	descCommit      = prometheus.NewDesc("polystreams_commit_duration_seconds", "Flushing outputs and committing input offsets (at_least_once).", app, nil)
	descTxn         = prometheus.NewDesc("polystreams_transaction_duration_seconds", "Ending a transaction (exactly_once_v2).", app, nil)
	descRestored    = prometheus.NewDesc("polystreams_restore_restored_records", "Changelog records restored since the last rebalance.", app, nil)
	descRestoreAll  = prometheus.NewDesc("polystreams_restore_total_records", "Changelog records to restore since the last rebalance.", app, nil)
	descRestoring   = prometheus.NewDesc("polystreams_restore_restoring_partitions", "Store partitions still restoring.", app, nil)
	descRestoreSize = prometheus.NewDesc("polystreams_restore_partitions", "Store partitions assigned at the last rebalance.", app, nil)
	descWaiting     = prometheus.NewDesc("polystreams_host_bundles_waiting", "Bundles waiting for the host: queued, or taken by a worker and not answered yet.", app, nil)
	descHostIdle    = prometheus.NewDesc("polystreams_host_idle_seconds", "Seconds since a host worker last called Exchange, 0 while one is in an Exchange call (how long the tasks are stalled, when bundles are waiting).", app, nil)
	descStandby     = prometheus.NewDesc("polystreams_standby_partitions", "Store partitions this engine keeps warm as standbys (num.standby.replicas).", app, nil)
	descStandbyRead = prometheus.NewDesc("polystreams_standby_read_records", "Changelog records the standbys applied since the last rebalance.", app, nil)
	descUnreachable = prometheus.NewDesc("polystreams_brokers_unreachable", "1 while no broker has answered any of the application's requests for 10 s or more, else 0.", app, nil)
	descOutages     = prometheus.NewDesc("polystreams_broker_outages_total", "Times the brokers became unreachable (no answer for 10 s) since Start.", app, nil)
	descMemory      = prometheus.NewDesc("polystreams_memory_bytes", "What the engine holds in memory for the application, by component (polystreams.memory.max.bytes bounds their sum; Pebble's share is fixed).", append(app, "component"), nil)
	descMemoryLimit = prometheus.NewDesc("polystreams_memory_limit_bytes", "The application's memory budget, polystreams.memory.max.bytes.", app, nil)
	descStore       = prometheus.NewDesc("polystreams_store_entries", "Entries of a store partition (counted up to 100,000).", append(app, "store", "partition"), nil)
)

var stateNames = []string{"created", "rebalancing", "restoring", "running", "degraded", "stopped", "error"}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, c.s.opts.Version)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	hist := func(d *prometheus.Desc, h *metrics.HistogramSnapshot, labels ...string) {
		if h != nil {
			ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, h.Buckets, labels...)
		}
	}
	for _, v := range c.s.views() {
		state := "created"
		if v.stopped && v.app == nil {
			state = "stopped"
		}
		if v.app == nil {
			for _, n := range stateNames {
				gauge(descState, b2f(n == state), v.appID, n)
			}
			continue
		}
		st := v.app.Stats()
		state = st.State.String()
		for _, n := range stateNames {
			gauge(descState, b2f(n == state), v.appID, n)
		}
		gauge(descTasks, float64(len(st.Tasks)), v.appID)
		gauge(descUnreachable, b2f(st.Brokers.Unreachable), v.appID)
		ch <- prometheus.MustNewConstMetric(descOutages, prometheus.CounterValue, float64(st.Brokers.Outages), v.appID)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(st.FailedRecords), v.appID)
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.DroppedRecords), v.appID)
		ch <- prometheus.MustNewConstMetric(descProduction, prometheus.CounterValue, float64(st.ProductionErrors), v.appID)
		ch <- prometheus.MustNewConstMetric(descDeadLetter, prometheus.CounterValue, float64(st.DeadLetteredRecords), v.appID)
		ch <- prometheus.MustNewConstMetric(descEnforced, prometheus.CounterValue, float64(st.EnforcedProcessing), v.appID)
		if st.MetricsEnabled {
			for _, n := range st.Nodes {
				if n.FusedInto != "" {
					continue
				}
				ch <- prometheus.MustNewConstMetric(descRecords, prometheus.CounterValue, float64(n.Records), v.appID, strconv.Itoa(n.Subtopology), n.Name)
				if n.Crossing != nil {
					tokens := tokenList(n.Tokens)
					hist(descCrossing, n.Crossing, v.appID, n.Name, tokens)
					hist(descBundle, n.Bundle, v.appID, n.Name, tokens)
				}
			}
			hist(descCommit, st.Commit, v.appID)
			hist(descTxn, st.Transaction, v.appID)
		}
		for _, t := range st.Tasks {
			for _, in := range t.Inputs {
				if in.Lag >= 0 {
					gauge(descLag, float64(in.Lag), v.appID, in.Topic, strconv.Itoa(int(in.Partition)))
				}
			}
			for _, sto := range t.Stores {
				gauge(descStore, float64(sto.Entries), v.appID, sto.Name, strconv.Itoa(int(t.Partition)))
			}
		}
		gauge(descRestored, float64(st.Restore.RestoredRecords), v.appID)
		gauge(descRestoreAll, float64(st.Restore.TotalRecords), v.appID)
		gauge(descRestoring, float64(st.Restore.RestoringPartitions), v.appID)
		gauge(descRestoreSize, float64(st.Restore.TotalPartitions), v.appID)
		gauge(descStandby, float64(len(st.Standbys)), v.appID)
		if v.dispatch != nil {
			ds := v.dispatch.peek(time.Now())
			gauge(descWaiting, float64(ds.waiting), v.appID)
			gauge(descHostIdle, ds.idle.Seconds(), v.appID)
		}
		gauge(descStandbyRead, float64(st.StandbyRecords), v.appID)
		mem := v.app.MemoryUsage()
		gauge(descMemoryLimit, float64(mem.Limit), v.appID)
		for name, n := range mem.Components {
			gauge(descMemory, float64(n), v.appID, name)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func tokenList(ts []uint32) string {
	b := make([]byte, 0, 4*len(ts))
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(t), 10)
	}
	return string(b)
}

// DescribeHandler serves GET /describe?application.id=<id>&format=<format>:
// a session's topology in any format of topology.Description.Render. The
// application.id may be left out when the engine runs one application.
func (s *Server) DescribeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("application.id")
		var match []appView
		var ids []string
		for _, v := range s.views() {
			ids = append(ids, v.appID)
			if id == "" || v.appID == id {
				match = append(match, v)
			}
		}
		switch {
		case len(match) == 0 && id == "":
			http.Error(w, "describe: the engine runs no application", http.StatusNotFound)
			return
		case len(match) == 0:
			http.Error(w, "describe: no application "+quoteBounded(id, 256)+" (the engine runs "+strconv.Quote(joinIDs(ids))+")", http.StatusNotFound)
			return
		case len(match) > 1:
			http.Error(w, "describe: the engine runs several applications ("+joinIDs(ids)+"): name one with ?application.id=", http.StatusBadRequest)
			return
		}
		if match[0].topo == nil {
			http.Error(w, "describe: application "+strconv.Quote(match[0].appID)+" has no valid topology yet", http.StatusConflict)
			return
		}
		format := r.URL.Query().Get("format")
		out, err := match[0].topo.Description().Render(format)
		if err != nil {
			http.Error(w, "describe: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", contentType(format))
		w.Write([]byte(out))
	})
}

func joinIDs(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += id
	}
	return out
}

func contentType(format string) string {
	switch format {
	case "json":
		return "application/json"
	case "svg":
		return "image/svg+xml"
	}
	return "text/plain; charset=utf-8"
}

// Status is what /ui polls: the engine and each application it runs.
type Status struct {
	Version       string         `json:"version"`
	UptimeSeconds float64        `json:"uptime_seconds"`
	Time          time.Time      `json:"time"`
	Applications  []StatusApp    `json:"applications"`
	Errors        []logEntryJSON `json:"errors"`
}

// StatusApp is one application in Status.
type StatusApp struct {
	ApplicationID string `json:"application_id"`
	// Session is the session's label (a digest of its id), never the id:
	// the id is the capability to control the application.
	Session        string                `json:"session"`
	State          string                `json:"state"`
	Error          string                `json:"error,omitempty"`
	MetricsEnabled bool                  `json:"metrics_enabled"`
	Topology       *topology.Description `json:"topology,omitempty"`
	SVG            string                `json:"svg,omitempty"`
	Nodes          []statusNode          `json:"nodes"`
	Tasks          []statusTask          `json:"tasks"`
	Restore        statusRestore         `json:"restore"`
	DroppedRecords int64                 `json:"dropped_records"`
	FailedRecords  int64                 `json:"failed_records"`
	// DeadLetteredRecords: failed records written to the dead letter topic.
	DeadLetteredRecords int64 `json:"dead_lettered_records"`
	// EnforcedProcessing: records processed while a partition of their
	// task, empty, was given up on (max.task.idle.ms).
	EnforcedProcessing int64          `json:"enforced_processing"`
	Errors             []logEntryJSON `json:"errors"`
	// Host: the bundles waiting for this engine's host, and how long no
	// host worker called Exchange; Stalled once bundles have waited
	// stallAfter with none (docs/scale-out.md).
	Host statusHost `json:"host"`
	// Standbys: store partitions kept warm for tasks of other instances.
	Standbys []engine.StandbyPartition `json:"standbys"`
	// Brokers: whether any broker answers the application.
	Brokers statusBrokers `json:"brokers"`
	// Memory: what the engine holds in memory for the application, and
	// its budget (polystreams.memory.max.bytes); absent before Start.
	Memory *engine.Usage `json:"memory,omitempty"`
}

type statusBrokers struct {
	// Addresses: the application's bootstrap.servers.
	Addresses          []string `json:"addresses"`
	Unreachable        bool     `json:"unreachable"`
	UnreachableSeconds float64  `json:"unreachable_seconds"`
	Outages            int64    `json:"outages"`
}

type statusHost struct {
	BundlesWaiting int     `json:"bundles_waiting"`
	IdleSeconds    float64 `json:"idle_seconds"`
	Stalled        bool    `json:"stalled"`
}

type statusRestore struct {
	RestoredRecords     int64 `json:"restored_records"`
	TotalRecords        int64 `json:"total_records"`
	RestoringPartitions int   `json:"restoring_partitions"`
	TotalPartitions     int   `json:"total_partitions"`
}

type statusNode struct {
	Name                string  `json:"name"`
	Subtopology         int     `json:"subtopology"`
	Records             int64   `json:"records"`
	FusedInto           string  `json:"fused_into,omitempty"`
	Bundles             uint64  `json:"bundles,omitempty"`
	MeanCrossingSeconds float64 `json:"mean_crossing_seconds,omitempty"`
}

type statusTask struct {
	ID       string                `json:"id"`
	Restored bool                  `json:"restored"`
	Lag      int64                 `json:"lag"`
	Inputs   []engine.PartitionLag `json:"inputs"`
	Stores   []engine.StoreStats   `json:"stores"`
}

type logEntryJSON struct {
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// Status returns what /ui shows.
func (s *Server) Status() Status {
	st := Status{Version: s.opts.Version, Time: time.Now(), UptimeSeconds: time.Since(s.started).Seconds(), Applications: []StatusApp{}}
	for _, e := range s.opts.Recent.Entries("", "") {
		st.Errors = append(st.Errors, logEntryJSON(e))
	}
	for _, v := range s.views() {
		a := StatusApp{ApplicationID: v.appID, Session: v.session, State: "created", Nodes: []statusNode{}, Tasks: []statusTask{}, Errors: []logEntryJSON{}}
		if v.topo != nil {
			a.Topology = v.topo.Description()
			a.SVG = a.Topology.SVG()
		}
		for _, e := range s.opts.Recent.Entries("application.id", v.appID) {
			a.Errors = append(a.Errors, logEntryJSON(e))
		}
		if v.stopped && v.app == nil {
			a.State = "stopped"
		}
		if v.app != nil {
			rs := v.app.Stats()
			a.State, a.MetricsEnabled, a.Restore = rs.State.String(), rs.MetricsEnabled, statusRestore(rs.Restore)
			if rs.Err != nil {
				a.Error = rs.Err.Error()
			}
			a.DroppedRecords, a.FailedRecords, a.DeadLetteredRecords = rs.DroppedRecords, rs.FailedRecords, rs.DeadLetteredRecords
			a.EnforcedProcessing = rs.EnforcedProcessing
			a.Standbys = rs.Standbys
			mem := v.app.MemoryUsage()
			a.Memory = &mem
			a.Brokers = statusBrokers{Addresses: v.app.Brokers().Brokers, Unreachable: rs.Brokers.Unreachable, UnreachableSeconds: rs.Brokers.UnreachableFor.Seconds(), Outages: rs.Brokers.Outages}
			if v.dispatch != nil {
				ds := v.dispatch.peek(time.Now())
				a.Host = statusHost{BundlesWaiting: ds.waiting, IdleSeconds: ds.idle.Seconds(), Stalled: ds.stalled()}
			}
			for _, n := range rs.Nodes {
				sn := statusNode{Name: n.Name, Subtopology: n.Subtopology, Records: n.Records, FusedInto: n.FusedInto}
				if n.Crossing != nil && n.Crossing.Count > 0 {
					sn.Bundles, sn.MeanCrossingSeconds = n.Crossing.Count, n.Crossing.Sum/float64(n.Crossing.Count)
				}
				a.Nodes = append(a.Nodes, sn)
			}
			for _, t := range rs.Tasks {
				stt := statusTask{ID: t.ID, Restored: t.Restored, Inputs: t.Inputs, Stores: t.Stores, Lag: -1}
				if stt.Inputs == nil {
					stt.Inputs = []engine.PartitionLag{}
				}
				if stt.Stores == nil {
					stt.Stores = []engine.StoreStats{}
				}
				for _, in := range t.Inputs {
					if in.Lag >= 0 {
						stt.Lag = max(stt.Lag, 0) + in.Lag
					}
				}
				a.Tasks = append(a.Tasks, stt)
			}
		}
		st.Applications = append(st.Applications, a)
	}
	return st
}

// StatusHandler serves Status as JSON.
func (s *Server) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.Encode(s.Status())
	})
}

// Standbys returns each started application's standby store partitions
// with their positions, by application.id.
func (s *Server) Standbys() map[string][]engine.StandbyPartition {
	out := map[string][]engine.StandbyPartition{}
	for _, v := range s.views() {
		if v.app != nil {
			out[v.appID], _ = v.app.Standbys()
		}
	}
	return out
}

// Restores returns each started application's restore progress, by
// application.id.
func (s *Server) Restores() map[string]engine.RestoreProgress {
	out := map[string]engine.RestoreProgress{}
	for _, v := range s.views() {
		if v.app != nil {
			out[v.appID] = v.app.Restore()
		}
	}
	return out
}
