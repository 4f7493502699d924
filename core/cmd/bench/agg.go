package main

// The aggregation table (the state issue): a running sum per key over
// --agg-records JSON records {"amount": n} on --agg-keys string keys,
//
//	(a) group_by_key().aggregate(0, a + v["amount"], Materialized(value="long"))
//	    in a Python host (tools/bench/pyhost.py --topology aggregate),
//	    exactly_once_v2, Pebble + changelog;
//	(a') the same in a Node host (tools/bench/nodehost.mts --topology
//	    aggregate), exactly_once_v2, Pebble + changelog;
//	(a'') the same in a Rust host (sdk-rust/examples/benchhost.rs
//	    --topology aggregate), exactly_once_v2, Pebble + changelog;
//	(b) group_by_key().reduce("sum") built in Go with topology.Builder.Reduce
//	    and Function{Builtin: "sum"} (no host), on a second input topic of
//	    the same amounts as 8-byte big-endian longs, exactly_once_v2, Pebble +
//	    changelog;
//	(c) tools/bench/dictloop.py: python3-confluent-kafka, a dict, no
//	    durability, at-least-once commits every second.
//
// Every arm emits one output record (the key's new sum, a long) per input
// record. Each is timed from its consumer group being Stable until a
// read_committed reader of its output has seen every record; the reader
// then checks each key's last sum against the expected total.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/topology"
)

var (
	agg        = flag.Bool("agg", true, "measure the aggregation table (a) Python aggregate, (a') Node aggregate, (b) built-in sum, (c) confluent-kafka dict loop")
	aggRecords = flag.Int("agg-records", 300_000, "records for the aggregation table")
	aggKeys    = flag.Int("agg-keys", 10_000, "distinct keys for the aggregation table")
	aggCommit  = flag.Int("agg-commit-ms", -1, "commit.interval.ms for the engine arms (a), (b); -1 keeps the default (100 under exactly_once_v2)")
	aggArms    = flag.String("agg-arms", "anrbc", "which aggregation arms to run (any of a, n (Node, (a')), r (Rust, (a'')), b, c)")
)

// aggInput is the seeded input of the aggregation table.
type aggInput struct {
	json, long string
	n          int
	want       map[string]int64 // each key's final sum
	// maxOut is the most outputs an arm may write (0: n).
	maxOut int
}

func amount(i int) int64 { return int64((i * 7919) % 1000) }

