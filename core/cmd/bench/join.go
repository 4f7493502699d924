package main

// The joins table (make bench-join): each join arm beside the join a
// Python user would otherwise write by hand, tools/bench/joindict.py (a
// python3-confluent-kafka loop and a dict, as dictloop.py: at-least-once
// commits every second, no durability), both at_least_once:
//
//	(j1) stream-table: --join-records JSON orders {"order", "amount"} on
//	     --join-keys customer keys, joined with a table of --join-keys JSON
//	     customers {"name", "tier"} by a Python joiner
//	     (stream.join(table, lambda order, customer: {...}); tools/bench/
//	     pyhost.py --topology stream-table-join) against a dict of the
//	     customers;
//	(j2) stream-stream: --join-records/2 orders and as many payments
//	     {"order", "paid"}, keyed by order id, joined within 5 minutes
//	     (JoinWindows, no grace) by a Python joiner against two dicts of
//	     lists per key;
//	(j3) the stream-table join of (j1) in a Rust host
//	     (sdk-rust/examples/benchhost.rs --topology stream-table-join),
//	     under --rust.
//
// Every arm is timed until its output holds one record per order; the
// outputs are then checked (count and a checksum of their fields). A
// stream-stream arm is timed from its consumer group being Stable, its
// input written beforehand; a stream-table arm from the moment it holds
// the whole table (written beforehand), while its orders are written (see
// seedJoinTable), so that every order finds its customer in both arms. For the
// polystreams arms the engine's /metrics gives the bundles that crossed to
// the host: crossings per record.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	joinTable   = flag.Bool("join", false, "measure the joins table (make bench-join)")
	joinRecords = flag.Int("join-records", 200_000, "orders of the stream-table join arms; orders + payments of the stream-stream arm")
	joinKeys    = flag.Int("join-keys", 10_000, "customers (table rows) of the stream-table join arms")
	joinRounds  = flag.Int("join-rounds", 3, "rounds of each join arm and its baseline")
	joinArms    = flag.String("join-arms", "tsr", "which join arms to run (any of t stream-table (j1), s stream-stream (j2), r Rust stream-table (j3), with --rust)")
)

// joinWindowMs is the stream-stream arm's JoinWindows time difference:
// wider than the spread of the input's timestamps, so that neither arm
// drops a record as late, whatever order the two topics are read in.
const joinWindowMs = 300_000

// joinInput is the seeded input of a join arm and what its output must be.
type joinInput struct {
	orders, other string // the stream's topic; the table's or other stream's
	n             int    // outputs expected: one per order
	inputs        int    // input records (orders, plus payments for a stream-stream join)
	sum           int64  // the checksum of the outputs (see joinCheck)
}

// seedJoinTable writes keys JSON customers and returns the input of a
// stream-table arm; its orders are written by produceOrders once the arm
// holds the whole table (the engine, like the dict loop, does not order
// the records of two topics by timestamp, as Kafka Streams' PartitionGroup
// does: an order read before its customer would find none).
func (bn *bench) seedJoinTable(n, keys int) joinInput {
	in := joinInput{other: "join-customers", n: n, inputs: n}
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, in.other)
	check(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ProducerLinger(5*time.Millisecond))
	check(err)
	defer cl.Close()
	for k := range keys {
		cl.Produce(context.Background(), &kgo.Record{Topic: in.other, Key: []byte(strconv.Itoa(k)),
			Value: fmt.Appendf(nil, `{"name": "customer-%d", "tier": %d}`, k, k%5), Timestamp: time.UnixMilli(joinBase)},
			func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
	for i := range n {
		in.sum += amount(i) * int64(i%keys%5+1)
	}
	return in
}

const joinBase = 1_700_000_000_000 // the first input timestamp

// newOrders creates a fresh orders topic for one stream-table arm.
func (bn *bench) newOrders(in joinInput) joinInput {
	in.orders = bn.name("join-orders")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, in.orders)
	check(err)
	return in
}

// produceOrders writes in.n JSON orders to in.orders, keyed by
// strconv.Itoa(i % keys), as fast as a franz-go producer can.
func (bn *bench) produceOrders(in joinInput, keys int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ProducerLinger(5*time.Millisecond), kgo.DefaultProduceTopic(in.orders))
	check(err)
	defer cl.Close()
	for i := range in.n {
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i % keys)),
			Value: fmt.Appendf(nil, `{"order": %d, "amount": %d}`, i, amount(i)), Timestamp: time.UnixMilli(joinBase + 1 + int64(i))},
			func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
}

