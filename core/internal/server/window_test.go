package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// windowed reads a time-windowed key (Kafka's TimeWindowedSerializer:
// inner key, then the window start as 8 bytes big-endian).
func windowed(b []byte) string {
	n := len(b) - 8
	return fmt.Sprintf("%s@%d", b[:n], int64(binary.BigEndian.Uint64(b[n:])))
}

// buildWindowedCount builds stream(events) | groupByKey | windowedBy(10 s
// tumbling, 1 s grace) | count [| suppress] | toStream | to(out).
func (h *testHost) buildWindowedCount(out string, suppress bool) {
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 10000, GraceMs: 1000}}})
	c := h.mustBuild(&pb.CountOp{Input: w.Id, Materialized: &pb.Materialized{StoreName: "per-10s", RetentionMs: 60000}})
	if c.KeySerde != "windowed(string,10000)" {
		h.t.Errorf("windowed count key serde %q, want windowed(string,10000)", c.KeySerde)
	}
	if suppress {
		c = h.mustBuild(&pb.SuppressOp{Input: c.Id})
	}
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
}

// windowUpdates reads topic's records as "key@start=count" in order, once
// it has n.
func (e *env) windowUpdates(topic string, n int) []string {
	e.t.Helper()
	var got []string
	waitFor(e.t, fmt.Sprintf("%d windowed updates on %s", n, topic), 90*time.Second, func() bool {
		got = got[:0]
		e.readTopic(topic, false, func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s=%d", windowed(r.Key), decodeLong(r.Value)))
		})
		return len(got) >= n
	})
	return got
}

// A tumbling windowed count (KStreamWindowAggregate): windows aligned to
// the epoch, a record at the grace boundary still counts (window end 10000
// > stream time 10500 - grace 1000), one past it is dropped for its window
// and counted in dropped_records; keys are Kafka's time-windowed bytes.
func TestTumblingWindowCountAndGrace(t *testing.T) {
	e := newEnv(t, "events", "counts")
	h := e.open("tumbling", nil)
	h.buildWindowedCount("counts", false)
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	for _, ts := range []int64{1000, 2000, 10500, 9999, 11001, 9998} {
		e.produceAt("events", "a", "x", ts)
	}
	// Windows land in partitions by key: compare each window's updates.
	want := []string{"a@0=1", "a@0=2", "a@0=3", "a@10000=1", "a@10000=2"}
	got := e.windowUpdates("counts", len(want))
	slices.SortStableFunc(got, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, '=')], b[:strings.IndexByte(b, '=')])
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("updates %v, want %v", got, want)
	}
	waitFor(t, "the late record to be counted as dropped", 30*time.Second, func() bool {
		return h.getState().DroppedRecords == 1
	})
	if got := e.windowUpdates("counts", len(want)); len(got) != len(want) {
		t.Errorf("the late record made an update: %v", got)
	}

	// The window store answers fetch(key, from, to) and fetch_all(from,
	// to): windows starting in [from, to], in time order, windowed keys.
	fetch := func(key []byte, from, to int64) string {
		t.Helper()
		resp, err := e.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{
			SessionId: h.session, Store: "per-10s",
			Query: &pb.QueryRequest_WindowFetch{WindowFetch: &pb.WindowFetch{Key: key, FromMs: from, ToMs: to}},
		}))
		if err != nil {
			t.Fatalf("window_fetch: %v", err)
		}
		m := resp.Msg
		if m.KeySerde != "windowed(string,10000)" || m.ValueSerde != "long" {
			t.Errorf("window_fetch serdes %q %q", m.KeySerde, m.ValueSerde)
		}
		var got []string
		ko, vo := 0, 0
		for i := range m.KeyLengths {
			k, v := m.Keys[ko:ko+int(m.KeyLengths[i])], m.Values[vo:vo+int(m.ValueLengths[i])]
			ko, vo = ko+len(k), vo+len(v)
			got = append(got, fmt.Sprintf("%s=%d", windowed(k), decodeLong(v)))
		}
		return fmt.Sprint(got)
	}
	if got := fetch([]byte("a"), 0, 10000); got != "[a@0=3 a@10000=2]" {
		t.Errorf("fetch(a, 0, 10000) = %s", got)
	}
	if got := fetch(nil, 1, 10000); got != "[a@10000=2]" {
		t.Errorf("fetch_all(1, 10000) = %s", got)
	}
	if got := fetch([]byte("b"), 0, 100000); got != "[]" {
		t.Errorf("fetch(b, ...) = %s", got)
	}
	// Retention (60 s): once stream time reaches 70 s, the windows that
	// start at or before 10 s are gone.
	e.produceAt("events", "a", "x", 70000)
	e.windowUpdates("counts", len(want)+1)
	if got := fetch([]byte("a"), 0, 100000); got != "[a@70000=1]" {
		t.Errorf("after retention: fetch(a, 0, 100000) = %s, want only the window at 70000", got)
	}
	_, err := e.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "per-10s", Query: &pb.QueryRequest_Get{Get: []byte("a")}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "window store") {
		t.Errorf("get on a window store: %v, want InvalidArgument naming the window store", err)
	}
}