// seedAgg writes the same n amounts twice: as JSON {"amount": n} and as
// 8-byte big-endian longs, keyed by strconv.Itoa(i % keys).
func (bn *bench) seedAgg(n, keys int) aggInput {
	in := aggInput{json: "agg-json", long: "agg-long", n: n, want: map[string]int64{}}
	for _, t := range []string{in.json, in.long} {
		_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, t)
		check(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ProducerLinger(5*time.Millisecond))
	check(err)
	defer cl.Close()
	for i := range n {
		k := strconv.Itoa(i % keys)
		a := amount(i)
		in.want[k] += a
		cl.Produce(context.Background(), &kgo.Record{Topic: in.json, Key: []byte(k), Value: fmt.Appendf(nil, `{"amount": %d}`, a)}, func(_ *kgo.Record, err error) { check(err) })
		cl.Produce(context.Background(), &kgo.Record{Topic: in.long, Key: []byte(k), Value: binary.BigEndian.AppendUint64(nil, uint64(a))}, func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
	return in
}

// measureSums is measure for the aggregation arms: the output is read
// (read_committed, so transaction markers are not counted) until it holds
// n records; each key's last value must then be its expected sum.
func (bn *bench) measureSums(group, out string, in aggInput, arm func()) time.Duration {
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
	rd, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(20*time.Millisecond))
	check(err)
	defer rd.Close()
	arm()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Done when every key's last output is its sum: the dict loop emits one
	// output per input, the engine (with Kafka Streams' default record
	// cache) the latest sum per key at each commit.
	last := make(map[string]int64, len(in.want))
	seen := 0
	maxOut := in.n
	if in.maxOut > 0 {
		maxOut = in.maxOut
	}
	done := func() bool {
		if seen >= maxOut {
			return true
		}
		for k, w := range in.want {
			if last[k] != w {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			check(fmt.Errorf("%s: %d records after 5 minutes, and some key's last value is not its expected one", out, seen))
		}
		fs.EachError(func(t string, p int32, err error) { check(fmt.Errorf("reading %s/%d: %w", t, p, err)) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if len(r.Value) == 8 {
				last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			} else {
				last[string(r.Key)] = -1
			}
		})
	}
	took := time.Since(<-stable)
	bad := 0
	for k, w := range in.want {
		if last[k] != w {
			if bad < 3 {
				fmt.Fprintf(os.Stderr, "bench: %s: key %q ends at %d, want %d\n", out, k, last[k], w)
			}
			bad++
		}
	}
	if bad > 0 || seen > maxOut {
		check(fmt.Errorf("%s: %d records (at most %d), %d keys with a wrong final sum", out, seen, maxOut, bad))
	}
	fmt.Fprintf(os.Stderr, "bench: %s: %d outputs for %d inputs\n", out, seen, in.n)
	return took
}

// aggHost is arm (a) (lang "python"), (a') (lang "node") or the Rust arm (lang "rust"): the SDK's
// aggregate under exactly_once_v2.
func (bn *bench) aggHost(lang string, in aggInput) time.Duration {
	out := bn.name("agg-out-a-" + lang)
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	appID := bn.name("agg-" + lang)
	cmd := bn.host(lang, "--engine", bn.engine, "--app", appID, "--input", in.json, "--output", out, "--topology", "aggregate",
		"--commit-ms="+strconv.Itoa(*aggCommit))
	var stop func()
	took := bn.measureSums(appID, out, in, func() { stop = startHost(cmd) })
	stop()
	return took
}

// aggNative is arm (b): reduce("sum") built natively in Go (the builder
// resolves Builtin "sum" for the long values), exactly_once_v2.
func (bn *bench) aggNative(in aggInput, stateDir string) time.Duration {
	out := bn.name("agg-out-b")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	b := topology.NewBuilder()
	s, err := b.Stream(topology.StreamOptions{Topics: []string{in.long}, KeySerde: "string", ValueSerde: "long"})
	check(err)
	g, err := b.GroupByKey(s.ID, "", "", "")
	check(err)
	t, err := b.Reduce(g.ID, topology.Function{Builtin: "sum"}, nil, "")
	check(err)
	ts, err := b.ToStream(t.ID, "")
	check(err)
	check(b.To(ts.ID, out, "", "", ""))
	return bn.runNative(bn.name("agg-native"), b, stateDir, *aggCommit, out, in)
}

// runNative runs the topology of b in the engine, under exactly_once_v2
// with Pebble in stateDir (commitMs -1: the default commit interval), and
// measures it as measureSums does.
func (bn *bench) runNative(appID string, b *topology.Builder, stateDir string, commitMs int, out string, in aggInput) time.Duration {
	topo, err := b.Topology()
	check(err)
	kv := map[string]string{"state.dir": stateDir, "processing.guarantee": config.ExactlyOnceV2}
	if commitMs >= 0 {
		kv["commit.interval.ms"] = strconv.Itoa(commitMs)
	}
	cfg, _, err := config.Parse(appID, kv, bn.brokers)
	check(err)
	cfg.Logger = bn.log
	app, err := engine.New(cfg, topo, nil)
	check(err)
	took := bn.measureSums(appID, out, in, func() { check(app.Start(context.Background())) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check(app.Stop(ctx))
	return took
}

// aggDict is arm (c): tools/bench/dictloop.py, no engine.
func (bn *bench) aggDict(in aggInput) time.Duration {
	out := bn.name("agg-out-c")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	group := bn.name("agg-dict")
	cmd := exec.Command(*python, filepath.Join(*repo, "tools/bench/dictloop.py"),
		"--brokers", bn.brokers, "--group", group, "--input", in.json, "--output", out,
		"--records", strconv.Itoa(in.n))
	cmd.Stderr = os.Stderr
	took := bn.measureSums(group, out, in, func() { check(cmd.Start()) })
	// It exits by itself after the last record; SIGTERM only if it hangs
	// (a signal during interpreter shutdown would kill it uncleanly).
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		check(err)
	case <-time.After(30 * time.Second):
		cmd.Process.Signal(syscall.SIGTERM)
		check(<-done)
	}
	return took
}

// aggTable runs the selected arms and prints the table.
func (bn *bench) aggTable(stateDir string) {
	fmt.Printf("Aggregations: running sum per key, %d records over %d string keys, %d partitions; the engine arms with Kafka Streams' default record cache (10 MiB: the latest sum per key at each commit), the dict loop one output per input:\n\n",
		*aggRecords, *aggKeys, *partitions)
	in := bn.seedAgg(*aggRecords, *aggKeys)
	has := func(arm rune) bool {
		for _, c := range *aggArms {
			if c == arm {
				return true
			}
		}
		return false
	}
	var a, an, ar, b, c time.Duration
	if has('c') {
		c = bn.aggDict(in)
	}
	if has('b') {
		b = bn.aggNative(in, stateDir)
	}
	if has('a') {
		a = bn.aggHost("python", in)
	}
	if has('n') && *node != "" {
		an = bn.aggHost("node", in)
	}
	if has('r') && *rust != "" {
		ar = bn.aggHost("rust", in)
	}
	fmt.Println("| arm | records/s | vs (c) | target |")
	fmt.Println("|---|---:|---:|---|")
	row := func(name string, d time.Duration, target string) {
		if d == 0 {
			return
		}
		ratio := "—"
		if c > 0 {
			ratio = fmt.Sprintf("%.2fx", c.Seconds()/d.Seconds())
		}
		fmt.Printf("| %s | %s | %s | %s |\n", name, human(float64(in.n)/d.Seconds()), ratio, target)
	}
	row("(a) Python aggregate, exactly_once_v2, Pebble + changelog", a, "≥ 1.0x")
	row("(a') Node aggregate, exactly_once_v2, Pebble + changelog", an, "≥ 1.0x")
	row("(a'') Rust aggregate, exactly_once_v2, Pebble + changelog", ar, "≥ 1.0x")
	row("(b) built-in reduce(\"sum\") (Go), exactly_once_v2, Pebble + changelog", b, "≥ 2x")
	row("(c) confluent-kafka dict loop, no durability", c, "")
	fmt.Println()
	if a > 0 && an > 0 {
		fmt.Printf("Node / Python aggregate records/s: %.2fx\n\n", a.Seconds()/an.Seconds())
	}
	if a > 0 && ar > 0 {
		fmt.Printf("Rust / Python aggregate records/s: %.2fx\n\n", a.Seconds()/ar.Seconds())
	}
}
