package server_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// poisoned produces n JSON records to topic (4 partitions), each with a key
// and a header, and among them at the given positions poison of three kinds:
// a value the source's json serde cannot decode (the engine's
// deserialization failure), a value the host's map function raises on, and
// one the host reports it cannot decode. It returns the produced records
// (with their partitions and offsets) and the poison ones by
// "partition@offset".
func (e *env) poisoned(topic string, n int, at map[int]string) ([]*kgo.Record, map[string]*kgo.Record) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		v := fmt.Sprintf(`{"n":%d}`, i)
		switch at[i] {
		case "json":
			v = fmt.Sprintf(`{"n":%d`, i) // not JSON
		case "raise":
			v = fmt.Sprintf(`{"raise":%d}`, i)
		case "undecodable":
			v = fmt.Sprintf(`{"undecodable":%d}`, i)
		}
		rs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%50)), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(strconv.Itoa(i))}}}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
	bad := map[string]*kgo.Record{}
	for i := range at {
		bad[fmt.Sprintf("%d@%d", rs[i].Partition, rs[i].Offset)] = rs[i]
	}
	return rs, bad
}

// buildPoisonMap builds stream(in, json) -> map_values(upper; raises on
// "raise", reports "undecodable" as a serde failure) -> to(out).
func (h *testHost) buildPoisonMap(in, out string) {
	upper := h.register("upper", valueFn(func(v []byte) ([]byte, error) {
		switch {
		case bytes.Contains(v, []byte("raise")):
			return nil, fmt.Errorf("ValueError: cannot take %s", v)
		case bytes.Contains(v, []byte("undecodable")):
			return nil, errUndecodable
		}
		return bytes.ToUpper(v), nil
	}))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{in}, ValueSerde: "json"})
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: upper})
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: out})
}

var poison = map[int]string{17: "json", 1234: "raise", 2500: "undecodable", 3999: "raise", 4990: "json"} // 0.1% of 5000

// poisonRun is the size of a poison-pill run and its poison records: 5,000
// records with those above, or under make chaos 50,000 with 0.1% poison
// (51, the three kinds in turn, every 997th record from the 17th).
func poisonRun() (int, map[int]string) {
	if !chaosOn() {
		return 5000, poison
	}
	at := map[int]string{}
	kinds := []string{"json", "raise", "undecodable"}
	for i, n := 17, 0; i < 50_000; i, n = i+997, n+1 {
		at[i] = kinds[n%len(kinds)]
	}
	return 50_000, at
}

func (h *testHost) droppedRecords() int64 {
	h.t.Helper()
	resp, err := h.cl.GetState(context.Background(), connectReq(&pb.GetStateRequest{SessionId: h.session}))
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Msg.DroppedRecords
}