// Under at_least_once with the record cache on, a time-window
// aggregation's store holds its changes until the cache flushes, as Kafka
// Streams' CachingWindowStore does: the changelog gets each window's
// latest value once per flush, the same updates as the output; a query in
// between still reads every update (the task writes its held changes to
// Pebble first); and windows that retention expires while held never
// reach Pebble.
func TestWindowStoreWithRecordCacheLogsAtFlush(t *testing.T) {
	e := newEnv(t, "events", "counts")
	h := e.open("window-cache", map[string]string{"statestore.cache.max.bytes": "1048576", "commit.interval.ms": "600000"})
	h.buildWindowedCount("counts", false)
	h.start()
	done := h.serveAsync()
	fetch := func(from, to int64) string {
		t.Helper()
		resp, err := e.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{
			SessionId: h.session, Store: "per-10s",
			Query: &pb.QueryRequest_WindowFetch{WindowFetch: &pb.WindowFetch{Key: []byte("a"), FromMs: from, ToMs: to}},
		}))
		if err != nil {
			t.Fatalf("window_fetch: %v", err)
		}
		var got []string
		ko, vo := 0, 0
		for i := range resp.Msg.KeyLengths {
			k, v := resp.Msg.Keys[ko:ko+int(resp.Msg.KeyLengths[i])], resp.Msg.Values[vo:vo+int(resp.Msg.ValueLengths[i])]
			ko, vo = ko+len(k), vo+len(v)
			got = append(got, fmt.Sprintf("%s=%d", windowed(k), decodeLong(v)))
		}
		return fmt.Sprint(got)
	}
	for _, ts := range []int64{1000, 2000, 12000} {
		e.produceAt("events", "a", "x", ts)
	}
	waitFor(t, "a query to see a@0=2 and a@10000=1", 30*time.Second, func() bool {
		return fetch(0, 100000) == "[a@0=2 a@10000=1]"
	})
	// a@15000 is held (the query above wrote the earlier ones to Pebble);
	// a@100000 moves stream time past retention (60 s): the windows that
	// start at or before 40000 expire, the held one with them.
	e.produceAt("events", "a", "x", 15000)
	e.produceAt("events", "a", "x", 100000)
	waitFor(t, "a query to see only a@100000", 30*time.Second, func() bool {
		return fetch(0, 200000) == "[a@100000=1]"
	})
	for _, topic := range []string{"counts", "window-cache-per-10s-changelog"} {
		n := 0
		e.readTopic(topic, false, func(*kgo.Record) { n++ })
		if n != 0 {
			t.Errorf("%s has %d records before the flush: the cache holds them", topic, n)
		}
	}
	h.stopServing(done) // flushes the cache
	// The changelog's keys are Kafka Streams' window store keys: the key,
	// the window start, a sequence number (4 bytes); and its watermark row
	// (the stream time, a 1-byte key).
	updates := func(topic string, seq int) string {
		var got []string
		e.readTopic(topic, false, func(r *kgo.Record) {
			if len(r.Key) < 8+seq {
				got = append(got, fmt.Sprintf("time=%d", decodeLong(r.Value)))
				return
			}
			got = append(got, fmt.Sprintf("%s=%d", windowed(r.Key[:len(r.Key)-seq]), decodeLong(r.Value)))
		})
		slices.Sort(got)
		return fmt.Sprint(got)
	}
	want := "[a@0=2 a@100000=1 a@10000=2]"
	if got := updates("counts", 0); got != want {
		t.Errorf("output %s, want %s: each window's latest count once", got, want)
	}
	if got := updates("window-cache-per-10s-changelog", 4); got != "[a@0=2 a@100000=1 a@10000=2 time=100000]" {
		t.Errorf("changelog %s, want %s and the stream time: each window's latest count once, expired ones too", got, want)
	}
}

