package main

// The windows table (the windows issue): per key and time window over
// --win-records JSON records {"amount": n} on --win-keys string keys, one
// millisecond apart,
//
//	(w1) tumbling 60 s count, built in Go (no host), exactly_once_v2;
//	(w2) hopping 60 s / 5 s count (each record in 12 windows), built in Go;
//	(w3) a Python-hosted aggregate (sum of "amount") over the hopping
//	     windows, exactly_once_v2 (tools/bench/pyhost.py --topology
//	     window-aggregate);
//	(w4) the same aggregate in a Rust host (sdk-rust/examples/benchhost.rs
//	     --topology window-aggregate), under --rust;
//
// each beside tools/bench/windowdict.py computing the same windows in a
// dict (no durability, changed windows produced every second). Every arm
// is timed from its group being Stable until every window's last output
// is its expected value.

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

	"github.com/polystreams/polystreams/core/internal/topology"
)

var (
	win        = flag.Bool("win", true, "measure the windows table")
	winRecords = flag.Int("win-records", 200_000, "records for the windows table")
	winKeys    = flag.Int("win-keys", 1_000, "distinct keys for the windows table")
	winArms    = flag.String("win-arms", "1234", "which window arms to run (any of 1 tumbling count, 2 hopping count, 3 Python hopping aggregate, 4 Rust hopping aggregate (with --rust))")
	winCommit  = flag.Int("win-commit-ms", 1000, "commit.interval.ms of the engine arms: by default the dict programs' flush interval (1 s), so that both emit changed windows as often; -1 keeps Kafka Streams' default (100 under exactly_once_v2)")
)

const (
	winSize    = 60_000
	winAdvance = 5_000
)

// seedWindows writes n JSON amounts keyed by strconv.Itoa(i % keys), with
// timestamps 1 ms apart, and returns the expected final value of every
// window for each arm.
func (bn *bench) seedWindows(n, keys int) (topic string, tumblingCounts, hoppingCounts, hoppingSums aggInput) {
	topic = "win-json"
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, topic)
	check(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ProducerLinger(5*time.Millisecond))
	check(err)
	defer cl.Close()
	tumblingCounts, hoppingCounts, hoppingSums = aggInput{want: map[string]int64{}}, aggInput{want: map[string]int64{}}, aggInput{want: map[string]int64{}}
	for _, in := range []*aggInput{&tumblingCounts, &hoppingCounts, &hoppingSums} {
		in.json, in.n = topic, n
	}
	const base = 1_700_000_000_000 // a realistic epoch time, aligned to the minute
	for i := range n {
		k := strconv.Itoa(i % keys)
		ts := int64(base + i)
		a := amount(i)
		tumblingCounts.want[windowedKey(k, ts/winSize*winSize)]++
		for start := max(0, ts-winSize+winAdvance) / winAdvance * winAdvance; start <= ts; start += winAdvance {
			hoppingCounts.want[windowedKey(k, start)]++
			hoppingSums.want[windowedKey(k, start)] += a
		}
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(k), Value: fmt.Appendf(nil, `{"amount": %d}`, a), Timestamp: time.UnixMilli(ts)},
			func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
	// The engine, with its record cache, may emit several updates per window
	// and commit; the dict one per window per second.
	for _, in := range []*aggInput{&tumblingCounts, &hoppingCounts, &hoppingSums} {
		in.maxOut = 12 * n
	}
	return topic, tumblingCounts, hoppingCounts, hoppingSums
}

func windowedKey(k string, start int64) string {
	return string(binary.BigEndian.AppendUint64([]byte(k), uint64(start)))
}

