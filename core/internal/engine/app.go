// Package engine runs a topology on Kafka: a consumer group named by
// application.id, one task per sub-topology partition processing its records
// in offset order, host operators crossing in bundles, state in Pebble with
// changelog topics, and at-least-once commits (outputs acknowledged before
// their input offsets commit).
package engine

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/group"
	"github.com/polystreams/polystreams/core/internal/serde/registry"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// State is an application's state, as the SDKs see it.
type State int

const (
	Created State = iota + 1
	// Rebalancing: joining the group, or partitions were revoked.
	Rebalancing
	// Running: every assigned task has restored its stores.
	Running
	Stopped
	Failed
	// Restoring: assigned, and some task is restoring its stores from their
	// changelogs; see App.Restore.
	Restoring
	// Degraded: started, and no broker has answered any of the
	// application's requests for brokerSilence (10 s). It stands for
	// Running, Rebalancing or Restoring, which come back by themselves once
	// a broker answers; see App.BrokerOutage.
	Degraded
)

func (s State) String() string {
	return [...]string{"", "created", "rebalancing", "running", "stopped", "error", "restoring", "degraded"}[s]
}

// App runs one topology. Safe for concurrent use.
type App struct {
	cfg    config.App
	health *brokerHealth // the brokers' answers, for the broker watch
	topo   *topology.Topology
	plans  []*plan
	// planOf maps a full source topic name to the plan reading it; a
	// topic a pattern source reads is not in it (planFor).
	planOf map[string]*plan
	// hasPatterns: some source reads a topic pattern (pattern.go).
	hasPatterns bool
	// refreshMu serializes RefreshPatterns.
	refreshMu sync.Mutex
	// patMu guards matched: the topics each pattern source reads, as
	// last matched (ensureTopics).
	patMu   sync.Mutex
	matched map[*topology.Node][]string
	// carried (test driver mode; guarded by mu): how far the tasks a
	// rebalance took had processed each partition, which their successors
	// resume from (the test driver commits after every record).
	carried map[topicPartition]int64
	host    Host
	log     *slog.Logger

	db  *state.DB
	cl  *kgo.Client
	adm *kadm.Client
	// sinkParts: topic -> its partition count (int), as stream
	// partitioners need it (route.go); counts only grow, and a stale one
	// only narrows what a partitioner may choose.
	sinkParts sync.Map
	// Under exactly_once_v2: the transaction session wrapping cl. Outputs,
	// changelog writes and input offsets commit in one transaction every
	// commit.interval.ms; see commitTxn.
	sess *kgo.GroupTransactSession
	eos  bool
	// txnOpts are the options of sess, kept to replace it (replaceSession).
	txnOpts []kgo.Opt
	// replaced counts the sessions replaced after failed transactions.
	replaced atomic.Int64
	// instanceID is the group.instance.id (static membership).
	instanceID string
	// balancer assigns the group's tasks and remembers this member's.
	balancer *group.Balancer
	// pending counts records handed to tasks and not yet processed (or
	// dropped); a transaction commits only when it is 0, so that the offsets
	// the session commits (those polled) are exactly those processed.
	pending atomic.Int64
	// idling counts the tasks waiting with records buffered that they may
	// not take yet (max.task.idle.ms; idle.go); under exactly_once_v2 a
	// transaction waits for no such task (commitTxn). idleForced ends
	// their waits: set when they put off a transaction too long.
	idling     atomic.Int64
	idleForced atomic.Bool
	// clock is what tasks measure max.task.idle.ms by (time.Now).
	clock func() time.Time
	// wallNow is the wall clock punctuators run by (epoch ms); nil: the
	// system's (punctuate.go).
	wallNow func() int64
	// workDropped is set when a task stopped with polled records it did not
	// process: the transaction open then must abort, not commit (its
	// session would commit their offsets).
	workDropped atomic.Bool

	ctx    context.Context // canceled to stop
	cancel context.CancelFunc
	done   chan struct{}

	// dropped counts records the tasks dropped (Kafka Streams'
	// dropped-records): a null key or value an aggregation skips, a record
	// too late for its windows.
	dropped atomic.Int64

	// produceFailed is set once any output or changelog record could not
	// be written; from then on nothing is committed or checkpointed.
	produceFailed atomic.Bool
	// fenced holds the first error of a record refused because the broker
	// fenced the transactional producer (its epoch bumped by a transaction
	// timeout, or another producer with the transactional id): under
	// exactly_once_v2 the open transaction cannot commit, and the poll loop
	// replaces the session (replaceSession), as Kafka Streams' record
	// collector turns a fenced send into a TaskMigratedException.
	fenced atomic.Pointer[error]

	// restores: the progress of the tasks' store restores since the last
	// rebalance. Its entries follow tasks: added and dropped under mu.
	restores restores

	mu    sync.Mutex // guards tasks, standby, state, degraded, err, changes, changed
	tasks map[taskID]*task
	// standby keeps the stores of this assignment's standby tasks warm
	// (standby.go); nil when it has none.
	standby *standby
	state   State
	// degraded: the broker watch finds the brokers unreachable (brokers.go);
	// State is then Degraded in place of Running, Rebalancing or Restoring.
	degraded bool
	err      error
	// changes: every state the application has been in, in order (as State
	// reports them, Restoring included), so that each host worker can be
	// told of every change, however short; see Changes.
	changes []State
	// changed is closed, and replaced, at each change.
	changed chan struct{}

	// stats: counters for metrics (stats.go).
	stats appStats

	// globals reads the global tables (global.go); nil without any. Set
	// by begin before any task runs.
	globals *globals
	// outputs: in test driver mode, what the tasks wrote to sink topics
	// (testdriver.go); nil otherwise.
	outputs *outputs
	// promise is produced as a kgo promise, made once (produceThen).
	promise func(*kgo.Record, error)

	// mem: the memory budget and what the application holds (budget.go).
	mem *memory
	// registry: the Schema Registry serdes of the topology's sources and
	// sinks (wire.go); nil when none names one.
	registry *registry.Serdes

	// paused: Pause was called and no Resume since (operations.go).
	// pauseMu orders Pause and Resume with the consumer client's creation,
	// so that a client made while paused is paused too.
	paused  atomic.Bool
	pauseMu sync.Mutex
	pauseCl *kgo.Client // the consumer client; guarded by pauseMu
	// threads holds one token per task processing a batch, at most
	// num.stream.threads; nil without the key (no bound).
	threads chan struct{}
	// productionErrors counts records the broker refused for good that
	// default.production.exception.handler = continue skipped.
	productionErrors atomic.Int64
}

