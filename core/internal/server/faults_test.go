package server_test

// Broker fault tests: the embedded kfake broker's request interception
// (ControlKey, KeepControl, SleepControl, DropControl) makes the broker
// misbehave while a word count runs under exactly_once_v2. Each test counts
// the requests its fault intercepted (a fault that never fired fails the
// test) and then checks, read_committed, that every word's count updates
// are exactly 1, 2, ..., n: a fault may cost a transaction (aborted and
// processed again), never a record or a duplicate.
//
// Short versions run in `make test`; POLYSTREAMS_CHAOS=1 (`make chaos`)
// runs the long ones (more records, more faults, longer outages).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// chaosOn reports whether the long (chaos) versions run.
func chaosOn() bool { return os.Getenv("POLYSTREAMS_CHAOS") == "1" }

// scale is short in `make test`, long under `make chaos`.
func scale(short, chaos int) int {
	if chaosOn() {
		return chaos
	}
	return short
}

// faultRun is a word count under exactly_once_v2 on an env's engine, fed
// in batches while a fault is active.
type faultRun struct {
	t    *testing.T
	e    *env
	h    *testHost
	done <-chan string
	want map[string]int64
	sent int
}

// eosConfig is the configuration of every fault run: small bundles and
// transactions every 100 ms, so that a run has many transactions to fault.
func eosConfig() map[string]string {
	return map[string]string{
		"processing.guarantee":           "exactly_once_v2",
		"commit.interval.ms":             "100",
		"session.timeout.ms":             "6000",
		"polystreams.bundle.max.records": "100",
	}
}

// startFaultRun opens a session named appID on e's engine, builds the word
// count lines -> word-counts, starts it and serves it.
func startFaultRun(t *testing.T, e *env, appID string) *faultRun {
	t.Helper()
	return startFaultRunWith(t, e, appID, nil)
}

// startFaultRunWith is startFaultRun with further config settings.
func startFaultRunWith(t *testing.T, e *env, appID string, extra map[string]string) *faultRun {
	t.Helper()
	r := &faultRun{t: t, e: e, want: map[string]int64{}}
	config := eosConfig()
	maps.Copy(config, extra)
	r.h = e.open(appID, config)
	r.h.buildWordCount("lines", "word-counts")
	r.h.start()
	r.done = r.h.serveAsync()
	return r
}

// feed produces n more lines, adding their words to the expected counts.
func (r *faultRun) feed(n int) {
	r.t.Helper()
	ls, want := lines(n, r.sent)
	r.sent += n
	for w, c := range want {
		r.want[w] += c
	}
	r.e.produce("lines", ls...)
}

// feedOver produces n lines in batches over d, so that the fault meets
// many transactions.
func (r *faultRun) feedOver(n int, d time.Duration) {
	r.t.Helper()
	const batches = 10
	for i := range batches {
		r.feed(n/batches + boolInt(i < n%batches))
		time.Sleep(d / batches)
	}
}

// feedUntil keeps producing small batches until the fault has fired n
// times: the engine ends a transaction only when it has something to
// commit, so a fault on commits needs input to keep coming.
func (r *faultRun) feedUntil(f *fault, n int64, what string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Duration(scale(60, 300)) * time.Second)
	for f.fired.Load() < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("the fault (%s) fired %d times in %v, want %d", what, f.fired.Load(), time.Duration(scale(60, 300))*time.Second, n)
		}
		select {
		case st := <-r.done:
			r.t.Fatalf("the session ended while the fault was on: %s", st)
		default:
		}
		r.feed(50)
		time.Sleep(200 * time.Millisecond)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// check waits until the output holds exactly once (failing at once if the
// application stopped), then stops the session.
func (r *faultRun) check() {
	r.t.Helper()
	waitExactlyOnceWhile(r.t, r.e, "word-counts", r.want, r.done)
	r.h.stopServing(r.done)
	r.t.Logf("%d lines, %d words: every count update committed exactly once", r.sent, len(r.want))
}

