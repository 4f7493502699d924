// Command processor measures the candidate crossings of a stateful
// Processor API node (docs/design/processor.md): how the state a host
// processor reads and writes travels between the engine, which owns the
// store, and the host, which runs the user's process().
//
// The workload: bundles of -records records (default 500) of one
// partition, 100-byte values, keys drawn from -distinct keys (default 200,
// so keys repeat within a bundle), a store of -stored entries (default
// 100,000, 100-byte values) in a real Pebble. The processor does what most
// stateful processors do: get(key), put(key, new state), forward one record
// (key, new value, timestamp).
//
// Alternatives, each timed end to end on this machine (engine and host in
// one process, as goroutines; the round trips go through the kernel's
// loopback and real HTTP stacks):
//
//	stateless    a map_values bundle (records in, one value each out): the
//	             floor the others are compared to.
//	prefetch     the bundle carries the current store entry of each distinct
//	             key it touches; the host reads them through an overlay that
//	             also holds its own writes, and answers puts, deletes and
//	             forwards per record in op columns; the engine applies them
//	             in record order. Includes the engine's Pebble reads, both
//	             encodings and both decodings.
//	rtt-h2c      every get is a Read call (a unary Connect RPC, HTTP/2
//	             cleartext) that the engine routes to the waiting task's
//	             goroutine, which reads the store; writes still come back
//	             with the answer.
//	rtt-h2c-key  the same, the host caching each key's first read for the
//	             rest of the bundle: one call per distinct key.
//	rtt-http1    rtt-h2c over HTTP/1.1 keep-alive (what Python's
//	             http.client speaks).
//	rtt-python   one Read call from Debian's python3 http.client per get
//	             (a separate process, as a Python host would be).
//	range        one Read call answering a range of -scan entries (a
//	             punctuator's all() or a range scan the bundle cannot
//	             predict): per call and per entry.
//
// Encodings are protobuf wire format written with protowire, field for
// field as the sketch in docs/design/processor.md; the round-trip calls use
// the protocol's existing QueryRequest/QueryResponse messages, which have
// the shape a Read call would have. It asserts nothing and prints a
// Markdown table.
//
//	go run ./tools/bench/processor -rounds 7
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

func main() {
	records := flag.Int("records", 500, "records per bundle")
	distinct := flag.Int("distinct", 200, "distinct keys the records are drawn from")
	stored := flag.Int("stored", 100_000, "entries in the store")
	valueSize := flag.Int("value", 100, "bytes per value (records and state)")
	bundles := flag.Int("bundles", 20, "bundles per round (prefetch, stateless)")
	rttBundles := flag.Int("rtt-bundles", 2, "bundles per round (round-trip alternatives)")
	scan := flag.Int("scan", 1000, "entries per range read")
	rounds := flag.Int("rounds", 5, "rounds; the median and lowest are reported")
	python := flag.String("python", "/usr/bin/python3", "python for rtt-python and the Python host loop; empty skips them")
	hostLoop = flag.String("hostloop", "tools/bench/processor/hostloop.py", "the Python host loop's script")
	flag.Parse()
	if err := run(*records, *distinct, *stored, *valueSize, *bundles, *rttBundles, *scan, *rounds, *python); err != nil {
		fmt.Fprintln(os.Stderr, "processor bench:", err)
		os.Exit(1)
	}
}

var hostLoop *string

// result is one alternative's figures.
type result struct {
	name      string
	nsPerRec  []float64 // per round
	bytesRec  float64
	callsRec  float64
	perEntry  []float64 // range only
	entryNote string
}

func (r *result) add(d time.Duration, recs int) {
	r.nsPerRec = append(r.nsPerRec, float64(d.Nanoseconds())/float64(recs))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}

