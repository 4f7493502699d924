package engine

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/polystreams/polystreams/core/internal/serde"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The processors family of host vectors (docs/design/processor.md, step
// 5): processor bundles with store views, init entries, punctuations and
// closes, the host's Read calls and the ops every host must answer with.
//
// Unlike the other families these are written from the design, not
// recorded from the engine's tasks: they pin the crossing so that the
// SDKs' executors can be built and tested before (and independently of)
// the engine's processor path, which must then send exactly such bundles.
//
// The processors named are the conformance catalogue's processors
// (conformance/README.md, "Processors"); one vector is one fresh host
// running its exchanges in order.

type procVecFile struct {
	About string `json:"about"`
	// Requires: the host feature "processors" (see vecFile).
	Requires []string     `json:"requires"`
	Vectors  []procVector `json:"vectors"`
}

type procVector struct {
	Name      string         `json:"name"`
	About     string         `json:"about"`
	Functions []vecFunc      `json:"functions"`
	Exchanges []procExchange `json:"exchanges"`
}

// procExchange is one bundle to the host, the Read calls the host makes
// while it runs it (in order; each request byte for byte with session_id
// empty, answered with response) and the answer it gives.
type procExchange struct {
	Bundle   string       `json:"bundle"`
	Reads    []procRead   `json:"reads,omitempty"`
	Result   string       `json:"result"`
	Failures []vecFailure `json:"failures,omitempty"`
}

type procRead struct {
	Request  string `json:"request"`
	Response string `json:"response"`
}

// pvCols builds length-prefixed columns.
type pvCols struct {
	lens []int32
	data []byte
}

func (c *pvCols) add(b []byte) {
	if b == nil {
		c.lens = append(c.lens, -1)
		return
	}
	c.lens = append(c.lens, int32(len(b)))
	c.data = append(c.data, b...)
}

func pvStr(s string) []byte { return []byte(s) }
func pvLong(n int64) []byte { return serde.AppendLong(nil, n) }

// pvRecord is one input record of a processor bundle.
type pvRecord struct {
	key, value []byte
	ts         int64
	headers    [][2][]byte
}

// pvBundle makes a processor bundle of partition 0 of "input" (offsets
// from 0), task 0_0.
func pvBundle(id uint64, steps []*pb.Step, keySerde, valueSerde, outKey, outValue string, recs []pvRecord, views []*pb.StoreView, inits, after []*pb.BundleEntry) *pb.Bundle {
	b := &pb.Bundle{
		Id: id, Steps: steps, KeySerde: keySerde, ValueSerde: valueSerde, OutputKeySerde: outKey, OutputValueSerde: outValue,
		Topic: "input", Task: "0_0", Stores: views, Inits: inits, After: after,
	}
	var k, v, hk, hv pvCols
	anyHeaders := false
	for _, r := range recs {
		anyHeaders = anyHeaders || len(r.headers) > 0
	}
	for i, r := range recs {
		k.add(r.key)
		v.add(r.value)
		b.Offsets = append(b.Offsets, int64(i))
		b.Timestamps = append(b.Timestamps, r.ts)
		if anyHeaders {
			b.HeaderCounts = append(b.HeaderCounts, int32(len(r.headers)))
			for _, h := range r.headers {
				hk.add(h[0])
				hv.add(h[1])
			}
		}
	}
	b.KeyLengths, b.Keys, b.ValueLengths, b.Values = k.lens, k.data, v.lens, v.data
	b.HeaderKeyLengths, b.HeaderKeys, b.HeaderValueLengths, b.HeaderValues = hk.lens, hk.data, hv.lens, hv.data
	return b
}

// pvView is a key-value store's view: keys and values (nil: known absent).
func pvView(store, keySerde, valueSerde string, kvs ...[]byte) *pb.StoreView {
	var k, v pvCols
	for i := 0; i < len(kvs); i += 2 {
		k.add(kvs[i])
		v.add(kvs[i+1])
	}
	return &pb.StoreView{
		Store: store, KeySerde: keySerde, ValueSerde: valueSerde, Type: pb.StoreType_STORE_TYPE_KEY_VALUE,
		KeyLengths: k.lens, Keys: k.data, ValueLengths: v.lens, Values: v.data,
	}
}

