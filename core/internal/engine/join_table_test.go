package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// joinHarness is the first task of an App (never started) running
// table("ta") <kind>-joined with table("tb") by a Go joiner ("x+y", null as
// "null"). With regroup, the result is regrouped by its own key
// (KTable.groupBy, which makes the join send old values) and counted, and
// push returns the changes the regrouping writes, "key:new<-old", as
// Kafka's KTableKTable*JoinTest read them from a MockProcessor; else the
// result goes to topic "out" and push returns "key=value@ts".
type joinHarness struct {
	t *task
}

func newJoinHarness(tb testing.TB, o topology.TableJoinOptions, regroup bool, kv map[string]string) *joinHarness {
	tb.Helper()
	must := func(h *topology.Handle, err error) uint64 {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return h.ID
	}
	b := topology.NewBuilder()
	ta := must(b.Table(topology.TableOptions{Topic: "ta", KeySerde: "string", ValueSerde: "string"}))
	tbl := must(b.Table(topology.TableOptions{Topic: "tb", KeySerde: "string", ValueSerde: "string"}))
	joiner := topology.Function{Name: "j", Native: topology.ValueJoinerFunc(func(v, o []byte) ([]byte, error) {
		return []byte(text(v) + "+" + text(o)), nil
	})}
	j := must(b.TableJoin(ta, tbl, joiner, o))
	if regroup {
		identity := topology.Function{Name: "id", Native: topology.MapFunc(func(k, v []byte) ([]byte, []byte, error) { return k, v, nil })}
		must(b.TableCount(must(b.TableGroupBy(j, identity, "", "", "")), nil, ""))
	} else if err := b.To(must(b.ToStream(j, "")), "out", "", "", ""); err != nil {
		tb.Fatal(err)
	}
	return newHarness(tb, b, kv)
}

// newHarness is a joinHarness for the topology b built, the first task of
// an App (never started) with its stores open.
func newHarness(tb testing.TB, b *topology.Builder, kv map[string]string) *joinHarness {
	tb.Helper()
	topo, err := b.Topology()
	if err != nil {
		tb.Fatal(err)
	}
	a := unstartedApp(tb, "tt", kv, topo, nil, nil)
	t := newTask(a, taskID{0, 0}, a.plans[0])
	openStores(t, a.db)
	t.restored.Store(true)
	return &joinHarness{t: t}
}

func text(b []byte) string {
	if b == nil {
		return "null"
	}
	return string(b)
}

// push processes one record of topic (value "": a tombstone) as a batch
// of its own, and returns what the batch wrote, as the harness says.
func (h *joinHarness) push(tb testing.TB, topic, key, value string, ts int64) []string {
	tb.Helper()
	t := h.t
	r := rec{key: []byte(key), ts: ts, in: &kgo.Record{Topic: topic}}
	if value != "" {
		r.value = []byte(value)
	}
	t.begin()
	if err := t.push(context.Background(), t.plan.sources[topic], []rec{r}); err != nil {
		tb.Fatal(err)
	}
	for _, tx := range t.stores {
		if err := tx.Part.Apply(state.Writes(tx.Dirty)); err != nil {
			tb.Fatal(err)
		}
	}
	var out []string
	for _, o := range t.out {
		switch {
		case o.Topic == "out":
			out = append(out, fmt.Sprintf("%s=%s@%d", o.Key, text(o.Value), o.Timestamp.UnixMilli()))
		case strings.HasSuffix(o.Topic, "-repartition"):
			nv, ov, err := decodeChange(o.Value)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s:%s<-%s", o.Key, text(nv), text(ov)))
		}
	}
	return out
}

type joinStep struct {
	topic, key, value string
	ts                int64
	want              []string
}

func (h *joinHarness) run(t *testing.T, steps []joinStep) {
	t.Helper()
	for i, s := range steps {
		if got := h.push(t, s.topic, s.key, s.value, s.ts); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("step %d (%s %s=%q@%d): got %q, want %q", i+1, s.topic, s.key, s.value, s.ts, got, s.want)
		}
	}
}

