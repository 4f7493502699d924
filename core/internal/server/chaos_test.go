package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// TestChaosKillsWhileCounting is `make chaos`: an engine counting 220,000
// records over 1,000 keys is killed with SIGKILL at random points 10 times on
// a broker that outlives it, and restarted each time. Under exactly_once_v2
// every key's committed updates are exactly 1..n; under at_least_once no
// key's last count is below n. An independent client (confluent-kafka,
// read_committed; tools/chaos/verify_counts.py) checks the output too.
// Set POLYSTREAMS_CHAOS=1 to run it; POLYSTREAMS_CHAOS_GUARANTEE picks the
// guarantee (default exactly_once_v2).
func TestChaosKillsWhileCounting(t *testing.T) {
	if os.Getenv("POLYSTREAMS_CHAOS") != "1" {
		t.Skip("set POLYSTREAMS_CHAOS=1 (make chaos) to run the kill -9 soak")
	}
	guarantee := os.Getenv("POLYSTREAMS_CHAOS_GUARANTEE")
	if guarantee == "" {
		guarantee = "exactly_once_v2"
	}
	kills, perRound, keys := 10, 20_000, 1_000
	if n, err := strconv.Atoi(os.Getenv("POLYSTREAMS_CHAOS_KILLS")); err == nil {
		kills = n
	}
	began := time.Now()
	dups, exact := int64(0), keys
	bin := engineBinary(t)
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"events", "event-counts"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &env{t: t, broker: b}
	stateDir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	total := map[string]int64{}
	config := map[string]string{"processing.guarantee": guarantee, "session.timeout.ms": "6000", "polystreams.bundle.max.records": "500"}
	if guarantee == "at_least_once" {
		config["commit.interval.ms"] = "200"
	}
	seq := 0
	for round := 0; round <= kills; round++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("events"))
		if err != nil {
			t.Fatal(err)
		}
		rs := make([]*kgo.Record, perRound)
		for i := range rs {
			k := "key-" + strconv.Itoa(seq%keys)
			seq++
			total[k]++
			rs[i] = &kgo.Record{Key: []byte(k), Value: []byte("x")}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		cmd, url := startEngineProcess(t, bin, b.Addr(), stateDir)
		e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
		h := e.open("chaos", config)
		s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string"})
		g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
		c := h.mustBuild(&pb.CountOp{Input: g.Id})
		ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
		h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "event-counts"})
		h.start()
		ctx, cancel := context.WithCancel(context.Background())
		go h.serve(ctx)
		if round < kills {
			time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			cancel()
			t.Logf("round %d: killed", round)
			continue
		}
		if guarantee == "exactly_once_v2" {
			waitExactlyOnce(t, e, "event-counts", total)
		} else {
			var got map[string]int64
			waitFor(t, "every key to reach its count", 120*time.Second, func() bool {
				got = e.lastCounts("event-counts")
				for k, n := range total {
					if got[k] < n {
						return false
					}
				}
				return true
			})
			exact = 0
			for k, n := range total {
				dups += got[k] - n
				if got[k] == n {
					exact++
				}
			}
		}
		cancel()
		h.stop()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	// The independent client's verdict.
	expected := filepath.Join(t.TempDir(), "expected.json")
	data, _ := json.Marshal(total)
	if err := os.WriteFile(expected, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "../../../tools/chaos/verify_counts.py")
	args := []string{script, "--brokers", b.Addr(), "--topic", "event-counts", "--expected", expected}
	if guarantee == "exactly_once_v2" {
		args = append(args, "--exact")
	}
	out, err := exec.Command("/usr/bin/python3", args...).CombinedOutput()
	t.Logf("confluent-kafka verdict:\n%s", out)
	if err != nil {
		t.Fatalf("the independent check failed: %v", err)
	}
	fmt.Println(string(out))
	t.Logf("chaos figures: engine kills, counting (%s): %d records, %d keys, %d engine kills, keys exact %d/%d, duplicates %d, %v",
		guarantee, seq, keys, kills, exact, len(total), dups, time.Since(began).Round(time.Second))
}