// waitExactlyOnceWhile is waitExactlyOnce, failing at once when the
// session ends (done gives its last state).
func waitExactlyOnceWhile(t *testing.T, e *env, topic string, want map[string]int64, done <-chan string) {
	t.Helper()
	var last error
	deadline := time.Now().Add(time.Duration(scale(90, 300)) * time.Second)
	for time.Now().Before(deadline) {
		select {
		case st := <-done:
			t.Fatalf("the session ended while the fault was on: %s", st)
		default:
		}
		if last = exactlyOnce(e.committedSequences(topic), want); last == nil {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("exactly-once never held: %v", last)
}

// fault is an interception installed on a kfake cluster: fired counts the
// requests it answered (or delayed) in place of the broker.
type fault struct {
	fired atomic.Int64
	// off, once set, turns the fault into a pass-through.
	off atomic.Bool
}

func (f *fault) assertFired(t *testing.T, what string) {
	t.Helper()
	n := f.fired.Load()
	if n == 0 {
		t.Fatalf("the fault (%s) never fired", what)
	}
	t.Logf("the fault (%s) fired %d times", what, n)
}

// answerEvery installs a control on key that answers every nth request
// that match accepts with answer's response (or, if answer returns an
// error, closes the connection), up to max times; other requests reach the
// broker untouched.
func answerEvery(c *kfake.Cluster, key kmsg.Key, nth, max int, match func(kmsg.Request) bool, answer func(kmsg.Request) (kmsg.Response, error)) *fault {
	f := &fault{}
	var seen atomic.Int64
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if f.off.Load() || (match != nil && !match(req)) {
			return nil, nil, false
		}
		if seen.Add(1)%int64(nth) != 0 {
			return nil, nil, false
		}
		if f.fired.Add(1) >= int64(max) {
			c.DropControl() // the last one: the broker answers from now on
		}
		resp, err := answer(req)
		return resp, err, true
	})
	return f
}

// endTxnAnswer answers an EndTxn with code.
func endTxnAnswer(code int16) func(kmsg.Request) (kmsg.Response, error) {
	return func(req kmsg.Request) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp, nil
	}
}

func isCommit(req kmsg.Request) bool { return req.(*kmsg.EndTxnRequest).Commit }

// TestFaultEndTxnErrors is the EndTxn half of the transaction error
// matrix: commits answered with each error a broker may give, or with the
// connection closing. The transaction in question is aborted (or, where
// the producer is fenced, the client replaced) and its records processed
// again: read_committed, every count is exact.
func TestFaultEndTxnErrors(t *testing.T) {
	needKfake(t)
	cases := []struct {
		name string
		err  *kerr.Error // nil: the connection closes
	}{
		{"UNKNOWN_SERVER_ERROR", kerr.UnknownServerError},
		{"NOT_COORDINATOR", kerr.NotCoordinator},
		{"TRANSACTION_ABORTABLE", kerr.TransactionAbortable},
		{"PRODUCER_FENCED", kerr.ProducerFenced},
		{"INVALID_PRODUCER_EPOCH", kerr.InvalidProducerEpoch},
		{"connection closed", nil},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			e := newEnv(t, "lines", "word-counts")
			r := startFaultRun(t, e, "endtxn")
			answer := func(kmsg.Request) (kmsg.Response, error) { return nil, errors.New("closed") }
			if tc.err != nil {
				answer = endTxnAnswer(tc.err.Code)
			}
			// Every 3rd commit fails, 3 times (10 in the long version).
			f := answerEvery(kfakeCluster(t, e.broker), kmsg.EndTxn, 3, scale(3, 10), isCommit, answer)
			r.feedOver(scale(1500, 10000), time.Duration(scale(2, 10))*time.Second)
			r.feedUntil(f, int64(scale(3, 10)), "EndTxn "+tc.name)
			f.assertFired(t, "EndTxn "+tc.name)
			r.check()
		})
	}
}