// Each join kind's changes with old values (sent because the result is
// regrouped), as KTableKTableInnerJoinTest, KTableKTableLeftJoinTest and
// KTableKTableOuterJoinTest#testSendingOldValue(s) pin them: a change of
// either side joins with the other side's current row, its old value is
// the joiner over the change's old value, and the other side's processor of
// a left join (KTableKTableRightJoin) joins a deleted row with null.
func TestTableJoinChangesWithOldValues(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		newJoinHarness(t, topology.TableJoinOptions{}, true, nil).run(t, []joinStep{
			{"ta", "k0", "X0", 1, nil},
			{"tb", "k0", "Y0", 2, []string{"k0:X0+Y0<-null"}},
			{"ta", "k0", "XX0", 3, []string{"k0:XX0+Y0<-X0+Y0"}},
			{"tb", "k0", "YY0", 4, []string{"k0:XX0+YY0<-XX0+Y0"}},
			{"tb", "k0", "", 5, []string{"k0:null<-XX0+YY0"}},
			{"ta", "k0", "", 6, nil},
		})
	})
	t.Run("left", func(t *testing.T) {
		newJoinHarness(t, topology.TableJoinOptions{Left: true}, true, nil).run(t, []joinStep{
			{"ta", "k0", "X0", 1, []string{"k0:X0+null<-null"}},
			{"tb", "k0", "Y0", 2, []string{"k0:X0+Y0<-X0+null"}},
			{"tb", "k0", "", 3, []string{"k0:X0+null<-X0+Y0"}},
			{"ta", "k0", "", 4, []string{"k0:null<-X0+null"}},
			{"tb", "k1", "Y1", 5, nil},
		})
	})
	t.Run("outer", func(t *testing.T) {
		newJoinHarness(t, topology.TableJoinOptions{Outer: true}, true, nil).run(t, []joinStep{
			{"ta", "k0", "X0", 1, []string{"k0:X0+null<-null"}},
			{"tb", "k0", "Y0", 2, []string{"k0:X0+Y0<-X0+null"}},
			{"ta", "k0", "", 3, []string{"k0:null+Y0<-X0+Y0"}},
			{"tb", "k0", "", 4, []string{"k0:null<-null+Y0"}},
			{"tb", "k1", "Y1", 5, []string{"k1:null+Y1<-null"}},
		})
	})
}

// Without old values (nothing downstream asks): an inner join forwards a
// tombstone for a delete of this table's row whenever the other table
// holds the key, even one never joined (KTableKTableInnerJoin forwards
// Change(null, null)); timestamps are the later of both rows'.
func TestTableJoinInnerTombstonesAndTimestamps(t *testing.T) {
	newJoinHarness(t, topology.TableJoinOptions{}, false, nil).run(t, []joinStep{
		{"ta", "k0", "X0", 10, nil},
		{"tb", "k0", "Y0", 5, []string{"k0=X0+Y0@10"}},
		{"tb", "k0", "YY0", 20, []string{"k0=X0+YY0@20"}},
		{"ta", "k0", "", 15, []string{"k0=null@20"}},
		{"tb", "k1", "Y1", 30, nil},
		{"ta", "k1", "", 25, []string{"k1=null@30"}},
		{"ta", "k2", "", 40, nil},
	})
}

// A table feeding a table-table join does not hold its updates in the
// record cache (the other side reads its store); a materialized join's
// result does, as any materialized table.
func TestTableJoinInputsSkipTheRecordCache(t *testing.T) {
	h := newJoinHarness(t, topology.TableJoinOptions{Materialized: &topology.Materialized{StoreName: "joined"}}, false, map[string]string{"statestore.cache.max.bytes": "1048576"})
	var cached []string
	for _, s := range h.t.plan.cached {
		cached = append(cached, s.node.Name)
	}
	if fmt.Sprint(cached) != "[KTABLE-MERGE-0000000006]" {
		t.Errorf("cached steps %v, want only the merge", cached)
	}
	if got := h.push(t, "ta", "k0", "X0", 1); got != nil {
		t.Errorf("nothing to join yet: %q", got)
	}
	if got := h.push(t, "tb", "k0", "Y0", 2); got != nil {
		t.Errorf("the joined row waits in the cache, got %q", got)
	}
	h.t.begin()
	if err := h.t.flushCaches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(h.t.out[0].Topic, " ", string(h.t.out[0].Key), "=", string(h.t.out[0].Value)); len(h.t.out) != 1 || got != "out k0=X0+Y0" {
		t.Errorf("flushed %d records, first %s; want out k0=X0+Y0", len(h.t.out), got)
	}
}
