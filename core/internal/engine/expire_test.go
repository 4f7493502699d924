package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// eosEmitTask is a task of stream(in) | groupByKey | windowedBy(10 s
// tumbling, 1 s grace) | emitStrategy(onWindowClose) | count | toStream |
// to(out) under exactly_once_v2 on db, without a broker: a transaction is
// batches whose store changes settle together.
func eosEmitTask(t *testing.T, db *state.DB) (*task, *plan) {
	t.Helper()
	b := topology.NewBuilder()
	must := func(h *topology.Handle, err error) *topology.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	s := must(b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"}))
	g := must(b.GroupByKey(s.ID, "", "", ""))
	w := must(b.WindowedBy(g.ID, topology.Windows{Kind: topology.TimeWindows, Size: 10000, Advance: 10000, Grace: 1000}))
	w = must(b.EmitStrategy(w.ID, true))
	c := must(b.Count(w.ID, nil, ""))
	out := must(b.ToStream(c.ID, ""))
	if err := b.To(out.ID, "out", "", "", ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Topology()
	if err != nil {
		t.Fatal(err)
	}
	a := &App{cfg: config.App{ApplicationID: "app", BundleMaxRecords: 2000, BundleMaxBytes: 1 << 20}, topo: topo, db: db, eos: true}
	plans, err := compile(topo, a.fullTopic, false, false)
	if err != nil {
		t.Fatal(err)
	}
	tk := newTask(a, taskID{0, 0}, plans[0])
	for _, st := range plans[0].stores {
		tx := &storeTx{store: st, Tx: state.NewTx(db.Partition(st.Name, 0), false), keys: codecFor(st)}
		tx.LastOffset.Store(-1)
		tk.stores[st.Name] = tx
	}
	tk.restored.Store(true)
	return tk, plans[0]
}

// txn processes one batch of "key@ts" records in a transaction that then
// commits or aborts, and returns the outputs as "key@start=count".
func txn(t *testing.T, tk *task, p *plan, commit bool, recs ...string) []string {
	t.Helper()
	var in []rec
	for i, s := range recs {
		var k string
		var ts int64
		if _, err := fmt.Sscanf(s, "%1s@%d", &k, &ts); err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		in = append(in, rec{key: []byte(k), value: []byte("v"), ts: ts, in: &kgo.Record{Topic: "in", Offset: int64(i)}})
	}
	tk.begin()
	if err := tk.push(context.Background(), p.sources["in"], in); err != nil {
		t.Fatal(err)
	}
	for _, tx := range tk.stores { // finish, under exactly_once_v2
		for k, v := range tx.Dirty {
			tx.Txn[k] = v
		}
	}
	tk.settleTxn(commit)
	var got []string
	for _, r := range tk.out {
		key, start, err := serde.SplitTimeWindowed(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s@%d=%d", key, start, binary.BigEndian.Uint64(r.Value)))
	}
	slices.Sort(got)
	return got
}

// Under exactly_once_v2 the windows that retention expires go with the
// transaction: one that aborts (or an engine killed before it committed)
// leaves Pebble as the last commit left it, so the records processed again
// after it close and emit the same windows, with the same counts. Deleted
// from Pebble at once, a window emitted in the aborted transaction was gone
// for good: emitted short (its rows counted again from zero) or not at all.
func TestAbortedTransactionKeepsExpiredWindows(t *testing.T) {
	db, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tk, p := eosEmitTask(t, db)
	if got := txn(t, tk, p, true, "a@0", "a@1000", "b@2000", "a@9000"); got != nil {
		t.Fatalf("first transaction emitted %v, want nothing (no window closed)", got)
	}
	// 70000 closes [0,10000) and trims retention (10 s + 1 s) to 59000.
	want := []string{"a@0=3", "b@0=2"}
	if got := txn(t, tk, p, false, "b@9500", "a@70000"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted transaction emitted %v, want %v", got, want)
	}
	// A restart: a new task on the same Pebble processes the aborted
	// transaction's records again.
	tk, p = eosEmitTask(t, db)
	if got := txn(t, tk, p, true, "b@9500", "a@70000"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the abort, emitted %v, want %v", got, want)
	}
	// Committed, the expiry reaches Pebble: [0,10000) is gone.
	tx := tk.stores[p.stores[0].Name]
	if v, _, err := tx.Part.Get(windowKey(0, []byte("a"))); err != nil || v != nil {
		t.Errorf("window a@0 after the committed expiry: %v (err %v), want deleted", v, err)
	}
}

// A transaction that aborts while its tasks keep running (a rebalance or a
// failed heartbeat came first: the session rewinds to the committed offsets
// and the same tasks process its records again) takes the tasks' window
// state with it: the stream time, the close time last emitted and the open
// windows in memory are the last commit's again, so the records count once
// and their windows close and emit once, as after a restart.
func TestAbortedTransactionResetsWindowState(t *testing.T) {
	db, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tk, p := eosEmitTask(t, db)
	if got := txn(t, tk, p, true, "a@0", "a@1000", "b@2000"); got != nil {
		t.Fatalf("first transaction emitted %v, want nothing (no window closed)", got)
	}
	// Aborted: a@9000 counted in an open window, b@9500 and a@70000
	// closing it (with a trim).
	want := []string{"a@0=3", "b@0=2"}
	if got := txn(t, tk, p, false, "a@9000", "b@9500", "a@70000"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted transaction emitted %v, want %v", got, want)
	}
	// The same records again, in two transactions, the first leaving
	// [0,10000) open.
	if got := txn(t, tk, p, false, "a@9000"); got != nil {
		t.Fatalf("second aborted transaction emitted %v, want nothing", got)
	}
	if got := txn(t, tk, p, true, "a@9000", "b@9500"); got != nil {
		t.Fatalf("after the aborts, a@9000 b@9500 emitted %v, want nothing", got)
	}
	if got := txn(t, tk, p, true, "a@70000"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the aborts, emitted %v, want %v", got, want)
	}
}

// The stream-stream join's expired rows go with the transaction too: after
// one that aborts, the join finds the rows the last commit left.
func TestAbortedTransactionKeepsExpiredJoinRows(t *testing.T) {
	h := newSSHarness(t, topology.JoinInner, topology.JoinWindows{Before: 100, After: 100, Grace: 1000}, nil)
	h.app.eos = true
	h.task.restored.Store(true)
	for _, tx := range h.task.stores {
		tx.LastOffset.Store(-1)
	}
	// One batch, "key:value@ts" each, in a transaction that then commits
	// or aborts; the outputs as "key:value@ts".
	send := func(commit bool, topic string, recs ...string) []string {
		t.Helper()
		var in []rec
		for i, s := range recs {
			var k, v string
			var ts int64
			if _, err := fmt.Sscanf(strings.NewReplacer(":", " ", "@", " ").Replace(s), "%s %s %d", &k, &v, &ts); err != nil {
				t.Fatalf("record %q: %v", s, err)
			}
			in = append(in, rec{key: []byte(k), value: []byte(v), ts: ts, in: &kgo.Record{Topic: topic, Offset: int64(i)}})
		}
		h.task.begin()
		if err := h.task.push(context.Background(), h.plan.sources[topic], in); err != nil {
			t.Fatal(err)
		}
		for _, tx := range h.task.stores { // finish, under exactly_once_v2
			for k, v := range tx.Dirty {
				tx.Txn[k] = v
			}
		}
		h.task.settleTxn(commit)
		var got []string
		for _, r := range h.task.out {
			got = append(got, fmt.Sprintf("%s:%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		}
		return got
	}
	h.expect("left alone", send(true, "left", "a:L1@1000"))
	// Aborted: the left side's time jumps, a:L1 expires.
	h.expect("far ahead", send(false, "left", "x:L2@100000"))
	h.expect("after the abort", send(true, "right", "a:R1@1050"), "a:L1+R1@1050")
}