// txnOffsetCommitAnswer answers a TxnOffsetCommit with code on every
// partition.
func txnOffsetCommitAnswer(code int16) func(kmsg.Request) (kmsg.Response, error) {
	return func(r kmsg.Request) (kmsg.Response, error) {
		req := r.(*kmsg.TxnOffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}

// TestFaultTxnOffsetCommitErrors: the offsets of a transaction refused as
// from a stale generation or an unknown member (what a broker answers a
// member a rebalance left behind). The transaction aborts; nothing is lost
// or counted twice.
func TestFaultTxnOffsetCommitErrors(t *testing.T) {
	needKfake(t)
	for _, code := range []*kerr.Error{kerr.IllegalGeneration, kerr.UnknownMemberID} {
		t.Run(code.Message, func(t *testing.T) {
			e := newEnv(t, "lines", "word-counts")
			r := startFaultRun(t, e, "txnoffsets")
			f := answerEvery(kfakeCluster(t, e.broker), kmsg.TxnOffsetCommit, 3, scale(3, 10), nil, txnOffsetCommitAnswer(code.Code))
			r.feedOver(scale(1500, 10000), time.Duration(scale(2, 10))*time.Second)
			r.feedUntil(f, int64(scale(3, 10)), "TxnOffsetCommit "+code.Message)
			f.assertFired(t, "TxnOffsetCommit "+code.Message)
			r.check()
		})
	}
}

// TestFaultInitProducerIDConcurrentTransactions: the producer id is
// refused with CONCURRENT_TRANSACTIONS (a previous transaction of the same
// transactional id still ending) a few times at start; the engine retries
// and then counts everything exactly once.
func TestFaultInitProducerIDConcurrentTransactions(t *testing.T) {
	needKfake(t)
	e := newEnv(t, "lines", "word-counts")
	f := answerEvery(kfakeCluster(t, e.broker), kmsg.InitProducerID, 1, scale(3, 8), nil, func(r kmsg.Request) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil
	})
	r := startFaultRun(t, e, "initpid")
	r.feedOver(scale(1000, 10000), time.Duration(scale(1, 10))*time.Second)
	r.check()
	f.assertFired(t, "InitProducerID CONCURRENT_TRANSACTIONS")
}

// sleepFor is a wakeup for SleepControl: it returns after d.
func sleepFor(d time.Duration) func() { return func() { time.Sleep(d) } }

// TestFaultDataPath: ~1% of Produce and Fetch requests answered
// NOT_LEADER_OR_FOLLOWER, about 1 in 20 delayed 50-500 ms, and, on a
// three-broker cluster, partition leaders and group/transaction
// coordinators moved every few hundred milliseconds while the count runs.
func TestFaultDataPath(t *testing.T) {
	needKfake(t)
	e := newEnv(t, "lines", "word-counts")
	c := kfakeCluster(t, e.broker)
	for range 2 {
		if _, _, err := c.AddNode(-1, 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex // guards rng
	rng := rand.New(rand.NewPCG(5, 6))
	roll := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(n)
	}
	var notLeader, delayed, moves fault
	notLeaderOrDelay := func(key kmsg.Key, answer func(kmsg.Request) (kmsg.Response, bool)) {
		var n atomic.Int64
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if notLeader.off.Load() {
				return nil, nil, false
			}
			// Deterministic at least once: the 50th request, then 1%.
			if n.Add(1) == 50 || roll(100) == 0 {
				if resp, ok := answer(req); ok {
					notLeader.fired.Add(1)
					return resp, nil, true
				}
			}
			if roll(20) == 0 {
				delayed.fired.Add(1)
				c.SleepControl(sleepFor(time.Duration(50+roll(451)) * time.Millisecond))
			}
			return nil, nil, false
		})
	}
	notLeaderOrDelay(kmsg.Produce, func(r kmsg.Request) (kmsg.Response, bool) {
		req := r.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, true
	})
	notLeaderOrDelay(kmsg.Fetch, func(r kmsg.Request) (kmsg.Response, bool) {
		req := r.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		// An incremental fetch naming no partition has nothing to fail.
		return resp, len(resp.Topics) > 0
	})
	// kfake answers OffsetForLeaderEpoch for the last epoch that has
	// records with UNDEFINED once a leader moved and nothing was written
	// since (Kafka answers the log end offset: a new leader assigns its
	// epoch the log end offset as it takes over). franz-go then resets by
	// timestamp and reports lost records, which reprocesses the partition
	// from its start. kfake never truncates a log, so the right answer is
	// always "no truncation": the requested epoch, ending past any offset.
	var validations atomic.Int64
	c.ControlKey(int16(kmsg.OffsetForLeaderEpoch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		validations.Add(1)
		req := r.(*kmsg.OffsetForLeaderEpochRequest)
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, rp.LeaderEpoch, math.MaxInt64
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	r := startFaultRun(t, e, "datapath")
	stopMoving := make(chan struct{})
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for i := 0; ; i++ {
			select {
			case <-stopMoving:
				return
			case <-time.After(time.Duration(200+roll(300)) * time.Millisecond):
			}
			if i%2 == 0 {
				c.ShufflePartitionLeaders()
			} else {
				c.RehashCoordinators()
			}
			moves.fired.Add(1)
		}
	}()
	r.feedOver(scale(3000, 40000), time.Duration(scale(3, 60))*time.Second)
	r.feedUntil(&notLeader, 1, "NOT_LEADER_OR_FOLLOWER")
	close(stopMoving)
	<-moved
	notLeader.off.Store(true)
	notLeader.assertFired(t, "NOT_LEADER_OR_FOLLOWER on Produce/Fetch")
	delayed.assertFired(t, "50-500 ms delays")
	moves.assertFired(t, "leaders and coordinators moved")
	t.Logf("%d offset validations after leader moves", validations.Load())
	r.check()
}

// another starts a second engine, with its own state directory, on e's
// broker: another instance of the same applications.
func (e *env) another() *env {
	e.t.Helper()
	o := &env{t: e.t, broker: e.broker, stateDir: e.t.TempDir()}
	o.startEngine()
	e.t.Cleanup(o.stopEngine) // before e's cleanup closes the broker
	return o
}

// instanceOf returns the group.instance.id (and transactional.id) of
// appID's instance on e's engine, kept in its state directory.
func (e *env) instanceOf(appID string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.stateDir, appID, "polystreams.process"))
	if err != nil {
		e.t.Fatal(err)
	}
	return appID + "-" + strings.TrimSpace(string(b))
}

