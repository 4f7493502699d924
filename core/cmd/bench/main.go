// Command bench measures, side by side in one run on the embedded broker:
//
//	(a) stream -> map_values(upper) -> to, the operator in a Python host
//	(a') the same, the operator in a Node host (tools/bench/nodehost.mts)
//	(a'') the same, the operator in a Rust host (sdk-rust/examples/benchhost.rs)
//	(b) the same topology, the operator in Go inside the engine (no crossing)
//	(c) a raw franz-go consume -> upper -> produce loop, no engine: the limit
//
// and the cost of the crossing per record at bundle sizes 1, 100, 1,000 and
// 10,000 (one partition, so one bundle is in flight at a time): the time of
// (a) (or (a')) minus the time of (b) at the same bundle size, per record.
//
// A second table (agg.go) compares aggregations: a Python, a Node and a Rust
// aggregate and the built-in sum, both exactly_once_v2 with durable state, against a
// hand-written confluent-kafka dict loop; a third (window.go) windowed
// aggregations, and a fourth (join.go, -join: make bench-join) joins, each
// against the dict loop a Python user would write.
//
// Run it with `make bench`; it prints a Markdown table for
// docs/performance.md. It asserts nothing about speed.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/server"
	"github.com/polystreams/polystreams/core/internal/topology"
)

var (
	records    = flag.Int("records", 500_000, "records for the throughput arms (a), (b), (c)")
	partitions = flag.Int("partitions", 4, "partitions of the throughput input topic")
	valueSize  = flag.Int("value-size", 100, "bytes per record value")
	python     = flag.String("python", "/usr/bin/python3", "Python interpreter for the host arm")
	node       = flag.String("node", "node", "Node.js binary for the Node host arms (sdk-node/node_modules must hold tsx: make deps); empty skips them")
	rust       = flag.String("rust", "", "the Rust host binary for the Rust arms (cargo build --release --example benchhost in sdk-rust: make bench does); empty skips them")
	repo       = flag.String("repo", ".", "repository root (for tools/bench/pyhost.py, nodehost.mts, sdk-python and sdk-node)")
	sweep      = flag.Bool("sweep", true, "measure the crossing cost at bundle sizes 1..10,000")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the bench process (engine + broker) to this file")
	blockProf  = flag.String("blockprofile", "", "write a blocking profile (where goroutines wait) of the bench process to this file")
	crossing   = flag.Bool("crossing", true, "measure the map_values table (a), (b), (c)")
	metricsCmp = flag.Int("metrics-compare", 0, "rounds of arms (a) and (b) with metrics on and off (polystreams.metrics.enabled), interleaved; 0 skips")
)

type bench struct {
	brokers string
	engine  string // URL of the in-process engine server
	adm     *kadm.Client
	seq     int
	log     *slog.Logger
}