// winNative is a windowed count built in Go: tumbling when advance == size.
func (bn *bench) winNative(in aggInput, advance int64, stateDir string) time.Duration {
	out := bn.name("win-out-native")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	b := topology.NewBuilder()
	// A count reads no value: bytes, as the dict program does not parse it.
	s, err := b.Stream(topology.StreamOptions{Topics: []string{in.json}, KeySerde: "string", ValueSerde: "bytes"})
	check(err)
	g, err := b.GroupByKey(s.ID, "", "", "")
	check(err)
	w, err := b.WindowedBy(g.ID, topology.Windows{Kind: topology.TimeWindows, Size: winSize, Advance: advance})
	check(err)
	t, err := b.Count(w.ID, nil, "")
	check(err)
	ts, err := b.ToStream(t.ID, "")
	check(err)
	check(b.To(ts.ID, out, "", "", ""))
	return bn.runNative(bn.name("win-native"), b, stateDir, *winCommit, out, in)
}

// winHost is arm (w3) (lang "python"): the Python SDK's windowed
// aggregate, or (w4) (lang "rust"): the Rust SDK's.
func (bn *bench) winHost(lang string, in aggInput) time.Duration {
	out := bn.name("win-out-" + lang)
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	appID := bn.name("win-" + lang)
	cmd := bn.host(lang, "--engine", bn.engine, "--app", appID, "--input", in.json, "--output", out, "--topology", "window-aggregate",
		"--commit-ms="+strconv.Itoa(*winCommit))
	var stop func()
	took := bn.measureSums(appID, out, in, func() { stop = startHost(cmd) })
	stop()
	return took
}

// winDict is the dict baseline of an arm.
func (bn *bench) winDict(in aggInput, mode string, advance int64) time.Duration {
	out := bn.name("win-out-dict")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	group := bn.name("win-dict")
	cmd := exec.Command(*python, filepath.Join(*repo, "tools/bench/windowdict.py"),
		"--brokers", bn.brokers, "--group", group, "--input", in.json, "--output", out,
		"--records", strconv.Itoa(in.n), "--mode", mode, "--size-ms", strconv.Itoa(winSize), "--advance-ms", strconv.FormatInt(advance, 10))
	cmd.Stderr = os.Stderr
	took := bn.measureSums(group, out, in, func() { check(cmd.Start()) })
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

// winTable runs the selected window arms, each beside its dict baseline,
// and prints the table.
func (bn *bench) winTable(stateDir string) {
	fmt.Printf("Windows: per key and window, %d records over %d string keys 1 ms apart, %d partitions; tumbling 60 s, hopping 60 s by 5 s (12 windows per record); engine arms exactly_once_v2 with Pebble + changelog, the default record cache and commit.interval.ms %d, the dict programs producing changed windows every second:\n\n",
		*winRecords, *winKeys, *partitions, *winCommit)
	_, tumbling, hopping, sums := bn.seedWindows(*winRecords, *winKeys)
	has := func(arm rune) bool {
		for _, c := range *winArms {
			if c == arm {
				return true
			}
		}
		return false
	}
	fmt.Println("| arm | polystreams records/s | dict records/s | polystreams / dict | target |")
	fmt.Println("|---|---:|---:|---:|---|")
	row := func(name string, p, d time.Duration) {
		n := float64(*winRecords)
		fmt.Printf("| %s | %s | %s | %.2fx | ≥ 1.0x |\n", name, human(n/p.Seconds()), human(n/d.Seconds()), d.Seconds()/p.Seconds())
	}
	if has('1') {
		d := bn.winDict(tumbling, "count", winSize)
		row("tumbling count (built-in)", bn.winNative(tumbling, winSize, stateDir), d)
	}
	if has('2') {
		d := bn.winDict(hopping, "count", winAdvance)
		row("hopping-by-12 count (built-in)", bn.winNative(hopping, winAdvance, stateDir), d)
	}
	if has('3') {
		d := bn.winDict(sums, "sum", winAdvance)
		row("hopping-by-12 Python aggregate (sum)", bn.winHost("python", sums), d)
	}
	if has('4') && *rust != "" {
		d := bn.winDict(sums, "sum", winAdvance)
		row("hopping-by-12 Rust aggregate (sum)", bn.winHost("rust", sums), d)
	}
	fmt.Println()
}