// pvOps builds a BundleResult's op columns, entry by entry.
type pvOps struct {
	r      *pb.BundleResult
	k, v   pvCols
	hk, hv pvCols
}

func newPvOps(id uint64) *pvOps { return &pvOps{r: &pb.BundleResult{BundleId: id}} }

// entry starts the next entry's op group.
func (o *pvOps) entry() *pvOps {
	o.r.OpCounts = append(o.r.OpCounts, 0)
	return o
}

func (o *pvOps) op(kind pb.OpKind, step, target int32, key, value []byte, ts int64, sched uint64) {
	o.r.OpCounts[len(o.r.OpCounts)-1]++
	o.r.OpKinds = append(o.r.OpKinds, kind)
	o.r.OpSteps = append(o.r.OpSteps, step)
	o.r.OpTargets = append(o.r.OpTargets, target)
	o.k.add(key)
	o.v.add(value)
	o.r.OpTimestamps = append(o.r.OpTimestamps, ts)
	o.r.OpSchedules = append(o.r.OpSchedules, sched)
}

func (o *pvOps) put(step, store int32, key, value []byte) *pvOps {
	o.op(pb.OpKind_OP_KIND_PUT, step, store, key, value, 0, 0)
	return o
}

// vput is a versioned store's put (value nil: a tombstone) at ts, the
// version's validFrom.
func (o *pvOps) vput(step, store int32, key, value []byte, ts int64) *pvOps {
	o.op(pb.OpKind_OP_KIND_PUT, step, store, key, value, ts, 0)
	return o
}

func (o *pvOps) del(step, store int32, key []byte) *pvOps {
	o.op(pb.OpKind_OP_KIND_DELETE, step, store, key, nil, 0, 0)
	return o
}

// forward: child 0 is all children; headers nil is the entry's input's
// headers (-1).
func (o *pvOps) forward(step, child int32, key, value []byte, ts int64, headers [][2][]byte) *pvOps {
	o.op(pb.OpKind_OP_KIND_FORWARD, step, child, key, value, ts, 0)
	if headers == nil {
		o.r.OpHeaderCounts = append(o.r.OpHeaderCounts, -1)
	} else {
		o.r.OpHeaderCounts = append(o.r.OpHeaderCounts, int32(len(headers)))
		for _, h := range headers {
			o.hk.add(h[0])
			o.hv.add(h[1])
		}
	}
	return o
}

func (o *pvOps) schedule(step, typ int32, interval int64, id uint64) *pvOps {
	o.op(pb.OpKind_OP_KIND_SCHEDULE, step, typ, nil, nil, interval, id)
	return o
}

func (o *pvOps) fail(index, step int32) *pvOps {
	o.r.Failures = append(o.r.Failures, &pb.RecordFailure{Index: index, Step: step, Kind: pb.RecordFailure_KIND_PROCESSING})
	return o
}

func (o *pvOps) hits(h ...int32) *pvOps { o.r.PrefetchHits = h; return o }

func (o *pvOps) done() *pb.BundleResult {
	o.r.OpKeyLengths, o.r.OpKeys, o.r.OpValueLengths, o.r.OpValues = o.k.lens, o.k.data, o.v.lens, o.v.data
	o.r.OpHeaderKeyLengths, o.r.OpHeaderKeys, o.r.OpHeaderValueLengths, o.r.OpHeaderValues = o.hk.lens, o.hk.data, o.hv.lens, o.hv.data
	return o.r
}

func procStep(token uint32, values bool, node string, stores, children []string) *pb.Step {
	op := pb.Operation_OPERATION_PROCESS
	if values {
		op = pb.Operation_OPERATION_PROCESS_VALUES
	}
	return &pb.Step{Token: token, Operation: op, Node: node, Stores: stores, Children: children, Metadata: pb.Metadata_METADATA_WRITE}
}