// New prepares an application; Start runs it.
func New(cfg config.App, topo *topology.Topology, host Host) (*App, error) {
	a := &App{cfg: cfg, topo: topo, host: host, log: cfg.Logger, tasks: map[taskID]*task{}, state: Created, done: make(chan struct{}), clock: time.Now,
		changes: []State{Created}, changed: make(chan struct{}),
		eos: cfg.Guarantee == config.ExactlyOnceV2, balancer: group.NewBalancer(cfg.StandbyReplicas)}
	a.balancer.LocalState = a.localTaskState
	a.balancer.Endpoint = cfg.ApplicationServer
	a.promise = func(r *kgo.Record, err error) { a.produced(r, err) }
	a.mem = newMemory(cfg.MemoryMaxBytes)
	if cfg.StreamThreads > 0 {
		a.threads = make(chan struct{}, cfg.StreamThreads)
	}
	if host != nil {
		a.host = budgetedHost{host, a.mem}
	}
	a.health = &brokerHealth{}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	a.log = a.log.With("application.id", cfg.ApplicationID)
	var internal []string // every internal topic's name in Kafka
	full := func(name string, isInternal bool) string {
		t := a.fullTopic(name, isInternal)
		if isInternal {
			internal = append(internal, t)
		}
		return t
	}
	plans, err := compile(topo, full, cfg.CacheMaxBytes > 0, cfg.FoldPrograms)
	if err != nil {
		return nil, err
	}
	for _, st := range topo.Stores {
		if !st.Global {
			internal = append(internal, a.fullTopic(st.ChangelogTopic, true))
		}
	}
	if err := checkInternalTopics(cfg.ApplicationID, internal); err != nil {
		return nil, err
	}
	a.plans = plans
	if a.registry, err = newRegistry(cfg.Registry, topo); err != nil {
		return nil, err
	}
	if !cfg.MetricsDisabled {
		a.instrument()
	}
	if cfg.TestDriver {
		a.outputs = newOutputs(slices.Collect(maps.Keys(a.SinkTopics())))
		if extractsTopics(a.topo) {
			a.outputs.internal = a.cfg.ApplicationID + "-"
		}
	}
	a.planOf = map[string]*plan{}
	for _, p := range plans {
		a.hasPatterns = a.hasPatterns || len(p.patterns) > 0
		for t := range p.sources {
			if other, ok := a.planOf[t]; ok {
				return nil, fmt.Errorf("engine: topic %q is read by sub-topologies %d and %d; Kafka Streams allows one", t, other.id, p.id)
			}
			a.planOf[t] = p
		}
	}
	return a, nil
}

// checkInternalTopics refuses internal topic names Kafka would refuse
// when the application creates them (longer than its limit on topic
// names): an application.id Kafka allows can still make one, with a
// store's or operator's name after it.
func checkInternalTopics(appID string, names []string) error {
	slices.Sort(names)
	for _, t := range slices.Compact(names) {
		if len(t) > config.MaxTopicName {
			return fmt.Errorf("engine: internal topic %s is %d characters; Kafka allows at most %d: use a shorter application.id (it is %d) or give the store or operator a shorter name",
				t, len(t), config.MaxTopicName, len(appID))
		}
	}
	return nil
}

// fullTopic is the topic's name in Kafka: internal topics are prefixed with
// "<application.id>-".
func (a *App) fullTopic(name string, internal bool) string {
	if internal {
		return a.cfg.ApplicationID + "-" + name
	}
	return name
}

// Start creates internal topics, opens state, joins the group and begins
// processing. It returns once processing has begun (or failed to), or, when
// no broker is reachable, at once: the application then waits for one in
// Rebalancing (startWhenReachable).
func (a *App) Start(ctx context.Context) error {
	// Before any client exists: the group's callbacks (which start tasks
	// with this context) may run as soon as the consumer client does.
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.health.lastOK.Store(time.Now().UnixNano())
	if !a.cfg.TestDriver {
		// Its budget counts in the engine's soft memory limit until it
		// is done (memlimit.go).
		release := holdSoftLimit(a.mem.limit)
		go func() { <-a.done; release() }()
	}
	go a.watchBrokers()
	// Metadata younger than MetadataMinAge is served from cache; internal
	// topics created here must show up quickly.
	admCl, err := kgo.NewClient(append(a.clientOpts(), kgo.MetadataMinAge(retryBackoff))...)
	if err != nil { // nothing runs: Stop and Done must not wait
		a.cancel()
		close(a.done)
		return fmt.Errorf("engine: %w", err)
	}
	a.adm = kadm.NewClient(admCl)
	if _, err := a.adm.BrokerMetadata(ctx); unreachable(err) {
		if a.cfg.BrokerWait <= 0 {
			a.adm.Close()
			a.cancel()
			close(a.done)
			return a.noBroker(err)
		}
		// As Kafka Streams' start(): no broker answers yet, which is no
		// error. The application is Rebalancing until one does, for
		// polystreams.broker.wait.ms at most.
		a.log.Warn("waiting for the brokers", "brokers", strings.Join(a.cfg.Brokers, ","),
			"polystreams.broker.wait.ms", a.cfg.BrokerWait.Milliseconds(), "error", err)
		a.setState(Rebalancing)
		go a.startWhenReachable()
		return nil
	}
	if err := a.begin(ctx); err != nil {
		a.cancel()
		close(a.done)
		return err
	}
	return nil
}

