package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// idleTask is task 0_0 of stream("a").merge(stream("b")) under
// max.task.idle.ms = idleMs, on a fake clock.
func idleTask(t *testing.T, idleMs int64) (*task, *fakeClock) {
	t.Helper()
	tk := newOrderTask(t, twoStreams(t, nil), nil, map[string]string{"max.task.idle.ms": fmt.Sprint(idleMs)})
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	tk.in.now = clock.now
	return tk, clock
}

// Kafka Streams' default, max.task.idle.ms = 0 (PartitionGroup.
// readyToProcess): records of one partition wait while another partition
// of the task has nothing buffered and its lag is not known (nothing
// fetched of it yet) or above 0 (records on the broker not fetched yet);
// once it is caught up they go, each counted as enforced processing.
func TestIdleZeroWaitsForUnfetchedPartitionsOnly(t *testing.T) {
	tk, _ := idleTask(t, 0)
	tk.fetch(fetched("b", 0, "=b5@5", "=b6@6"))
	if got, wake := tk.in.take(10); got != nil || wake.IsZero() {
		t.Fatalf("took %s (wake %v) while a's lag is not known; want nothing, and a time to look again", names(got), wake)
	}
	// The brokers say a has 3 records past the consumer's position.
	tk.noteLag("a", 7, 10)
	if got, _ := tk.in.take(10); got != nil {
		t.Fatalf("took %s while a has records on the broker", names(got))
	}
	// A fetch brings two of them: taken by timestamp with b's, up to
	// the moment a runs empty with one still on the broker.
	tk.enqueue("a", fetched("a", 7, "=a1@1", "=a6@6"), 9, 10)
	if got, want := names(tk.in.taken(10)), "a/a1@1 b/b5@5 a/a6@6"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	if got, _ := tk.in.take(10); got != nil {
		t.Fatalf("took %s while a's last record is not fetched", names(got))
	}
	// A fetch that finds nothing more (a transaction marker was the
	// last): caught up, b goes on, enforced.
	tk.enqueue("a", nil, 10, 10)
	if got, want := names(tk.in.taken(10)), "b/b6@6"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	if n := tk.app.stats.enforced.Load(); n != 1 {
		t.Errorf("enforced processing counted %d records, want 1 (b6, taken while a was empty)", n)
	}
}

// A task that finds every other partition caught up takes its records at
// once, without a clock moving; records taken while all partitions hold
// some are no enforced processing.
func TestIdleZeroTakesAtOnceWhenCaughtUp(t *testing.T) {
	tk, _ := idleTask(t, 0)
	tk.noteLag("a", 4, 4)
	tk.fetch(fetched("b", 0, "=b1@1"))
	if got, want := names(tk.in.taken(10)), "b/b1@1"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	tk.fetch(fetched("a", 4, "=a2@2"))
	tk.fetch(fetched("b", 1, "=b3@3"))
	enforced := tk.app.stats.enforced.Load()
	if got, want := names(tk.in.taken(1)), "a/a2@2"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	if n := tk.app.stats.enforced.Load() - enforced; n != 0 {
		t.Errorf("counted %d records as enforced processing while both partitions held records", n)
	}
}

// max.task.idle.ms = -1 never waits: a partition's records go while the
// other's lag is not known (the engine's behaviour before the key existed).
func TestIdleDisabledNeverWaits(t *testing.T) {
	tk, _ := idleTask(t, config.MaxTaskIdleDisabled)
	tk.fetch(fetched("b", 0, "=b5@5"))
	if got, want := names(tk.in.taken(10)), "b/b5@5"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	tk.noteLag("a", 0, 100)
	tk.fetch(fetched("b", 1, "=b6@6"))
	if got, want := names(tk.in.taken(10)), "b/b6@6"; got != want {
		t.Fatalf("took %s with a 100 records behind, want %s", got, want)
	}
	if n := tk.app.stats.enforced.Load(); n != 0 {
		t.Errorf("counted %d records as enforced processing; -1 gives up on nothing", n)
	}
}

