package streams_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// versionedJoin builds prices (versioned, history retention h) left-joined
// by orders, and a test driver over it.
func versionedJoin(t *testing.T, h time.Duration, props ...string) *streams.TestDriver {
	t.Helper()
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	prices, err := b.Table("prices", streams.Store("prices"), streams.Versioned(h))
	must(err)
	orders, err := b.Stream([]string{"orders"})
	must(err)
	priced, err := orders.LeftJoin(prices, func(order, price []byte) ([]byte, error) {
		if price == nil {
			return fmt.Appendf(nil, "%s@none", order), nil
		}
		return fmt.Appendf(nil, "%s@%s", order, price), nil
	})
	must(err)
	must(priced.To("priced"))
	p := map[string]string{}
	for i := 0; i+1 < len(props); i += 2 {
		p[props[i]] = props[i+1]
	}
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Properties: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func vpipe(t *testing.T, d *streams.TestDriver, topic, key string, value *string, ts int64) {
	t.Helper()
	var v []byte
	if value != nil {
		v = []byte(*value)
	}
	if err := d.PipeInput(topic, []byte(key), v, streams.Timestamp(ts)); err != nil {
		t.Fatal(err)
	}
}

func vstr(s string) *string { return &s }

func outputs(t *testing.T, d *streams.TestDriver, topic string) string {
	t.Helper()
	recs, err := d.ReadOutput(topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	return strings.Join(out, " ")
}

// versionedCluster starts a one-broker kfake cluster with topics (one
// partition each) and a client consuming out; they are closed, and ctx (2
// minutes) is cancelled, when the test ends.
func versionedCluster(t *testing.T, out string, topics ...string) (ctx context.Context, brokers string, cl *kgo.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, append(topics, out)...))
	must(err)
	t.Cleanup(cluster.Close)
	brokers = cluster.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cl, err = kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(out))
	must(err)
	t.Cleanup(cl.Close)
	return ctx, brokers, cl
}

// startVersionedApp starts application id on brokers: b (String keys and
// values) as build makes it, a fresh state directory, commits every 100 ms.
func startVersionedApp(ctx context.Context, t *testing.T, id, brokers string, build func(b *streams.Builder)) *streams.App {
	t.Helper()
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	build(b)
	app, err := streams.New(b, streams.Config{ApplicationID: id, Brokers: brokers,
		Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	must(app.Start(ctx))
	return app
}

// poll reads n records from cl, each as format writes it.
func poll(ctx context.Context, cl *kgo.Client, n int, format func(r *kgo.Record) string) []string {
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		must(fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, format(r)) })
	}
	return got
}

// keyValueAt is a record as "key=value@timestamp".
func keyValueAt(r *kgo.Record) string {
	return fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli())
}

// readChangelog reads a versioned store's changelog topic from its start
// until it has n records: "key=value@timestamp" (null for a tombstone),
// sorted.
func readChangelog(ctx context.Context, brokers, topic string, n int) string {
	lc, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	must(err)
	defer lc.Close()
	logged := poll(ctx, lc, n, func(r *kgo.Record) string {
		v := "null"
		if r.Value != nil {
			v = string(r.Value)
		}
		return fmt.Sprintf("%s=%s@%d", r.Key, v, r.Timestamp.UnixMilli())
	})
	slices.Sort(logged)
	return strings.Join(logged, " ")
}

// KIP-914: a stream record joins the table version valid at its own
// timestamp; an out-of-order table update changes the versions later
// records find, not what was joined already; an update older than the
// history retention is dropped.
func TestVersionedStreamTableJoin(t *testing.T) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) { versionedStreamTableJoin(t, guarantee) })
	}
}

