package server_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// keyed is one record to produce: a nil value is a tombstone.
type keyed struct {
	k string
	v []byte
}

func str(s string) []byte { return []byte(s) }

// produceKeyed writes records in order to partition 0 of topic, so that a
// table's changes reach the engine in one order.
func (e *env) produceKeyed(topic string, recs ...keyed) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		rs[i] = &kgo.Record{Key: []byte(r.k), Value: r.v, Partition: 0}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// updates reads topic into each key's values in order ("<nil>" for a
// tombstone), decoding values with dec, until it has n records.
func (e *env) updates(topic string, n int, dec func([]byte) string) map[string][]string {
	e.t.Helper()
	var got map[string][]string
	waitFor(e.t, fmt.Sprintf("%d records on %s", n, topic), 30*time.Second, func() bool {
		got = map[string][]string{}
		count := 0
		e.readTopic(topic, false, func(r *kgo.Record) {
			v := "<nil>"
			if r.Value != nil {
				v = dec(r.Value)
			}
			got[string(r.Key)] = append(got[string(r.Key)], v)
			count++
		})
		return count >= n
	})
	return got
}

func longText(b []byte) string { return strconv.FormatInt(decodeLong(b), 10) }

func sameUpdates(t *testing.T, got, want map[string][]string) {
	t.Helper()
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("key %s: updates %v, want %v", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s: %v", k, got[k])
		}
	}
}