// brokerLogEvery is how often, at most, the wait for unreachable brokers
// is logged.
const brokerLogEvery = 10 * time.Second

// unreachable reports whether err says that no broker could be reached
// (nothing listening, no route, a name that does not resolve), as opposed
// to a broker's answer. A TLS handshake the broker refused (an alert, e.g.
// "certificate required") or whose certificate does not verify is an
// answer: the settings are wrong, and waiting would not mend them.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	if err == nil || errors.As(err, &alert) || errors.As(err, &verify) || errors.As(err, &op) && op.Op == "remote error" {
		return false
	}
	return errors.As(err, &op) || errors.As(err, &dns)
}

// noBroker is the error of an application none of whose brokers answered
// within polystreams.broker.wait.ms; last is the last attempt's error.
func (a *App) noBroker(last error) error {
	return fmt.Errorf("engine: no broker of bootstrap.servers %s answered within %v (polystreams.broker.wait.ms = %d): %w",
		strings.Join(a.cfg.Brokers, ","), a.cfg.BrokerWait, a.cfg.BrokerWait.Milliseconds(), last)
}

// startWhenReachable waits for a broker to answer, retrying with a backoff
// up to 2 s and logging at most once per brokerLogEvery, then begins
// processing; Stop ends the wait, and so does polystreams.broker.wait.ms
// passing, failing the application (noBroker). Start's errors that a broker's answers
// decide (a missing source topic, ...) then fail the application.
func (a *App) startWhenReachable() {
	defer a.recovered("start")
	since, logged := time.Now(), time.Now()
	for backoff := 250 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		select {
		case <-a.ctx.Done():
			a.adm.Close()
			a.setState(Stopped)
			close(a.done)
			return
		case <-time.After(backoff):
		}
		_, err := a.adm.BrokerMetadata(a.ctx)
		if !unreachable(err) {
			break
		}
		if a.ctx.Err() == nil && time.Since(since) >= a.cfg.BrokerWait {
			a.adm.Close()
			a.fail(a.noBroker(err))
			close(a.done)
			return
		}
		if time.Since(logged) >= brokerLogEvery {
			logged = time.Now()
			a.log.Warn("waiting for the brokers", "brokers", strings.Join(a.cfg.Brokers, ","), "waited", time.Since(since).Round(time.Second), "error", err)
		}
	}
	a.log.Info("the brokers answer", "waited", time.Since(since).Round(time.Millisecond))
	if err := a.begin(a.ctx); err != nil {
		if a.ctx.Err() != nil { // stopped meanwhile
			a.setState(Stopped)
		} else {
			a.fail(err)
		}
		close(a.done)
	}
}