func versionedStreamTableJoin(t *testing.T, guarantee string) {
	d := versionedJoin(t, 100*time.Millisecond, "processing.guarantee", guarantee)
	vpipe(t, d, "prices", "apple", vstr("3"), 10)
	vpipe(t, d, "prices", "apple", vstr("4"), 20)
	vpipe(t, d, "orders", "apple", vstr("o1"), 15) // joins the version of 10
	vpipe(t, d, "orders", "apple", vstr("o2"), 5)  // before any version
	vpipe(t, d, "orders", "apple", vstr("o3"), 25)
	vpipe(t, d, "prices", "apple", vstr("2"), 12) // out of order, in retention
	vpipe(t, d, "orders", "apple", vstr("o4"), 15)
	vpipe(t, d, "prices", "apple", nil, 30) // a tombstone is a version
	vpipe(t, d, "orders", "apple", vstr("o5"), 31)
	vpipe(t, d, "orders", "apple", vstr("o6"), 29)
	vpipe(t, d, "prices", "pear", vstr("9"), 200) // stream time 200: cut-off 100
	vpipe(t, d, "prices", "apple", vstr("7"), 50) // older than retention: dropped
	vpipe(t, d, "orders", "apple", vstr("o7"), 60)
	vpipe(t, d, "orders", "apple", vstr("o8"), 201)
	want := "apple=o1@3@15 apple=o2@none@5 apple=o3@4@25 apple=o4@2@15 apple=o5@none@31 apple=o6@4@29 apple=o7@none@60 apple=o8@none@201"
	if got := outputs(t, d, "priced"); got != want {
		t.Fatalf("joined:\n got %s\nwant %s", got, want)
	}

	s, err := d.GetVersionedStore("prices")
	must(err)
	for _, c := range []struct {
		asOf  int64 // -1: latest
		found bool
		want  streams.VersionedRecord
	}{
		{-1, true, streams.VersionedRecord{Value: []byte("9"), Timestamp: 200}},
		{250, true, streams.VersionedRecord{Value: []byte("9"), Timestamp: 200}},
		{199, false, streams.VersionedRecord{}},
	} {
		var got streams.VersionedRecord
		var ok bool
		if c.asOf < 0 {
			got, ok, err = s.Get([]byte("pear"))
		} else {
			got, ok, err = s.GetAsOf([]byte("pear"), c.asOf)
		}
		must(err)
		if ok != c.found || string(got.Value) != string(c.want.Value) || got.Timestamp != c.want.Timestamp || got.HasValidTo {
			t.Errorf("pear as of %d: got %+v %v, want %+v %v", c.asOf, got, ok, c.want, c.found)
		}
	}
	// apple's latest version is the tombstone of 30; reads as of before
	// the cut-off (100) find nothing, even where a version was valid.
	if _, ok, err := s.Get([]byte("apple")); err != nil || ok {
		t.Errorf("apple latest: found %v, err %v; want a tombstone (none)", ok, err)
	}
	if _, ok, err := s.GetAsOf([]byte("apple"), 25); err != nil || ok {
		t.Errorf("apple as of 25 (past the history retention): found %v, err %v; want none", ok, err)
	}
	if _, err := d.GetStore("prices"); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("GetStore on a versioned store: %v, want ErrInvalid", err)
	}
}

// Reads as of a time within the history retention find the version valid
// then, with its validTo.
func TestVersionedStoreGetAsOf(t *testing.T) {
	d := versionedJoin(t, time.Hour)
	vpipe(t, d, "prices", "fig", vstr("1"), 10)
	vpipe(t, d, "prices", "fig", vstr("3"), 30)
	vpipe(t, d, "prices", "fig", vstr("2"), 20)  // out of order
	vpipe(t, d, "prices", "fig", vstr("2b"), 20) // same timestamp: replaces
	s, err := d.GetVersionedStore("fig-missing")
	if !errors.Is(err, streams.ErrNotFound) || s != nil {
		t.Fatalf("an unknown store: %v", err)
	}
	s, err = d.GetVersionedStore("prices")
	must(err)
	for _, c := range []struct {
		asOf      int64
		want      string
		from, to  int64
		hasTo     bool
		wantFound bool
	}{
		{9, "", 0, 0, false, false},
		{10, "1", 10, 20, true, true},
		{19, "1", 10, 20, true, true},
		{20, "2b", 20, 30, true, true},
		{35, "3", 30, 0, false, true},
	} {
		got, ok, err := s.GetAsOf([]byte("fig"), c.asOf)
		must(err)
		if ok != c.wantFound || !ok {
			if ok != c.wantFound {
				t.Errorf("as of %d: found %v, want %v", c.asOf, ok, c.wantFound)
			}
			continue
		}
		if string(got.Value) != c.want || got.Timestamp != c.from || got.HasValidTo != c.hasTo || c.hasTo && got.ValidTo != c.to {
			t.Errorf("as of %d: got %+v, want %s valid %d..%d (%v)", c.asOf, got, c.want, c.from, c.to, c.hasTo)
		}
	}
}