// fromInstance reports whether req is a group or transaction request of
// the instance id (whose transactional id is the same string). Fetches
// carry no such id and go through.
func fromInstance(req kmsg.Request, id string) bool {
	is := func(s *string) bool { return s != nil && *s == id }
	switch r := req.(type) {
	case *kmsg.HeartbeatRequest:
		return is(r.InstanceID)
	case *kmsg.JoinGroupRequest:
		return is(r.InstanceID)
	case *kmsg.SyncGroupRequest:
		return is(r.InstanceID)
	case *kmsg.OffsetCommitRequest:
		return is(r.InstanceID)
	case *kmsg.ProduceRequest:
		return is(r.TransactionID)
	case *kmsg.InitProducerIDRequest:
		return is(r.TransactionalID)
	case *kmsg.AddPartitionsToTxnRequest:
		if r.TransactionalID == id {
			return true
		}
		for _, t := range r.Transactions {
			if t.TransactionalID == id {
				return true
			}
		}
	case *kmsg.AddOffsetsToTxnRequest:
		return r.TransactionalID == id
	case *kmsg.TxnOffsetCommitRequest:
		return r.TransactionalID == id
	case *kmsg.EndTxnRequest:
		return r.TransactionalID == id
	}
	return false
}

// TestFaultZombie: instance A stalls (every group and transaction request
// it sends sleeps in the broker) while it holds an open transaction, for
// longer than its session timeout. Instance B, started meanwhile, takes
// every partition over (A's transaction times out and is aborted) and
// counts everything. Then A wakes: its stalled requests reach the broker
// late (an old generation, an old producer epoch). A must not write a
// duplicate: it is fenced, replaces its producer, rejoins and shares the
// work with B. Both instances still run at the end, and every count
// update is committed exactly once.
func TestFaultZombie(t *testing.T) {
	needKfake(t)
	a := newEnv(t, "lines", "word-counts")
	c := kfakeCluster(t, a.broker)
	ra := startFaultRun(t, a, "zombie")
	ra.feed(scale(500, 5000))
	waitFor(t, "A to process records", 30*time.Second, func() bool {
		ra.h.mu.Lock()
		defer ra.h.mu.Unlock()
		return ra.h.records > 0
	})
	zombie := a.instanceOf("zombie")
	var stalled fault
	wake := make(chan struct{})
	// The stall begins as A commits a transaction that wrote records (A
	// produced since its last EndTxn): A holds it open from then on.
	var armed, produced atomic.Bool
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !fromInstance(req, zombie) {
			return nil, nil, false
		}
		select {
		case <-wake:
			c.DropControl()
			return nil, nil, false
		default:
		}
		if !armed.Load() {
			switch req.(type) {
			case *kmsg.ProduceRequest:
				produced.Store(true)
			case *kmsg.EndTxnRequest:
				produced.Store(false)
			case *kmsg.AddOffsetsToTxnRequest, *kmsg.TxnOffsetCommitRequest:
				armed.Store(produced.Load())
			}
			if !armed.Load() {
				return nil, nil, false
			}
		}
		stalled.fired.Add(1)
		c.SleepControl(func() { <-wake })
		return nil, nil, false // awake: the broker answers it, late
	})
	// A keeps a transaction open: more records while it stalls.
	ra.feed(scale(500, 5000))
	waitFor(t, "A to stall", 30*time.Second, func() bool { return stalled.fired.Load() > 0 })
	stallStart := time.Now()
	b := a.another()
	rb := &faultRun{t: t, e: b, want: ra.want}
	rb.h = b.open("zombie", eosConfig())
	rb.h.buildWordCount("lines", "word-counts")
	rb.h.start()
	rb.done = rb.h.serveAsync()
	// B alone counts everything so far: it has A's partitions.
	waitExactlyOnceWhile(t, a, "word-counts", ra.want, rb.done)
	if d := time.Since(stallStart); d < 6*time.Second {
		t.Fatalf("B finished %v after A stalled, within A's session timeout (6s): A was not replaced", d)
	}
	rb.h.mu.Lock()
	took := rb.h.records
	rb.h.mu.Unlock()
	if took == 0 {
		t.Fatal("B processed nothing: it did not take A's work over")
	}
	close(wake)
	t.Logf("A stalled %v (%d requests held), B took over and processed %d records", time.Since(stallStart).Round(time.Millisecond), stalled.fired.Load(), took)
	// A wakes, rejoins; more records for both.
	ra.feedOver(scale(1000, 10000), time.Duration(scale(3, 20))*time.Second)
	var last error
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case st := <-ra.done:
			t.Fatalf("A ended after waking: %s", st)
		case st := <-rb.done:
			t.Fatalf("B ended: %s", st)
		default:
		}
		if last = exactlyOnce(a.committedSequences("word-counts"), ra.want); last == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exactly-once never held after A woke: %v", last)
		}
		time.Sleep(300 * time.Millisecond)
	}
	stalled.assertFired(t, "A's group and transaction requests held")
	ra.h.stopServing(ra.done)
	rb.h.stopServing(rb.done)
	t.Logf("%d lines, %d words: every count update committed exactly once", ra.sent, len(ra.want))
}

