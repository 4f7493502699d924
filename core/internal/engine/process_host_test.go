package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// procHost is a Go host running one processor, sweep_every 1000 of the
// processor vectors' catalogue (docs/design/host-vectors.md): it counts
// per key (long values) through an overlay of the bundle's view, and its
// stream-time punctuator forwards then deletes every entry, read with one
// Read(all). A value "boom" is forwarded, then fails.
type procHost struct {
	mu      sync.Mutex
	reads   int
	bundles int
	inits   int
	closes  int
}

func (h *procHost) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	return nil, fmt.Errorf("procHost: bundle %d without reads", b.Id)
}

func split(lens []int32, data []byte) [][]byte {
	out := make([][]byte, len(lens))
	off := 0
	for i, l := range lens {
		if l >= 0 {
			out[i] = data[off : off+int(l)]
			off += int(l)
		}
	}
	return out
}

func (h *procHost) ProcessReads(ctx context.Context, b *pb.Bundle, reads engine.ReadFunc) (*pb.BundleResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bundles++
	res := &pb.BundleResult{BundleId: b.Id}
	overlay := map[string][]byte{}
	known := map[string]bool{}
	v := b.Stores[0]
	vk, vv := split(v.KeyLengths, v.Keys), split(v.ValueLengths, v.Values)
	for i := range vk {
		overlay[string(vk[i])], known[string(vk[i])] = vv[i], true
	}
	op := func(kind pb.OpKind, target int32, key, value []byte, ts int64, sched uint64) {
		res.OpCounts[len(res.OpCounts)-1]++
		res.OpKinds = append(res.OpKinds, kind)
		res.OpSteps = append(res.OpSteps, 0)
		res.OpTargets = append(res.OpTargets, target)
		for _, c := range []struct {
			lens *[]int32
			data *[]byte
			b    []byte
		}{{&res.OpKeyLengths, &res.OpKeys, key}, {&res.OpValueLengths, &res.OpValues, value}} {
			if c.b == nil {
				*c.lens = append(*c.lens, -1)
			} else {
				*c.lens = append(*c.lens, int32(len(c.b)))
				*c.data = append(*c.data, c.b...)
			}
		}
		res.OpTimestamps = append(res.OpTimestamps, ts)
		res.OpSchedules = append(res.OpSchedules, sched)
		if kind == pb.OpKind_OP_KIND_FORWARD {
			res.OpHeaderCounts = append(res.OpHeaderCounts, -1)
		}
	}
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	for range b.Inits {
		h.inits++
		res.OpCounts = append(res.OpCounts, 0)
		op(pb.OpKind_OP_KIND_SCHEDULE, 1, nil, nil, 1000, 1)
	}
	keys, values := split(b.KeyLengths, b.Keys), split(b.ValueLengths, b.Values)
	for i := range keys {
		entry := int32(len(res.OpCounts))
		res.OpCounts = append(res.OpCounts, 0)
		k := string(keys[i])
		if !known[k] {
			r, err := reads(ctx, &pb.ReadRequest{BundleId: b.Id, Store: "counts", Query: &pb.ReadRequest_Get{Get: keys[i]}})
			if err != nil {
				return nil, err
			}
			h.reads++
			overlay[k], known[k] = nil, true
			if len(r.KeyLengths) == 1 {
				overlay[k] = r.Values
			}
		}
		n := int64(0)
		if old := overlay[k]; old != nil {
			n = int64(binary.BigEndian.Uint64(old))
		}
		overlay[k] = long(n + 1)
		op(pb.OpKind_OP_KIND_PUT, 0, keys[i], long(n+1), 0, 0)
		if string(values[i]) == "boom" {
			op(pb.OpKind_OP_KIND_FORWARD, 0, keys[i], values[i], b.Timestamps[i], 0)
			res.Failures = append(res.Failures, &pb.RecordFailure{Index: entry, Step: 0, Message: "boom", Kind: pb.RecordFailure_KIND_PROCESSING})
		}
	}
	for _, e := range b.After {
		res.OpCounts = append(res.OpCounts, 0)
		if e.Kind == pb.BundleEntry_KIND_CLOSE {
			h.closes++
		}
		if e.Kind != pb.BundleEntry_KIND_PUNCTUATE_STREAM_TIME {
			continue
		}
		r, err := reads(ctx, &pb.ReadRequest{BundleId: b.Id, Store: "counts", Query: &pb.ReadRequest_All{All: true}})
		if err != nil {
			return nil, err
		}
		h.reads++
		rk, rv := split(r.KeyLengths, r.Keys), split(r.ValueLengths, r.Values)
		all := map[string][]byte{}
		for i := range rk {
			all[string(rk[i])] = rv[i]
		}
		for k, v := range overlay {
			if known[k] {
				all[k] = v
			}
		}
		var ks []string
		for k, v := range all {
			if v != nil {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		for _, k := range ks {
			op(pb.OpKind_OP_KIND_FORWARD, 0, []byte(k), all[k], e.TimeMs, 0)
			op(pb.OpKind_OP_KIND_DELETE, 0, []byte(k), nil, 0, 0)
			overlay[k], known[k] = nil, true
		}
	}
	return res, nil
}

// TestHostProcessor runs a host processor through the engine's processor
// path with a Go host: the init entry before the first record registers
// the punctuator, record keys come prefetched (no Read for them), ops apply
// in order (read-your-writes across bundles through the store), the
// stream-time punctuation reads the store with one Read and its forwards
// and deletes apply, and a record that fails under log_and_continue keeps
// its put and forward.
func TestHostProcessor(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := topology.NewBuilder()
	b.HostProcessors = true
	must(b.AddStateStore(topology.StoreBuilder{Name: "counts", Type: topology.StoreTypeKeyValue, KeySerde: "string", ValueSerde: "long"}))
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	p, err := b.Process(in.ID, topology.Function{Token: 7, Name: "sweep_every"}, topology.ProcessOptions{Stores: []string{"counts"}, ValueSerde: "long"})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	host := &procHost{}
	td, app, ctx := driven(t, "hostproc", map[string]string{"processing.exception.handler": "log_and_continue"}, topo, host, nil)
	for _, r := range []struct {
		k, v string
		ts   int64
	}{{"a", "x", 100}, {"b", "x", 200}, {"a", "x", 300}, {"c", "boom", 400}, {"b", "x", 1500}} {
		ts := r.ts
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte(r.k), Value: []byte(r.v), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe %v: %v %v", r, failure, err)
		}
	}
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		v := string(r.Value)
		if len(r.Value) == 8 {
			v = fmt.Sprint(binary.BigEndian.Uint64(r.Value))
		}
		got += fmt.Sprintf("%s=%s@%d ", r.Key, v, r.Timestamp.UnixMilli())
	}
	// 100: due at once (aligned to 0): a=1. 400: c's forward kept though
	// it failed. 1500: a=1 (300), b=2, c=1 (its put kept).
	if want := "a=1@100 c=boom@400 a=1@1500 b=2@1500 c=1@1500 "; got != want {
		t.Errorf("out: %s\nwant %s", got, want)
	}
	if host.inits != 1 {
		t.Errorf("%d init entries, want 1", host.inits)
	}
	if host.reads != 2 {
		t.Errorf("%d Read calls, want 2 (one per punctuation; record keys come prefetched)", host.reads)
	}
	engine.StopTasks(app) // as a revocation: the task's instance gets its close entry
	if host.closes != 1 {
		t.Errorf("%d close entries as the task was revoked, want 1", host.closes)
	}
}