// A grouped table's count follows the table's changes: a user moving from
// eu to us is removed from eu's count before being added to us's, and a
// tombstone removes its user (Kafka Streams' KTableRepartitionMap forwards
// the old pair first, then the new; KTableAggregate subtracts, then adds;
// a count that reaches zero stays, as 0).
func TestTableGroupByCountFollowsChanges(t *testing.T) {
	e := newEnv(t, "users", "region-counts")
	h := e.open("table-count", nil)
	region := h.register("region", kvFn(func(k, v []byte) ([]byte, []byte, error) { return v, k, nil }))
	users := h.mustBuild(&pb.TableOp{Topic: "users", KeySerde: "string", ValueSerde: "string", Materialized: &pb.Materialized{StoreName: "users-store"}})
	if users.Kind != pb.Kind_KIND_TABLE || users.Store != "users-store" {
		t.Fatalf("table handle %v, want a table with store users-store", users)
	}
	g := h.mustBuild(&pb.GroupByOp{Input: users.Id, Token: region})
	if g.Kind != pb.Kind_KIND_GROUPED_TABLE {
		t.Fatalf("group_by on a table made a %v", g.Kind)
	}
	c := h.mustBuild(&pb.CountOp{Input: g.Id, Materialized: &pb.Materialized{StoreName: "region-counts-store"}})
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: "region-counts"})
	h.start()
	done := h.serveAsync()
	e.produceKeyed("users",
		keyed{"u1", str("eu")}, keyed{"u2", str("eu")}, keyed{"u3", str("us")},
		keyed{"u1", str("us")}, // moves: eu -1, then us +1
		keyed{"u2", nil},       // deleted: eu -1
		keyed{"u9", nil},       // deleting a key that is not there changes nothing
		keyed{"u3", str("us")}, // same group: one change with both values, -1 +1
	)
	got := e.updates("region-counts", 7, longText)
	sameUpdates(t, got, map[string][]string{"eu": {"1", "2", "1", "0"}, "us": {"1", "2", "2"}})

	// The materialized table source is queryable; the tombstone deleted u2.
	resp, err := h.cl.Query(context.Background(), connect.NewRequest(&pb.QueryRequest{SessionId: h.session, Store: "users-store", Query: &pb.QueryRequest_All{All: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(resp.Msg.Keys), "u1u3"; got != want || string(resp.Msg.Values) != "usus" {
		t.Errorf("users-store holds keys %q values %q, want %q and %q", got, resp.Msg.Values, want, "usus")
	}
	h.stopServing(done)
}

// KTable.filter on a table whose old values nobody needs forwards a
// tombstone for each record that does not pass (KTableFilter with
// sendOldValues off), and KTable.mapValues maps new values, keeping
// tombstones.
func TestTableFilterAndMapValuesForwardTombstones(t *testing.T) {
	e := newEnv(t, "fruit", "a-fruit", "upper-fruit")
	h := e.open("table-filter", nil)
	startsA := h.register("starts_a", predicateFn(func(_, v []byte) (bool, error) { return bytes.HasPrefix(v, str("a")), nil }))
	upper := h.register("upper", valueFn(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }))
	fruit := h.mustBuild(&pb.TableOp{Topic: "fruit", KeySerde: "string", ValueSerde: "string"})
	f := h.mustBuild(&pb.FilterOp{Input: fruit.Id, Token: startsA})
	fs := h.mustBuild(&pb.ToStreamOp{Input: f.Id})
	h.mustBuild(&pb.ToOp{Input: fs.Id, Topic: "a-fruit"})
	m := h.mustBuild(&pb.MapValuesOp{Input: fruit.Id, Token: upper})
	if m.Kind != pb.Kind_KIND_TABLE {
		t.Fatalf("map_values on a table made a %v", m.Kind)
	}
	ms := h.mustBuild(&pb.ToStreamOp{Input: m.Id})
	h.mustBuild(&pb.ToOp{Input: ms.Id, Topic: "upper-fruit"})
	h.start()
	done := h.serveAsync()
	e.produceKeyed("fruit", keyed{"k1", str("apple")}, keyed{"k2", str("banana")}, keyed{"k1", str("avocado")}, keyed{"k3", nil}, keyed{"k1", nil})
	text := func(b []byte) string { return string(b) }
	sameUpdates(t, e.updates("a-fruit", 5, text), map[string][]string{"k1": {"apple", "avocado", "<nil>"}, "k2": {"<nil>"}, "k3": {"<nil>"}})
	sameUpdates(t, e.updates("upper-fruit", 5, text), map[string][]string{"k1": {"APPLE", "AVOCADO", "<nil>"}, "k2": {"BANANA"}, "k3": {"<nil>"}})
	h.stopServing(done)
}

// KGroupedTable reduce and aggregate with host adders and subtractors, and
// the built-in sum (which never crosses), keep per-region totals of
// accounts whose balances change, move and disappear.
func TestTableReduceAndAggregateWithSubtractors(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *testHost, g uint64) *pb.Handle
	}{
		{"host reduce", func(h *testHost, g uint64) *pb.Handle {
			add := h.register("add", reduceFn(func(a, v []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
			sub := h.register("sub", reduceFn(func(a, v []byte) ([]byte, error) { return long(decodeLong(a) - decodeLong(v)), nil }))
			return h.mustBuild(&pb.ReduceOp{Input: g, Token: add, SubtractorToken: sub})
		}},
		{"host aggregate", func(h *testHost, g uint64) *pb.Handle {
			zero := h.register("zero", initFn(func() ([]byte, error) { return long(0), nil }))
			add := h.register("add", aggFn(func(_, v, a []byte) ([]byte, error) { return long(decodeLong(a) + decodeLong(v)), nil }))
			sub := h.register("sub", aggFn(func(_, v, a []byte) ([]byte, error) { return long(decodeLong(a) - decodeLong(v)), nil }))
			return h.mustBuild(&pb.AggregateOp{Input: g, InitializerToken: zero, AggregatorToken: add, SubtractorToken: sub, Materialized: &pb.Materialized{ValueSerde: "long"}})
		}},
		{"built-in sum", func(h *testHost, g uint64) *pb.Handle {
			return h.mustBuild(&pb.ReduceOp{Input: g, Builtin: pb.Reducer_REDUCER_SUM})
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, out := fmt.Sprintf("accounts-%d", i), fmt.Sprintf("totals-%d", i)
			e := newEnv(t, in, out)
			h := e.open(fmt.Sprintf("table-fold-%d", i), nil)
			// "eu:5" -> key eu, value 5 (a long).
			split := h.register("split", kvFn(func(_, v []byte) ([]byte, []byte, error) {
				region, amount, _ := strings.Cut(string(v), ":")
				n, err := strconv.ParseInt(amount, 10, 64)
				return []byte(region), long(n), err
			}))
			accounts := h.mustBuild(&pb.TableOp{Topic: in, KeySerde: "string", ValueSerde: "string"})
			g := h.mustBuild(&pb.GroupByOp{Input: accounts.Id, Token: split, ValueSerde: "long"})
			ts := h.mustBuild(&pb.ToStreamOp{Input: c.build(h, g.Id).Id})
			h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
			h.start()
			done := h.serveAsync()
			e.produceKeyed(in,
				keyed{"a1", str("eu:5")}, keyed{"a2", str("eu:7")}, keyed{"a3", str("us:4")},
				keyed{"a1", str("eu:10")}, // eu: -5 +10 in one change
				keyed{"a2", str("us:1")},  // eu -7, us +1
				keyed{"a3", nil},          // us -4
			)
			sameUpdates(t, e.updates(out, 7, longText), map[string][]string{
				"eu": {"5", "12", "17", "10"},
				"us": {"4", "5", "1"},
			})
			h.stopServing(done)
			h.mu.Lock()
			defer h.mu.Unlock()
			// The mapper crosses with the old and new values of each change
			// (8 values); a host fold crosses with the 7 changes too.
			want := 8
			if c.name != "built-in sum" {
				want += 7
			}
			if h.records != want {
				t.Errorf("%d values crossed, want %d", h.records, want)
			}
		})
	}
}

// Bad table input gets named errors and the session survives.
func TestTableBadInput(t *testing.T) {
	e := newEnv(t, "t1", "t2", "s1")
	h := e.open("table-bad", nil)
	tok := h.register("f", predicateFn(func(_, _ []byte) (bool, error) { return true, nil }))
	tbl := h.mustBuild(&pb.TableOp{Topic: "t1", ValueSerde: "long"})
	st := h.mustBuild(&pb.StreamOp{Topics: []string{"s1"}})
	g := h.mustBuild(&pb.GroupByOp{Input: tbl.Id, Token: h.register("kv", kvFn(func(k, v []byte) ([]byte, []byte, error) { return k, v, nil }))})
	tests := []struct {
		name string
		op   any
		code connect.Code
		want []string
	}{
		{"table on a topic read already", &pb.TableOp{Topic: "s1"}, connect.CodeInvalidArgument, []string{"table", `"s1"`, "reads already"}},
		{"materialized filter on a stream", &pb.FilterOp{Input: st.Id, Token: tok, Materialized: &pb.Materialized{StoreName: "x"}}, connect.CodeInvalidArgument, []string{"filter", "materialized is for tables", "stream"}},
		{"aggregate without subtractor", &pb.AggregateOp{Input: g.Id, InitializerToken: tok, AggregatorToken: tok}, connect.CodeInvalidArgument, []string{"aggregate", "subtractor"}},
		{"subtractor on a grouped stream", &pb.ReduceOp{Input: st.Id, Token: tok, SubtractorToken: tok}, connect.CodeInvalidArgument, []string{"subtractor", "grouped tables", "stream"}},
		{"unregistered subtractor", &pb.ReduceOp{Input: g.Id, Token: tok, SubtractorToken: 999}, connect.CodeNotFound, []string{"token 999"}},
		{"built-in max on a grouped table", &pb.ReduceOp{Input: g.Id, Builtin: pb.Reducer_REDUCER_MAX}, connect.CodeInvalidArgument, []string{"max", "cannot remove"}},
		{"table with a non-compacted changelog", &pb.TableOp{Topic: "t2", Materialized: &pb.Materialized{StoreName: "t2-store", ChangelogConfig: map[string]string{"cleanup.policy": "delete"}}}, connect.CodeInvalidArgument, []string{"table", `cleanup.policy="delete"`, "must be compacted"}},
		{"count with a non-compacted changelog", &pb.CountOp{Input: g.Id, Materialized: &pb.Materialized{ChangelogConfig: map[string]string{"cleanup.policy": "delete"}}}, connect.CodeInvalidArgument, []string{"count", `cleanup.policy="delete"`}},
	}
	for _, tt := range tests {
		_, err := h.build(tt.op)
		if connect.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want code %v", tt.name, err, tt.code)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tt.name, err, w)
			}
		}
	}
	// The session survives: the sum over the table still builds.
	h.mustBuild(&pb.ReduceOp{Input: g.Id, Builtin: pb.Reducer_REDUCER_SUM})
}

// Materialized's changelog configs reach the changelog topic the engine
// creates, beside cleanup.policy=compact (compact,delete is a compacted
// changelog too, and allowed); read back with the admin API.
func TestTableChangelogConfig(t *testing.T) {
	e := newEnv(t, "accounts")
	h := e.open("table-config", nil)
	h.mustBuild(&pb.TableOp{Topic: "accounts", Materialized: &pb.Materialized{StoreName: "accounts-store", ChangelogConfig: map[string]string{
		"min.compaction.lag.ms": "60000", "cleanup.policy": "compact,delete",
	}}})
	h.start()
	done := h.serveAsync()
	defer h.stopServing(done)
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	topic := "table-config-accounts-store-changelog"
	got := map[string]string{}
	waitFor(t, "the changelog topic "+topic, 30*time.Second, func() bool {
		rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			return false
		}
		for _, c := range rcs[0].Configs {
			got[c.Key] = c.MaybeValue()
		}
		return true
	})
	for k, want := range map[string]string{"min.compaction.lag.ms": "60000", "cleanup.policy": "compact,delete"} {
		if got[k] != want {
			t.Errorf("%s: %s=%q, want %q", topic, k, got[k], want)
		}
	}
}