// TestChaosKillsWhileWindowing is the windows half of `make chaos` (under
// exactly_once_v2 only): 1 s tumbling counts of 100 keys, suppressed until
// each window closes, while the engine is killed with SIGKILL 10 times. At
// the end a record far ahead on every partition closes every window. Read
// read_committed, every window's final result appears exactly once, with
// its exact count: a kill neither loses nor repeats a final result.
func TestChaosKillsWhileWindowing(t *testing.T) {
	if os.Getenv("POLYSTREAMS_CHAOS") != "1" {
		t.Skip("set POLYSTREAMS_CHAOS=1 (make chaos) to run the kill -9 soak")
	}
	if g := os.Getenv("POLYSTREAMS_CHAOS_GUARANTEE"); g != "" && g != "exactly_once_v2" {
		t.Skip("exactly one final result per window is an exactly_once_v2 promise")
	}
	kills, perRound, keys := 10, 20_000, 100
	if n, err := strconv.Atoi(os.Getenv("POLYSTREAMS_CHAOS_KILLS")); err == nil {
		kills = n
	}
	began := time.Now()
	bin := engineBinary(t)
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"clicks", "clicks-per-second"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &env{t: t, broker: b}
	stateDir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	const base = 1_700_000_000_000
	want := map[string]int64{} // "key@start" -> count
	config := map[string]string{"processing.guarantee": "exactly_once_v2", "session.timeout.ms": "6000", "polystreams.bundle.max.records": "500"}
	seq := 0
	produce := func(rs []*kgo.Record) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("clicks"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round <= kills; round++ {
		rs := make([]*kgo.Record, perRound)
		for i := range rs {
			k := "key-" + strconv.Itoa(seq%keys)
			ts := int64(base + seq)
			seq++
			want[fmt.Sprintf("%s@%d", k, ts/1000*1000)]++
			rs[i] = &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)}
		}
		if round == kills {
			// Far ahead, on every key (so every partition): every window
			// before closes; these records' own windows stay open.
			for k := range keys {
				rs = append(rs, &kgo.Record{Key: []byte("key-" + strconv.Itoa(k)), Value: []byte("x"), Timestamp: time.UnixMilli(base + int64(seq) + 60_000)})
			}
		}
		produce(rs)
		cmd, url := startEngineProcess(t, bin, b.Addr(), stateDir)
		e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
		h := e.open("chaos-windows", config)
		s := h.mustBuild(&pb.StreamOp{Topics: []string{"clicks"}, KeySerde: "string"})
		g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
		w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000}}})
		c := h.mustBuild(&pb.CountOp{Input: w.Id})
		sup := h.mustBuild(&pb.SuppressOp{Input: c.Id})
		ts := h.mustBuild(&pb.ToStreamOp{Input: sup.Id})
		h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "clicks-per-second"})
		h.start()
		ctx, cancel := context.WithCancel(context.Background())
		go h.serve(ctx)
		if round < kills {
			time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			cancel()
			t.Logf("round %d: killed", round)
			continue
		}
		var got map[string][]int64
		deadline := time.Now().Add(300 * time.Second)
		for {
			got = map[string][]int64{}
			e.readTopic("clicks-per-second", true, func(r *kgo.Record) {
				got[windowed(r.Key)] = append(got[windowed(r.Key)], decodeLong(r.Value))
			})
			if len(got) >= len(want) {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				cancel()
				t.Fatalf("after 300 s, %d of %d windows have a final result", len(got), len(want))
			}
			time.Sleep(500 * time.Millisecond)
		}
		cancel()
		h.stop()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		bad := 0
		for k, n := range want {
			if vs := got[k]; len(vs) != 1 || vs[0] != n {
				if bad++; bad <= 5 {
					t.Errorf("window %s: final results %v, want exactly one, %d", k, vs, n)
				}
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d windows have final results, want %d", len(got), len(want))
		}
		t.Logf("%d windows, each with exactly one final result, after %d kills", len(want), kills)
		t.Logf("chaos figures: engine kills, windowing (exactly_once_v2): %d records, %d windows, %d engine kills, windows exact %d/%d, duplicates 0, %v",
			seq+keys, len(want), kills, len(want)-bad, len(want), time.Since(began).Round(time.Second))
	}
}

// chaosGuarantee is POLYSTREAMS_CHAOS_GUARANTEE, by default exactly_once_v2.
func chaosGuarantee() string {
	if g := os.Getenv("POLYSTREAMS_CHAOS_GUARANTEE"); g != "" {
		return g
	}
	return "exactly_once_v2"
}