// With 0.1% poison records under exactly_once_v2 and dead_letter, the dead
// letter topic holds exactly the poison records (original key, value and
// headers, plus headers naming the error, node, topic, partition and
// offset), committed, and the output exactly the others.
func TestDeadLetterHoldsExactlyThePoisonRecords(t *testing.T) {
	e := newEnv(t, "in", "out")
	n, at := poisonRun()
	all, bad := e.poisoned("in", n, at)
	h := e.open("dlq", map[string]string{
		"processing.guarantee":                      "exactly_once_v2",
		"default.deserialization.exception.handler": "dead_letter",
		"processing.exception.handler":              "dead_letter",
		"errors.deadletterqueue.topic.name":         "in-dlq",
	})
	h.buildPoisonMap("in", "out")
	h.start()
	done := h.serveAsync()
	outs := 0
	waitFor(t, "all outputs", time.Duration(scale(60, 180))*time.Second, func() bool {
		outs = 0
		e.readTopic("out", true, func(*kgo.Record) { outs++ })
		return outs >= len(all)-len(bad)
	})
	// Everything committed: the DLQ's records went in the same
	// transactions as the outputs.
	got := map[string]*kgo.Record{}
	e.readTopic("in-dlq", true, func(r *kgo.Record) {
		h := headers(r)
		at := h["__streams.errors.partition"] + "@" + h["__streams.errors.offset"]
		if got[at] != nil {
			t.Errorf("dead letter for %s twice", at)
		}
		got[at] = r
	})
	if len(got) != len(bad) {
		t.Errorf("dead letter topic holds %d records (%v), want %d", len(got), keys(got), len(bad))
	}
	for at, in := range bad {
		r := got[at]
		if r == nil {
			t.Errorf("no dead letter for poison record %s (%s)", at, in.Value)
			continue
		}
		if !bytes.Equal(r.Key, in.Key) || !bytes.Equal(r.Value, in.Value) || !r.Timestamp.Equal(in.Timestamp) {
			t.Errorf("dead letter for %s: key %q value %q ts %v, want the original %q %q %v", at, r.Key, r.Value, r.Timestamp, in.Key, in.Value, in.Timestamp)
		}
		h := headers(r)
		if h["trace"] != string(in.Headers[0].Value) || h["__streams.errors.topic"] != "in" {
			t.Errorf("dead letter for %s: headers %v lose the original's or the topic", at, h)
		}
		var node, kind, exc, msg string
		switch {
		case bytes.Contains(in.Value, []byte("raise")):
			node, kind, exc, msg = "KSTREAM-MAPVALUES-0000000001", "processing", "Error", "ValueError: cannot take" // the test host reports "Error: <text>"
		case bytes.Contains(in.Value, []byte("undecodable")):
			node, kind, exc, msg = "KSTREAM-MAPVALUES-0000000001", "deserialization", "Error", "does not decode"
		default:
			node, kind, exc, msg = "KSTREAM-SOURCE-0000000000", "deserialization", "polystreams.DeserializationError", "value does not decode as json"
		}
		if h["__streams.errors.node"] != node || h["__streams.errors.kind"] != kind || h["__streams.errors.exception"] != exc ||
			!strings.Contains(h["__streams.errors.message"], msg) ||
			!strings.Contains(h["__streams.errors.stacktrace"], fmt.Sprintf("record at in/%s failed in node %s", at, node)) {
			t.Errorf("dead letter for %s (%s): headers %v; want node %s, kind %s, exception %s, message containing %q", at, in.Value, h, node, kind, exc, msg)
		}
	}
	seen := map[string]bool{}
	e.readTopic("out", true, func(r *kgo.Record) {
		if bytes.Contains(r.Value, []byte("RAISE")) || bytes.Contains(r.Value, []byte("UNDECODABLE")) {
			t.Errorf("poison value %q reached the output", r.Value)
		}
		seen[string(r.Value)] = true
	})
	if len(seen) != len(all)-len(bad) {
		t.Errorf("output holds %d distinct values, want %d", len(seen), len(all)-len(bad))
	}
	if d := h.droppedRecords(); d != int64(len(bad)) {
		t.Errorf("dropped_records %d, want %d", d, len(bad))
	}
	t.Logf("chaos figures: poison pills, dead_letter (exactly_once_v2): %d records, %d poison, %d dead letters each at its poison's partition@offset, %d outputs each once", len(all), len(bad), len(got), len(seen))
	_, text := get(t, e.srv.MetricsHandler(), "/metrics")
	for series, want := range map[string]float64{
		`polystreams_dead_lettered_records_total{application_id="dlq"}`: float64(len(bad)),
		`polystreams_dropped_records_total{application_id="dlq"}`:       float64(len(bad)),
		`polystreams_failed_records_total{application_id="dlq"}`:        float64(len(bad)),
	} {
		if got := sample(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	h.stopServing(done)
}

// log_and_continue skips exactly the poison records: the application keeps
// running and the output holds every other record once.
func TestLogAndContinueSkipsExactlyThePoisonRecords(t *testing.T) {
	e := newEnv(t, "in", "out")
	n, at := poisonRun()
	all, bad := e.poisoned("in", n, at)
	h := e.open("skip", map[string]string{
		"default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
		"processing.exception.handler":              "log_and_continue",
		"commit.interval.ms":                        "100",
	})
	h.buildPoisonMap("in", "out")
	h.start()
	done := h.serveAsync()
	var seen map[string]int
	waitFor(t, "all outputs", time.Duration(scale(60, 180))*time.Second, func() bool {
		seen = map[string]int{}
		e.readTopic("out", false, func(r *kgo.Record) { seen[string(r.Value)]++ })
		return len(seen) >= len(all)-len(bad)
	})
	for _, r := range all {
		at := fmt.Sprintf("%d@%d", r.Partition, r.Offset)
		n := seen[string(bytes.ToUpper(r.Value))]
		if bad[at] != nil && n != 0 || bad[at] == nil && n != 1 {
			t.Errorf("record %s (%s) reached the output %d times", at, r.Value, n)
		}
	}
	if d := h.droppedRecords(); d != int64(len(bad)) {
		t.Errorf("dropped_records %d, want %d", d, len(bad))
	}
	t.Logf("chaos figures: poison pills, log_and_continue (at_least_once): %d records, %d poison skipped by partition@offset, %d outputs each once", len(all), len(bad), len(seen))
	// The input is committed to its end: skipped records do not hold it.
	adm, _ := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	defer adm.Close()
	waitFor(t, "offsets committed to the end", 30*time.Second, func() bool {
		offs, err := adm.FetchOffsets(context.Background(), "skip")
		if err != nil {
			return false
		}
		ends, err := adm.ListEndOffsets(context.Background(), "in")
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(o kadm.ListedOffset) {
			if c, _ := offs.Lookup("in", o.Partition); c.At != o.Offset {
				ok = false
			}
		})
		return ok
	})
	h.stopServing(done)
}

// Under fail (the default) and exactly_once_v2, the application fails
// naming the record, and the committed offset of its partition never
// passes it: 3,000 records are processed and committed, then a poison
// record arrives with 2,000 more behind it.
func TestFailNeverCommitsPastThePoisonRecord(t *testing.T) {
	e := newEnv(t)
	adm, _ := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	defer adm.Close()
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	committed := func() int64 { // -1: none yet (the group may not exist yet)
		offs, err := adm.FetchOffsets(context.Background(), "failing")
		if err != nil {
			return -1
		}
		o, ok := offs.Lookup("in", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	e.poisoned("in", 3000, nil)
	h := e.open("failing", map[string]string{
		"processing.guarantee":           "exactly_once_v2",
		"polystreams.bundle.max.records": "100",
	})
	h.buildPoisonMap("in", "out")
	h.start()
	done := h.serveAsync()
	waitFor(t, "the first 3000 records committed", 60*time.Second, func() bool { return committed() == 3000 })
	_, bad := e.poisoned("in", 2001, map[int]string{0: "raise"})
	if bad["0@3000"] == nil {
		t.Fatalf("poison record at %v, want 0@3000", keys(bad))
	}
	got := <-done
	for _, want := range []string{"STATE_ERROR", "in/0@3000", "KSTREAM-MAPVALUES-0000000001", "ValueError: cannot take"} {
		if !strings.Contains(got, want) {
			t.Errorf("final state %q does not contain %q", got, want)
		}
	}
	h.stop()
	if c := committed(); c != 3000 {
		t.Errorf("committed offset %d, want 3000: the failing record's", c)
	}
	outs := 0
	e.readTopic("out", true, func(*kgo.Record) { outs++ })
	if outs != 3000 {
		t.Errorf("%d outputs committed, want the 3000 of the records before the failing one", outs)
	}
	t.Logf("chaos figures: poison pills, fail (exactly_once_v2): 5001 records, 1 poison at in/0@3000; the application failed naming it, committed offset %d, %d outputs committed", committed(), outs)
}

// A reduce whose reducer raises on a value skips that value under
// log_and_continue: the key's aggregate is the one before it, folded on
// with the values after it (nothing substituted, nothing lost).
func TestFoldSkipsAFailedValueKeepingTheAggregate(t *testing.T) {
	e := newEnv(t, "nums", "sums")
	var vals []string
	want := map[string]int64{}
	for i := range 400 {
		k := fmt.Sprintf("k%d", i%4)
		v := strconv.Itoa(i)
		if i%97 == 5 {
			v = "x" + v // the reducer raises on it: 5, 102, 199, 296, 393, none a key's first
		} else {
			want[k] += int64(i)
		}
		vals = append(vals, k+"="+v)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("nums"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range vals {
		k, v, _ := strings.Cut(kv, "=")
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	h := e.open("sum", map[string]string{"processing.exception.handler": "log_and_continue", "polystreams.bundle.linger.ms": "20"})
	parse := func(b []byte) (int64, error) {
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("ValueError: %w", err)
		}
		return n, nil
	}
	add := h.register("add", reduceFn(func(agg, v []byte) ([]byte, error) {
		a, err := parse(agg)
		if err != nil {
			return nil, err
		}
		b, err := parse(v)
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatInt(a+b, 10)), nil
	}))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"nums"}, KeySerde: "string", ValueSerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	r := h.mustBuild(&pb.ReduceOp{Input: g.Id, Token: add})
	ts := h.mustBuild(&pb.ToStreamOp{Input: r.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "sums"})
	h.start()
	done := h.serveAsync()
	var last map[string]string
	waitFor(t, "the sums", 60*time.Second, func() bool {
		last = map[string]string{}
		e.readTopic("sums", false, func(r *kgo.Record) { last[string(r.Key)] = string(r.Value) })
		for k, n := range want {
			if last[k] != strconv.FormatInt(n, 10) {
				return false
			}
		}
		return true
	})
	if d := h.droppedRecords(); d != 5 {
		t.Errorf("dropped_records %d, want 5", d)
	}
	h.stopServing(done)
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A table operator that fails on a change under log_and_continue skips the
// whole change: no tombstone or old value is made up for it, and the next
// change of its key goes on as if it never came.
func TestTableOperatorSkipsAFailedChangeWhole(t *testing.T) {
	e := newEnv(t, "fruit", "a-fruit", "upper-fruit")
	h := e.open("table-skip", map[string]string{"processing.exception.handler": "log_and_continue"})
	poisoned := func(v []byte) error {
		if bytes.Equal(v, str("poison")) {
			return fmt.Errorf("ValueError: %s", v)
		}
		return nil
	}
	startsA := h.register("starts_a", predicateFn(func(_, v []byte) (bool, error) { return bytes.HasPrefix(v, str("a")), poisoned(v) }))
	upper := h.register("upper", valueFn(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), poisoned(v) }))
	fruit := h.mustBuild(&pb.TableOp{Topic: "fruit", KeySerde: "string", ValueSerde: "string"})
	f := h.mustBuild(&pb.FilterOp{Input: fruit.Id, Token: startsA})
	fs := h.mustBuild(&pb.ToStreamOp{Input: f.Id})
	h.mustBuild(&pb.ToOp{Input: fs.Id, Topic: "a-fruit"})
	m := h.mustBuild(&pb.MapValuesOp{Input: fruit.Id, Token: upper})
	ms := h.mustBuild(&pb.ToStreamOp{Input: m.Id})
	h.mustBuild(&pb.ToOp{Input: ms.Id, Topic: "upper-fruit"})
	h.start()
	done := h.serveAsync()
	e.produceKeyed("fruit", keyed{"k1", str("apple")}, keyed{"k2", str("poison")}, keyed{"k1", str("avocado")}, keyed{"k2", str("banana")})
	text := func(b []byte) string { return string(b) }
	sameUpdates(t, e.updates("upper-fruit", 3, text), map[string][]string{"k1": {"APPLE", "AVOCADO"}, "k2": {"BANANA"}})
	// Read once banana went through: a tombstone made up for the poison
	// would be a second k2 update here.
	sameUpdates(t, e.updates("a-fruit", 3, text), map[string][]string{"k1": {"apple", "avocado"}, "k2": {"<nil>"}})
	if d := h.droppedRecords(); d != 2 { // the poison change, once in each operator
		t.Errorf("dropped_records %d, want 2", d)
	}
	h.stopServing(done)
}

// A windowed host aggregate with a value its aggregator raises on: each
// record is in about 10 hopping windows; the poison record is skipped in
// every window and dead-lettered once, and every window's sum is that of
// the other records (with and without value_refs and final_only).
func TestWindowedFoldDeadLettersAPoisonRecordOnce(t *testing.T) {
	for _, refs := range []bool{false, true} {
		t.Run(fmt.Sprintf("value_refs=%v", refs), func(t *testing.T) {
			e := newEnv(t, "amounts", "window-sums")
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic("amounts"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			const n = 600
			want := map[string]int64{}
			poison := map[int64]bool{}
			var rs []*kgo.Record
			for i := range n {
				k, ts := fmt.Sprintf("k%d", i%5), int64(i)*10
				if i%97 == 13 {
					poison[int64(i)] = true
				}
				for start := max(0, ts-1000+100) / 100 * 100; start <= ts; start += 100 {
					if !poison[int64(i)] {
						want[fmt.Sprintf("%s@%d", k, start)] += int64(i)
					}
				}
				rs = append(rs, &kgo.Record{Key: []byte(k), Value: long(int64(i)), Timestamp: time.UnixMilli(ts), Partition: int32(i % 5 % 2)})
			}
			if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			var features []string
			config := map[string]string{"processing.exception.handler": "dead_letter(amounts-dlq)"}
			if refs {
				features = []string{"fold_value_refs"}
				// The record cache on too: the engine asks for each group's
				// last aggregate only (final_only); it emits at commit.
				config["statestore.cache.max.bytes"] = "10485760"
				config["commit.interval.ms"] = "100"
			}
			h := e.openWith("hopping-dlq", config, features...)
			zero := h.register("zero", initFn(func() ([]byte, error) { return long(0), nil }))
			add := h.register("add", aggFn(func(_, v, a []byte) ([]byte, error) {
				if poison[decodeLong(v)] {
					return nil, fmt.Errorf("ValueError: %d", decodeLong(v))
				}
				return long(decodeLong(a) + decodeLong(v)), nil
			}))
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
				for k, v := range want {
					if got[k] != v {
						return false
					}
				}
				return true
			})
			if len(got) != len(want) {
				t.Errorf("%d windows, want %d: a window of only a poison record has no aggregate", len(got), len(want))
			}
			var dead []int64
			e.readTopic("amounts-dlq", false, func(r *kgo.Record) { dead = append(dead, decodeLong(r.Value)) })
			sort.Slice(dead, func(i, j int) bool { return dead[i] < dead[j] })
			var wantDead []int64
			for v := range poison {
				wantDead = append(wantDead, v)
			}
			sort.Slice(wantDead, func(i, j int) bool { return wantDead[i] < wantDead[j] })
			if fmt.Sprint(dead) != fmt.Sprint(wantDead) {
				t.Errorf("dead letters %v, want each poison record once: %v", dead, wantDead)
			}
			h.stopServing(done)
		})
	}
}