// begin is Start once a broker answers: internal topics, state, the
// group's client and the poll loop. On an error, what it opened is closed.
func (a *App) begin(ctx context.Context) (err error) {
	manual, err := a.ensureTopics(ctx)
	if err != nil {
		a.adm.Close()
		return a.cfg.ExplainAuth(err)
	}
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		a.adm.Close()
		return fmt.Errorf("engine: state.dir: %w", err)
	}
	if a.db, err = state.Open(dir); err != nil {
		a.adm.Close()
		return fmt.Errorf("engine: %w", err)
	}
	if err := a.startGlobals(ctx); err != nil {
		a.db.Close()
		a.adm.Close()
		return a.cfg.ExplainAuth(err)
	}
	topics := make([]string, 0, len(a.planOf))
	for t := range a.planOf {
		topics = append(topics, t)
	}
	topics = append(topics, a.matchedTopics(nil)...)
	opts := append(a.clientOpts(),
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// Transaction markers tell the consumer's position past them,
		// which the tasks' lags need (idle.go); poll drops them.
		kgo.KeepControlRecords(),
		// Tasks (partition p of every source topic) go to members evenly
		// and stickily (group/balancer.go); range, which also keeps partition p
		// of every topic together, only while some member (an older
		// engine, in a rolling upgrade) knows nothing else.
		kgo.Balancers(a.balancer, kgo.RangeBalancer()),
		// A paused partition is fetched again only after the broker's fetch
		// in flight returns, which waits up to this long when nothing is new.
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchMaxPartitionBytes(fetchMaxPartitionBytes),
		kgo.MaxBufferedRecords(produceMaxBuffered),
		kgo.ProducerLinger(a.cfg.ProducerLinger),
		kgo.OnPartitionsAssigned(a.onAssigned),
		kgo.OnPartitionsRevoked(a.onRevoked),
		kgo.OnPartitionsLost(a.onLost),
		// auto.offset.reset and each source's own policy, for partitions
		// with no committed offset (operations.go).
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(a.adjustOffsets(a.offsetResets())),
		kgo.RecordPartitioner(changelogPartitioner(manual, windowedSinkTopics(a.topo))),
		// As Kafka's Java producer (allow.auto.create.topics=true): a sink
		// topic that does not exist is created where the broker allows it.
		kgo.AllowAutoTopicCreation(),
		// A produce the broker answers with a retriable error waits for a
		// metadata update, and franz-go updates metadata at most every
		// MetadataMinAge (5 s by default). Under exactly_once_v2 that
		// happens after a commit: a broker with transaction.version 2
		// (Kafka 4.0+) answers the next transaction's first produce with
		// CONCURRENT_TRANSACTIONS until it has written the last one's
		// markers (in bench-peers, for seconds after an application's
		// first commit), and every task stalled up to 5 s more (its
		// exactly-once sum: 1M records in 7.4-13.3 s instead of 2.6-3.4 s).
		// Kafka's Java clients retry after retry.backoff.ms, 100 ms.
		kgo.MetadataMinAge(retryBackoff),
	)
	if a.cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(a.cfg.SessionTimeout))
	}
	// auto.offset.reset also says where a committed offset the log no
	// longer holds (out of range) resumes, application-wide (the client
	// has one reset offset). earliest keeps the client's default, which
	// resumes a partition not consumed yet at the log start.
	switch a.cfg.OffsetReset {
	case config.OffsetLatest:
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	case config.OffsetNone:
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	}
	// Static membership by default, with an id kept in the state directory:
	// a restarted instance takes its partitions back at once instead of
	// waiting for its dead predecessor's session to time out (and a member
	// killed in the middle of joining cannot hold partitions hostage).
	instance := a.cfg.InstanceID
	if instance == "" {
		pid, err := processID(dir)
		if err != nil {
			a.db.Close()
			a.adm.Close()
			return fmt.Errorf("engine: %w", err)
		}
		instance = a.cfg.ApplicationID + "-" + pid
	}
	opts = append(opts, kgo.InstanceID(instance))
	a.instanceID = instance
	// Rebalancing before the group's client exists: it joins at once, and
	// its onAssigned (Running) may come before this function returns; set
	// after, Rebalancing would hide a running application for good.
	a.setState(Rebalancing)
	if a.eos {
		pid, err := processID(dir)
		if err != nil {
			a.db.Close()
			a.adm.Close()
			return fmt.Errorf("engine: %w", err)
		}
		opts = append(opts,
			// Stable per state directory, like Kafka Streams' process id: a
			// restarted instance fences its predecessor's open transaction
			// at once instead of waiting for it to time out.
			kgo.TransactionalID(a.cfg.ApplicationID+"-"+pid),
			kgo.TransactionTimeout(10*time.Second), // Kafka Streams' EOS default
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
		)
		a.txnOpts = opts
		if err := a.openSession(); err != nil {
			a.db.Close()
			a.adm.Close()
			return fmt.Errorf("engine: %w", err)
		}
	} else if a.cl, err = kgo.NewClient(opts...); err != nil {
		a.db.Close()
		a.adm.Close()
		return fmt.Errorf("engine: %w", err)
	}
	a.applyPause(a.cl)
	a.runGlobals()
	if a.hasPatterns {
		if len(topics) == 0 {
			// Only patterns, which match no topic yet: the client joins
			// the group once one does (RefreshPatterns). Until then the
			// application runs with no task, as Kafka Streams' does.
			a.setState(Running)
		}
		go a.watchPatterns()
	}
	go a.run()
	return nil
}

// changelogPartitioner writes changelog records to their task's partition
// and everything else as Kafka's default partitioner does (murmur2 of the
// key), so repartition topics agree with Kafka Streams'. Topics that sinks
// write with windowed keys (windowedSinkTopics) are partitioned by the
// windowed key's inner key, as Kafka Streams' WindowedStreamPartitioner
// does: every window of a key goes to the key's partition.
func changelogPartitioner(manual map[string]bool, windowed map[string]int) kgo.Partitioner {
	return partitioner{manual: manual, windowed: windowed, def: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}
}

type partitioner struct {
	manual map[string]bool
	// windowed: topic -> the length of the window suffix of its keys
	// (8: a time window's start; 16: a session's start and end).
	windowed map[string]int
	def      kgo.Partitioner
}

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if p.manual[t] {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	if suffix, ok := p.windowed[t]; ok {
		return keepChosen(innerKeyPartitioner{suffix: suffix, keyed: kgo.StickyKeyPartitioner(nil).ForTopic(t)})
	}
	return keepChosen(p.def.ForTopic(t))
}

// innerKeyPartitioner hashes a windowed key's inner key (the key without
// its window suffix) as Kafka's default partitioner hashes keys.
type innerKeyPartitioner struct {
	suffix int
	keyed  kgo.TopicPartitioner
}

func (innerKeyPartitioner) RequiresConsistency(*kgo.Record) bool { return true }

func (p innerKeyPartitioner) Partition(r *kgo.Record, n int) int {
	if len(r.Key) < p.suffix {
		return p.keyed.Partition(r, n) // not a windowed key: hashed whole
	}
	inner := *r
	inner.Key = r.Key[:len(r.Key)-p.suffix]
	return p.keyed.Partition(&inner, n)
}

// DroppedRecords counts the records the tasks dropped since the start.
func (a *App) DroppedRecords() int64 { return a.dropped.Load() }

// State returns the state and, in Failed, the error. A running
// application whose tasks are restoring stores is Restoring.
func (a *App) State() (State, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stateLocked(), a.err
}

// stateLocked is State, with a.mu held.
func (a *App) stateLocked() State {
	s := a.state
	if s == Running && !a.restores.Progress().Done() || s == Rebalancing && a.globalsRestoring() {
		s = Restoring
	}
	if a.degraded && (s == Running || s == Rebalancing || s == Restoring) {
		return Degraded
	}
	return s
}

// Changes returns the states the application has been in from the from-th
// change on (the 0th is Created; a from past the last gives the current
// state), the index of the first of them, and a channel closed at the next
// change. Safe for concurrent use.
func (a *App) Changes(from int) (states []State, first int, next <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	first = min(max(from, 0), len(a.changes)-1)
	return append([]State(nil), a.changes[first:]...), first, a.changed
}

