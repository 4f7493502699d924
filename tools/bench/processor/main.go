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
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
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

// rec is one input record as the engine holds it.
type rec struct {
	key, value []byte
	offset, ts int64
}

// row is a store entry; a nil value is absent (deleted).
type row struct {
	value []byte
	ts    int64
}

// engine is the engine's side: a Pebble store and the batch's writes
// (dirty), which reads see first, as the runtime's store transaction.
type engine struct {
	db    *pebble.DB
	dirty map[string]row
}

func (e *engine) get(key []byte) ([]byte, int64, error) {
	if r, ok := e.dirty[string(key)]; ok {
		return r.value, r.ts, nil
	}
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer closer.Close()
	// Stored as 8-byte timestamp + value, as the runtime's state package does.
	return bytes.Clone(v[8:]), int64(binary.BigEndian.Uint64(v[:8])), nil
}

// quiet drops Pebble's log lines.
type quiet struct{}

func (quiet) Infof(string, ...any)         {}
func (quiet) Errorf(string, ...any)        {}
func (quiet) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

func storeKey(i int) []byte { return fmt.Appendf(nil, "customer-%06d", i) }

func openStore(dir string, n, valueSize int) (*pebble.DB, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return nil, err
	}
	b := db.NewBatch()
	v := make([]byte, 8+valueSize)
	for i := range n {
		binary.BigEndian.PutUint64(v, uint64(i))
		copy(v[8:], fmt.Sprintf("state-%d-", i))
		if err := b.Set(storeKey(i), v, nil); err != nil {
			return nil, err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, err
	}
	return db, db.Flush()
}

// makeBundles draws bundles of records whose keys come from the first
// distinct of the store's keys plus as many that are not stored (new keys),
// uniformly, so keys repeat within a bundle.
func makeBundles(n, perBundle, distinct, stored, valueSize int) [][]rec {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]rec, n)
	off := int64(0)
	for b := range out {
		recs := make([]rec, perBundle)
		for i := range recs {
			k := rng.IntN(distinct)
			if k%2 == 1 {
				k = stored + k // odd keys are not in the store yet
			}
			v := make([]byte, valueSize)
			for j := range v {
				v[j] = byte('a' + rng.IntN(26))
			}
			recs[i] = rec{key: storeKey(k), value: v, offset: off, ts: 1_700_000_000_000 + off}
			off++
		}
		out[b] = recs
	}
	return out
}

// Field numbers of the sketch in docs/design/processor.md.
const (
	// Bundle (existing columns)
	fKeyLengths   = 7
	fKeys         = 8
	fValueLengths = 9
	fValues       = 10
	fOffsets      = 13
	fTimestamps   = 14
	// Bundle.stores: StoreView
	fStores = 30
	// StoreView
	svName         = 1
	svKeyLengths   = 2
	svKeys         = 3
	svValueLengths = 4
	svValues       = 5
	svTimestamps   = 6
	// BundleResult (existing, stateless)
	rOutputCounts = 2
	rValueLengths = 5
	rValues       = 6
	// BundleResult ops
	rOpCounts     = 8
	rOpKinds      = 9
	rOpTargets    = 10
	rOpKeyLengths = 11
	rOpKeys       = 12
	rOpValLengths = 13
	rOpValues     = 14
	rOpTimestamps = 15
)

const (
	opPut     = 1
	opDelete  = 2
	opForward = 3
)