// suppress(untilWindowCloses) emits each window once, when stream time
// passes its end + grace; a window whose partition has seen nothing past
// its close stays open (no output), and a restart (state from Pebble, then
// restored from the changelog) neither re-emits nor loses a window.
func TestSuppressEmitsEachWindowOnce(t *testing.T) {
	e := newEnv(t, "events", "finals")
	const app = "suppress"
	run := func(tss []int64, want []string) {
		t.Helper()
		h := e.open(app, map[string]string{"commit.interval.ms": "100"})
		h.buildWindowedCount("finals", true)
		h.start()
		done := h.serveAsync()
		for _, ts := range tss {
			e.produceAt("events", "a", "x", ts)
		}
		got := e.windowUpdates("finals", len(want))
		// Give a wrong extra output the time to show.
		waitFor(t, "the input to be processed", 120*time.Second, func() bool {
			resp, err := e.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: h.session}))
			return err == nil && resp.Msg.State == pb.State_STATE_RUNNING
		})
		time.Sleep(300 * time.Millisecond)
		got = e.windowUpdates("finals", len(want))
		if slices.Sort(got); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("final results %v, want %v", got, want)
		}
		h.stopServing(done)
		e.stopEngine()
		e.startEngine()
	}
	// 10999 keeps [0,10000) open (10000 + 1000 > 10999); 11000 closes it.
	run([]int64{1000, 2000, 10500, 10999}, nil)
	run([]int64{9999, 11000}, []string{"a@0=3"})
	if err := os.RemoveAll(filepath.Join(e.stateDir, app)); err != nil {
		t.Fatal(err)
	}
	// Restored from the changelogs: [10000,20000) holds 3, [20000,30000)
	// stays open.
	run([]int64{21000}, []string{"a@0=3", "a@10000=3"})
}

// A host aggregate over hopping windows (1 s advancing by 100 ms: each
// record falls into 10 windows) folds every window of a batch in one
// crossing: the bundle's groups are (key, window) pairs. Each window's last
// update equals the sum computed here. A host with the fold_value_refs
// feature gets each record once (Bundle.value_refs), one without it once
// per window.
func TestHoppingWindowHostAggregateFoldsPerBundle(t *testing.T) {
	for _, refs := range []bool{false, true} {
		t.Run(fmt.Sprintf("value_refs=%v", refs), func(t *testing.T) { hoppingHostAggregate(t, refs) })
	}
}