// Versioned is for tables: elsewhere, and a versioned table read by an
// operator that is not a stream-table join or to_stream, are refused.
func TestVersionedRefused(t *testing.T) {
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	if _, err := b.Table("t0", streams.Versioned(time.Minute)); !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), "store name") {
		t.Errorf("versioned without a store name: %v", err)
	}
	if _, err := b.Table("t1", streams.Store("s1"), streams.SegmentInterval(time.Minute)); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("SegmentInterval without Versioned: %v", err)
	}
	tb, err := b.Table("t2", streams.Store("s2"), streams.Versioned(time.Minute))
	must(err)
	if _, err := tb.Filter(func(_, _ []byte) (bool, error) { return true, nil }); !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), `"s2" is versioned`) {
		t.Errorf("filter of a versioned table: %v", err)
	}
	s, err := b.Stream([]string{"in"})
	must(err)
	g, err := s.GroupByKey()
	must(err)
	if _, err := g.Count(streams.Store("c"), streams.Versioned(time.Minute)); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("a versioned count: %v", err)
	}
}

// A versioned store's changelog is Kafka Streams': each version a record
// of the plain key, the value (null for a tombstone) and the version's
// timestamp, on a compacted topic with min.compaction.lag.ms = history
// retention + 1 day. An instance with no local state restores every
// version from it, and joins as of a time with them.
func TestVersionedStoreChangelogAndRestore(t *testing.T) {
	ctx, brokers, cl := versionedCluster(t, "priced", "prices", "orders")
	start := func() *streams.App {
		return startVersionedApp(ctx, t, "vers", brokers, func(b *streams.Builder) {
			prices, err := b.Table("prices", streams.Store("prices"), streams.Versioned(time.Hour))
			must(err)
			orders, err := b.Stream([]string{"orders"})
			must(err)
			priced, err := orders.Join(prices, func(o, p []byte) ([]byte, error) { return fmt.Appendf(nil, "%s@%s", o, p), nil })
			must(err)
			must(priced.To("priced"))
		})
	}
	produce := func(topic, key string, value *string, ts int64) {
		var v []byte
		if value != nil {
			v = []byte(*value)
		}
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: v, Timestamp: time.UnixMilli(ts)}).FirstErr())
	}
	read := func(n int) []string { return poll(ctx, cl, n, keyValueAt) }

	app := start()
	produce("prices", "apple", vstr("3"), 10)
	produce("prices", "apple", vstr("4"), 30)
	produce("prices", "apple", vstr("2"), 20) // out of order
	produce("prices", "fig", vstr("7"), 10)
	produce("prices", "fig", nil, 25)
	produce("orders", "apple", vstr("o1"), 40) // later than every price: processed after them
	if got := strings.Join(read(1), " "); got != "apple=o1@4@40" {
		t.Fatalf("before the restart: %s", got)
	}
	must(app.Stop(ctx))

	// The changelog, as Kafka Streams writes a versioned store's.
	if got, want := readChangelog(ctx, brokers, "vers-prices-changelog", 5), "apple=2@20 apple=3@10 apple=4@30 fig=7@10 fig=null@25"; got != want {
		t.Errorf("changelog records: %s, want %s", got, want)
	}
	adm := kadm.NewClient(cl)
	cfgs, err := adm.DescribeTopicConfigs(ctx, "vers-prices-changelog")
	must(err)
	cfg, err := cfgs.On("vers-prices-changelog", nil)
	must(err)
	lag := ""
	for _, c := range cfg.Configs {
		if c.Key == "min.compaction.lag.ms" && c.Value != nil {
			lag = *c.Value
		}
	}
	if want := fmt.Sprint(time.Hour.Milliseconds() + 24*time.Hour.Milliseconds()); lag != want {
		t.Errorf("min.compaction.lag.ms = %q, want %s (history retention + 1 day)", lag, want)
	}

	// A new instance with empty state restores the versions.
	app = start()
	defer app.Stop(ctx)
	produce("orders", "apple", vstr("o2"), 25) // the version of 20
	produce("orders", "apple", vstr("o3"), 15) // the version of 10
	produce("orders", "fig", vstr("o4"), 20)   // 7, before its tombstone
	produce("orders", "fig", vstr("o5"), 30)   // deleted: none
	produce("orders", "apple", vstr("o6"), 50)
	if got := strings.Join(read(4), " "); got != "apple=o2@2@25 apple=o3@3@15 fig=o4@7@20 apple=o6@4@50" {
		t.Errorf("after the restore: %s", got)
	}
	r, err := app.GetVersioned("prices", []byte("apple"), streams.At(29), streams.StoreQueryParameters{})
	must(err)
	if !r.Found || string(r.Record.Value) != "2" || r.Record.Timestamp != 20 || !r.Record.HasValidTo || r.Record.ValidTo != 30 {
		t.Errorf("GetVersioned(apple, as of 29) = %+v, want 2 valid 20..30", r)
	}
	if r, err := app.GetVersioned("prices", []byte("fig"), streams.LatestVersion, streams.StoreQueryParameters{}); err != nil || r.Found {
		t.Errorf("GetVersioned(fig, latest) = %+v, %v; want none (a tombstone)", r, err)
	}
	if _, err := app.Get("prices", []byte("fig"), streams.StoreQueryParameters{}); !errors.Is(err, streams.ErrInvalid) {
		t.Errorf("Get on a versioned store: %v, want ErrInvalid", err)
	}
}