// TestFaultBrokerRestart: the broker (kfake persisting to a directory)
// stops in the middle of the count and comes back on the same address
// after an outage (1 s; 10 s under make chaos), several times. The engine
// rides it out: it processed records before each restart and processes
// the rest after, and every count update is committed exactly once.
func TestFaultBrokerRestart(t *testing.T) {
	dataDir := t.TempDir()
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"lines", "word-counts"}, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	e.startEngine()
	t.Cleanup(func() {
		e.stopEngine()
		e.broker.Close()
	})
	r := startFaultRun(t, e, "restart")
	restarts, outage := scale(2, 3), time.Duration(scale(1, 10))*time.Second
	last := 0 // records processed when the broker last stopped
	for i := range restarts {
		r.feedOver(scale(1000, 10000), time.Duration(scale(1, 5))*time.Second)
		waitFor(t, "processing before the restart", 60*time.Second, func() bool { return r.processed() > last })
		last = r.processed()
		e.broker.Close()
		time.Sleep(outage)
		if e.broker, err = startBroker(broker.Options{Addr: addr, Partitions: 4, DataDir: dataDir}); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
		t.Logf("restart %d: the broker was away %v", i+1, outage)
	}
	r.feedOver(scale(1000, 10000), time.Duration(scale(1, 10))*time.Second)
	r.check()
}

// processed is the number of records the run's host has processed.
func (r *faultRun) processed() int {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.h.records
}