func hoppingHostAggregate(t *testing.T, refs bool) {
	e := newEnv(t, "amounts", "window-sums")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("amounts"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	want := map[string]int64{}
	var rs []*kgo.Record
	for i := range n {
		k, ts := fmt.Sprintf("k%d", i%5), int64(i)*10
		for start := max(0, ts-1000+100) / 100 * 100; start <= ts; start += 100 {
			want[fmt.Sprintf("%s@%d", k, start)] += int64(i)
		}
		rs = append(rs, &kgo.Record{Key: []byte(k), Value: long(int64(i)), Timestamp: time.UnixMilli(ts), Partition: int32(i % 5 % 2)})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	var features []string
	if refs {
		features = []string{"fold_value_refs"}
	}
	// With value_refs, the record cache on too: the engine asks for each
	// group's last aggregate only (final_only), which this host honours.
	config := map[string]string{}
	if refs {
		config["statestore.cache.max.bytes"] = "10485760"
	}
	h := e.openWith("hopping", config, features...)
	zero := h.register("zero", initFn(func() ([]byte, error) { return long(0), nil }))
	add := h.register("add", aggFn(func(_, v, a []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"amounts"}, KeySerde: "string", ValueSerde: "long"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Time{Time: &pb.TimeWindows{SizeMs: 1000, AdvanceMs: 100}}})
	agg := h.mustBuildOp(&pb.BuildRequest_Aggregate{Aggregate: &pb.AggregateOp{Input: w.Id, InitializerToken: zero, AggregatorToken: add, Materialized: &pb.Materialized{ValueSerde: "long"}}})
	ts := h.mustBuild(&pb.ToStreamOp{Input: agg.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "window-sums"})
	h.start()
	done := h.serveAsync()
	var got map[string]int64
	waitFor(t, "every window's sum", 60*time.Second, func() bool {
		got = map[string]int64{}
		e.readTopic("window-sums", false, func(r *kgo.Record) { got[windowed(r.Key)] = decodeLong(r.Value) })
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	h.stopServing(done)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bundles*10 > n {
		t.Errorf("%d bundles for %d records: the windows of a batch must fold in one crossing", h.bundles, n)
	}
	if refs && h.records != n || !refs && h.records < 9*n {
		t.Errorf("%d values crossed for %d records, each in about 10 windows (value_refs %v)", h.records, n, refs)
	}
}

// sessionKey reads a session-windowed key (Kafka's SessionWindowedSerializer:
// inner key, then end, then start, 8 bytes big-endian each).
func sessionKey(b []byte) string {
	n := len(b) - 16
	return fmt.Sprintf("%s[%d,%d]", b[:n], int64(binary.BigEndian.Uint64(b[n+8:])), int64(binary.BigEndian.Uint64(b[n:n+8])))
}

// Session windows (KStreamSessionWindowAggregate, gap 5 s, grace 10 s): a
// record between two sessions merges them (a tombstone for each, then the
// merged session, stamped with its end); a record whose merged session
// ends before stream time - grace - gap is dropped and counted. Sessions
// that end before stream time - retention (gap + grace) are not found any
// more, as Kafka Streams' segmented store does not find them.
func TestSessionWindowsMergeAndExpire(t *testing.T) {
	e := newEnv(t, "events", "sessions")
	h := e.open("sessions", nil)
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Session{Session: &pb.SessionWindows{InactivityGapMs: 5000, GraceMs: 10000}}})
	c := h.mustBuild(&pb.CountOp{Input: w.Id})
	if c.KeySerde != "session-windowed(string)" {
		t.Errorf("session count key serde %q", c.KeySerde)
	}
	out := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: out.Id, Topic: "sessions"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	for _, ts := range []int64{0, 8000, 4000, 30000, 1000} {
		e.produceAt("events", "a", "x", ts)
	}
	want := []string{"a[0,0]=1@0", "a[8000,8000]=1@8000", "a[0,0]=null@0", "a[8000,8000]=null@8000", "a[0,8000]=3@8000", "a[30000,30000]=1@30000"}
	var got []string
	waitFor(t, "the session updates", 30*time.Second, func() bool {
		got = got[:0]
		e.readTopic("sessions", false, func(r *kgo.Record) {
			v := "null"
			if r.Value != nil {
				v = fmt.Sprint(decodeLong(r.Value))
			}
			got = append(got, fmt.Sprintf("%s=%s@%d", sessionKey(r.Key), v, r.Timestamp.UnixMilli()))
		})
		return len(got) >= len(want)
	})
	// Sessions land in partitions by windowed key: compare each session's
	// updates in order.
	bySession := func(xs []string) []string {
		xs = slices.Clone(xs)
		slices.SortStableFunc(xs, func(a, b string) int {
			return strings.Compare(a[:strings.IndexByte(a, '=')], b[:strings.IndexByte(b, '=')])
		})
		return xs
	}
	if fmt.Sprint(bySession(got)) != fmt.Sprint(bySession(want)) {
		t.Errorf("session updates\n%v\nwant\n%v", got, want)
	}
	waitFor(t, "the late record to be dropped", 30*time.Second, func() bool { return h.getState().DroppedRecords == 1 })
}

// Sliding windows (KStreamSlidingWindowAggregate, time difference 10 ms):
// each record makes its left window [ts - 10, ts], the previous record's
// right window [prev + 1, prev + 11] when the record falls in it, and
// updates the windows that hold it; an out-of-order record (108 after 120)
// joins the windows it falls in. The windows here are the sets of records
// within 10 ms of each other.
func TestSlidingWindowsCount(t *testing.T) {
	e := newEnv(t, "events", "sliding")
	h := e.open("sliding", nil)
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"events"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	w := h.mustBuild(&pb.WindowedByOp{Input: g.Id, Windows: &pb.WindowedByOp_Sliding{Sliding: &pb.SlidingWindows{TimeDifferenceMs: 10, GraceMs: 100000}}})
	c := h.mustBuild(&pb.CountOp{Input: w.Id, Materialized: &pb.Materialized{StoreName: "sliding-counts"}})
	if c.KeySerde != "windowed(string,10)" {
		t.Errorf("sliding count key serde %q", c.KeySerde)
	}
	out := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: out.Id, Topic: "sliding"})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	for _, ts := range []int64{100, 105, 120, 108} {
		e.produceAt("events", "a", "x", ts)
	}
	// Per window, in order: [90,100] {100}; [101,111] {105} then {105,108};
	// [95,105] {100,105}; [110,120] {120}; [106,116] {108}; [98,108]
	// {100,105,108}.
	want := []string{"a@101=1", "a@101=2", "a@106=1", "a@110=1", "a@90=1", "a@95=2", "a@98=3"}
	got := e.windowUpdates("sliding", len(want))
	slices.SortStableFunc(got, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, '=')], b[:strings.IndexByte(b, '=')])
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sliding updates\n%v\nwant\n%v", got, want)
	}
}