func appendLens(b []byte, num protowire.Number, lens []int32) []byte {
	if len(lens) == 0 {
		return b
	}
	var p []byte
	for _, l := range lens {
		p = protowire.AppendVarint(p, protowire.EncodeZigZag(int64(l)))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func appendInts(b []byte, num protowire.Number, xs []int64) []byte {
	if len(xs) == 0 {
		return b
	}
	var p []byte
	for _, x := range xs {
		p = protowire.AppendVarint(p, uint64(x))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// column is a columnar byte column being built.
type column struct {
	lens []int32
	data []byte
}

func (c *column) add(v []byte) {
	if v == nil {
		c.lens = append(c.lens, -1)
		return
	}
	c.lens = append(c.lens, int32(len(v)))
	c.data = append(c.data, v...)
}

// encodeRecords writes the record columns of a bundle.
func encodeRecords(b []byte, recs []rec) []byte {
	var k, v column
	offs := make([]int64, len(recs))
	tss := make([]int64, len(recs))
	for i, r := range recs {
		k.add(r.key)
		v.add(r.value)
		offs[i], tss[i] = r.offset, r.ts
	}
	b = appendLens(b, fKeyLengths, k.lens)
	b = appendBytes(b, fKeys, k.data)
	b = appendLens(b, fValueLengths, v.lens)
	b = appendBytes(b, fValues, v.data)
	b = appendInts(b, fOffsets, offs)
	return appendInts(b, fTimestamps, tss)
}

// encodePrefetch writes a processor bundle: the records and one StoreView
// with the current entry of each distinct key (value length -1: absent).
func (e *engine) encodePrefetch(recs []rec) ([]byte, error) {
	b := encodeRecords(make([]byte, 0, len(recs)*160), recs)
	seen := make(map[string]struct{}, len(recs))
	var k, v column
	var tss []int64
	for _, r := range recs {
		if _, ok := seen[string(r.key)]; ok {
			continue
		}
		seen[string(r.key)] = struct{}{}
		val, ts, err := e.get(r.key)
		if err != nil {
			return nil, err
		}
		k.add(r.key)
		v.add(val)
		tss = append(tss, ts)
	}
	var sv []byte
	sv = appendBytes(sv, svName, []byte("customers"))
	sv = appendLens(sv, svKeyLengths, k.lens)
	sv = appendBytes(sv, svKeys, k.data)
	sv = appendLens(sv, svValueLengths, v.lens)
	sv = appendBytes(sv, svValues, v.data)
	sv = appendInts(sv, svTimestamps, tss)
	b = protowire.AppendTag(b, fStores, protowire.BytesType)
	return protowire.AppendBytes(b, sv), nil
}

// decoded is a bundle or answer as its reader sees it: the columns, as
// slices of the message (no copy).
type decoded struct {
	lens  map[protowire.Number][]int32
	ints  map[protowire.Number][]int64
	bytes map[protowire.Number][]byte
	views [][]byte
}

func decode(msg []byte, packedLens, packedInts []protowire.Number) (*decoded, error) {
	d := &decoded{lens: map[protowire.Number][]int32{}, ints: map[protowire.Number][]int64{}, bytes: map[protowire.Number][]byte{}}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			return nil, fmt.Errorf("field %d: wire type %d", num, typ)
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		switch {
		case slices.Contains(packedLens, num):
			xs := make([]int32, 0, len(v))
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				xs = append(xs, int32(protowire.DecodeZigZag(x)))
				v = v[n:]
			}
			d.lens[num] = xs
		case slices.Contains(packedInts, num):
			xs := make([]int64, 0, len(v))
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				xs = append(xs, int64(x))
				v = v[n:]
			}
			d.ints[num] = xs
		case num == fStores:
			d.views = append(d.views, v)
		default:
			d.bytes[num] = v
		}
	}
	return d, nil
}

// split cuts a column into its values (nil for -1).
func split(lens []int32, data []byte) ([][]byte, error) {
	out := make([][]byte, len(lens))
	o := 0
	for i, l := range lens {
		if l < 0 {
			continue
		}
		if o+int(l) > len(data) {
			return nil, fmt.Errorf("column of %d bytes, lengths need more", len(data))
		}
		out[i] = data[o : o+int(l) : o+int(l)]
		o += int(l)
	}
	if o != len(data) {
		return nil, fmt.Errorf("column holds %d bytes more than its lengths", len(data)-o)
	}
	return out, nil
}

// store is the host's view of one store for the length of a bundle: the
// prefetched entries under the host's own writes (the overlay), and for
// keys it does not know a fallback read.
type store struct {
	known    map[string][]byte // prefetched or written; nil value: absent
	fallback func(key []byte) ([]byte, error)
	calls    int
}

func (s *store) get(key []byte) ([]byte, error) {
	if v, ok := s.known[string(key)]; ok {
		return v, nil
	}
	s.calls++
	v, err := s.fallback(key)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ops is a processor answer's op columns, per record in order.
type ops struct {
	counts  []int32
	kinds   []int64
	targets []int64
	keys    column
	values  column
	tss     []int64
}

// What the user's processor does with each record.
const (
	// getPut reads the key's state, puts the new state and forwards one
	// record. The new state carries a running count in its first 8 bytes,
	// so the work is real and depends on what was read.
	getPut = iota
	// forwardOnly forwards the record and touches no store (to price a
	// prefetch nobody reads).
	forwardOnly
)

func process(st *store, what int, key, value []byte, ts int64, o *ops) error {
	if what == forwardOnly {
		o.kinds = append(o.kinds, opForward)
		o.targets = append(o.targets, 0)
		o.keys.add(key)
		o.values.add(value)
		o.tss = append(o.tss, ts)
		o.counts = append(o.counts, 1)
		return nil
	}
	cur, err := st.get(key)
	if err != nil {
		return err
	}
	n := uint64(0)
	if len(cur) >= 8 {
		n = binary.BigEndian.Uint64(cur)
	}
	next := make([]byte, len(value))
	copy(next, value)
	binary.BigEndian.PutUint64(next, n+1)
	st.known[string(key)] = next // the overlay: later records of the key read it
	o.kinds = append(o.kinds, opPut, opForward)
	o.targets = append(o.targets, 0, 0) // store 0; all children
	o.keys.add(key)
	o.values.add(next)
	o.tss = append(o.tss, ts)
	o.keys.add(key)
	o.values.add(next)
	o.tss = append(o.tss, ts)
	o.counts = append(o.counts, 2)
	return nil
}

func encodeOps(o *ops) []byte {
	b := make([]byte, 0, len(o.values.data)+len(o.keys.data)+16*len(o.kinds))
	b = appendLens(b, rOpCounts, o.counts)
	b = appendInts(b, rOpKinds, o.kinds)
	b = appendInts(b, rOpTargets, o.targets)
	b = appendLens(b, rOpKeyLengths, o.keys.lens)
	b = appendBytes(b, rOpKeys, o.keys.data)
	b = appendLens(b, rOpValLengths, o.values.lens)
	b = appendBytes(b, rOpValues, o.values.data)
	return appendInts(b, rOpTimestamps, o.tss)
}

var (
	bundleLens = []protowire.Number{fKeyLengths, fValueLengths}
	bundleInts = []protowire.Number{fOffsets, fTimestamps}
	viewLens   = []protowire.Number{svKeyLengths, svValueLengths}
	viewInts   = []protowire.Number{svTimestamps}
	resultLens = []protowire.Number{rOpCounts, rOpKeyLengths, rOpValLengths, rOutputCounts, rValueLengths}
	resultInts = []protowire.Number{rOpKinds, rOpTargets, rOpTimestamps}
)

// host runs a processor bundle: decode, the processor per record with the
// overlay, encode the ops. fallback serves keys the bundle did not bring.
func host(msg []byte, what int, fallback func([]byte) ([]byte, error)) ([]byte, int, error) {
	d, err := decode(msg, bundleLens, bundleInts)
	if err != nil {
		return nil, 0, err
	}
	keys, err := split(d.lens[fKeyLengths], d.bytes[fKeys])
	if err != nil {
		return nil, 0, err
	}
	values, err := split(d.lens[fValueLengths], d.bytes[fValues])
	if err != nil {
		return nil, 0, err
	}
	st := &store{known: make(map[string][]byte, len(keys)), fallback: fallback}
	for _, v := range d.views {
		sv, err := decode(v, viewLens, viewInts)
		if err != nil {
			return nil, 0, err
		}
		ks, err := split(sv.lens[svKeyLengths], sv.bytes[svKeys])
		if err != nil {
			return nil, 0, err
		}
		vs, err := split(sv.lens[svValueLengths], sv.bytes[svValues])
		if err != nil {
			return nil, 0, err
		}
		for i, k := range ks {
			st.known[string(k)] = vs[i]
		}
	}
	tss := d.ints[fTimestamps]
	o := &ops{}
	for i := range keys {
		if err := process(st, what, keys[i], values[i], tss[i], o); err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return encodeOps(o), st.calls, nil
}

// apply is the engine reading an answer: per record, its ops in order; puts
// and deletes join the batch's writes, forwards become records.
func (e *engine) apply(res []byte, recs []rec) ([]rec, error) {
	d, err := decode(res, resultLens, resultInts)
	if err != nil {
		return nil, err
	}
	counts, kinds, targets, tss := d.lens[rOpCounts], d.ints[rOpKinds], d.ints[rOpTargets], d.ints[rOpTimestamps]
	keys, err := split(d.lens[rOpKeyLengths], d.bytes[rOpKeys])
	if err != nil {
		return nil, err
	}
	values, err := split(d.lens[rOpValLengths], d.bytes[rOpValues])
	if err != nil {
		return nil, err
	}
	if len(counts) != len(recs) {
		return nil, fmt.Errorf("%d op counts for %d records", len(counts), len(recs))
	}
	n := len(kinds)
	if len(targets) != n || len(keys) != n || len(values) != n || len(tss) != n {
		return nil, fmt.Errorf("op columns of %d, %d, %d, %d for %d ops", len(targets), len(keys), len(values), len(tss), n)
	}
	out := make([]rec, 0, len(recs))
	j := 0
	for i, c := range counts {
		for range c {
			switch kinds[j] {
			case opPut:
				e.dirty[string(keys[j])] = row{values[j], tss[j]}
			case opDelete:
				e.dirty[string(keys[j])] = row{nil, tss[j]}
			case opForward:
				out = append(out, rec{key: keys[j], value: values[j], ts: tss[j], offset: recs[i].offset})
			default:
				return nil, fmt.Errorf("op %d of record %d: kind %d", j, i, kinds[j])
			}
			j++
		}
	}
	return out, nil
}

// stateless is the floor: a map_values bundle and its answer.
func stateless(recs []rec) (int, error) {
	msg := encodeRecords(nil, recs)
	d, err := decode(msg, bundleLens, bundleInts)
	if err != nil {
		return 0, err
	}
	values, err := split(d.lens[fValueLengths], d.bytes[fValues])
	if err != nil {
		return 0, err
	}
	var out column
	counts := make([]int32, len(values))
	for i, v := range values {
		next := make([]byte, len(v))
		copy(next, v)
		next[0] = 'X'
		out.add(next)
		counts[i] = 1
	}
	res := appendLens(nil, rOutputCounts, counts)
	res = appendLens(res, rValueLengths, out.lens)
	res = appendBytes(res, rValues, out.data)
	rd, err := decode(res, resultLens, resultInts)
	if err != nil {
		return 0, err
	}
	got, err := split(rd.lens[rValueLengths], rd.bytes[rValues])
	if err != nil {
		return 0, err
	}
	if len(got) != len(recs) {
		return 0, fmt.Errorf("%d outputs for %d records", len(got), len(recs))
	}
	return len(msg) + len(res), nil
}

// readReq is a Read call routed to the task's goroutine, which owns the
// store transaction (it is waiting for the bundle's answer, so it is free).
type readReq struct {
	q   *pb.QueryRequest
	out chan *pb.QueryResponse
	err chan error
}

// serveReads answers reads on the calling (task) goroutine until done.
func (e *engine) serveReads(reads <-chan readReq, done <-chan struct{}) {
	for {
		select {
		case r := <-reads:
			res, err := e.read(r.q)
			if err != nil {
				r.err <- err
				continue
			}
			r.out <- res
		case <-done:
			return
		}
	}
}

func (e *engine) read(q *pb.QueryRequest) (*pb.QueryResponse, error) {
	res := &pb.QueryResponse{}
	add := func(k, v []byte) {
		res.KeyLengths = append(res.KeyLengths, int32(len(k)))
		res.Keys = append(res.Keys, k...)
		res.ValueLengths = append(res.ValueLengths, int32(len(v)))
		res.Values = append(res.Values, v...)
	}
	switch x := q.Query.(type) {
	case *pb.QueryRequest_Get:
		v, _, err := e.get(x.Get)
		if err != nil {
			return nil, err
		}
		if v != nil {
			add(x.Get, v)
		}
	case *pb.QueryRequest_Range:
		it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: x.Range.From})
		if err != nil {
			return nil, err
		}
		n := 0
		for it.First(); it.Valid() && n < int(q.Limit); it.Next() {
			add(it.Key(), it.Value()[8:])
			n++
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("read %T not measured", x)
	}
	return res, nil
}

// server serves Read calls (as EngineService.Query's messages) on loopback,
// over HTTP/1.1 and h2c, routing each to the task goroutine.
type server struct {
	url   string
	reads chan readReq
	srv   *http.Server
}

func startServer() (*server, error) {
	s := &server{reads: make(chan readReq)}
	mux := http.NewServeMux()
	mux.Handle(polystreamsv1alpha1connect.EngineServiceQueryProcedure, connect.NewUnaryHandler(
		polystreamsv1alpha1connect.EngineServiceQueryProcedure,
		func(ctx context.Context, req *connect.Request[pb.QueryRequest]) (*connect.Response[pb.QueryResponse], error) {
			r := readReq{q: req.Msg, out: make(chan *pb.QueryResponse, 1), err: make(chan error, 1)}
			select {
			case s.reads <- r:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case res := <-r.out:
				return connect.NewResponse(res), nil
			case err := <-r.err:
				return nil, connect.NewError(connect.CodeInternal, err)
			}
		}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv = &http.Server{Handler: mux, Protocols: &p}
	go s.srv.Serve(ln)
	s.url = "http://" + ln.Addr().String()
	return s, nil
}

func client(url string, h2c bool) *connect.Client[pb.QueryRequest, pb.QueryResponse] {
	var p http.Protocols
	if h2c {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	hc := &http.Client{Transport: &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 4}}
	return connect.NewClient[pb.QueryRequest, pb.QueryResponse](hc, url+polystreamsv1alpha1connect.EngineServiceQueryProcedure)
}

// withReads runs fn (the host) while the calling goroutine, as the task
// waiting for the bundle's answer, serves its reads.
func (e *engine) withReads(s *server, fn func() error) error {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- fn()
		close(done)
	}()
	e.serveReads(s.reads, done)
	return <-errc
}

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