func initEntry(step int32) *pb.BundleEntry {
	return &pb.BundleEntry{Kind: pb.BundleEntry_KIND_INIT, Step: step}
}

const procVectorsAbout = "Processor bundles (Processor API: docs/design/processor.md): store views, init entries, " +
	"punctuations and closes, the host's Read calls and the op columns it answers with. One vector is one fresh host " +
	"running its exchanges in order. Written from the design by core/internal/engine TestProcessorVectors " +
	"(make generate); docs/design/host-vectors.md, \"Processors\", says how a host's tests read them."

type pvExchange struct {
	bundle   *pb.Bundle
	reads    [][2]any // *pb.ReadRequest, *pb.ReadResponse
	result   *pb.BundleResult
	failures []vecFailure
}

func TestProcessorVectors(t *testing.T) {
	const node = "KSTREAM-PROCESSOR-0000000001"
	counts := []string{"counts"}
	type spec struct {
		name, about string
		fns         []vecFunc
		ex          []pvExchange
	}
	specs := []spec{
		{
			name: "count_per_key",
			about: "count_per_key over a prefetched key-value store: the init entry makes the instance (no ops); a key the view holds " +
				"(a: 5) and one it knows absent (b) are read without a Read call; record 3 reads record 1's put (read-your-writes " +
				"through the overlay); forwards keep the input's headers (-1); prefetch_hits counts the distinct view keys read",
			fns: []vecFunc{{Token: 1, Role: "processor", Fn: "count_per_key"}},
			ex: []pvExchange{{
				bundle: pvBundle(100, []*pb.Step{procStep(1, false, node, counts, []string{"KSTREAM-SINK-0000000002"})}, "string", "string", "string", "long",
					[]pvRecord{{pvStr("a"), pvStr("x"), 10, nil}, {pvStr("b"), pvStr("y"), 11, nil}, {pvStr("a"), pvStr("z"), 12, nil}},
					[]*pb.StoreView{pvView("counts", "string", "long", pvStr("a"), pvLong(5), pvStr("b"), nil)},
					[]*pb.BundleEntry{initEntry(0)}, nil),
				result: newPvOps(100).entry().
					entry().put(0, 0, pvStr("a"), pvLong(6)).forward(0, 0, pvStr("a"), pvLong(6), 10, nil).
					entry().put(0, 0, pvStr("b"), pvLong(1)).forward(0, 0, pvStr("b"), pvLong(1), 11, nil).
					entry().put(0, 0, pvStr("a"), pvLong(7)).forward(0, 0, pvStr("a"), pvLong(7), 12, nil).
					hits(2).done(),
			}},
		},
		{
			name:  "count_per_key_read_miss",
			about: "count_per_key with a key the view does not hold (c; the engine sends an empty view when adaptive prefetch switched the store off): the host makes one Read (get) for it, and record 2 reads it back from the overlay without another",
			fns:   []vecFunc{{Token: 1, Role: "processor", Fn: "count_per_key"}},
			ex: []pvExchange{{
				bundle: pvBundle(101, []*pb.Step{procStep(1, false, node, counts, nil)}, "string", "string", "string", "long",
					[]pvRecord{{pvStr("c"), pvStr("x"), 20, nil}, {pvStr("c"), pvStr("y"), 21, nil}},
					[]*pb.StoreView{pvView("counts", "string", "long")},
					[]*pb.BundleEntry{initEntry(0)}, nil),
				reads: [][2]any{{
					&pb.ReadRequest{BundleId: 101, Store: "counts", Query: &pb.ReadRequest_Get{Get: pvStr("c")}},
					&pb.ReadResponse{KeyLengths: []int32{1}, Keys: pvStr("c"), ValueLengths: []int32{8}, Values: pvLong(41)},
				}},
				result: newPvOps(101).entry().
					entry().put(0, 0, pvStr("c"), pvLong(42)).forward(0, 0, pvStr("c"), pvLong(42), 20, nil).
					entry().put(0, 0, pvStr("c"), pvLong(43)).forward(0, 0, pvStr("c"), pvLong(43), 21, nil).
					hits(0).done(),
			}},
		},
		{
			name:  "forward_to_child",
			about: "forward_to \"right\": each record is forwarded to the named child only (target: its index in the step's children, plus one)",
			fns:   []vecFunc{{Token: 1, Role: "processor", Fn: map[string]any{"name": "forward_to", "arg": "right"}}},
			ex: []pvExchange{{
				bundle: pvBundle(102, []*pb.Step{procStep(1, false, node, nil, []string{"left", "right"})}, "string", "string", "string", "string",
					[]pvRecord{{pvStr("k"), pvStr("v1"), 5, nil}, {nil, pvStr("v2"), 6, nil}}, nil, []*pb.BundleEntry{initEntry(0)}, nil),
				result: newPvOps(102).entry().
					entry().forward(0, 2, pvStr("k"), pvStr("v1"), 5, nil).
					entry().forward(0, 2, nil, pvStr("v2"), 6, nil).done(),
			}},
		},
		{
			name: "restamp_with_headers",
			about: "restamp: forwards each record with its timestamp plus 1000 and a header (seen, 1) appended to its own; " +
				"the bundle carries the input's headers (record 2 has none), the forwards carry theirs in full",
			fns: []vecFunc{{Token: 1, Role: "processor", Fn: "restamp"}},
			ex: []pvExchange{{
				bundle: pvBundle(103, []*pb.Step{procStep(1, true, "KSTREAM-PROCESSVALUES-0000000001", nil, nil)}, "string", "string", "string", "string",
					[]pvRecord{{pvStr("k"), pvStr("v"), 100, [][2][]byte{{pvStr("trace"), pvStr("t1")}, {pvStr("empty"), nil}}}, {pvStr("j"), pvStr("w"), 200, nil}},
					nil, []*pb.BundleEntry{initEntry(0)}, nil),
				result: newPvOps(103).entry().
					entry().forward(0, 0, pvStr("k"), pvStr("v"), 1100, [][2][]byte{{pvStr("trace"), pvStr("t1")}, {pvStr("empty"), nil}, {pvStr("seen"), pvStr("1")}}).
					entry().forward(0, 0, pvStr("j"), pvStr("w"), 1200, [][2][]byte{{pvStr("seen"), pvStr("1")}}).done(),
			}},
		},
		{
			name: "punctuate_stream_time_sweep",
			about: "sweep_every 1000: init schedules a stream-time punctuator (SCHEDULE target 1, interval 1000, the host's id 1); " +
				"the second bundle's records count into the store, then its punctuation (stream time 2000) reads store.all() with one " +
				"Read, merges the overlay (a put, b replaced) over the answer (b, c), and forwards then deletes each entry in key order, " +
				"with the punctuation's time and no headers",
			fns: []vecFunc{{Token: 1, Role: "processor", Fn: map[string]any{"name": "sweep_every", "arg": "1000"}}},
			ex: []pvExchange{
				{
					bundle: pvBundle(104, []*pb.Step{procStep(1, false, node, counts, nil)}, "string", "string", "string", "long",
						nil, []*pb.StoreView{pvView("counts", "string", "long")}, []*pb.BundleEntry{initEntry(0)}, nil),
					result: newPvOps(104).entry().schedule(0, 1, 1000, 1).hits(0).done(),
				},
				{
					bundle: pvBundle(105, []*pb.Step{procStep(1, false, node, counts, nil)}, "string", "string", "string", "long",
						[]pvRecord{{pvStr("a"), pvStr("x"), 1500, nil}, {pvStr("b"), pvStr("y"), 2000, nil}},
						[]*pb.StoreView{pvView("counts", "string", "long", pvStr("a"), nil, pvStr("b"), pvLong(2))}, nil,
						[]*pb.BundleEntry{{Kind: pb.BundleEntry_KIND_PUNCTUATE_STREAM_TIME, Step: 0, Schedule: 1, TimeMs: 2000}}),
					reads: [][2]any{{
						&pb.ReadRequest{BundleId: 105, Store: "counts", Query: &pb.ReadRequest_All{All: true}},
						&pb.ReadResponse{KeyLengths: []int32{1, 1}, Keys: pvStr("bc"), ValueLengths: []int32{8, 8}, Values: append(pvLong(2), pvLong(9)...)},
					}},
					result: newPvOps(105).
						entry().put(0, 0, pvStr("a"), pvLong(1)).
						entry().put(0, 0, pvStr("b"), pvLong(3)).
						entry().forward(0, 0, pvStr("a"), pvLong(1), 2000, nil).del(0, 0, pvStr("a")).
						forward(0, 0, pvStr("b"), pvLong(3), 2000, nil).del(0, 0, pvStr("b")).
						forward(0, 0, pvStr("c"), pvLong(9), 2000, nil).del(0, 0, pvStr("c")).
						hits(2).done(),
				},
			},
		},
		{
			name: "punctuate_wall_clock",
			about: "tick_every 500: init schedules a wall-clock punctuator (SCHEDULE target 2); a bundle of punctuations alone " +
				"(no records) calls it with the wall-clock time, and it forwards (tick, time) at that time; a close entry then " +
				"closes the instance (no ops)",
			fns: []vecFunc{{Token: 1, Role: "processor", Fn: map[string]any{"name": "tick_every", "arg": "500"}}},
			ex: []pvExchange{
				{
					bundle: pvBundle(106, []*pb.Step{procStep(1, false, node, nil, nil)}, "string", "string", "string", "long",
						nil, nil, []*pb.BundleEntry{initEntry(0)}, nil),
					result: newPvOps(106).entry().schedule(0, 2, 500, 1).done(),
				},
				{
					bundle: pvBundle(107, []*pb.Step{procStep(1, false, node, nil, nil)}, "string", "string", "string", "long",
						nil, nil, nil, []*pb.BundleEntry{
							{Kind: pb.BundleEntry_KIND_PUNCTUATE_WALL_CLOCK, Step: 0, Schedule: 1, TimeMs: 1500},
							{Kind: pb.BundleEntry_KIND_CLOSE, Step: 0},
						}),
					result: newPvOps(107).entry().forward(0, 0, pvStr("tick"), pvLong(1500), 1500, nil).entry().done(),
				},
			},
		},
		{
			name: "forward_then_fail",
			about: "forward_then_fail \"boom\": every record is forwarded, then the one whose value is boom raises; its forward " +
				"is kept (Kafka Streams undoes nothing) and the failure's index counts entries (the init is entry 0)",
			fns: []vecFunc{{Token: 1, Role: "processor", Fn: map[string]any{"name": "forward_then_fail", "arg": "boom"}}},
			ex: []pvExchange{{
				bundle: pvBundle(108, []*pb.Step{procStep(1, false, node, nil, nil)}, "string", "string", "string", "string",
					[]pvRecord{{pvStr("a"), pvStr("ok"), 1, nil}, {pvStr("b"), pvStr("boom"), 2, nil}, {pvStr("c"), pvStr("ok"), 3, nil}},
					nil, []*pb.BundleEntry{initEntry(0)}, nil),
				result: newPvOps(108).entry().
					entry().forward(0, 0, pvStr("a"), pvStr("ok"), 1, nil).
					entry().forward(0, 0, pvStr("b"), pvStr("boom"), 2, nil).
					entry().forward(0, 0, pvStr("c"), pvStr("ok"), 3, nil).
					fail(2, 0).done(),
				failures: []vecFailure{{Index: 2, Step: 0, Kind: "processing", MessageContains: "forward_then_fail boom"}},
			}},
		},
	}
	// versioned_history over a versioned store (docs/design/versioned-stores.md,
	// "Processors in a host"): key a's versions valid from 10 and 20, key b
	// uncovered (a Read), stream time 20, history retention 10.
	var vk, vv, vu pvCols
	vk.add(pvStr("a"))
	vv.add(pvStr("v10"))
	vv.add(pvStr("v20"))
	vu.add(pvStr("b"))
	history := &pb.StoreView{
		Store: "history", KeySerde: "string", ValueSerde: "string", Type: pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE,
		KeyLengths: vk.lens, Keys: vk.data, VersionCounts: []int32{2}, ValueLengths: vv.lens, Values: vv.data, Windows: []int64{10, 20},
		UncoveredLengths: vu.lens, Uncovered: vu.data, StreamTimeMs: 20, HistoryRetentionMs: 10,
	}
	var bv pvCols
	bv.add(pvStr("x"))
	bv.add(nil)
	specs = append(specs, spec{
		name: "versioned_history",
		about: "versioned_history over a versioned store: the view brings key a's versions (v10@10, v20@20), the store's stream time (20) " +
			"and history retention (10); a put in the past answers the next version's time (20), a put older than stream time - " +
			"history retention answers PUT_RETURN_CODE_NOT_PUT and is sent all the same (the engine counts it dropped); b is " +
			"uncovered: one Read of its versions (x@12, a tombstone at 18), then its delete answers the version it ends and puts a " +
			"tombstone (a PUT with a null value at its time); reads carry no validTo",
		fns: []vecFunc{{Token: 1, Role: "processor", Fn: "versioned_history"}},
		ex: []pvExchange{{
			bundle: pvBundle(109, []*pb.Step{procStep(1, false, node, []string{"history"}, nil)}, "string", "string", "string", "string",
				[]pvRecord{{pvStr("a"), pvStr("v15"), 15, nil}, {pvStr("a"), pvStr("v5"), 5, nil}, {pvStr("b"), pvStr("delete"), 16, nil}},
				[]*pb.StoreView{history}, []*pb.BundleEntry{initEntry(0)}, nil),
			reads: [][2]any{{
				&pb.ReadRequest{BundleId: 109, Store: "history", Query: &pb.ReadRequest_Versions{Versions: pvStr("b")}},
				&pb.ReadResponse{KeyLengths: []int32{1, 1}, Keys: pvStr("bb"), ValueLengths: bv.lens, Values: bv.data, Windows: []int64{12, 18}},
			}},
			result: newPvOps(109).entry().
				entry().vput(0, 0, pvStr("a"), pvStr("v15"), 15).forward(0, 0, pvStr("a"), pvStr("put 20 latest v20@20 asof v10@10"), 15, nil).
				entry().vput(0, 0, pvStr("a"), pvStr("v5"), 5).forward(0, 0, pvStr("a"), pvStr("put -9223372036854775808 latest v20@20 asof null"), 5, nil).
				entry().vput(0, 0, pvStr("b"), nil, 16).forward(0, 0, pvStr("b"), pvStr("delete x@12 latest null"), 16, nil).
				hits(1).done(),
		}},
	})
	f := procVecFile{About: procVectorsAbout, Requires: []string{"processors"}}
	for _, s := range specs {
		v := procVector{Name: s.name, About: s.about, Functions: s.fns}
		for _, e := range s.ex {
			x := procExchange{Bundle: pvB64(t, e.bundle), Result: pvB64(t, e.result), Failures: e.failures}
			for _, r := range e.reads {
				x.Reads = append(x.Reads, procRead{Request: pvB64(t, r[0].(*pb.ReadRequest)), Response: pvB64(t, r[1].(*pb.ReadResponse))})
			}
			v.Exchanges = append(v.Exchanges, x)
		}
		f.Vectors = append(f.Vectors, v)
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	path := filepath.Join(vectorsDir, "processors.json")
	if *writeVectors {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if have, err := os.ReadFile(path); err != nil || string(have) != string(data) {
		t.Errorf("%s is not what the generator makes: run make generate", path)
	}
}

func pvB64(tb testing.TB, m proto.Message) string {
	return base64.StdEncoding.EncodeToString(vecMarshal(tb, m))
}