// TestHostProcessorRevival: after an aborted transaction's revival the
// next bundle carries the init entry again (the host makes a new
// instance, whose schedule replaces the old).
func TestHostProcessorRevival(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := topology.NewBuilder()
	b.HostProcessors = true
	must(b.AddStateStore(topology.StoreBuilder{Name: "counts", Type: topology.StoreTypeKeyValue, KeySerde: "string", ValueSerde: "long"}))
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	p, err := b.Process(in.ID, topology.Function{Token: 7, Name: "sweep_every"}, topology.ProcessOptions{Stores: []string{"counts"}, ValueSerde: "long"})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	host := &procHost{}
	td, app, ctx := driven(t, "hostrevive", nil, topo, host, nil)
	pipe := func(k string, ts int64) {
		t.Helper()
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte(k), Value: []byte("x"), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe: %v %v", failure, err)
		}
	}
	pipe("a", 100)
	engine.ReviveOperators(app)
	pipe("b", 200)
	out, _, err := td.Output("out")
	must(err)
	got := ""
	for _, r := range out {
		got += fmt.Sprintf("%s=%d@%d ", r.Key, binary.BigEndian.Uint64(r.Value), r.Timestamp.UnixMilli())
	}
	// The new instance's schedule is aligned to 0 again: due at 200.
	if want := "a=1@100 b=1@200 "; got != want {
		t.Errorf("out: %s, want %s", got, want)
	}
	if host.inits != 2 {
		t.Errorf("%d init entries, want 2 (one after the revival)", host.inits)
	}
}