// noteLocked records a change of State, if there was one; a.mu held.
// Called wherever what State derives from changes: the state, and the
// restores' partitions starting or finishing.
func (a *App) noteLocked() {
	if s := a.stateLocked(); s != a.changes[len(a.changes)-1] {
		a.changes = append(a.changes, s)
		close(a.changed)
		a.changed = make(chan struct{})
	}
}

// noteRestored records the change a finished restore may have made.
func (a *App) noteRestored() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.noteLocked()
}

func (a *App) setState(s State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != Failed && a.state != Stopped {
		a.state = s
		a.noteLocked()
	}
}

// Done is closed when the application has stopped (by Stop or a failure).
func (a *App) Done() <-chan struct{} { return a.done }

// fail stops the application with err; the first error wins.
func (a *App) fail(err error) {
	a.mu.Lock()
	if a.err == nil && a.state != Stopped {
		a.countFailure(err)
		a.err = err
		a.state = Failed
		a.noteLocked()
		a.log.Error("application failed", "error", err)
	}
	a.mu.Unlock()
	if a.cancel != nil {
		a.cancel()
	}
}

// Stop commits what is processed, leaves the group and closes. It waits for
// the shutdown until ctx is done.
func (a *App) Stop(ctx context.Context) error {
	if a.cancel == nil {
		return nil
	}
	a.cancel()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine: stop: %w", ctx.Err())
	}
}

// run is the poll loop, then the shutdown.
func (a *App) run() {
	defer close(a.done)
	defer a.recovered("commit loop")
	commit := time.NewTicker(a.cfg.CommitInterval)
	defer commit.Stop()
	commits := commit.C
	if a.cfg.TestDriver {
		commits = nil // the test driver commits after each record (Quiesce)
	}
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		defer a.recovered("poll loop")
		a.poll()
	}()
loop:
	for {
		select {
		case <-polled:
			break loop
		case <-commits:
			if !a.eos { // under EOS the poll loop commits
				tasks := a.allTasks()
				a.flushTasks(tasks)
				a.commitTasks(a.ctx, tasks, false)
			}
		}
	}
	// Shutdown: stop tasks (each finishes its batch in progress), commit
	// what they completed, checkpoint their stores, leave the group.
	a.mu.Lock()
	tasks := make([]*task, 0, len(a.tasks))
	for id, t := range a.tasks {
		tasks = append(tasks, t)
		delete(a.tasks, id)
	}
	a.mu.Unlock()
	stopTasks(tasks)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if a.eos {
		if a.produceFailed.Load() || a.workDropped.Load() || a.fenced.Load() != nil {
			if _, err := a.sess.End(ctx, kgo.TryAbort); err != nil {
				a.log.Warn("aborting the last transaction", "error", err)
			}
			for _, t := range tasks {
				t.settleTxn(false)
			}
		} else if err := a.endTxn(ctx, tasks); err != nil {
			a.log.Warn("ending the last transaction", "error", err)
		}
		a.sess.CloseAllowingRebalance()
	} else {
		a.commitTasks(ctx, tasks, true)
		a.cl.CloseAllowingRebalance()
	}
	// A static member does not leave the group when it closes; a stopped
	// application should (a crashed one keeps its place for a quick
	// restart), so that its partitions move on at once.
	if _, err := a.adm.LeaveGroup(ctx, kadm.LeaveGroup(a.cfg.ApplicationID).InstanceIDs(a.instanceID).Reason("polystreams: application stopped")); err != nil {
		a.log.Warn("leaving the group", "error", err)
	}
	a.stopStandbys()
	a.adm.Close()
	a.stopGlobals()
	if err := a.closeDB(); err != nil {
		a.log.Error("closing state", "error", err)
	}
	a.setState(Stopped)
	a.log.Info("stopped")
}

func (a *App) allTasks() []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*task, 0, len(a.tasks))
	for _, t := range a.tasks {
		out = append(out, t)
	}
	return out
}

func stopTasks(tasks []*task) {
	for _, t := range tasks {
		close(t.stop)
	}
	for _, t := range tasks {
		<-t.done
	}
}

// poll fetches records and hands each partition's to its task. Rebalance
// callbacks run only between polls (BlockRebalanceOnPoll), so a task never
// gets records of a partition it no longer owns.
func (a *App) poll() {
	// Nothing is fetched before the global stores are restored: the tasks
	// could only hold it (awaitGlobals).
	if !a.awaitGlobals(a.ctx, nil) {
		return
	}
	last := time.Now()
	// putOff: since when the end of the transaction has been put off for
	// idling tasks (zero: it is not).
	var putOff time.Time
	for {
		pctx := a.ctx
		var cancel context.CancelFunc = func() {}
		if a.eos {
			if time.Since(last) >= a.cfg.CommitInterval {
				switch a.commitTxn(putOff) {
				case txnStopping:
					a.cl.AllowRebalance()
					return
				case txnPutOff:
					if putOff.IsZero() {
						putOff = time.Now()
					}
				case txnEnded:
					last, putOff = time.Now(), time.Time{}
				}
			}
			// Come back to commit on time even when nothing arrives.
			due := last.Add(a.cfg.CommitInterval)
			if !putOff.IsZero() {
				due = time.Now().Add(idleRecheck)
			}
			pctx, cancel = context.WithDeadline(a.ctx, due)
		}
		// Every record the client has buffered, not a bounded number: a
		// partition a task pauses (its inbox full) loses what the client
		// still buffers of it (franz-go drops a paused partition's buffered
		// records at the next poll), and fetching and decoding them again
		// cost more than the whole run with a small inbox bound. Taken
		// whole, a fetch leaves nothing to drop, and it is bounded per
		// partition (fetchMaxPartitionBytes).
		fs := a.cl.PollFetches(pctx)
		cancel()
		if a.ctx.Err() != nil || fs.IsClientClosed() {
			a.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			if a.cfg.OffsetReset == config.OffsetNone && errors.Is(err, kerr.OffsetOutOfRange) {
				a.fail(fmt.Errorf("engine: partition %s/%d: its committed offset is out of range and auto.offset.reset is none: %w", topic, p, err))
				return
			}
			a.log.Warn("fetch", "topic", topic, "partition", p, "error", err)
		})
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			if ftp.Err != nil && len(ftp.Records) == 0 {
				return // its end is not known from this fetch
			}
			if t := a.taskFor(ftp.Topic, ftp.Partition); t != nil {
				t.fetchedPartition(ftp)
			}
		})
		a.cl.AllowRebalance()
	}
}