// TestChaosKillsHost is the host half of the kill -9 soak: the process
// that runs the user's functions (the Python SDK, tools/scaleout/host.py:
// map_values(str.upper) before a count) is killed with SIGKILL 10 times
// (POLYSTREAMS_CHAOS_KILLS) while it works, and a new one attached to the
// same engine each time; the engine keeps running. Each kill hits a host
// that is running and took bundles since the last. The new host's session
// replaces the dead one's, whose bundles in flight (answered by nobody) are
// processed again. Under exactly_once_v2 every key's committed updates are
// exactly 1..n; under at_least_once no key's last count is below n, and
// the records counted twice are reported.
func TestChaosKillsHost(t *testing.T) {
	if !chaosOn() {
		t.Skip("set POLYSTREAMS_CHAOS=1 (make chaos) to run the host kill -9 soak")
	}
	guarantee := chaosGuarantee()
	kills, perRound, keys := 10, 20_000, 1_000
	if n, err := strconv.Atoi(os.Getenv("POLYSTREAMS_CHAOS_KILLS")); err == nil {
		kills = n
	}
	began := time.Now()
	args := []string{"--topology", "count", "--input", "events", "--output", "event-counts",
		"--config", "processing.guarantee=" + guarantee,
		"--config", "session.timeout.ms=6000",
		"--config", "polystreams.bundle.max.records=500",
		"--config", "statestore.cache.max.bytes=0"}
	if guarantee == "at_least_once" {
		args = append(args, "--config", "commit.interval.ms=200")
	}
	c := newScaleCluster(t, 4, "host-kills", []string{"events", "event-counts"}, args...)
	want := map[string]int64{}
	sent := 0
	in := c.start("a", "")
	rng := rand.New(rand.NewPCG(5, 6))
	// processed: the records counted, as far as committed (read_committed).
	processed := func() int {
		got := 0
		for _, s := range c.e.committedSequences("event-counts") {
			got += int(s[len(s)-1])
		}
		return got
	}
	// Records arrive all through the kills (up to kills x perRound, 1,000
	// every 100 ms), so that each kill meets bundles in flight; the feeder
	// keeps its own expected counts, merged once it is done.
	fedWant := map[string]int64{}
	var fedN atomic.Int64
	stopFeed, fed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fed)
		for from := 0; from < kills*perRound; from += 1_000 {
			select {
			case <-stopFeed:
				return
			default:
			}
			c.produceCounted("events", from, 1_000, keys, fedWant)
			fedN.Add(1_000)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	midWork := 0
	for round := 0; round < kills; round++ {
		before := processed()
		// Work for this host whatever the feeder's pace: 2,000 records.
		c.produceCounted("events", sent, 2_000, keys, want)
		sent += 2_000
		waitFor(t, "the host to process records", 120*time.Second, func() bool {
			c.checkHosts()
			return in.state() == "running" && processed() > before
		})
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		done := processed()
		in.killHost()
		// The fault fired: the host was running, had processed records
		// since the last kill, and died of the SIGKILL.
		if ws, ok := in.host.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the host ended with %v, not by the SIGKILL", round, in.host.ProcessState)
		}
		if done < sent+int(fedN.Load()) {
			midWork++ // records were produced that it had not yet committed
		}
		t.Logf("round %d: host killed", round)
		c.startHost(in)
	}
	close(stopFeed)
	<-fed
	for k, n := range fedWant {
		want[k] += n
	}
	sent += int(fedN.Load())
	c.produceCounted("events", sent, perRound, keys, want)
	sent += perRound
	dups, exact := int64(0), len(want)
	if guarantee == "exactly_once_v2" {
		var last error
		deadline := time.Now().Add(time.Duration(scale(120, 300)) * time.Second)
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
		c.verifyIndependently("event-counts", want)
	} else {
		var got map[string]int64
		waitFor(t, "every key to reach its count", 300*time.Second, func() bool {
			c.checkHosts()
			got = c.e.lastCounts("event-counts")
			for k, n := range want {
				if got[k] < n {
					return false
				}
			}
			return true
		})
		exact = 0
		for k, n := range want {
			dups += got[k] - n
			if got[k] == n {
				exact++
			}
		}
	}
	in.stop()
	t.Logf("chaos figures: host kills (%s): %d records, %d keys, %d host kills (%d with records produced and not yet committed), keys exact %d/%d, duplicates %d, %v",
		guarantee, sent, keys, kills, midWork, exact, len(want), dups, time.Since(began).Round(time.Second))
}