// A positive max.task.idle.ms waits that long more for a caught-up empty
// partition, from when it was first found so, then gives it up until it
// holds records again (Kafka's idlePartitionDeadlines): later records of
// the other partition go at once. Records of the waited-for partition
// start the wait over.
func TestIdlePositiveWaitsAtMostThatLong(t *testing.T) {
	tk, clock := idleTask(t, 500)
	tk.noteLag("a", 3, 3)
	tk.fetch(fetched("b", 0, "=b1@1"))
	got, wake := tk.in.take(10)
	if got != nil || !wake.Equal(clock.now().Add(500*time.Millisecond)) {
		t.Fatalf("took %s, wake %v; want nothing until %v", names(got), wake, clock.now().Add(500*time.Millisecond))
	}
	clock.advance(499 * time.Millisecond)
	if got, _ := tk.in.take(10); got != nil {
		t.Fatalf("took %s before the deadline", names(got))
	}
	clock.advance(time.Millisecond)
	if got, want := names(tk.in.taken(10)), "b/b1@1"; got != want {
		t.Fatalf("took %s at the deadline, want %s", got, want)
	}
	tk.fetch(fetched("b", 1, "=b2@2"))
	if got, want := names(tk.in.taken(10)), "b/b2@2"; got != want {
		t.Fatalf("took %s past the deadline, want %s at once", got, want)
	}
	if n := tk.app.stats.enforced.Load(); n != 2 {
		t.Errorf("enforced processing counted %d records, want 2", n)
	}
	// a gets a record, which is taken; empty again, a is waited for anew.
	tk.fetch(fetched("a", 3, "=a3@3"))
	tk.fetch(fetched("b", 2, "=b4@4"))
	if got, want := names(tk.in.taken(10)), "a/a3@3"; got != want {
		t.Fatalf("took %s, want %s and then a wait for a", got, want)
	}
	if got, wake := tk.in.take(10); got != nil || !wake.Equal(clock.now().Add(500*time.Millisecond)) {
		t.Fatalf("took %s, wake %v; want a new 500 ms wait", names(got), wake)
	}
}

// A partition whose lag stays above 0 with no record of it fetched (the
// consumer skipped what is left without handing it over: a batch that
// compaction emptied) is waited for fetchStall at most.
func TestIdleWaitForFetchesEndsAfterTheStall(t *testing.T) {
	tk, clock := idleTask(t, 0)
	tk.noteLag("a", 5, 6)
	tk.fetch(fetched("b", 0, "=b1@1"))
	if got, wake := tk.in.take(10); got != nil || !wake.Equal(clock.now().Add(fetchStall)) {
		t.Fatalf("took %s, wake %v; want nothing until the stall", names(got), wake)
	}
	clock.advance(fetchStall - time.Millisecond)
	if got, _ := tk.in.take(10); got != nil {
		t.Fatalf("took %s before the stall", names(got))
	}
	clock.advance(time.Millisecond)
	if got, want := names(tk.in.taken(10)), "b/b1@1"; got != want {
		t.Fatalf("took %s after the stall, want %s", got, want)
	}
}

// An exactly_once_v2 transaction put off too long by idling tasks ends
// their waits (App.idleForced).
func TestIdleForcedEndsTheWait(t *testing.T) {
	tk, _ := idleTask(t, 60_000)
	tk.fetch(fetched("b", 0, "=b1@1"))
	if got, _ := tk.in.take(10); got != nil {
		t.Fatalf("took %s while a's lag is not known", names(got))
	}
	tk.app.idleForced.Store(true)
	if got, want := names(tk.in.taken(10)), "b/b1@1"; got != want {
		t.Fatalf("took %s once forced, want %s", got, want)
	}
	if n := tk.app.stats.enforced.Load(); n != 1 {
		t.Errorf("enforced processing counted %d records, want 1", n)
	}
}