// What commitTxn did.
type txnOutcome int

const (
	txnEnded    txnOutcome = iota // the transaction ended; the next began
	txnPutOff                     // not yet: a task is idling (idle.go)
	txnStopping                   // the application is stopping or failed
)

// commitTxn ends the transaction once every polled record is processed, and
// begins the next. A task idling with records it may not take yet
// (max.task.idle.ms) may need more fetched first: then the end is put off
// (txnPutOff), so that the poll loop keeps fetching; once it has been put
// off since putOff for commitPutOffMax, the tasks stop waiting.
func (a *App) commitTxn(putOff time.Time) txnOutcome {
	for a.pending.Load() > 0 {
		if a.ctx.Err() != nil {
			return txnStopping
		}
		if a.idling.Load() > 0 && !a.idleForced.Load() {
			if putOff.IsZero() || time.Since(putOff) < commitPutOffMax {
				return txnPutOff
			}
			a.log.Warn("idling tasks put off the end of a transaction too long: they process what they hold (enforced processing)",
				"put off", time.Since(putOff).Round(time.Millisecond), "max.task.idle.ms", a.cfg.MaxTaskIdleMs)
			a.idleForced.Store(true)
			for _, t := range a.allTasks() {
				t.wake()
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	a.idleForced.Store(false)
	tasks := a.allTasks()
	a.flushTasks(tasks)
	if a.ctx.Err() != nil {
		return txnStopping
	}
	// A commit under way finishes even when the application is asked to
	// stop meanwhile: cut short, its outcome would be unknown, and what
	// the stop commits after it would be lost with it until a restart
	// processed it again.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err := a.endTxn(ctx, tasks)
	cancel()
	if err != nil {
		if a.ctx.Err() != nil {
			return txnStopping
		}
		return txnAfterReplace(a.replaceSession(err))
	}
	a.workDropped.Store(false) // what was dropped went with that transaction
	if err := a.sess.Begin(); err != nil {
		return txnAfterReplace(a.replaceSession(fmt.Errorf("beginning a transaction: %w", err)))
	}
	return txnEnded
}

// txnAfterReplace is commitTxn's outcome after replaceSession reported ok.
func txnAfterReplace(ok bool) txnOutcome {
	if ok {
		return txnEnded
	}
	return txnStopping
}

// openSession opens the transaction session (the group consumer and
// transactional producer) and begins its first transaction.
func (a *App) openSession() error {
	opts := a.txnOpts
	if a.hasPatterns {
		// The topics pattern sources read now, some added since the
		// first session (a later ConsumeTopics replaces an earlier).
		opts = append(slices.Clip(opts), kgo.ConsumeTopics(append(slices.Collect(maps.Keys(a.planOf)), a.matchedTopics(nil)...)...))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	if err := sess.Begin(); err != nil {
		sess.Close()
		return err
	}
	a.mu.Lock() // RefreshPatterns reads a.cl from another goroutine
	a.sess, a.cl = sess, sess.Client()
	a.mu.Unlock()
	a.applyPause(a.cl)
	return nil
}

// replaceSession recovers from a transaction that ended in an error, as
// Kafka Streams does on a TaskMigratedException under exactly_once_v2: it
// closes every task dirty, replaces the session's client (a new producer,
// which fences the old one and aborts whatever transaction it left open,
// and a new group member under the same group.instance.id), and
// continues. The new member's tasks restore their stores from the
// changelogs and consume from the committed offsets, both as the broker
// has them: this is right whether the transaction in question committed,
// aborted or is still open, which a client that saw an error cannot tell
// (a fenced producer, an EndTxn whose connection closed, an
// UNKNOWN_SERVER_ERROR). Errors the session itself resolves by aborting
// (TRANSACTION_ABORTABLE, a stale generation) never come here: End reports
// those as a clean abort. Called by the poll loop only, between polls; it
// reports false when the application is stopping or failed.
func (a *App) replaceSession(cause error) bool {
	if a.produceFailed.Load() {
		// A record could not be written: that fails the application
		// (produceThen) and is not retried here.
		a.fail(fmt.Errorf("engine: ending a transaction: %w", cause))
		return false
	}
	a.fenced.Store(nil) // the new producer starts unfenced
	n := a.replaced.Add(1)
	a.log.Warn("transaction failed: closing the tasks dirty and replacing the producer; the tasks restore from their changelogs and process the transaction's records again",
		"error", cause, "replacements", n)
	a.mu.Lock()
	tasks := make([]*task, 0, len(a.tasks))
	for id, t := range a.tasks {
		tasks = append(tasks, t)
		delete(a.tasks, id)
		a.restores.Drop(storePartitionsOf(id, t.plan))
	}
	a.mu.Unlock()
	a.setState(Rebalancing)
	stopTasks(tasks)
	for _, t := range tasks {
		t.settleTxn(false)
	}
	a.workDropped.Store(false) // the dropped work is fetched again
	// The old client's callbacks (onRevoked, onLost) find no task left,
	// and they have all run when Close returns: none can touch the new
	// client's tasks.
	a.sess.CloseAllowingRebalance()
	if a.ctx.Err() != nil {
		return false
	}
	if err := a.openSession(); err != nil {
		a.fail(fmt.Errorf("engine: replacing the transaction session after %v: %w", cause, err))
		return false
	}
	return true
}

// endTxn writes the transaction's store changes to the changelogs and ends
// it: outputs, changelog records and input offsets commit together, or none
// does. Only a committed transaction's changes reach Pebble; an aborted one
// leaves no trace (and the session rewinds consumption to the committed
// offsets). An error means the transaction's outcome is not known to have
// been a commit: its changes are dropped (see replaceSession).
func (a *App) endTxn(ctx context.Context, tasks []*task) error {
	for _, t := range tasks {
		t.writeChangelogs()
	}
	start := time.Now()
	// Flushed first, so that every record's outcome is known before the
	// commit: a transaction missing a record it holds must abort, never
	// commit (End would commit what was written).
	committed := false
	err := a.cl.Flush(ctx)
	if err == nil {
		how := kgo.TryCommit
		if a.fenced.Load() != nil || a.produceFailed.Load() {
			how = kgo.TryAbort
		}
		committed, err = a.sess.End(ctx, how)
	}
	observeSince(a.stats.txn, start)
	if err == nil && a.produceFailed.Load() {
		err = errors.New("a record of the transaction could not be written")
	}
	if f := a.fenced.Load(); err == nil && f != nil {
		err = *f
	}
	for _, t := range tasks {
		t.settleTxn(committed && err == nil)
	}
	if err != nil {
		return err
	}
	if !committed {
		a.log.Info("transaction aborted (a rebalance or a broker error came first); its records are processed again")
	}
	return nil
}

// inboxHigh is how many fetched records a task may have waiting before its
// partitions are paused: two bundles' worth, at least 4,000 (Kafka
// Streams' buffered.records.per.partition is 1,000). A fetch is taken
// whole, so a queue may pass it by what one fetch brings of its partition
// (fetchMaxPartitionBytes). It was 20,000 (8 bundles): with 16 tasks, a
// word count's inboxes alone held 50 MB of decoded records.
func (a *App) inboxHigh() int { return max(2*a.cfg.BundleMaxRecords, 4000) }

// What the group's client holds on the application's behalf, bounded for
// the engine's peak memory (docs/performance.md, "Peak memory"): the
// records a fetch brings per partition (franz-go's default is 1 MiB, tens
// of thousands of small records, each a decoded kgo.Record of ~170 bytes
// kept alive with its batch while any of them waits in an inbox), and the
// records handed to the producer and not yet written (franz-go's default
// is 50,000; a task's Produce waits while the buffer is full).
const (
	fetchMaxPartitionBytes = 256 << 10
	produceMaxBuffered     = 10000
)

func (a *App) taskFor(topic string, partition int32) *task {
	p := a.planFor(topic)
	if p == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tasks[taskID{p.id, partition}]
}

func (a *App) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	// The last assignment's standbys stop before any task starts: a task
	// that was a standby here restores from where its standby got to.
	a.stopStandbys()
	a.mu.Lock()
	var started []*task
	var sps []storePartition
	for topic, parts := range assigned {
		p := a.planFor(topic)
		if p == nil {
			continue
		}
		for _, part := range parts {
			id := taskID{p.id, part}
			if _, ok := a.tasks[id]; ok {
				continue
			}
			t := newTask(a, id, p)
			a.tasks[id] = t
			started = append(started, t)
			sps = append(sps, storePartitionsOf(id, p)...)
		}
	}
	// The new tasks' store partitions count as restoring before any task
	// starts, so the application is Restoring until all are restored.
	a.restores.Assign(sps)
	if a.state != Failed && a.state != Stopped {
		a.state = Running // Restoring, to State, until all are restored
	}
	a.noteLocked()
	for _, t := range started {
		go t.run(a.ctx)
	}
	a.startStandbys(a.balancer.StandbyTasks())
	a.mu.Unlock()
	a.log.Info("partitions assigned", "partitions", assigned)
}

// onRevoked stops the tasks of revoked partitions and commits what they
// completed.
func (a *App) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	tasks := a.takeTasks(revoked)
	if len(tasks) == 0 {
		return
	}
	a.setState(Rebalancing)
	stopTasks(tasks)
	if a.eos {
		// The session aborts the open transaction at its next End; the
		// tasks' uncommitted changes go with it.
		for _, t := range tasks {
			t.settleTxn(false)
		}
		return
	}
	a.commitTasks(ctx, tasks, true)
}

// onLost drops the tasks of lost partitions without committing: another
// member may own them already.
func (a *App) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	// This member's claim to them is void: it must not pull them back.
	a.balancer.Forget()
	tasks := a.takeTasks(lost)
	a.setState(Rebalancing)
	stopTasks(tasks)
	for _, t := range tasks {
		t.settleTxn(false)
	}
}

func (a *App) takeTasks(parts map[string][]int32) []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*task
	for topic, ps := range parts {
		p := a.planFor(topic)
		if p == nil {
			continue
		}
		for _, part := range ps {
			id := taskID{p.id, part}
			if t, ok := a.tasks[id]; ok {
				out = append(out, t)
				delete(a.tasks, id)
				a.carryReached(t)
				a.restores.Drop(storePartitionsOf(id, p))
			}
		}
	}
	a.noteLocked()
	return out
}

