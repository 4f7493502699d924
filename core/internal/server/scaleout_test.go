package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
)

// Scale-out: several engine processes with one application.id, each with
// its own Python host (the real SDK, tools/scaleout/host.py, attached to an
// engine it did not start), sharing the work through the consumer group.

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../../..")
}

// instance is one engine process and the Python host attached to it.
type instance struct {
	t        *testing.T
	name     string
	stateDir string
	engine   *exec.Cmd
	host     *exec.Cmd
	url      string
	// logs: the engine's and the host's stderr and stdout, kept to print
	// when the test fails.
	logs *lockedBuffer
	// hostState is the last "host: <state>" line the host printed.
	mu        sync.Mutex
	hostState string
	hostDone  chan struct{}
	// ending: the test is stopping or killing the instance.
	ending atomic.Bool
}

// tail returns the last n lines written to l.
func (l *lockedBuffer) tail(n int) string {
	lines := strings.Split(l.String(), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// scaleCluster is an embedded broker plus the instances of one application.
type scaleCluster struct {
	t         *testing.T
	bin       string
	b         testBroker
	e         *env
	appID     string
	hostArgs  []string
	instances []*instance
}

func newScaleCluster(t *testing.T, partitions int, appID string, topics []string, hostArgs ...string) *scaleCluster {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("scale-out tests need Debian's /usr/bin/python3")
	}
	bin := engineBinary(t)
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: partitions, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	c := &scaleCluster{t: t, bin: bin, b: b, e: &env{t: t, broker: b}, appID: appID, hostArgs: hostArgs}
	t.Cleanup(func() {
		for _, in := range c.instances {
			in.kill()
		}
		if t.Failed() {
			for _, in := range c.instances {
				t.Logf("--- %s (state %s), last log lines:\n%s", in.name, in.stateDir, in.logs.tail(60))
			}
		}
		b.Close()
	})
	return c
}

// start runs an engine on stateDir ("" for a new one) and attaches a Python
// host to it.
func (c *scaleCluster) start(name, stateDir string) *instance {
	c.t.Helper()
	if stateDir == "" {
		stateDir = c.t.TempDir()
	}
	in := &instance{t: c.t, name: name, stateDir: stateDir, logs: &lockedBuffer{}, hostDone: make(chan struct{})}
	level := os.Getenv("POLYSTREAMS_TEST_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	in.engine = exec.Command(c.bin, "serve", "--brokers", c.b.Addr(), "--listen", "127.0.0.1:0", "--state-dir", stateDir, "--log-level", level)
	in.engine.Stderr = prefixed(in.logs, name+" engine: ")
	stdout, err := in.engine.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := in.engine.Start(); err != nil {
		c.t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "polystreams: engine "); ok {
			in.url = url
			break
		}
	}
	if in.url == "" {
		in.engine.Process.Kill()
		c.t.Fatalf("%s: the engine exited without printing its address:\n%s", name, in.logs.tail(30))
	}
	go func() {
		for sc.Scan() {
		}
	}()
	c.startHost(in)
	c.instances = append(c.instances, in)
	return in
}

// startHost attaches a new Python host to in's engine (after the last one
// was killed: killHost).
func (c *scaleCluster) startHost(in *instance) {
	c.t.Helper()
	in.mu.Lock()
	in.hostState = ""
	in.mu.Unlock()
	in.hostDone = make(chan struct{})
	in.ending.Store(false)
	args := append([]string{filepath.Join(repoRoot(), "tools/scaleout/host.py"), "--engine", in.url, "--app", c.appID}, c.hostArgs...)
	in.host = exec.Command("/usr/bin/python3", args...)
	in.host.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot(), "sdk-python/src"))
	in.host.Stderr = prefixed(in.logs, in.name+" host: ")
	hout, err := in.host.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := in.host.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := in.hostDone
	go func() {
		defer close(done)
		hs := bufio.NewScanner(hout)
		for hs.Scan() {
			line := hs.Text()
			fmt.Fprintf(in.logs, "%s host: %s\n", in.name, line)
			if st, ok := strings.CutPrefix(line, "host: "); ok {
				in.mu.Lock()
				in.hostState = st
				in.mu.Unlock()
			}
		}
	}()
}

// killHost ends in's host with SIGKILL, leaving its engine running.
func (in *instance) killHost() {
	in.ending.Store(true)
	if in.host.ProcessState == nil {
		in.host.Process.Signal(syscall.SIGKILL)
		in.host.Wait()
	}
	<-in.hostDone
}

