package engine

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polystreams/polystreams/core/internal/observe/metrics"
)

// Metrics: what the runtime counts for /metrics, /ui and the SDKs' metrics
// summary. Counting is per batch or bundle (an atomic add, a histogram
// observation), never a lock or an allocation per record. With
// polystreams.metrics.enabled=false nothing is counted; Stats still
// answers state, lag, stores, restore progress and dropped records.

// stepStats are a step's counters, shared by the tasks running its plan.
type stepStats struct {
	// records counts the records into the step's node (for a fused host
	// chain, into its first node).
	records atomic.Int64
	// crossing (seconds per bundle round trip) and bundle (records per
	// bundle), for steps that cross to a host.
	crossing, bundle *metrics.Histogram
}

// appStats are an application's own counters.
type appStats struct {
	commit, txn *metrics.Histogram // seconds per offset commit / transaction end
	failed      atomic.Int64       // records that failed in a node (under any policy)
	// deadLettered counts records written to the dead letter topic.
	deadLettered atomic.Int64
	// enforced counts records processed while a partition of their task,
	// empty, was given up on (Kafka Streams' enforced-processing-total;
	// idle.go).
	enforced atomic.Int64

	dbMu     sync.RWMutex // held to read stores for Stats; Lock to close the db
	dbClosed bool         // guarded by dbMu
}

// instrument gives every step of a's plans its counters.
func (a *App) instrument() {
	a.stats.commit = metrics.NewHistogram(metrics.LatencyBuckets)
	a.stats.txn = metrics.NewHistogram(metrics.LatencyBuckets)
	for _, p := range a.plans {
		eachStep(p, func(s *step) {
			s.stats = &stepStats{}
			if len(s.steps) > 0 {
				s.stats.crossing = metrics.NewHistogram(metrics.LatencyBuckets)
				s.stats.bundle = metrics.NewHistogram(metrics.SizeBuckets)
			}
		})
	}
}

// eachStep calls f once for every step of p, upstream first.
func eachStep(p *plan, f func(*step)) {
	seen := map[*step]bool{}
	var walk func(s *step)
	walk = func(s *step) {
		if seen[s] {
			return
		}
		seen[s] = true
		f(s)
		for _, c := range s.next {
			walk(c)
		}
	}
	topics := make([]string, 0, len(p.sources))
	for t := range p.sources {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		walk(p.sources[t])
	}
	for _, ps := range p.patterns {
		walk(ps.step)
	}
}

// closeDB closes the state, waiting for Stats reading it.
func (a *App) closeDB() error {
	a.stats.dbMu.Lock()
	defer a.stats.dbMu.Unlock()
	a.stats.dbClosed = true
	return a.db.Close()
}

// Stats is a snapshot of an application's metrics.
type Stats struct {
	State State
	Err   error
	// Nodes in sub-topology order, each sub-topology's upstream first.
	Nodes   []NodeStats
	Tasks   []TaskStats
	Restore RestoreProgress
	// Standbys are the store partitions this instance keeps warm as
	// standbys (num.standby.replicas), and StandbyRecords the changelog
	// records they applied since the last rebalance.
	Standbys       []StandbyPartition
	StandbyRecords int64
	// DroppedRecords (null key or value, late; Kafka Streams'
	// dropped-records) and FailedRecords over all tasks since Start.
	DroppedRecords, FailedRecords int64
	// DeadLetteredRecords: failed records written to
	// errors.deadletterqueue.topic.name (also counted as dropped).
	DeadLetteredRecords int64
	// EnforcedProcessing: records processed while a partition of their
	// task, empty and caught up, was given up on (max.task.idle.ms; Kafka
	// Streams' enforced-processing-total).
	EnforcedProcessing int64
	// ProductionErrors: output and changelog records the broker refused
	// for good that default.production.exception.handler = continue
	// skipped.
	ProductionErrors int64
	// Paused: Pause was called and no Resume since (KIP-834 isPaused).
	Paused bool
	// Commit: offset commits (at_least_once); Transaction: transaction ends
	// (exactly_once_v2). Nil with metrics off.
	Commit, Transaction *metrics.HistogramSnapshot
	// MetricsEnabled is polystreams.metrics.enabled.
	MetricsEnabled bool
	// Brokers: whether any broker answers the application.
	Brokers BrokerHealth
}

// NodeStats are one node's counters.
type NodeStats struct {
	Name        string
	Subtopology int
	// Records into the node since Start. A node fused into a host chain
	// after its first node has none of its own: FusedInto names the first.
	Records   int64
	FusedInto string
	// Host crossings of a chain's first node: seconds per bundle round trip
	// and records per bundle, and the tokens crossing.
	Crossing, Bundle *metrics.HistogramSnapshot
	Tokens           []uint32
}