// versHost is a Go host whose processor reports, per record, what the
// bundle brought of a versioned store for the record's key (stream time,
// history retention, the key's versions as value@validFrom, "-" for a
// tombstone) and then puts the record's value as a version at its
// timestamp ("del": a DELETE op, a tombstone); a record of key "q" reports
// the versions of key "a" read with ReadRequest.versions instead.
type versHost struct{ procHost }

func (h *versHost) ProcessReads(ctx context.Context, b *pb.Bundle, reads engine.ReadFunc) (*pb.BundleResult, error) {
	res := &pb.BundleResult{BundleId: b.Id}
	res.OpCounts = make([]int32, len(b.Inits))
	v := b.Stores[0]
	show := func(values [][]byte, froms []int64) string {
		s := "["
		for i := range values {
			if i > 0 {
				s += " "
			}
			if values[i] == nil {
				s += fmt.Sprintf("-@%d", froms[i])
			} else {
				s += fmt.Sprintf("%s@%d", values[i], froms[i])
			}
		}
		return s + "]"
	}
	view := map[string]string{}
	vk, vv := split(v.KeyLengths, v.Keys), split(v.ValueLengths, v.Values)
	at := 0
	for i, n := range v.VersionCounts {
		view[string(vk[i])] = show(vv[at:at+int(n)], v.Windows[at:at+int(n)])
		at += int(n)
	}
	add := func(kind pb.OpKind, key, value []byte, ts int64) {
		res.OpCounts[len(res.OpCounts)-1]++
		res.OpKinds = append(res.OpKinds, kind)
		res.OpTargets = append(res.OpTargets, 0)
		res.OpKeyLengths = append(res.OpKeyLengths, int32(len(key)))
		res.OpKeys = append(res.OpKeys, key...)
		if value == nil {
			res.OpValueLengths = append(res.OpValueLengths, -1)
		} else {
			res.OpValueLengths = append(res.OpValueLengths, int32(len(value)))
			res.OpValues = append(res.OpValues, value...)
		}
		res.OpTimestamps = append(res.OpTimestamps, ts)
		res.OpSchedules = append(res.OpSchedules, 0)
		if kind == pb.OpKind_OP_KIND_FORWARD {
			res.OpHeaderCounts = append(res.OpHeaderCounts, -1)
		}
	}
	keys, values := split(b.KeyLengths, b.Keys), split(b.ValueLengths, b.Values)
	for i := range keys {
		res.OpCounts = append(res.OpCounts, 0)
		k, ts := keys[i], b.Timestamps[i]
		seen, ok := view[string(k)]
		if !ok {
			return nil, fmt.Errorf("versHost: the view of bundle %d lacks key %q", b.Id, k)
		}
		if string(k) == "q" {
			r, err := reads(ctx, &pb.ReadRequest{BundleId: b.Id, Store: v.Store, Query: &pb.ReadRequest_Versions{Versions: []byte("a")}})
			if err != nil {
				return nil, err
			}
			seen = "a:" + show(split(r.ValueLengths, r.Values), r.Windows)
			// A key-value store's query of a versioned store is refused, naming node and store.
			_, err = reads(ctx, &pb.ReadRequest{BundleId: b.Id, Store: v.Store, Query: &pb.ReadRequest_Get{Get: []byte("a")}})
			if !errors.Is(err, engine.ErrReadRefused) || !strings.Contains(err.Error(), `store "history" is a versioned key-value store: read it with versions`) {
				return nil, fmt.Errorf("versHost: a get Read of a versioned store answered %v", err)
			}
		}
		add(pb.OpKind_OP_KIND_FORWARD, k, []byte(fmt.Sprintf("st=%d hr=%d %s", v.StreamTimeMs, v.HistoryRetentionMs, seen)), ts)
		if string(values[i]) == "del" {
			add(pb.OpKind_OP_KIND_DELETE, k, nil, ts)
		} else {
			add(pb.OpKind_OP_KIND_PUT, k, values[i], ts)
		}
	}
	for range b.After {
		res.OpCounts = append(res.OpCounts, 0)
	}
	return res, nil
}