// seedJoinStreams writes n/2 JSON orders and n/2 JSON payments, both keyed
// by the order id, each payment 1 ms after its order.
func (bn *bench) seedJoinStreams(n int) joinInput {
	in := joinInput{orders: "join-ss-orders", other: "join-ss-payments", n: n / 2, inputs: n / 2 * 2}
	for _, t := range []string{in.orders, in.other} {
		_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, t)
		check(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bn.brokers), kgo.ProducerLinger(5*time.Millisecond))
	check(err)
	defer cl.Close()
	for i := range n / 2 {
		k := []byte("o" + strconv.Itoa(i))
		a := amount(i)
		in.sum += a
		ts := int64(joinBase + 2*i)
		cl.Produce(context.Background(), &kgo.Record{Topic: in.orders, Key: k, Value: fmt.Appendf(nil, `{"order": %d, "amount": %d}`, i, a), Timestamp: time.UnixMilli(ts)},
			func(_ *kgo.Record, err error) { check(err) })
		cl.Produce(context.Background(), &kgo.Record{Topic: in.other, Key: k, Value: fmt.Appendf(nil, `{"order": %d, "paid": %d}`, i, a), Timestamp: time.UnixMilli(ts + 1)},
			func(_ *kgo.Record, err error) { check(err) })
	}
	check(cl.Flush(context.Background()))
	return in
}

// joinOutput is the fields of an output record either arm writes.
type joinOutput struct {
	Order  int64  `json:"order"`
	Amount int64  `json:"amount"`
	Name   string `json:"name"`
	Tier   *int64 `json:"tier"`
	Paid   *int64 `json:"paid"`
}

// joinCheck returns the checksum of outputs: the sum of amount * (tier + 1)
// of a stream-table join's, the sum of amount of a stream-stream join's
// (whose paid must equal amount); an output of the wrong shape fails.
func joinCheck(out string, outputs [][]byte) int64 {
	var sum int64
	for _, v := range outputs {
		var o joinOutput
		if err := json.Unmarshal(v, &o); err != nil {
			check(fmt.Errorf("%s: output %q: %w", out, v, err))
		}
		switch {
		case o.Tier != nil && o.Name == fmt.Sprintf("customer-%d", o.Order%int64(*joinKeys)):
			sum += o.Amount * (*o.Tier + 1)
		case o.Paid != nil && *o.Paid == o.Amount:
			sum += o.Amount
		default:
			check(fmt.Errorf("%s: output %s is no join of its order", out, v))
		}
	}
	return sum
}

// measureJoin times arm until out holds in.n records, then checks them
// (joinCheck) and that no more came. Without loaded, from group being
// Stable (the input is written beforehand); with loaded (a stream-table
// arm), arm runs until loaded reports the whole table read, and the time
// runs from then, while the orders are written (produceOrders).
func (bn *bench) measureJoin(group, out string, in joinInput, arm func(), loaded func() bool) time.Duration {
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
	start := make(chan time.Time, 1)
	if loaded != nil {
		<-stable
		deadline := time.Now().Add(2 * time.Minute)
		for !loaded() {
			if time.Now().After(deadline) {
				check(fmt.Errorf("%s: the table %s was not read after 2 minutes", group, in.other))
			}
			time.Sleep(10 * time.Millisecond)
		}
		start <- time.Now()
		go bn.produceOrders(in, *joinKeys)
	} else {
		go func() { start <- <-stable }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	outputs := make([][]byte, 0, in.n)
	for len(outputs) < in.n {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			check(fmt.Errorf("%s: %d records after 5 minutes, want %d", out, len(outputs), in.n))
		}
		fs.EachError(func(t string, p int32, err error) { check(fmt.Errorf("reading %s/%d: %w", t, p, err)) })
		fs.EachRecord(func(r *kgo.Record) { outputs = append(outputs, r.Value) })
	}
	took := time.Since(<-start)
	if len(outputs) > in.n {
		check(fmt.Errorf("%s: %d records, want %d", out, len(outputs), in.n))
	}
	if sum := joinCheck(out, outputs); sum != in.sum {
		check(fmt.Errorf("%s: the outputs' checksum is %d, want %d", out, sum, in.sum))
	}
	return took
}

// metric is the sum of the series of metric (a name as /metrics prints it
// before its labels) of application appID, from the engine's /metrics.
func (bn *bench) metric(name, appID string) int64 {
	resp, err := http.Get(bn.engine + "/metrics")
	check(err)
	defer resp.Body.Close()
	var total int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, `application_id="`+appID+`"`) {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		check(err)
		total += int64(n)
	}
	check(sc.Err())
	return total
}

// joinHost is a polystreams join arm: the host (lang) runs topology
// against the in-process engine. It returns the time and the bundles that
// crossed.
func (bn *bench) joinHost(lang, topology string, in joinInput) (time.Duration, int64) {
	out := bn.name("join-out-" + lang)
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	appID := bn.name("join-" + lang)
	second := "--table"
	if topology == "stream-stream-join" {
		second = "--other"
	}
	cmd := bn.host(lang, "--engine", bn.engine, "--app", appID, "--input", in.orders, second, in.other, "--output", out,
		"--topology", topology, "--window-ms", strconv.Itoa(joinWindowMs))
	var loaded func() bool
	if topology == "stream-table-join" {
		loaded = func() bool { return bn.metric("polystreams_store_entries", appID) >= int64(*joinKeys) }
	}
	var stop func()
	took := bn.measureJoin(appID, out, in, func() { stop = startHost(cmd) }, loaded)
	crossings := bn.metric("polystreams_bundle_size_records_count", appID)
	stop()
	return took, crossings
}