// prefixed writes each line of a process's output to w with a prefix.
func prefixed(w *lockedBuffer, prefix string) *os.File {
	r, wr, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Fprintf(w, "%s%s\n", prefix, sc.Text())
		}
		r.Close()
	}()
	return wr
}

// ownedTasks reports whether the engine's log says it was assigned a task.
func (in *instance) ownedTasks() bool {
	for _, l := range strings.Split(in.logs.String(), "\n") {
		if strings.Contains(l, `msg="partitions assigned"`) && !strings.Contains(l, `partitions=map[]`) {
			return true
		}
	}
	return false
}

func (in *instance) state() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hostState
}

// kill ends the engine with SIGKILL (no commit, no leaving the group), and
// its host with it. Idempotent.
func (in *instance) kill() {
	in.ending.Store(true)
	if in.engine.ProcessState == nil {
		in.engine.Process.Signal(syscall.SIGKILL)
		in.engine.Wait()
	}
	if in.host.ProcessState == nil {
		in.host.Process.Signal(syscall.SIGKILL)
		in.host.Wait()
	}
}

// stop stops the host cleanly (SIGTERM: its App stops the session, which
// commits and leaves the group), then the engine.
func (in *instance) stop() {
	in.t.Helper()
	in.ending.Store(true)
	in.host.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.hostDone:
	case <-time.After(60 * time.Second):
		in.t.Errorf("%s: the host did not stop within 60 s of SIGTERM", in.name)
	}
	in.host.Wait()
	in.engine.Process.Signal(syscall.SIGTERM)
	in.engine.Wait()
}

// produceCounted produces n records keyed key-<i mod keys> (value "x")
// to topic, adding them to want.
func (c *scaleCluster) produceCounted(topic string, from, n, keys int, want map[string]int64) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.b.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	const batch = 10_000
	for i := 0; i < n; i += batch {
		rs := make([]*kgo.Record, 0, min(batch, n-i))
		for j := i; j < min(i+batch, n); j++ {
			k := "key-" + strconv.Itoa((from+j)%keys)
			want[k]++
			rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte("x")})
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			c.t.Fatalf("produce: %v", err)
		}
	}
}

// waitProcessed waits until the committed counts of topic add up to at
// least n, failing if an instance's host ends meanwhile.
func (c *scaleCluster) waitProcessed(topic string, n int, what string) {
	c.t.Helper()
	waitFor(c.t, what, time.Duration(scale(120, 600))*time.Second, func() bool {
		c.checkHosts()
		got := 0
		for _, s := range c.e.committedSequences(topic) {
			got += int(s[len(s)-1])
		}
		return got >= n
	})
}

// checkHosts fails the test when a host that was not killed has ended.
func (c *scaleCluster) checkHosts() {
	c.t.Helper()
	for _, in := range c.instances {
		select {
		case <-in.hostDone:
			if !in.ending.Load() {
				c.t.Fatalf("%s: the host ended while its engine runs (last state %q):\n%s", in.name, in.state(), in.logs.tail(30))
			}
		default:
		}
	}
}

// verifyIndependently checks topic's committed counts with confluent-kafka
// (tools/chaos/verify_counts.py --exact).
func (c *scaleCluster) verifyIndependently(topic string, want map[string]int64) {
	c.t.Helper()
	expected := filepath.Join(c.t.TempDir(), "expected.json")
	data, _ := json.Marshal(want)
	if err := os.WriteFile(expected, data, 0o600); err != nil {
		c.t.Fatal(err)
	}
	script := filepath.Join(repoRoot(), "tools/chaos/verify_counts.py")
	out, err := exec.Command("/usr/bin/python3", script, "--brokers", c.b.Addr(), "--topic", topic, "--expected", expected, "--exact").CombinedOutput()
	c.t.Logf("confluent-kafka verdict: %s", strings.TrimSpace(string(out)))
	if err != nil {
		c.t.Fatalf("the independent check failed: %v", err)
	}
}