// produce hands a record to the producer; a record that cannot be written
// fails the application (at-least-once cannot skip it).
func (a *App) produce(r *kgo.Record) { a.produceThen(r, nil) }

// produceThen is produce, calling ok once the record is written.
func (a *App) produceThen(r *kgo.Record, ok func(*kgo.Record)) {
	if a.outputs != nil {
		a.outputs.note(r)
	}
	if ok == nil {
		// Every output, repartition and changelog record of a batch comes
		// here: one promise for them all, not a closure per record.
		a.cl.Produce(context.Background(), r, a.promise)
		return
	}
	a.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		if a.produced(r, err) {
			ok(r)
		}
	})
}

// produced is a record's outcome: whether it was written; a record that
// was not fails the application, or, under exactly_once_v2, marks the
// producer fenced.
func (a *App) produced(r *kgo.Record, err error) bool {
	if err != nil && a.eos && producerFenced(err) {
		// Its own variable: taking err's address would move err to the
		// heap on every call, written or not.
		fenced := fmt.Errorf("engine: producing to %s/%d: %w", r.Topic, r.Partition, err)
		a.fenced.CompareAndSwap(nil, &fenced)
		return false
	}
	if err != nil && a.cfg.ProductionContinue && !a.eos && refusedForGood(err) {
		// default.production.exception.handler = continue: the record is
		// lost, as the handler was told; its input's offset commits.
		a.productionErrors.Add(1)
		a.log.Warn("a record the broker refused is skipped (default.production.exception.handler = continue)",
			"topic", r.Topic, "partition", r.Partition, "error", err)
		return true
	}
	if err != nil {
		a.produceFailed.Store(true)
		a.fail(fmt.Errorf("engine: producing to %s/%d: %w", r.Topic, r.Partition, err))
		return false
	}
	return true
}