// TaskStats are one task's position, lag and stores.
type TaskStats struct {
	ID          string // Kafka Streams' task id, "<sub-topology>_<partition>"
	Subtopology int
	Partition   int32
	Restored    bool
	Inputs      []PartitionLag
	Stores      []StoreStats
}

// PartitionLag is a task's input partition: the next offset to commit, the
// end seen at the last fetch (the high watermark; the last stable offset
// under exactly_once_v2, which reads read_committed), and the lag between
// them (-1 when either is not known yet).
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Position  int64  `json:"position"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
}

// StoreStats is a task's store partition: its entries, counted up to
// StoreCountLimit.
type StoreStats struct {
	Name    string `json:"name"`
	Entries int64  `json:"entries"`
}

// StoreCountLimit caps the entries Stats counts per store partition (a
// scan); a bigger store reports the limit.
const StoreCountLimit = 100_000

// Stats returns a's metrics now. Safe for concurrent use; it scans stores
// (up to StoreCountLimit entries each).
func (a *App) Stats() Stats {
	st := Stats{Restore: a.Restore(), MetricsEnabled: !a.cfg.MetricsDisabled, Brokers: a.health.snapshot(time.Now())}
	st.State, st.Err = a.State()
	st.Standbys, st.StandbyRecords = a.Standbys()
	if a.stats.commit != nil {
		c, t := a.stats.commit.Snapshot(), a.stats.txn.Snapshot()
		st.Commit, st.Transaction = &c, &t
	}
	st.FailedRecords, st.DroppedRecords = a.stats.failed.Load(), a.DroppedRecords()
	st.DeadLetteredRecords = a.stats.deadLettered.Load()
	st.EnforcedProcessing = a.stats.enforced.Load()
	st.ProductionErrors, st.Paused = a.productionErrors.Load(), a.paused.Load()
	for _, p := range a.plans {
		eachStep(p, func(s *step) {
			ns := NodeStats{Name: s.node.Name, Subtopology: p.id}
			if s.stats != nil {
				ns.Records = s.stats.records.Load()
				if s.stats.crossing != nil {
					c, b := s.stats.crossing.Snapshot(), s.stats.bundle.Snapshot()
					ns.Crossing, ns.Bundle = &c, &b
					for _, x := range s.steps {
						ns.Tokens = append(ns.Tokens, x.Token)
					}
				}
			}
			st.Nodes = append(st.Nodes, ns)
			for _, c := range s.chain[min(1, len(s.chain)):] {
				st.Nodes = append(st.Nodes, NodeStats{Name: c.Name, Subtopology: p.id, FusedInto: s.node.Name})
			}
		})
	}
	tasks := a.allTasks()
	slices.SortFunc(tasks, func(x, y *task) int {
		if x.id.sub != y.id.sub {
			return x.id.sub - y.id.sub
		}
		return int(x.id.partition - y.id.partition)
	})
	a.stats.dbMu.RLock()
	defer a.stats.dbMu.RUnlock()
	for _, t := range tasks {
		ts := TaskStats{ID: t.id.String(), Subtopology: t.id.sub, Partition: t.id.partition, Restored: t.restored.Load()}
		topics := a.planTopics(t.plan)
		t.mu.Lock()
		for _, topic := range topics {
			pl := PartitionLag{Topic: topic, Partition: t.id.partition, Position: -1, End: -1, Lag: -1}
			if eo, ok := t.offsets[topic]; ok {
				pl.Position = eo.Offset
			}
			pl.End = t.in.end(topic)
			if pl.Position >= 0 && pl.End >= 0 {
				pl.Lag = max(pl.End-pl.Position, 0)
			}
			ts.Inputs = append(ts.Inputs, pl)
		}
		t.mu.Unlock()
		if ts.Restored && !a.stats.dbClosed && a.db != nil {
			for _, s := range t.plan.stores {
				n, err := a.db.Partition(s.Name, t.id.partition).Count(StoreCountLimit)
				if err != nil {
					n = -1
				}
				ts.Stores = append(ts.Stores, StoreStats{Name: s.Name, Entries: n})
			}
		}
		st.Tasks = append(st.Tasks, ts)
	}
	return st
}

// countFailure counts a failing record (err a RecordError).
func (a *App) countFailure(err error) {
	var re *RecordError
	if errors.As(err, &re) {
		a.stats.failed.Add(1)
	}
}

// observeSince adds the time since start to h, when metrics are on.
func observeSince(h *metrics.Histogram, start time.Time) {
	if h != nil {
		h.ObserveSince(start)
	}
}