// joinDict is the baseline of a join arm: tools/bench/joindict.py.
func (bn *bench) joinDict(mode string, in joinInput) time.Duration {
	out := bn.name("join-out-dict")
	_, err := bn.adm.CreateTopic(context.Background(), int32(*partitions), 1, nil, out)
	check(err)
	group := bn.name("join-dict")
	second := "--table"
	if mode == "stream" {
		second = "--other"
	}
	cmd := exec.Command(*python, filepath.Join(*repo, "tools/bench/joindict.py"),
		"--brokers", bn.brokers, "--group", group, "--input", in.orders, second, in.other, "--output", out,
		"--records", strconv.Itoa(in.inputs), "--mode", mode, "--window-ms", strconv.Itoa(joinWindowMs))
	cmd.Stderr = os.Stderr
	var loaded func() bool
	if mode == "table" {
		// It commits every second: the table is read when its offsets are.
		loaded = func() bool {
			offs, err := bn.adm.FetchOffsets(context.Background(), group)
			if err != nil {
				return false
			}
			var total int64
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == in.other {
					total += o.At
				}
			})
			return total >= int64(*joinKeys)
		}
	}
	took := bn.measureJoin(group, out, in, func() { check(cmd.Start()) }, loaded)
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

// joinTableRun runs the selected join arms, each beside its baseline
// --join-rounds times (alternating which goes first: the machine is
// shared), and prints the medians.
func (bn *bench) joinTableRun() {
	fmt.Printf("Joins: %d partitions, at_least_once, JSON values; stream-table: %d orders over a table of %d customers; stream-stream: %d orders and %d payments keyed by order id, JoinWindows of %d s without grace; medians of %d rounds:\n\n",
		*partitions, *joinRecords, *joinKeys, *joinRecords/2, *joinRecords/2, joinWindowMs/1000, *joinRounds)
	has := func(arm rune) bool { return strings.ContainsRune(*joinArms, arm) }
	fmt.Println("| arm | polystreams records/s | dict loop records/s | polystreams / dict | crossings per record | polystreams CPU µs/record | dict CPU µs/record | runs (polystreams / dict) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	arm := func(name string, in joinInput, fresh func() joinInput, dict func(joinInput) time.Duration, host func(joinInput) (time.Duration, int64)) {
		var ps, ds, ratios, pcpu, dcpu []float64
		var crossings int64
		runs := ""
		n := float64(in.inputs)
		for r := range *joinRounds {
			var p, d time.Duration
			runDict := func() {
				c := cpuTime()
				d = dict(fresh())
				dcpu = append(dcpu, float64((cpuTime()-c).Microseconds())/n)
			}
			runHost := func() {
				c := cpuTime()
				p, crossings = host(fresh())
				pcpu = append(pcpu, float64((cpuTime()-c).Microseconds())/n)
			}
			if r%2 == 0 {
				runDict()
				runHost()
			} else {
				runHost()
				runDict()
			}
			ps, ds, ratios = append(ps, n/p.Seconds()), append(ds, n/d.Seconds()), append(ratios, d.Seconds()/p.Seconds())
			if r > 0 {
				runs += ", "
			}
			runs += human(n/p.Seconds()) + " / " + human(n/d.Seconds())
		}
		fmt.Printf("| %s | %s | %s | %.2fx | %.4f (%d bundles) | %.2f | %.2f | %s |\n", name, human(median(ps)), human(median(ds)),
			median(ratios), float64(crossings)/n, crossings, median(pcpu), median(dcpu), runs)
	}
	var table joinInput
	if has('t') || has('r') && *rust != "" {
		table = bn.seedJoinTable(*joinRecords, *joinKeys)
	}
	tableFresh := func() joinInput { return bn.newOrders(table) }
	if has('t') {
		arm("(j1) stream-table join, Python joiner", table, tableFresh,
			func(in joinInput) time.Duration { return bn.joinDict("table", in) },
			func(in joinInput) (time.Duration, int64) { return bn.joinHost("python", "stream-table-join", in) })
	}
	if has('s') {
		in := bn.seedJoinStreams(*joinRecords)
		arm("(j2) stream-stream join (windowed), Python joiner", in, func() joinInput { return in },
			func(in joinInput) time.Duration { return bn.joinDict("stream", in) },
			func(in joinInput) (time.Duration, int64) { return bn.joinHost("python", "stream-stream-join", in) })
	}
	if has('r') && *rust != "" {
		arm("(j3) stream-table join, Rust joiner", table, tableFresh,
			func(in joinInput) time.Duration { return bn.joinDict("table", in) },
			func(in joinInput) (time.Duration, int64) { return bn.joinHost("rust", "stream-table-join", in) })
	}
	fmt.Println()
	fmt.Println("polystreams / dict is the median of the rounds' ratios; crossings per record are the last round's bundles to the host over its input records; CPU is user + system time of every process of the arm (this one: broker, engine, writer and reader of the topics; and the host or the dict program), per input record.")
	fmt.Println()
}