// refusedForGood reports whether a produce error is the broker's refusal
// that no retry mends (RecordTooLarge, InvalidRecord, ...), the only
// errors a production exception handler is handed: retriable errors are
// retried by the producer, and those left when its retries or
// delivery.timeout run out fail the application, as in Kafka Streams.
func refusedForGood(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && !ke.Retriable
}

// producerFenced reports whether a record's error says the transactional
// producer was fenced: its transaction is over, and a new producer (a
// replaced session) processes its records again.
func producerFenced(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.TransactionAbortable)
}

// commitTasks commits the input offsets of completed batches: offsets are
// read first, then the producer is flushed, so every output and changelog
// record of those batches is acknowledged before its input offset commits.
// With closing, the tasks' store partitions are checkpointed too.
func (a *App) commitTasks(ctx context.Context, tasks []*task, closing bool) {
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for _, t := range tasks {
		t.mu.Lock()
		for topic, eo := range t.offsets {
			if offsets[topic] == nil {
				offsets[topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[topic][t.id.partition] = eo
		}
		t.mu.Unlock()
	}
	start := time.Now()
	defer observeSince(a.stats.commit, start)
	if err := a.cl.Flush(ctx); err != nil {
		a.log.Warn("flush before commit", "error", err)
		return
	}
	if a.produceFailed.Load() {
		// Some output of these batches may be lost: committing their
		// offsets could skip records. Commit nothing; they are reprocessed.
		return
	}
	if len(offsets) > 0 {
		var cerr error
		a.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				cerr = commitResponseError(resp)
			}
		})
		if cerr != nil {
			a.log.Warn("commit", "error", cerr)
		}
	}
	if closing {
		a.checkpoint(ctx, tasks)
	}
}

func commitResponseError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// processID is the id of this state directory's engine instance, kept in
// the directory so that a restart reuses it (Kafka Streams keeps its process
// id the same way).
func processID(dir string) (string, error) {
	path := filepath.Join(dir, "polystreams.process")
	if b, err := os.ReadFile(path); err == nil && len(b) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing process id: %w", err)
	}
	return id, nil
}

// Store reads of interactive queries: a store's partitions held by this
// instance's tasks. Pebble holds what is committed (under exactly_once_v2)
// or processed (under at_least_once).

// ErrNotQueryable: the application is not running, or the store has no
// partition here yet.
var ErrNotQueryable = errors.New("not queryable")

// StorePartitions returns fresh handles on the partitions of store that this
// instance's tasks hold. Safe for concurrent use with processing.
func (a *App) StorePartitions(store string) ([]*state.Partition, error) {
	if _, ok := a.topo.Stores[store]; !ok {
		return nil, fmt.Errorf("engine: store %q does not exist", store)
	}
	st, _ := a.State()
	if st != Running && st != Rebalancing && st != Restoring && st != Degraded {
		return nil, fmt.Errorf("engine: store %q is not queryable: the application is %s: %w", store, st, ErrNotQueryable)
	}
	if a.topo.Stores[store].Global {
		return a.globalPartitions(a.topo.Stores[store]), nil
	}
	a.mu.Lock()
	var parts []*state.Partition
	var held []*task
	for id, t := range a.tasks {
		for _, s := range t.plan.stores {
			// A store partition answers once restored: the same moment it
			// stops counting toward Restoring.
			if s.Name == store && a.restores.Restored(storePartition{Store: store, Partition: id.partition}) {
				parts = append(parts, a.db.Partition(store, id.partition))
				held = append(held, t)
			}
		}
	}
	a.mu.Unlock()
	// A held store's changes reach Pebble with the record cache's flush
	// (state.Tx.Unlogged): each task writes them now, between batches,
	// so that the query sees every batch processed, as Kafka Streams'
	// queries read through the cache.
	if a.holdsChanges(a.topo.Stores[store]) {
		for _, t := range held {
			if !t.restored.Load() {
				continue
			}
			reply := make(chan error, 1)
			select {
			case t.syncReq <- reply:
				select {
				case err := <-reply:
					if err != nil {
						return nil, fmt.Errorf("engine: store %q partition %d: %w", store, t.id.partition, err)
					}
				case <-t.done:
				}
			case <-t.done:
			}
		}
	}
	return parts, nil
}