// Three engine processes, each with its own Python host doing real host
// work (map_values) before a count, share one application under
// exactly_once_v2 over 8 partitions. One is killed with SIGKILL mid-run and
// later restarted on its state directory; a fourth joins. Every key's
// committed count updates are exactly 1..n: a partition processed by two
// instances at once (a zombie's transaction committing beside its
// successor's) or restored wrongly would show a duplicate or a gap. The
// full version (make chaos) counts 240,000 records.
func TestScaleOutCountsExactlyOnceAcrossKillAndJoin(t *testing.T) {
	total, keys := scale(24_000, 240_000), scale(400, 2_000)
	c := newScaleCluster(t, 8, "scaleout", []string{"events", "event-counts"},
		"--topology", "count", "--input", "events", "--output", "event-counts",
		"--config", "processing.guarantee=exactly_once_v2",
		"--config", "session.timeout.ms=6000",
		"--config", "polystreams.bundle.max.records=500",
		// Every count update is emitted (no record cache), so that the
		// output shows each one: exactly 1..n per key.
		"--config", "statestore.cache.max.bytes=0")
	want := map[string]int64{}
	quarter := total / 4
	sent := 0
	feed := func(n int) {
		c.produceCounted("events", sent, n, keys, want)
		sent += n
	}
	// feedSteadily produces n records in small batches in the background,
	// so that the instances are busy whenever the test kills or adds one;
	// the returned channel closes when all are produced.
	feedSteadily := func(n int) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for left := n; left > 0; left -= 1000 {
				feed(min(1000, left))
				time.Sleep(20 * time.Millisecond)
			}
		}()
		return done
	}
	feed(quarter)
	a := c.start("a", "")
	c.start("b", "")
	c.start("c", "")
	c.waitProcessed("event-counts", quarter/4, "the three instances to process a part of the first quarter")
	fed := feedSteadily(2 * quarter)
	// a dies in the middle of its work, records still arriving: its
	// transaction in progress is aborted (by the broker's timeout or its
	// restart fencing it), its partitions move on once its session times
	// out.
	c.waitProcessed("event-counts", quarter+quarter/4, "processing of the second quarter to begin")
	if !a.ownedTasks() {
		t.Fatalf("a was never assigned a task: the kill would show nothing")
	}
	a.kill()
	t.Logf("a killed once %d of %d records were counted", quarter+quarter/4, total)
	c.waitProcessed("event-counts", 2*quarter, "b and c to go on without a")
	// a comes back on its state directory: same static member, same
	// transactional id (fencing whatever its predecessor left open).
	c.start("a2", a.stateDir)
	c.waitProcessed("event-counts", 2*quarter+quarter/2, "a2 to rejoin while records arrive")
	<-fed
	// d joins while records keep arriving, until it holds tasks.
	d := c.start("d", "")
	joinBy := time.Now().Add(time.Duration(scale(60, 120)) * time.Second)
	for !d.ownedTasks() {
		if time.Now().After(joinBy) {
			t.Fatalf("d, the instance added, was not assigned a task within %v", time.Duration(scale(60, 120))*time.Second)
		}
		c.checkHosts()
		feed(200)
		time.Sleep(100 * time.Millisecond)
	}
	feed(max(0, total-sent))
	total = sent
	var last error
	deadline := time.Now().Add(time.Duration(scale(120, 600)) * time.Second)
	for {
		c.checkHosts()
		if last = exactlyOnce(c.e.committedSequences("event-counts"), want); last == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exactly-once never held: %v", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%d records over %d keys: every key's committed updates are exactly 1..n", total, keys)
	c.verifyIndependently("event-counts", want)
	for _, in := range c.instances[1:] {
		in.stop()
	}
}

// produceKeyed produces key -> value records to topic.
func (c *scaleCluster) produceKeyed(topic string, kvs [][2]string) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.b.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(kvs))
	for i, kv := range kvs {
		rs[i] = &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		c.t.Fatalf("produce: %v", err)
	}
}

// enrichments reads topic read_committed: each output value
// "<order>|<customer>", by order.
func (c *scaleCluster) enrichments(topic string) map[string][]string {
	out := map[string][]string{}
	c.e.readTopic(topic, true, func(r *kgo.Record) {
		order, customer, _ := strings.Cut(string(r.Value), "|")
		out[order] = append(out[order], customer)
	})
	return out
}