func main() {
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	if *blockProf != "" {
		goruntime.SetBlockProfileRate(100_000) // one sample per 100 µs blocked
		defer func() {
			f, err := os.Create(*blockProf)
			check(err)
			check(pprof.Lookup("block").WriteTo(f, 0))
			f.Close()
		}()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Partitions: *partitions})
	check(err)
	defer b.Close()
	stateDir, err := os.MkdirTemp("", "polystreams-bench")
	check(err)
	defer os.RemoveAll(stateDir)
	srv := server.New(server.Options{Brokers: b.Addr(), StateDir: stateDir, Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	mux.Handle("/metrics", srv.MetricsHandler()) // the join arms' crossings
	// HTTP/1.1 for the Python SDK, h2c for the Node SDK, as the engine's CLI serves.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	go (&http.Server{Handler: mux, Protocols: &protocols}).Serve(ln)
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(b.Addr()))
	check(err)
	bn := &bench{brokers: b.Addr(), engine: "http://" + ln.Addr().String(), adm: adm, log: log}

	if *crossing {
		fmt.Printf("polystreams benchmark: %d records of %d bytes, %d partitions, embedded broker (kfake), 2 arms share the machine with the broker\n\n",
			*records, *valueSize, *partitions)
		in := bn.seed("bench-in", *partitions, *records)
		c := bn.rawLoop(in, *records)
		bB := bn.nativeArm(in, *records, 2000, stateDir)
		a := bn.hostArm("python", in, *records, 2000)
		var an, ar time.Duration
		if *node != "" {
			an = bn.hostArm("node", in, *records, 2000)
		}
		if *rust != "" {
			ar = bn.hostArm("rust", in, *records, 2000)
		}
		fmt.Println("| arm | records/s | vs (c) |")
		fmt.Println("|---|---:|---:|")
		row := func(name string, d time.Duration) {
			if d == 0 {
				return
			}
			rate := float64(*records) / d.Seconds()
			fmt.Printf("| %s | %s | %.0f%% |\n", name, human(rate), 100*c.Seconds()/d.Seconds())
		}
		row("(a) Python map_values (bundles of ≤2,000)", a)
		row("(a') Node map_values (bundles of ≤2,000)", an)
		row("(a'') Rust map_values (bundles of ≤2,000)", ar)
		row("(b) Go map_values in the engine", bB)
		row("(c) raw franz-go consume→upper→produce", c)
		fmt.Println()
		if an > 0 {
			fmt.Printf("Node / Python records/s: %.2fx\n\n", a.Seconds()/an.Seconds())
		}
		if ar > 0 {
			fmt.Printf("Rust / Python records/s: %.2fx\n\n", a.Seconds()/ar.Seconds())
		}
	}

	if *metricsCmp > 0 {
		bn.compareMetrics(*metricsCmp, stateDir)
	}

	if *sweep {
		fmt.Println("Crossing cost, one partition (one bundle in flight), Python, Node and Rust hosts vs the same topology in Go:")
		fmt.Println()
		fmt.Println("| bundle size | records | (a) Python µs/record | (a') Node µs/record | (a'') Rust µs/record | (b) Go µs/record | Python crossing µs/record | Node crossing µs/record | Rust crossing µs/record |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, size := range []int{1, 100, 1000, 10000} {
			n := map[int]int{1: 5_000, 100: 100_000, 1000: 200_000, 10000: 200_000}[size]
			topic := bn.seed(fmt.Sprintf("sweep-%d", size), 1, n)
			ta := bn.hostArm("python", topic, n, size)
			var tn, tr time.Duration
			if *node != "" {
				tn = bn.hostArm("node", topic, n, size)
			}
			if *rust != "" {
				tr = bn.hostArm("rust", topic, n, size)
			}
			tb := bn.nativeArm(topic, n, size, stateDir)
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
			nodeCols := "— | —"
			if tn > 0 {
				nodeCols = fmt.Sprintf("%.2f | %.2f", per(tn), per(tn)-per(tb))
			}
			nodeAt, nodeCross, _ := strings.Cut(nodeCols, " | ")
			rustAt, rustCross := "—", "—"
			if tr > 0 {
				rustAt, rustCross = fmt.Sprintf("%.2f", per(tr)), fmt.Sprintf("%.2f", per(tr)-per(tb))
			}
			fmt.Printf("| %d | %d | %.2f | %s | %s | %.2f | %.2f | %s | %s |\n", size, n, per(ta), nodeAt, rustAt, per(tb), per(ta)-per(tb), nodeCross, rustCross)
		}
		fmt.Println()
	}
	if *agg {
		bn.aggTable(stateDir)
	}
	if *win {
		bn.winTable(stateDir)
	}
	if *joinTable {
		bn.joinTableRun()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Close(ctx)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func human(r float64) string {
	if r >= 1e6 {
		return fmt.Sprintf("%.2fM", r/1e6)
	}
	return fmt.Sprintf("%.0fk", r/1e3)
}

func (bn *bench) name(prefix string) string {
	bn.seq++
	return fmt.Sprintf("%s-%d", prefix, bn.seq)
}

// seed creates topic and writes n records of random-ish lower-case text.
func (bn *bench) seed(topic string, parts, n int) string {
	_, err := bn.adm.CreateTopic(context.Background(), int32(parts), 1, nil, topic)
	check(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	check(err)
	defer cl.Close()
	val := bytes.Repeat([]byte("abcdefghij"), (*valueSize+9)/10)[:*valueSize]
	for i := range n {
		v := append([]byte(nil), val...)
		copy(v, strconv.Itoa(i))
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i % 10000)), Value: v}, func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
	return topic
}

// measure runs an arm against pre-seeded input and times it from the moment
// the arm's consumer group is Stable (joined, partitions assigned) until its
// output topic holds n records: start-up (process start, group join) is left
// out of every arm alike, fetching and processing are in.
func (bn *bench) measure(group, out string, n int, arm func()) time.Duration {
	stable := make(chan time.Time, 1)
	go func() {
		for {
			gs, err := bn.adm.DescribeGroups(context.Background(), group)
			if err == nil {
				if g, ok := gs[group]; ok && g.State == "Stable" && len(g.Members) > 0 {
					stable <- time.Now()
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	arm()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		offs, err := bn.adm.ListEndOffsets(context.Background(), out)
		if err == nil {
			var total int64
			offs.Each(func(o kadm.ListedOffset) { total += max(o.Offset, 0) })
			if total >= int64(n) {
				return time.Since(<-stable)
			}
		}
		time.Sleep(time.Millisecond)
	}
	check(fmt.Errorf("%s did not reach %d records", out, n))
	return 0
}

// rawLoop is arm (c): a consumer group reads in, upper-cases each value and
// produces it; outputs are flushed and offsets committed every 100 ms.
func (bn *bench) rawLoop(in string, n int) time.Duration {
	out := bn.name("out-c")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	group := bn.name("raw")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.DisableAutoCommit(), kgo.DefaultProduceTopic(out))
	check(err)
	defer cl.Close()
	return bn.measure(group, out, n, func() {
		go func() {
			// Outputs are produced asynchronously; every 100 ms they are
			// flushed and the offsets committed (at-least-once, pipelined).
			seen := 0
			last := time.Now()
			for seen < n {
				fs := cl.PollRecords(context.Background(), 10000)
				fs.EachRecord(func(r *kgo.Record) {
					cl.Produce(context.Background(), &kgo.Record{Key: r.Key, Value: bytes.ToUpper(r.Value)}, nil)
					seen++
				})
				if time.Since(last) > 100*time.Millisecond || seen >= n {
					check(cl.Flush(context.Background()))
					check(cl.CommitUncommittedOffsets(context.Background()))
					last = time.Now()
				}
			}
		}()
	})
}

// nativeArm is arm (b): the engine runs map_values as a Go function.
func (bn *bench) nativeArm(in string, n, bundle int, stateDir string) time.Duration {
	return bn.nativeArmWith(in, n, bundle, stateDir, true)
}

// nativeArmWith is nativeArm, with metrics on or off.
func (bn *bench) nativeArmWith(in string, n, bundle int, stateDir string, metrics bool) time.Duration {
	out := bn.name("out-b")
	parts := *partitions
	if in != "bench-in" {
		parts = 1
	}
	_, err := bn.adm.CreateTopic(context.Background(), int32(parts), 1, nil, out)
	check(err)
	b := topology.NewBuilder()
	s, err := b.Stream(topology.StreamOptions{Topics: []string{in}, ValueSerde: "string"})
	check(err)
	m, err := b.MapValues(s.ID, topology.Function{Name: "upper", Native: topology.MapValuesFunc(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil })}, "", "")
	check(err)
	check(b.To(m.ID, out, "", "", ""))
	topo, err := b.Topology()
	check(err)
	appID := bn.name("native")
	cfg, _, err := config.Parse(appID, map[string]string{
		"state.dir":                      stateDir,
		"polystreams.bundle.max.records": strconv.Itoa(bundle),
		"polystreams.metrics.enabled":    strconv.FormatBool(metrics),
	}, bn.brokers)
	check(err)
	cfg.Logger = bn.log
	app, err := engine.New(cfg, topo, nil)
	check(err)
	took := bn.measure(appID, out, n, func() { check(app.Start(context.Background())) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check(app.Stop(ctx))
	return took
}

// hostArm is arm (a) (lang "python": tools/bench/pyhost.py with the Python
// SDK) or (a') (lang "node": tools/bench/nodehost.mts with the Node SDK): the
// host builds the topology against the in-process engine and serves its
// bundles until SIGTERM.
func (bn *bench) hostArm(lang, in string, n, bundle int, extra ...string) time.Duration {
	out := bn.name("out-a-" + lang)
	parts := *partitions
	if in != "bench-in" {
		parts = 1
	}
	_, err := bn.adm.CreateTopic(context.Background(), int32(parts), 1, nil, out)
	check(err)
	appID := bn.name(lang)
	cmd := bn.host(lang, append([]string{"--engine", bn.engine, "--app", appID, "--input", in, "--output", out,
		"--bundle", strconv.Itoa(bundle)}, extra...)...)
	var stop func()
	took := bn.measure(appID, out, n, func() { stop = startHost(cmd) })
	stop()
	return took
}

// startHost starts a host process; the bench fails at once if the host
// exits before it is told to stop. The returned func stops it (SIGTERM) and
// waits for it to exit.
func startHost(cmd *exec.Cmd) (stop func()) {
	check(cmd.Start())
	var stopping atomic.Bool
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if !stopping.Load() {
			check(fmt.Errorf("host %s exited before its output was complete: %v", strings.Join(cmd.Args, " "), err))
		}
		exited <- err
	}()
	return func() {
		stopping.Store(true)
		cmd.Process.Signal(syscall.SIGTERM)
		check(<-exited)
	}
}

// host is the command of a host process: pyhost.py under --python with the
// Python SDK on its path, or nodehost.mts under --node with tsx, run from
// sdk-node (where tsx and the SDK's dependencies are installed).
func (bn *bench) host(lang string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	switch lang {
	case "python":
		cmd = exec.Command(*python, append([]string{filepath.Join(*repo, "tools/bench/pyhost.py")}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(*repo, "sdk-python/src"))
	case "node":
		cmd = exec.Command(*node, append([]string{"--import", "tsx", filepath.Join(*repo, "tools/bench/nodehost.mts")}, args...)...)
		cmd.Dir = filepath.Join(*repo, "sdk-node")
	case "rust":
		cmd = exec.Command(*rust, args...)
	default:
		check(fmt.Errorf("no host for %q", lang))
	}
	cmd.Stderr = os.Stderr
	return cmd
}