// A table materialized as versioned: an order joins the price valid at the
// order's own time, however late a newer price arrived.
func ExampleVersioned() {
	b := streams.NewBuilder(streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	prices, err := b.Table("prices", streams.Store("prices"), streams.Versioned(time.Hour))
	must(err)
	orders, err := b.Stream([]string{"orders"})
	must(err)
	priced, err := orders.Join(prices, func(order, price []byte) ([]byte, error) {
		return fmt.Appendf(nil, "%s at %s", order, price), nil
	})
	must(err)
	must(priced.To("priced"))
	d, err := streams.NewTestDriver(b, streams.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(err)
	defer d.Close()
	must(d.PipeInput("prices", []byte("apple"), []byte("3"), streams.Timestamp(1000)))
	must(d.PipeInput("prices", []byte("apple"), []byte("4"), streams.Timestamp(5000)))
	must(d.PipeInput("orders", []byte("apple"), []byte("o1"), streams.Timestamp(2000)))
	out, err := d.ReadOutput("priced")
	must(err)
	fmt.Printf("%s\n", out[0].Value)
	s, err := d.GetVersionedStore("prices")
	must(err)
	v, ok, err := s.GetAsOf([]byte("apple"), 4999)
	must(err)
	fmt.Printf("%v %s from %d to %d\n", ok, v.Value, v.Timestamp, v.ValidTo)
	// Output:
	// o1 at 3
	// true 3 from 1000 to 5000
}

// versionOps runs a versioned store's operations named by its records'
// values: "put:<v>" puts v as of the record's time, "del" deletes as of
// it, "get:<t>" forwards the version valid at t ("none" when there is
// none) and "latest" the latest one.
type versionOps struct{ s *streams.ProcessorStore }

func (p *versionOps) Init(ctx streams.ProcessorContext) (err error) {
	p.s, err = ctx.StateStore("history")
	return err
}

func (p *versionOps) Process(ctx streams.ProcessorContext, r streams.Record) error {
	op, arg, _ := strings.Cut(string(r.Value), ":")
	var v streams.VersionedRecord
	var found bool
	var err error
	switch op {
	case "put":
		_, err = p.s.VersionedPut(r.Key, []byte(arg), r.Timestamp)
		return err
	case "del":
		_, _, err = p.s.VersionedDelete(r.Key, r.Timestamp)
		return err
	case "get":
		var at int64
		if at, err = strconv.ParseInt(arg, 10, 64); err == nil {
			v, found, err = p.s.VersionedGetAsOf(r.Key, at)
		}
	case "latest":
		v, found, err = p.s.VersionedGet(r.Key)
	default:
		return fmt.Errorf("versionOps: unknown op %q", op)
	}
	if err != nil {
		return err
	}
	out := "none"
	if found {
		out = fmt.Sprintf("%s@%d", v.Value, v.Timestamp)
	}
	return ctx.Forward(r.WithValue([]byte(out)))
}

func (p *versionOps) Close() error { return nil }

// A processor's versioned store is logged as a table's is (one record per
// version, the version's time as the record's) and a new instance with
// no local state restores every version.
func TestProcessorVersionedStoreChangelogAndRestore(t *testing.T) {
	ctx, brokers, cl := versionedCluster(t, "answers", "ops")
	start := func() *streams.App {
		return startVersionedApp(ctx, t, "pvers", brokers, func(b *streams.Builder) {
			must(b.AddStateStore(streams.VersionedKeyValueStoreBuilder("history", time.Hour, streams.String, streams.String).WithSegmentInterval(time.Minute)))
			ops, err := b.Stream([]string{"ops"})
			must(err)
			answers, err := ops.Process(func() streams.Processor { return &versionOps{} }, streams.Stores("history"))
			must(err)
			must(answers.To("answers"))
		})
	}
	produce := func(key, value string, ts int64) {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "ops", Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ts)}).FirstErr())
	}
	read := func(n int) string {
		return strings.Join(poll(ctx, cl, n, func(r *kgo.Record) string { return fmt.Sprintf("%s=%s", r.Key, r.Value) }), " ")
	}

	app := start()
	produce("apple", "put:3", 10)
	produce("apple", "put:4", 30)
	produce("apple", "put:2", 20) // out of order: a version in the past
	produce("fig", "put:7", 10)
	produce("fig", "del", 25)
	produce("apple", "get:25", 40)
	if got := read(1); got != "apple=2@20" {
		t.Fatalf("before the restart: %s", got)
	}
	must(app.Stop(ctx))

	if got, want := readChangelog(ctx, brokers, "pvers-history-changelog", 5), "apple=2@20 apple=3@10 apple=4@30 fig=7@10 fig=null@25"; got != want {
		t.Errorf("changelog records: %s, want %s", got, want)
	}

	app = start()
	defer app.Stop(ctx)
	produce("apple", "get:15", 41)
	produce("apple", "latest", 42)
	produce("fig", "get:20", 43)
	produce("fig", "latest", 44)
	if got, want := read(4), "apple=3@10 apple=4@30 fig=7@10 fig=none"; got != want {
		t.Errorf("after the restore: %s, want %s", got, want)
	}
}