// A stream-table join keeps enriching correctly while its tasks move: two
// engines (each with a Python host whose joiner builds the output), a third
// added and the first stopped while orders flow. The table changes between
// batches of orders, and a batch is produced only once probes show the
// change joined for every key, so each order has exactly one right
// enrichment: its batch's table version. Read read_committed, every order
// is enriched exactly once (none dropped as a miss, none twice) and with
// that version: a task that moved and restored its table store wrongly
// (empty, or an older value) would show it. (KStreamKTableJoinProcessor
// joins each record with the table's value as the store holds it when the
// record is processed.)
func TestScaleOutStreamTableJoinAcrossRebalances(t *testing.T) {
	keys, perBatch := 60, scale(3000, 30_000)
	c := newScaleCluster(t, 8, "scaleout-join", []string{"customers", "orders", "enriched"},
		"--topology", "join", "--input", "orders", "--table", "customers", "--output", "enriched",
		"--config", "processing.guarantee=exactly_once_v2",
		"--config", "session.timeout.ms=6000",
		"--config", "polystreams.bundle.max.records=200")
	key := func(k int) string { return fmt.Sprintf("customer-%d", k) }
	attempt := 0
	// setTable sets every customer to version v and waits until probe
	// orders show v joined for every key.
	setTable := func(v int) {
		t.Helper()
		var kvs [][2]string
		for k := range keys {
			kvs = append(kvs, [2]string{key(k), fmt.Sprintf("v%d", v)})
		}
		c.produceKeyed("customers", kvs)
		want := fmt.Sprintf("v%d", v)
		waitFor(t, "probes to see table version "+want, time.Duration(scale(120, 300))*time.Second, func() bool {
			c.checkHosts()
			seen := map[string]bool{}
			for order, cs := range c.enrichments("enriched") {
				if k, ok := strings.CutPrefix(order, "probe-"); ok && slices.Contains(cs, want) {
					seen[k[:strings.LastIndexByte(k, '-')]] = true
				}
			}
			if len(seen) == keys {
				return true
			}
			attempt++
			var probes [][2]string
			for k := range keys {
				if !seen[key(k)] {
					probes = append(probes, [2]string{key(k), fmt.Sprintf("probe-%s-%d", key(k), attempt)})
				}
			}
			c.produceKeyed("orders", probes)
			time.Sleep(300 * time.Millisecond)
			return false
		})
	}
	want := map[string]string{} // order -> the table version it must see
	seq := 0
	var orders func(v, n int)
	// ordersUntil keeps producing orders of table version v, in small
	// batches, until done holds: the rebalance meets orders in flight.
	ordersUntil := func(v int, what string, done func() bool) {
		t.Helper()
		by := time.Now().Add(time.Duration(scale(60, 120)) * time.Second)
		for !done() {
			if time.Now().After(by) {
				t.Fatalf("%s: not within %v", what, time.Duration(scale(60, 120))*time.Second)
			}
			c.checkHosts()
			orders(v, 100)
			time.Sleep(100 * time.Millisecond)
		}
	}
	batch := func(v int) { orders(v, perBatch) }
	orders = func(v, n int) {
		var kvs [][2]string
		for range n {
			order := fmt.Sprintf("o-%d", seq)
			kvs = append(kvs, [2]string{key(seq % keys), order})
			want[order] = fmt.Sprintf("v%d", v)
			seq++
		}
		c.produceKeyed("orders", kvs)
	}
	waitBatch := func() {
		t.Helper()
		waitFor(t, "the batch to be enriched", time.Duration(scale(120, 300))*time.Second, func() bool {
			c.checkHosts()
			n := 0
			for order := range c.enrichments("enriched") {
				if strings.HasPrefix(order, "o-") {
					n++
				}
			}
			return n >= seq
		})
	}
	a := c.start("a", "")
	c.start("b", "")
	setTable(1)
	batch(1)
	c.waitProcessedOrders(seq / 4)
	cc := c.start("c", "") // joins while orders of version 1 flow
	ordersUntil(1, "c, the instance added, to be assigned tasks", cc.ownedTasks)
	waitBatch()
	setTable(2)
	batch(2)
	c.waitProcessedOrders(seq - perBatch*3/4)
	// a leaves while orders of version 2 flow: its tasks move to b and c.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		a.stop()
	}()
	ordersUntil(2, "a to stop", func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	})
	waitBatch()
	setTable(3)
	batch(3)
	waitBatch()
	got := c.enrichments("enriched")
	bad := 0
	for order, v := range want {
		if cs := got[order]; len(cs) != 1 || cs[0] != v {
			if bad++; bad <= 10 {
				t.Errorf("order %s enriched as %v, want exactly once with %s", order, cs, v)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d orders enriched wrongly", bad, len(want))
	}
	t.Logf("%d orders, each enriched exactly once with the table version current for it, across a join and a leave", len(want))
	for _, in := range c.instances[1:] {
		in.stop()
	}
}

// waitProcessedOrders waits until n orders ("o-...") are enriched.
func (c *scaleCluster) waitProcessedOrders(n int) {
	c.t.Helper()
	waitFor(c.t, "orders to be enriched", time.Duration(scale(120, 300))*time.Second, func() bool {
		c.checkHosts()
		got := 0
		for order := range c.enrichments("enriched") {
			if strings.HasPrefix(order, "o-") {
				got++
			}
		}
		return got >= n
	})
}