func run(perBundle, distinct, stored, valueSize, nBundles, rttBundles, scan, rounds int, python string) error {
	dir, err := os.MkdirTemp("", "processor-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := openStore(dir, stored, valueSize)
	if err != nil {
		return err
	}
	defer db.Close()
	e := &engine{db: db, dirty: map[string]row{}}
	bs := makeBundles(nBundles, perBundle, distinct, stored, valueSize)
	srv, err := startServer()
	if err != nil {
		return err
	}
	defer srv.srv.Close()
	h2, h1 := client(srv.url, true), client(srv.url, false)
	ctx := context.Background()
	callBytes := 0 // the Read calls' messages (not HTTP framing)
	rttGet := func(c *connect.Client[pb.QueryRequest, pb.QueryResponse]) func([]byte) ([]byte, error) {
		return func(key []byte) ([]byte, error) {
			req := &pb.QueryRequest{Store: "customers", Query: &pb.QueryRequest_Get{Get: key}}
			res, err := c.CallUnary(ctx, connect.NewRequest(req))
			if err != nil {
				return nil, err
			}
			callBytes += proto.Size(req) + proto.Size(res.Msg)
			if len(res.Msg.ValueLengths) == 0 {
				return nil, nil
			}
			return res.Msg.Values, nil
		}
	}
	noFallback := func(key []byte) ([]byte, error) {
		return nil, fmt.Errorf("key %q was not prefetched", key)
	}

	// The alternatives; client nil: no Read calls (a miss is an error).
	alts := []struct {
		name     string
		c        *connect.Client[pb.QueryRequest, pb.QueryResponse]
		prefetch bool
		what     int
		bundles  int
	}{
		{"prefetch", nil, true, getPut, nBundles},
		{"rtt-h2c", h2, false, getPut, rttBundles},
		{"rtt-http1", h1, false, getPut, rttBundles},
		{"forward-only, no prefetch", nil, false, forwardOnly, nBundles},
		{"forward-only, prefetch unread", nil, true, forwardOnly, nBundles},
	}
	results := []*result{{name: "stateless (map_values)"}}
	for _, a := range alts {
		results = append(results, &result{name: a.name})
	}
	// The whole crossing of one processor bundle: the engine encodes it
	// (reading the store for a prefetch), the host decodes it and runs the
	// processor (its misses are Read calls that the waiting task answers),
	// the engine applies the answer.
	crossing := func(recs []rec, c *connect.Client[pb.QueryRequest, pb.QueryResponse], prefetch bool, what int) (int, int, error) {
		clear(e.dirty)
		var msg []byte
		var err error
		if prefetch {
			msg, err = e.encodePrefetch(recs)
		} else {
			msg = encodeRecords(nil, recs)
		}
		if err != nil {
			return 0, 0, err
		}
		var res []byte
		calls := 0
		if c == nil {
			res, calls, err = host(msg, what, noFallback)
		} else {
			err = e.withReads(srv, func() error {
				var err error
				res, calls, err = host(msg, what, rttGet(c))
				return err
			})
		}
		if err != nil {
			return 0, 0, err
		}
		out, err := e.apply(res, recs)
		if err != nil {
			return 0, 0, err
		}
		if len(out) != len(recs) || (what == getPut) != (len(e.dirty) > 0) {
			return 0, 0, fmt.Errorf("%d forwards, %d writes for %d records", len(out), len(e.dirty), len(recs))
		}
		return len(msg) + len(res), calls, nil
	}
	var reads []float64 // ns per record of the store reads alone
	for round := range rounds {
		runtime.GC()
		start := time.Now()
		total := 0
		for _, recs := range bs {
			n, err := stateless(recs)
			if err != nil {
				return fmt.Errorf("stateless: %w", err)
			}
			total += n
		}
		results[0].add(time.Since(start), nBundles*perBundle)
		results[0].bytesRec = float64(total) / float64(nBundles*perBundle)
		for i, a := range alts {
			runtime.GC()
			callBytes = 0
			start = time.Now()
			total, calls := 0, 0
			for _, recs := range bs[:a.bundles] {
				n, c, err := crossing(recs, a.c, a.prefetch, a.what)
				if err != nil {
					return fmt.Errorf("%s: %w", a.name, err)
				}
				total += n
				calls += c
			}
			r := results[i+1]
			r.add(time.Since(start), a.bundles*perBundle)
			// Bytes: the bundle and its answer plus the Read calls'
			// messages (not HTTP framing).
			r.bytesRec = float64(total+callBytes) / float64(a.bundles*perBundle)
			r.callsRec = float64(calls) / float64(a.bundles*perBundle)
		}
		// The store reads alone, which every alternative (and a native
		// operator) pays: one get per distinct key of a bundle.
		runtime.GC()
		start = time.Now()
		for _, recs := range bs {
			seen := map[string]bool{}
			for _, r := range recs {
				if !seen[string(r.key)] {
					seen[string(r.key)] = true
					if _, _, err := e.get(r.key); err != nil {
						return err
					}
				}
			}
		}
		reads = append(reads, float64(time.Since(start).Nanoseconds())/float64(nBundles*perBundle))
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", round+1, rounds)
	}
	// A range read of scan entries (a punctuator's all()).
	rangeRes := &result{name: "range"}
	for range rounds {
		runtime.GC()
		const calls = 20
		start := time.Now()
		entries := 0
		err := e.withReads(srv, func() error {
			for range calls {
				res, err := h2.CallUnary(ctx, connect.NewRequest(&pb.QueryRequest{Store: "customers", Limit: int32(scan), Query: &pb.QueryRequest_Range{Range: &pb.KeyRange{From: storeKey(0)}}}))
				if err != nil {
					return err
				}
				entries += len(res.Msg.KeyLengths)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("range: %w", err)
		}
		if entries != calls*scan {
			return fmt.Errorf("range: %d entries for %d calls of %d", entries, calls, scan)
		}
		d := time.Since(start)
		rangeRes.nsPerRec = append(rangeRes.nsPerRec, float64(d.Nanoseconds())/calls)
		rangeRes.perEntry = append(rangeRes.perEntry, float64(d.Nanoseconds())/float64(entries))
	}

	var py []float64
	var loop map[string][]float64
	if python != "" {
		if py, err = pythonRTT(ctx, e, srv, python, rounds); err != nil {
			return fmt.Errorf("rtt-python: %w", err)
		}
		out, err := exec.CommandContext(ctx, python, *hostLoop, fmt.Sprint(perBundle), fmt.Sprint(distinct), fmt.Sprint(valueSize), fmt.Sprint(rounds)).Output()
		if err != nil {
			return fmt.Errorf("%s: %w", *hostLoop, err)
		}
		loop = map[string][]float64{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var name string
			var ns float64
			if _, err := fmt.Sscan(line, &name, &ns); err != nil {
				return fmt.Errorf("%s printed %q", *hostLoop, line)
			}
			loop[name] = append(loop[name], ns)
		}
	}

	cpu := runtime.NumCPU()
	fmt.Printf("Bundles of %d records, %d-byte values, keys from %d distinct (half of them stored), a store of %d entries in Pebble; %d rounds, %d CPUs (GOMAXPROCS %d), %s.\n\n",
		perBundle, valueSize, distinct, stored, rounds, cpu, runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))
	fmt.Println("| alternative | µs per record (median, lowest) | bytes per record on the wire | Read calls per record | µs per Read call (median) |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, r := range results {
		s := slices.Clone(r.nsPerRec)
		sort.Float64s(s)
		perCall := ""
		if r.callsRec > 0 {
			perCall = fmt.Sprintf("%.0f", median(s)/1000/r.callsRec)
		}
		fmt.Printf("| %s | %.2f, %.2f | %.0f | %.2f | %s |\n", r.name, median(s)/1000, s[0]/1000, r.bytesRec, r.callsRec, perCall)
	}
	if len(py) > 0 {
		sort.Float64s(py)
		fmt.Printf("| rtt-python: Read calls alone, from python3's http.client (HTTP/1.1) | | | 1 | %.0f (lowest %.0f) |\n", median(py)/1000, py[0]/1000)
	}
	if loop != nil {
		fmt.Printf("\nThe Python host's loop alone (%s, no protobuf), µs per record (medians): map_values %.2f; map_values given a metadata object per call %.2f; the processor with its overlay and op columns %.2f.\n",
			*hostLoop, median(loop["stateless"])/1000, median(loop["metadata"])/1000, median(loop["processor"])/1000)
	}
	fmt.Printf("\nOf the prefetch, the engine's store reads alone (one Pebble get per distinct key): %.2f µs per record (median).\n", median(reads)/1000)
	s := slices.Clone(rangeRes.nsPerRec)
	sort.Float64s(s)
	fmt.Printf("\nRange read of %d entries over h2c: %.0f µs per call (median; lowest %.0f), %.3f µs per entry.\n", scan, median(s)/1000, s[0]/1000, median(rangeRes.perEntry)/1000)
	return nil
}

// pythonRTT times get calls from a python3 process (the standard library's
// http.client, as sdk-python speaks Connect) against the Read endpoint.
func pythonRTT(ctx context.Context, e *engine, s *server, python string, rounds int) ([]float64, error) {
	const calls = 400
	script := `
import http.client, sys, time
host, port = sys.argv[1].rsplit(":", 1)
conn = http.client.HTTPConnection(host, int(port))
key = b"customer-000002"
# QueryRequest{store: "customers", get: key}, written by hand: field 2 and 3.
body = b"\x12\x09customers" + b"\x1a" + bytes([len(key)]) + key
hdr = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1"}
def call():
    conn.request("POST", "/polystreams.v1alpha1.EngineService/Query", body, hdr)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit("status %d: %r" % (r.status, data))
for _ in range(50):
    call()
for _ in range(int(sys.argv[2])):
    n = int(sys.argv[3])
    t = time.perf_counter_ns()
    for _ in range(n):
        call()
    print((time.perf_counter_ns() - t) / n)
`
	addr := strings.TrimPrefix(s.url, "http://")
	cmd := exec.CommandContext(ctx, python, "-c", script, addr, fmt.Sprint(rounds), fmt.Sprint(calls))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := e.withReads(s, func() error {
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%w: %s", err, stderr.String())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var ns []float64
	for _, line := range strings.Fields(out.String()) {
		var x float64
		if _, err := fmt.Sscan(line, &x); err != nil {
			return nil, fmt.Errorf("python printed %q", line)
		}
		ns = append(ns, x)
	}
	return ns, nil
}