// TestHostProcessorVersionedStore: a host processor over a versioned store
// gets, per bundle, the record keys' versions a read may still find (from
// the one valid at stream time - history retention on) and the store's
// stream time and history retention; its PUT and DELETE ops are applied
// as versions (putVersion, as a Go processor's: an expired put is
// dropped); a Read of a key's versions answers the same rows.
func TestHostProcessorVersionedStore(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := topology.NewBuilder()
	b.HostProcessors = true
	must(b.AddStateStore(topology.StoreBuilder{Name: "history", Type: topology.StoreTypeVersioned, KeySerde: "string", ValueSerde: "string", HistoryRetention: 10}))
	in, err := b.Stream(topology.StreamOptions{Topics: []string{"in"}, KeySerde: "string", ValueSerde: "string"})
	must(err)
	p, err := b.Process(in.ID, topology.Function{Token: 7, Name: "versioned"}, topology.ProcessOptions{Stores: []string{"history"}})
	must(err)
	must(b.To(p.ID, "out", "", "", ""))
	topo, err := b.Topology()
	must(err)
	td, _, ctx := driven(t, "hostvers", nil, topo, &versHost{}, nil)
	for _, r := range []struct {
		k, v string
		ts   int64
	}{{"a", "v10", 10}, {"a", "v20", 20}, {"a", "v5", 5}, {"b", "x", 15}, {"a", "del", 25}, {"q", "z", 26}, {"a", "v27", 27}, {"b", "y", 35}, {"a", "v36", 36}} {
		ts := r.ts
		if _, failure, err := td.Pipe(ctx, []testdriver.Record{{Topic: "in", Key: []byte(r.k), Value: []byte(r.v), Timestamp: &ts}}); err != nil || failure != nil {
			t.Fatalf("pipe %v: %v %v", r, failure, err)
		}
	}
	out, _, err := td.Output("out")
	must(err)
	var got []string
	for _, r := range out {
		got = append(got, fmt.Sprintf("%s %s", r.Key, r.Value))
	}
	want := []string{
		"a st=-1 hr=10 []",
		"a st=10 hr=10 [v10@10]",
		"a st=20 hr=10 [v10@10 v20@20]", // its put at 5 is older than 20 - 10: dropped
		"b st=20 hr=10 []",
		"a st=20 hr=10 [v10@10 v20@20]",
		"q st=25 hr=10 a:[v10@10 v20@20 -@25]",
		"a st=26 hr=10 [v10@10 v20@20 -@25]", // the cut-off is 16: v10 is valid then
		"b st=27 hr=10 [x@15]",
		"a st=35 hr=10 [-@25 v27@27]", // the cut-off is 25: older versions are not sent
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("out:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