// TestFaultBrokerAbsentAtStart: the engine starts (session opened, built,
// started) with no broker at its address; the broker appears after 5 s
// (30 s under make chaos), within polystreams.broker.wait.ms (set to the
// absence plus a minute). Start does not fail, the engine neither crashes
// nor loops failing, it logs the wait at most once per 10 s (plus the
// first), and once the broker is up it processes everything exactly once.
func TestFaultBrokerAbsentAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there until the broker starts
	var logs lockedBuffer
	e := brokerlessEnv(t, addr, &logs)
	absence := time.Duration(scale(5, 30)) * time.Second
	began := time.Now()
	r := startFaultRunWith(t, e, "absent", map[string]string{"polystreams.broker.wait.ms": strconv.FormatInt((absence + time.Minute).Milliseconds(), 10)})
	time.Sleep(absence - time.Since(began))
	select {
	case st := <-r.done:
		t.Fatalf("the session ended while the broker was absent: %s", st)
	default:
	}
	waits := strings.Count(logs.String(), "waiting for the brokers")
	if waits == 0 {
		t.Fatal("the engine never said it was waiting for the brokers")
	}
	if max := 1 + int(absence/(10*time.Second)) + 1; waits > max {
		t.Fatalf("the engine logged the wait %d times in %v, want at most %d (once per 10 s)", waits, absence, max)
	}
	t.Logf("the broker was absent %v; the engine logged the wait %d times", absence, waits)
	if e.broker, err = startBroker(broker.Options{Addr: addr, Partitions: 4, Topics: []string{"lines", "word-counts"}}); err != nil {
		t.Fatal(err)
	}
	r.feedOver(scale(1000, 10000), time.Duration(scale(1, 10))*time.Second)
	r.check()
}

// brokerlessEnv is an env whose engine's brokers are addr, where no
// broker runs (yet); the engine logs to logs too.
func brokerlessEnv(t *testing.T, addr string, logs io.Writer) *env {
	e := &env{t: t, stateDir: t.TempDir()}
	e.srv = server.New(server.Options{Brokers: addr, StateDir: e.stateDir, Logger: slog.New(slog.NewTextHandler(io.MultiWriter(logs, os.Stderr), nil))})
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	e.http = httptest.NewServer(mux)
	e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, e.http.URL)
	t.Cleanup(func() {
		e.stopEngine()
		if e.broker != nil {
			e.broker.Close()
		}
	})
	return e
}

// TestFaultBrokerNeverAnswers: with no broker at its address for longer
// than polystreams.broker.wait.ms the application fails, the error naming
// the brokers, the setting and the connection's error; so does Start at
// once with a wait of 0.
func TestFaultBrokerNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs lockedBuffer
	e := brokerlessEnv(t, addr, &logs)
	h := e.open("never", map[string]string{"polystreams.broker.wait.ms": "1500"})
	h.buildWordCount("lines", "word-counts")
	h.start()
	st := <-h.serveAsync()
	for _, want := range []string{"STATE_ERROR", "no broker of bootstrap.servers " + addr + " answered", "polystreams.broker.wait.ms = 1500", "connection refused"} {
		if !strings.Contains(st, want) {
			t.Errorf("the session ended with %q, which does not say %q", st, want)
		}
	}
	h0 := e.open("never-0", map[string]string{"polystreams.broker.wait.ms": "0"})
	h0.buildWordCount("lines", "word-counts")
	_, err = h0.cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h0.session}))
	if err == nil || !strings.Contains(err.Error(), "no broker of bootstrap.servers "+addr+" answered") {
		t.Errorf("Start with polystreams.broker.wait.ms = 0: %v, want the brokers named", err)
	}
}

// TestFaultBrokerAbsentStop: a session waiting for an absent broker stops
// cleanly when asked (STATE_STOPPED, not an error).
func TestFaultBrokerAbsentStop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs lockedBuffer
	e := brokerlessEnv(t, addr, &logs)
	r := startFaultRun(t, e, "absent-stop")
	waitFor(t, "the wait to be logged", 10*time.Second, func() bool { return strings.Contains(logs.String(), "waiting for the brokers") })
	r.h.stopServing(r.done)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
