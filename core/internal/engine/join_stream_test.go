package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// ssHarness runs a stream-stream join of topics "left" and "right" into
// "out" in one task, without a broker: records go straight to the source
// steps, outputs are read from the sink's records, and a batch's store
// changes are applied to Pebble as a committed batch would be.
type ssHarness struct {
	t    *testing.T
	app  *App
	plan *plan
	task *task
	db   *state.DB
}

func joinFnOf(left, right []byte) ([]byte, error) {
	l, r := "null", "null"
	if left != nil {
		l = string(left)
	}
	if right != nil {
		r = string(right)
	}
	return []byte(l + "+" + r), nil
}

func newSSHarness(t *testing.T, kind topology.JoinKind, w topology.JoinWindows, db *state.DB) *ssHarness {
	t.Helper()
	return newSSHarnessWith(t, kind, w, db, topology.Function{Native: topology.ValueJoinerFunc(joinFnOf)}, nil)
}

func newSSHarnessWith(t *testing.T, kind topology.JoinKind, w topology.JoinWindows, db *state.DB, joiner topology.Function, host Host) *ssHarness {
	t.Helper()
	b := topology.NewBuilder()
	l, err := b.Stream(topology.StreamOptions{Topics: []string{"left"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Stream(topology.StreamOptions{Topics: []string{"right"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := b.StreamJoin(l.ID, r.ID, joiner, topology.StreamJoinOptions{Kind: kind, Windows: &w})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.To(j.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if db == nil {
		if db, err = state.Open(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
	}
	a := &App{cfg: config.App{ApplicationID: "app", BundleMaxRecords: 2000, BundleMaxBytes: 1 << 20}, topo: topo, db: db, host: host}
	plans, err := compile(topo, a.fullTopic, false, false)
	if err != nil {
		t.Fatal(err)
	}
	h := &ssHarness{t: t, app: a, plan: plans[0], db: db}
	h.task = newTask(a, taskID{0, 0}, h.plan)
	openStores(h.task, db)
	return h
}

// send processes one batch of records of one topic, "key:value@ts" each,
// and returns the outputs as "key:value@ts".
func (h *ssHarness) send(topic string, recs ...string) []string {
	h.t.Helper()
	var in []rec
	for i, s := range recs {
		kv, ts, _ := strings.Cut(s, "@")
		k, v, _ := strings.Cut(kv, ":")
		var n int64
		fmt.Sscan(ts, &n)
		r := rec{key: []byte(k), value: []byte(v), ts: n, in: &kgo.Record{Topic: topic, Offset: int64(i)}}
		if k == "null" {
			r.key = nil
		}
		if v == "null" {
			r.value = nil
		}
		in = append(in, r)
	}
	h.task.begin()
	if err := h.task.push(context.Background(), h.plan.sources[topic], in); err != nil {
		h.t.Fatal(err)
	}
	for _, tx := range h.task.stores {
		if err := tx.Part.Apply(state.Writes(tx.Dirty)); err != nil {
			h.t.Fatal(err)
		}
	}
	var got []string
	for _, r := range h.task.out {
		got = append(got, fmt.Sprintf("%s:%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
	}
	return got
}

func (h *ssHarness) expect(what string, got []string, want ...string) {
	h.t.Helper()
	if !slices.Equal(got, want) {
		h.t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// Inner join, after KStreamKStreamJoinTest.testJoin / testWindowing: a
// record joins the other side's records within [ts - before, ts + after]
// of its key, in either arrival order (out of order too), stamped with the
// later timestamp; keys only join their own key.
func TestStreamJoinInnerWindow(t *testing.T) {
	h := newSSHarness(t, topology.JoinInner, topology.JoinWindows{Before: 100, After: 100, Grace: 1000}, nil)
	h.expect("left alone", h.send("left", "a:L1@1000", "b:L2@1000"))
	h.expect("right joins", h.send("right", "a:R1@1050", "c:R2@1000"), "a:L1+R1@1050")
	h.expect("left out of order within the window", h.send("left", "a:L3@960"), "a:L3+R1@1050")
	h.expect("right outside the window", h.send("right", "a:R3@1201"))
	h.expect("right at the window's edge", h.send("right", "a:R4@1100"), "a:L1+R4@1100")
	// a's right records in [1150-100, 1150+100] (both ends inclusive): R1
	// (1050), R4 (1100), R3 (1201), in timestamp order.
	h.expect("three matches", h.send("left", "a:L4@1150"), "a:L4+R1@1150", "a:L4+R4@1150", "a:L4+R3@1201")
}

// Asymmetric windows: JoinWindows.before/after are seen mirrored by the
// other side (KStreamImplJoin builds joinOther with before and after
// swapped): left at ts joins right in [ts-0, ts+50], so right at ts joins
// left in [ts-50, ts+0].
func TestStreamJoinAsymmetricWindows(t *testing.T) {
	h := newSSHarness(t, topology.JoinInner, topology.JoinWindows{Before: 0, After: 50, Grace: 1000}, nil)
	h.send("left", "k:L@100")
	h.expect("right 40 after", h.send("right", "k:R1@140"), "k:L+R1@140")
	h.expect("right before left", h.send("right", "k:R2@99"))
	h.expect("left joins only the later right", h.send("left", "k:L2@100"), "k:L2+R1@140")
}

// Each side's window store goes by its own observed time (the largest
// timestamp written to it), as Kafka Streams' segmented stores do: a fetch
// shows no row older than that time - retention + 1, and a record whose
// segment (max(retention / 2, 1 minute) wide) is older than the store's
// live ones is joined but not stored, and counted as dropped; a record
// that is merely older than retention is stored. A null key or value is
// dropped and counted (StreamStreamJoinUtil.skipRecord).
func TestStreamJoinLateRecordsFollowTheStores(t *testing.T) {
	h := newSSHarness(t, topology.JoinInner, topology.JoinWindows{Before: 10, After: 10, Grace: 5}, nil)
	h.send("left", "k:L1@100")
	h.send("right", "x:R@200000") // right store time 200000; retention 25
	h.expect("late right, expired segment", h.send("right", "k:late@100005"))
	if got := h.app.dropped.Load(); got != 1 {
		t.Errorf("dropped %d, want 1 (segment 1 is older than the live segment 3)", got)
	}
	h.expect("old right in a live segment: stored, not dropped", h.send("right", "k:old@199970"))
	if got := h.app.dropped.Load(); got != 1 {
		t.Errorf("dropped %d, want 1", got)
	}
	// The right store (time 200000) shows rows from 199976 on: old@199970
	// is stored but no longer found.
	h.expect("left does not see the right row past retention", h.send("left", "k:L2@199975"))
	h.expect("right row within retention joins", h.send("right", "k:ok@199980"), "k:L2+ok@199980")
	// The left store's time is 199975: the right record at 199980 saw L2.
	h.expect("nulls", h.send("left", "null:v@1000", "k:null@1000"))
	if got := h.app.dropped.Load(); got != 3 {
		t.Errorf("dropped %d, want 3", got)
	}
}

// The window a record fetches from the other store is bounded by that
// store's observed time, not by the join's stream time: with
// ofTimeDifferenceWithNoGrace(100).before(0), a right record at 100 still
// finds a left record at 0 (left store time 1, retention 100), though the
// stream time (100) is a full retention past it
// (KStreamKStreamLeftJoinTest#shouldNotEmitLeftJoinResultForAsymmetricWindow).
func TestStreamJoinOtherStoreTimeBoundsTheFetch(t *testing.T) {
	h := newSSHarness(t, topology.JoinLeft, topology.JoinWindows{Before: 0, After: 100, Grace: 0}, nil)
	h.expect("lefts wait", h.send("left", "0:A0@0", "1:A1@1"))
	h.expect("right at 100 joins left at 0", h.send("right", "0:a0@100"), "0:A0+a0@100")
	h.expect("A1's window closes", h.send("right", "1:a1@102"), "1:A1+null@1")
}

// Left join since Kafka 3.1 (KAFKA-10847, KStreamKStreamLeftJoinTest's
// testLeftJoinedRecordsWithZeroAfterAreEmitted and friends): a left record
// that joins nothing is emitted with null only once its window closed
// (ts + after + grace < stream time), in time order; one that joined later
// is never emitted with null; a right record alone is never emitted.
func TestStreamJoinLeftEmitsAtWindowClose(t *testing.T) {
	h := newSSHarness(t, topology.JoinLeft, topology.JoinWindows{Before: 100, After: 100, Grace: 0}, nil)
	h.expect("left waits", h.send("left", "a:L1@1000", "b:L2@1010"))
	h.expect("right alone", h.send("right", "z:R0@1050"))
	h.expect("b joins later", h.send("right", "b:R1@1060"), "b:L2+R1@1060")
	h.expect("window still open", h.send("left", "c:L3@1100"))
	// Stream time 1101 passes a's window end (1000 + 100 + 0 grace).
	h.expect("a's window closes", h.send("right", "q:R2@1101"), "a:L1+null@1000")
	h.expect("nothing twice", h.send("left", "d:L4@1150"))
	// c (1100): closes past 1200; b joined, so it is not emitted.
	h.expect("c closes", h.send("left", "e:L5@1300"), "c:L3+null@1100", "d:L4+null@1150")
	// A left record whose window ended already is emitted at once.
	h.expect("too late to wait", h.send("left", "f:L6@1150"), "f:L6+null@1150")
	// KIP-962: a left null-key record joins nothing, at once; a right one
	// is dropped (and counted), as is a null value.
	h.expect("left null key", h.send("left", "null:L7@1300"), ":L7+null@1300")
	h.expect("right null key, null value", h.send("right", "null:R7@1300", "g:null@1300"))
	if got := h.app.dropped.Load(); got != 2 {
		t.Errorf("dropped %d, want 2", got)
	}
}

// Outer join: both sides' unmatched records are emitted at window close,
// in time order, with null on the missing side; OUTERTHIS / OUTEROTHER.
func TestStreamJoinOuter(t *testing.T) {
	h := newSSHarness(t, topology.JoinOuter, topology.JoinWindows{Before: 10, After: 10, Grace: 0}, nil)
	h.send("left", "a:L1@100")
	h.send("right", "b:R1@105")
	h.expect("a and b close", h.send("left", "c:L2@200"), "a:L1+null@100", "b:null+R1@105")
	h.expect("c joins", h.send("right", "c:R2@195"), "c:L2+R2@200")
}

// The join's state survives a restart: a new task on the same store
// partitions (as a restore leaves them) sees the earlier side's records,
// the pending left-only records and the stream time.
func TestStreamJoinStateSurvivesRestart(t *testing.T) {
	w := topology.JoinWindows{Before: 100, After: 100, Grace: 0}
	h := newSSHarness(t, topology.JoinLeft, w, nil)
	h.send("left", "a:L1@1000", "b:L2@1000")
	h = newSSHarness(t, topology.JoinLeft, w, h.db)
	h.expect("joins the stored left record", h.send("right", "b:R@1050"), "b:L2+R@1050")
	h.expect("the pending one is emitted at close, once", h.send("right", "z:R@1200"), "a:L1+null@1000")
	h = newSSHarness(t, topology.JoinLeft, w, h.db)
	// Stream time 1200 is restored: a left record whose window ended
	// (900 + 100 < 1200) is emitted with null at once.
	h.expect("stream time restored", h.send("left", "f:L6@900"), "f:L6+null@900")
	// The right store's time (1200) is recomputed from its rows: R at
	// 1050 is still found (1050 >= 1200 - 200 + 1).
	h.expect("store time restored", h.send("left", "b:L7@1000"), "b:L7+R@1050")
}

// The join window store's changelog key is Kafka Streams' window-store key
// with a seqnum (WindowKeySchema.toStoreKeyBinary: key, timestamp, seqnum),
// and restores to the store key.
func TestJoinWindowChangelogKeys(t *testing.T) {
	sk := joinRowKey([]byte("key"), 1234, 7)
	lk := joinWindowCodec{}.toLog(sk)
	want := append([]byte("key"), 0, 0, 0, 0, 0, 0, 0x04, 0xd2, 0, 0, 0, 7)
	if !bytes.Equal(lk, want) {
		t.Errorf("log key %x, want %x", lk, want)
	}
	back, err := joinWindowCodec{}.fromLog(lk)
	if err != nil || !bytes.Equal(back, sk) {
		t.Errorf("fromLog: %x %v, want %x", back, err, sk)
	}
	if _, err := (joinWindowCodec{}).fromLog([]byte("short")); err == nil {
		t.Errorf("a short key restored")
	}
}

// joinHost answers VALUE_JOIN bundles with joinFnOf, counting crossings.
type joinHost struct {
	bundles []*pb.Bundle
}

func (h *joinHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.bundles = append(h.bundles, b)
	res := &pb.BundleResult{BundleId: b.Id}
	vo, oo := 0, 0
	col := func(buf []byte, off *int, l int32) []byte {
		if l < 0 {
			return nil
		}
		*off += int(l)
		return buf[*off-int(l) : *off]
	}
	for i := range b.ValueLengths {
		out, _ := joinFnOf(col(b.Values, &vo, b.ValueLengths[i]), col(b.OtherValues, &oo, b.OtherValueLengths[i]))
		res.OutputCounts = append(res.OutputCounts, 1)
		res.ValueLengths = append(res.ValueLengths, int32(len(out)))
		res.Values = append(res.Values, out...)
	}
	return res, nil
}

// A host joiner crosses once per batch (one OPERATION_VALUE_JOIN bundle),
// not once per record: the left values in values, the right ones in
// other_values (-1: absent), whichever side the batch came from.
func TestStreamJoinHostJoinerCrossesOncePerBundle(t *testing.T) {
	host := &joinHost{}
	h := newSSHarnessWith(t, topology.JoinOuter, topology.JoinWindows{Before: 10, After: 10}, nil, topology.Function{Token: 7}, host)
	h.expect("lefts wait", h.send("left", "a:L1@100", "b:L2@100", "c:L3@100"))
	if len(host.bundles) != 0 {
		t.Fatalf("%d crossings for records that joined nothing", len(host.bundles))
	}
	got := h.send("right", "a:R1@105", "b:R2@105", "z:R9@200")
	h.expect("one batch", got, "a:L1+R1@105", "b:L2+R2@105", "c:L3+null@100")
	if len(host.bundles) != 1 {
		t.Fatalf("%d crossings for one batch, want 1", len(host.bundles))
	}
	b := host.bundles[0]
	if st := b.Steps; len(st) != 1 || st[0].Operation != pb.Operation_OPERATION_VALUE_JOIN || st[0].Token != 7 || st[0].Node != "KSTREAM-OUTEROTHER-0000000005" {
		t.Errorf("steps %v", st)
	}
	if !slices.Equal(b.ValueLengths, []int32{2, 2, 2}) || !slices.Equal(b.OtherValueLengths, []int32{2, 2, -1}) {
		t.Errorf("value lengths %v, other value lengths %v", b.ValueLengths, b.OtherValueLengths)
	}
}