// A versioned store builder's refusals, and a versioned store is read only
// through the versioned calls.
func TestProcessorVersionedStoreRefused(t *testing.T) {
	b := streams.NewBuilder()
	for _, c := range []struct {
		s    streams.StoreBuilder
		want string
	}{
		{streams.VersionedKeyValueStoreBuilder("h", -time.Second, "", ""), `versioned store "h" has history retention -1000 ms; it cannot be negative`},
		{streams.KeyValueStoreBuilder("k", "", "").WithSegmentInterval(time.Minute), `store "k" is a key-value store; history retention and segment interval are for versioned stores`},
	} {
		if err := b.AddStateStore(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddStateStore: %v, want %q", err, c.want)
		}
	}
	must(b.AddStateStore(streams.VersionedKeyValueStoreBuilder("history", time.Hour, streams.String, streams.String)))
	in, err := b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	out, err := in.Process(func() streams.Processor { return plainGet{} }, streams.Stores("history"))
	must(err)
	must(out.To("out"))
	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "refused"})
	must(err)
	defer d.Close()
	err = d.PipeInput("in", []byte("k"), []byte("v"))
	if want := `get: store "history" of node KSTREAM-PROCESSOR-0000000001 is a versioned key-value store`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Get on a versioned store: %v, want %q", err, want)
	}
}

type plainGet struct{}

func (plainGet) Init(streams.ProcessorContext) error { return nil }
func (plainGet) Close() error                        { return nil }
func (plainGet) Process(ctx streams.ProcessorContext, r streams.Record) error {
	s, err := ctx.StateStore("history")
	if err != nil {
		return err
	}
	_, err = s.Get(r.Key)
	return err
}