// Host functions over session and sliding windows run as fold programs:
// the engine runs Kafka Streams' window algorithm and sends each batch's
// folds in one bundle, whose bases and merge operands refer to stored
// aggregates and earlier outputs. The result must be exactly what the same
// algorithm gives with the built-in sum: the same updates, in the same
// order per window, with the same timestamps — over out-of-order records,
// merges and expiry. And the folds of a batch cross once.
func TestHostFoldProgramsMatchBuiltinFolds(t *testing.T) {
	for _, name := range []string{"session", "sliding"} {
		t.Run(name, func(t *testing.T) { foldProgramsMatch(t, name, false) })
	}
}

// Under dead_letter, a record whose host fold raises is skipped: the pass
// is undone and run again without it (its folds refer to each other), so
// every window comes out as if the record had never been there, and the
// record alone is dead-lettered, once.
func TestHostFoldProgramsSkipFailedRecords(t *testing.T) {
	for _, name := range []string{"session", "sliding"} {
		t.Run(name, func(t *testing.T) { foldProgramsMatch(t, name, true) })
	}
}

// foldProgramsMatch compares a host fold program with the built-in sum
// over the same records; with poison, the host's input also holds records
// of value -1, on which its aggregator raises, and the built-in's does not
// (grace is then long enough that no window closes, so the stream time
// they move on changes nothing).
func foldProgramsMatch(t *testing.T, name string, poison bool) {
	grace := int64(200)
	if poison {
		grace = 1_000_000
	}
	windows := map[string]*pb.WindowedByOp{
		"session": {Windows: &pb.WindowedByOp_Session{Session: &pb.SessionWindows{InactivityGapMs: 40, GraceMs: grace}}},
		"sliding": {Windows: &pb.WindowedByOp_Sliding{Sliding: &pb.SlidingWindows{TimeDifferenceMs: 50, GraceMs: grace}}},
	}[name]
	e := newEnv(t, "amounts", "clean", "host-"+name, "builtin-"+name, "dlq")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	var rs []*kgo.Record
	poisoned := map[string]bool{} // partition@offset
	offsets := map[int32]int64{}
	for i := range n {
		// Gaps of 0-60 ms per key, and one record in 7 up to 250 ms
		// late: some within grace, some dropped.
		ts := int64(i)*3 + int64(i*7919%61)
		if i%7 == 3 {
			ts -= int64(i * 31 % 250)
		}
		p := int32(i % 8 % 4)
		r := &kgo.Record{Topic: "amounts", Key: []byte(fmt.Sprintf("k%d", i%8)), Value: long(int64(i % 100)), Timestamp: time.UnixMilli(max(ts, 0)), Partition: p}
		if poison && i%100 == 13 {
			r.Value = long(-1)
			poisoned[fmt.Sprintf("%d@%d", p, offsets[p])] = true
		} else {
			clean := *r
			clean.Topic = "clean"
			rs = append(rs, &clean)
		}
		offsets[p]++
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	build := func(h *testHost, in, out string, host bool) {
		s := h.mustBuild(&pb.StreamOp{Topics: []string{in}, KeySerde: "string", ValueSerde: "long"})
		g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
		w := proto.Clone(windows).(*pb.WindowedByOp)
		w.Input = g.Id
		wh := h.mustBuild(w)
		add := func(_, v, a []byte) ([]byte, error) {
			if decodeLong(v) < 0 {
				return nil, errors.New("poison")
			}
			return long(decodeLong(a) + decodeLong(v)), nil
		}
		var agg *pb.Handle
		switch {
		case !host:
			agg = h.mustBuildOp(&pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: wh.Id, Builtin: pb.Reducer_REDUCER_SUM}})
		case name == "sliding" && !poison:
			sum := h.register("sum", reduceFn(func(a, v []byte) ([]byte, error) { return add(nil, v, a) }))
			agg = h.mustBuildOp(&pb.BuildRequest_Reduce{Reduce: &pb.ReduceOp{Input: wh.Id, Token: sum}})
		default:
			zero := h.register("zero", initFn(func() ([]byte, error) { return long(0), nil }))
			tok := h.register("add", aggFn(add))
			op := &pb.AggregateOp{Input: wh.Id, InitializerToken: zero, AggregatorToken: tok, Materialized: &pb.Materialized{ValueSerde: "long"}}
			if name == "session" {
				op.MergerToken = tok
			}
			agg = h.mustBuildOp(&pb.BuildRequest_Aggregate{Aggregate: op})
		}
		ts := h.mustBuild(&pb.ToStreamOp{Input: agg.Id})
		h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
		h.start()
	}
	native := e.open("builtin-"+name, nil)
	hostIn := "amounts"
	if !poison {
		hostIn = "clean"
	}
	nativeIn := "clean"
	build(native, nativeIn, "builtin-"+name, false)
	host := e.openWith("host-"+name, map[string]string{"processing.exception.handler": "dead_letter", "errors.deadletterqueue.topic.name": "dlq"}, "fold_value_refs", "fold_programs")
	build(host, hostIn, "host-"+name, true)
	doneNative, doneHost := native.serveAsync(), host.serveAsync()
	// Each window's updates, in order (windows of different input
	// partitions interleave in an output partition).
	updates := func(topic string) map[string][]string {
		got := map[string][]string{}
		e.readTopic(topic, false, func(r *kgo.Record) {
			v := "null"
			if r.Value != nil {
				v = fmt.Sprint(decodeLong(r.Value))
			}
			got[fmt.Sprintf("%x", r.Key)] = append(got[fmt.Sprintf("%x", r.Key)], fmt.Sprintf("%s@%d", v, r.Timestamp.UnixMilli()))
		})
		return got
	}
	count := func(m map[string][]string) (c int) {
		for _, xs := range m {
			c += len(xs)
		}
		return c
	}
	var want, got map[string][]string
	settled := func() bool {
		want, got = updates("builtin-"+name), updates("host-"+name)
		return count(want) > n*9/10 && (poison || native.getState().DroppedRecords > 0) && fmt.Sprint(got) == fmt.Sprint(want)
	}
	for deadline := time.Now().Add(60 * time.Second); !settled() && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	diffs := 0
	for k := range want {
		if w, g := want[k], got[k]; fmt.Sprint(w) != fmt.Sprint(g) && diffs < 5 {
			diffs++
			t.Errorf("window %s: host program %v, built-in fold %v", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("host program updated %d windows, the built-in fold %d", len(got), len(want))
	}
	if poison {
		dead := map[string]int{}
		e.readTopic("dlq", false, func(r *kgo.Record) {
			h := headers(r)
			dead[h["__streams.errors.partition"]+"@"+h["__streams.errors.offset"]]++
		})
		for at := range poisoned {
			if dead[at] != 1 {
				t.Errorf("poison record %s dead-lettered %d times, want once", at, dead[at])
			}
		}
		if len(dead) != len(poisoned) {
			t.Errorf("dead letters %v, want exactly the %d poison records", keys(dead), len(poisoned))
		}
	}
	native.stopServing(doneNative)
	host.stopServing(doneHost)
	if d, dn := host.getState().DroppedRecords, native.getState().DroppedRecords; d != dn+int64(len(poisoned)) {
		t.Errorf("host program dropped %d records, the built-in fold %d (+%d poison)", d, dn, len(poisoned))
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	if host.bundles*10 > n {
		t.Errorf("%d bundles for %d records: a batch's folds must cross once", host.bundles, n)
	}
}