// A partition that ends with a transaction marker is caught up once its
// last record is fetched: the consumer keeps the marker (poll's client
// runs with KeepControlRecords) and fetchedPartition counts it in the
// position but hands only the records to the task. Without it the task
// would see a lag of 1 it can never fetch, and wait out fetchStall.
func TestFetchedPartitionCountsTransactionMarkers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("w"), kgo.DefaultProduceTopic("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("a1")}, &kgo.Record{Value: []byte("a2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("a"), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tk, _ := idleTask(t, 0)
	tk.app.eos = true // reads read_committed: the end is the last stable offset
	for polled := 0; polled < 3; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			polled += len(p.Records)
			tk.fetchedPartition(p)
		})
	}
	tk.in.mu.Lock()
	q := tk.in.queue("a")
	lag, known := q.lag()
	pos, n := q.pos, len(q.recs)
	tk.in.mu.Unlock()
	if n != 2 || tk.app.pending.Load() != 2 || pos != 3 || !known || lag != 0 {
		t.Errorf("queue holds %d records (pending %d), position %d, lag %d (known %v); want the 2 records, position 3 (past the marker), lag 0", n, tk.app.pending.Load(), pos, lag, known)
	}
	tk.noteLag("b", 0, 0)
	var got []string
	for _, r := range tk.in.taken(10) {
		got = append(got, string(r.Value))
	}
	if fmt.Sprint(got) != "[a1 a2]" {
		t.Errorf("took %v, want [a1 a2]", got)
	}
}

// The brokers' answer for a partition nothing was fetched of: the
// consumer's position is the group's committed offset, or the log start
// offset when none is committed (or the committed one is below it), and
// the end is the high watermark (the last stable offset under
// exactly_once_v2).
func TestPartitionLagsAskTheBrokers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tk, _ := idleTask(t, 0)
	tk.app.adm = kadm.NewClient(cl)
	lags, err := tk.app.partitionLags(ctx, []string{"a", "b"}, 0)
	if err != nil || fmt.Sprint(lags) != "map[a:[0 5] b:[0 0]]" {
		t.Fatalf("nothing committed: %v, %v; want a at 0 of 5, b at 0 of 0", lags, err)
	}
	if _, err := tk.app.adm.CommitOffsets(ctx, "order", kadm.OffsetsFromRecords(kgo.Record{Topic: "a", Partition: 0, Offset: 2})); err != nil {
		t.Fatal(err)
	}
	if lags, err = tk.app.partitionLags(ctx, []string{"a"}, 0); err != nil || fmt.Sprint(lags) != "map[a:[3 5]]" {
		t.Fatalf("3 committed: %v, %v; want a at 3 of 5", lags, err)
	}
	if _, err := tk.app.adm.DeleteRecords(ctx, kadm.Offsets{"a": {0: kadm.Offset{Topic: "a", Partition: 0, At: 4}}}); err != nil {
		t.Fatal(err)
	}
	if lags, err = tk.app.partitionLags(ctx, []string{"a"}, 0); err != nil || fmt.Sprint(lags) != "map[a:[4 5]]" {
		t.Fatalf("3 committed, the log starting at 4: %v, %v; want a at 4 of 5", lags, err)
	}
	// The task's ask sets what it does not know, and wakes it.
	tk.fetch(fetched("b", 0, "=b1@1"))
	tk.askLag(ctx)
	select {
	case <-tk.in.signal:
	case <-ctx.Done():
		t.Fatal("the ask never answered")
	}
	for tk.asking.Load() {
		time.Sleep(time.Millisecond)
	}
	tk.in.mu.Lock()
	lag, known := tk.in.queue("a").lag()
	tk.in.mu.Unlock()
	if !known || lag != 1 {
		t.Errorf("a's lag after the ask: %d (known %v), want 1", lag, known)
	}
}
