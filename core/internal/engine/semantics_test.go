package engine_test

// Operator semantics as data: every file under testdata/semantics is a
// datadriven script (github.com/cockroachdb/datadriven, as pebble's and
// cockroach's tests) that builds a topology, pipes records into it through
// the test driver (core/internal/testdriver: Kafka Streams'
// TopologyTestDriver semantics on an in-process broker, no external one)
// and prints what the topology wrote and what its stores hold. The cases are
// Kafka Streams' own tests written as data; each names the Kafka test method
// whose inputs and expected outputs it repeats. Regenerate the expected
// text with
//
//	go test ./core/internal/engine -run TestSemantics -rewrite
//
// and compare the diff with the Kafka test before committing it: a rewrite
// that disagrees with Kafka Streams is a bug in the engine, not in the file.
// The directives are documented in docs/testing.md ("Operator semantics as
// data").

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// semanticsTimeout bounds each directive's wait for the topology.
const semanticsTimeout = time.Minute

func TestSemantics(t *testing.T) {
	datadriven.Walk(t, "testdata/semantics", func(t *testing.T, path string) {
		s := &semantics{t: t}
		defer s.stop()
		datadriven.RunTest(t, path, s.run)
		s.endDivergence()
	})
}

// semantics is one file's state: the topology its last `topology`
// directive started, and that topology's driver.
type semantics struct {
	t    *testing.T
	topo *topology.Topology
	app  *engine.App
	td   *testdriver.Driver

	// divergence is the skip=... of the running case's topology: a known
	// difference from Kafka Streams. Its directives still run, but the
	// case keeps Kafka's expected text (a rewrite does not touch it);
	// diverged records whether the engine still differs, and where.
	divergence, divergencePos string
	diverged                  bool
}

func (s *semantics) run(t *testing.T, d *datadriven.TestData) string {
	s.t = t // a directive's argument errors fail the test that runs it
	if d.Cmd == "topology" {
		s.endDivergence()
		s.divergence, s.divergencePos, s.diverged = "", "", false
		if d.HasArg("skip") {
			d.ScanArgs(t, "skip", &s.divergence)
			s.divergencePos = d.Pos
		}
	}
	out, err := s.do(d)
	if err != nil {
		out = "error: " + err.Error() + "\n"
	}
	if s.divergence != "" {
		if out != d.Expected && !s.diverged {
			s.diverged = true
			t.Logf("%s: known divergence %q: got\n%s", d.Pos, s.divergence, out)
		}
		return d.Expected
	}
	return out
}

// endDivergence ends a case marked skip=...: it fails when the engine no
// longer differs from Kafka's expectations there, so that the mark is
// removed once the engine is fixed.
func (s *semantics) endDivergence() {
	if s.divergence == "" {
		return
	}
	if !s.diverged {
		s.t.Errorf("%s: the case is marked skip=%s (a known divergence from Kafka Streams) but the engine now matches Kafka's expectations: remove the mark", s.divergencePos, s.divergence)
	}
	s.divergence = ""
}

func (s *semantics) do(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "topology":
		return "", s.start(d)
	case "describe":
		if s.topo == nil {
			return "", fmt.Errorf("describe before topology")
		}
		return s.topo.Describe(), nil
	case "pipe":
		return s.pipe(d)
	case "output":
		return s.output(d)
	case "store":
		return s.store(d)
	case "dropped":
		if s.app == nil {
			return "", fmt.Errorf("dropped before topology")
		}
		return fmt.Sprintf("%d\n", s.app.DroppedRecords()), nil
	}
	return "", fmt.Errorf("unknown directive %q (known: topology, describe, pipe, output, store, dropped)", d.Cmd)
}

// start stops the running topology, if any, builds d's and starts it under
// a new test driver. Arguments: cache=on|off (statestore.cache.max.bytes
// 10 MiB or 0; default on, as in Kafka Streams), skip=REASON (a known
// divergence, see semantics.divergence).
func (s *semantics) start(d *datadriven.TestData) error {
	s.stop()
	props := map[string]string{}
	for _, a := range d.CmdArgs {
		switch {
		case a.Key == "cache" && len(a.Vals) == 1 && a.Vals[0] == "off":
			props["statestore.cache.max.bytes"] = "0"
		case a.Key == "cache" && len(a.Vals) == 1 && a.Vals[0] == "on":
		case a.Key == "skip": // run read it
		default:
			return fmt.Errorf("topology: unknown argument %s (known: cache=on|off, skip=REASON)", a)
		}
	}
	topo, err := buildTopology(d.Input)
	if err != nil {
		return err
	}
	td, kv, err := testdriver.New(props)
	if err != nil {
		return err
	}
	cfg, _, err := config.Parse("semantics", kv, "")
	if err != nil {
		td.Close()
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := engine.New(cfg, topo, nil)
	if err != nil {
		td.Close()
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), semanticsTimeout)
	defer cancel()
	if err := td.Start(ctx, app); err != nil {
		td.Close()
		return err
	}
	s.topo, s.app, s.td = topo, app, td
	return td.Ready(ctx)
}

func (s *semantics) stop() {
	if s.app != nil {
		ctx, cancel := context.WithTimeout(context.Background(), semanticsTimeout)
		defer cancel()
		if err := s.app.Stop(ctx); err != nil {
			s.t.Logf("stopping the topology: %v", err)
		}
	}
	if s.td != nil {
		s.td.Close()
	}
	s.topo, s.app, s.td = nil, nil, nil
}

// pipe writes one record per input line, "key:value@ts" (<null> for a null
// key or value), to topic=..., each processed completely before the next.
func (s *semantics) pipe(d *datadriven.TestData) (string, error) {
	var topic string
	d.ScanArgs(s.t, "topic", &topic)
	if s.td == nil {
		return "", fmt.Errorf("pipe before topology")
	}
	var recs []testdriver.Record
	for i, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kv, tsText, ok := cutLast(line, "@")
		k, v, ok2 := strings.Cut(kv, ":")
		ts, err := strconv.ParseInt(strings.TrimSpace(tsText), 10, 64)
		if !ok || !ok2 || err != nil {
			return "", fmt.Errorf("pipe: line %d %q is not key:value@ts", i+1, line)
		}
		recs = append(recs, testdriver.Record{Topic: topic, Key: nullable(k), Value: nullable(v), Timestamp: &ts})
	}
	ctx, cancel := context.WithTimeout(context.Background(), semanticsTimeout)
	defer cancel()
	_, failure, err := s.td.Pipe(ctx, recs)
	if err != nil {
		return "", err
	}
	if failure != nil {
		return "", failure
	}
	return "", nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func nullable(s string) []byte {
	if s == "<null>" {
		return nil
	}
	return []byte(s)
}

// output prints the records written to topic=... since its last output,
// one "key:value@ts" a line, decoded with the sinks' serdes (with sorted,
// by key text and then timestamp, with by-window by inner key and window
// start, as some Kafka tests sort before they compare); with latest,
// only the latest value per key, "key:value" in key order
// (TestOutputTopic.readKeyValuesToMap).
func (s *semantics) output(d *datadriven.TestData) (string, error) {
	var topic string
	d.ScanArgs(s.t, "topic", &topic)
	if s.td == nil {
		return "", fmt.Errorf("output before topology")
	}
	recs, serdes, err := s.td.Output(topic)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if d.HasArg("latest") {
		// TestOutputTopic.readKeyValuesToMap: the latest value per key.
		latest := map[string]string{}
		for _, r := range recs {
			latest[show(serdes[0], r.Key)] = show(serdes[1], r.Value)
		}
		for _, k := range slices.Sorted(maps.Keys(latest)) {
			fmt.Fprintf(&b, "%s:%s\n", k, latest[k])
		}
	} else {
		if d.HasArg("by-window") {
			// Kafka's windowed tests that sort by key, then window start.
			slices.SortStableFunc(recs, func(x, y *kgo.Record) int {
				xk, xs := windowOf(serdes[0], x.Key)
				yk, ys := windowOf(serdes[0], y.Key)
				if c := strings.Compare(xk, yk); c != 0 {
					return c
				}
				return cmp.Compare(xs, ys)
			})
		}
		if d.HasArg("sorted") {
			// Kafka's tests that sort what they read: by the key's text,
			// then timestamp, keeping the order written among equals.
			slices.SortStableFunc(recs, func(x, y *kgo.Record) int {
				if c := strings.Compare(show(serdes[0], x.Key), show(serdes[0], y.Key)); c != 0 {
					return c
				}
				return x.Timestamp.Compare(y.Timestamp)
			})
		}
		for _, r := range recs {
			fmt.Fprintf(&b, "%s:%s@%d\n", show(serdes[0], r.Key), show(serdes[1], r.Value), r.Timestamp.UnixMilli())
		}
	}
	if len(recs) == 0 {
		b.WriteString("(none)\n")
	}
	return b.String(), nil
}

// store prints the key-value store name=... as Pebble holds it: one
// "key:value@ts" a line in key order ("key:value" with no-ts).
func (s *semantics) store(d *datadriven.TestData) (string, error) {
	var name string
	d.ScanArgs(s.t, "name", &name)
	if s.app == nil {
		return "", fmt.Errorf("store before topology")
	}
	st, ok := s.topo.Stores[name]
	if !ok {
		return "", fmt.Errorf("store %q does not exist (stores: %s)", name, strings.Join(slices.Sorted(maps.Keys(s.topo.Stores)), ", "))
	}
	if st.Kind != topology.StoreKeyValue {
		return "", fmt.Errorf("store %q is not a key-value store; print its changes with output instead", name)
	}
	parts, err := s.app.StorePartitions(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if err := p.Scan(func(k, v []byte, ts int64) error {
			if d.HasArg("no-ts") {
				fmt.Fprintf(&b, "%s:%s\n", show(st.KeySerde, k), show(st.ValueSerde, v))
				return nil
			}
			fmt.Fprintf(&b, "%s:%s@%d\n", show(st.KeySerde, k), show(st.ValueSerde, v), ts)
			return nil
		}); err != nil {
			return "", err
		}
	}
	if b.Len() == 0 {
		b.WriteString("(empty)\n")
	}
	return b.String(), nil
}

// windowOf is a windowed key's inner key (as show prints it) and window
// start; a key that is not windowed is itself with start 0.
func windowOf(name string, b []byte) (string, int64) {
	inner, _, session, ok := serde.ParseWindowed(name)
	switch {
	case !ok:
	case session:
		if k, start, _, err := serde.SplitSessionWindowed(b); err == nil {
			return show(inner, k), start
		}
	default:
		if k, start, err := serde.SplitTimeWindowed(b); err == nil {
			return show(inner, k), start
		}
	}
	return show(name, b), 0
}

// show prints b as serde name encodes it: strings as they are, numbers in
// decimal, windowed keys as Kafka's Windowed.toString ("[key@start/end]"),
// null as <null>.
func show(name string, b []byte) string {
	if b == nil {
		return "<null>"
	}
	if inner, size, session, ok := serde.ParseWindowed(name); ok {
		if session {
			k, start, end, err := serde.SplitSessionWindowed(b)
			if err != nil {
				return fmt.Sprintf("<%v>", err)
			}
			return fmt.Sprintf("[%s@%d/%d]", show(inner, k), start, end)
		}
		k, start, err := serde.SplitTimeWindowed(b)
		if err != nil {
			return fmt.Sprintf("<%v>", err)
		}
		return fmt.Sprintf("[%s@%d/%d]", show(inner, k), start, start+size)
	}
	switch name {
	case serde.Long:
		if v, err := serde.DecodeLong(b); err == nil {
			return strconv.FormatInt(v, 10)
		}
	case serde.Integer:
		if len(b) == 4 {
			return strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(b))), 10)
		}
	}
	return string(b)
}

// buildTopology builds the topology a `topology` directive describes: one
// chain a line, "[name =] source | step | step ..." (steps separated by
// " | ", so that a function argument may hold a bare "|"). A source is
// "stream topic[,topic]", "table topic [store=name]" or an earlier chain's
// name; a chain's name stands for its last handle. Steps are Kafka Streams'
// DSL operators; F names a function of the catalogue below; store=S names a
// step's store and retention=N is its Materialized.withRetention:
//
//	mapValues F, filter F, filterNot F, flatMapValues F, map F, selectKey F,
//	merge NAME, split NAME=F ... [default=NAME] (last step; names the branches),
//	groupByKey, groupBy F, count [store=S], reduce F [F2] [store=S],
//	aggregate INIT F [F2] [store=S] (F2: a table aggregation's subtractor or
//	a session aggregation's merger),
//	windowedBy tumbling|hopping|sliding|session size=N [advance=N] [grace=N],
//	emitOnClose, suppress, toStream, toTable [store=S], to TOPIC,
//	join|leftJoin|outerJoin NAME F [before=N after=N grace=N] [store=S],
//	fkJoin|leftFkJoin NAME EXTRACTOR F.
//
// Sources read and sinks write string keys and values; count writes longs.
func buildTopology(text string) (*topology.Topology, error) {
	b := &dsl{b: topology.NewBuilder(), names: map[string]*topology.Handle{}}
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := b.chain(line); err != nil {
			return nil, fmt.Errorf("topology line %d %q: %w", i+1, line, err)
		}
	}
	return b.b.Topology()
}

type dsl struct {
	b     *topology.Builder
	names map[string]*topology.Handle
}

// step is one "op arg key=value ..." of a chain.
type step struct {
	op    string
	args  []string
	opts  map[string]string
	order []string // opts' keys as written
}

func parseStep(text string) step {
	f := strings.Fields(text)
	s := step{opts: map[string]string{}}
	if len(f) > 0 {
		s.op = f[0]
	}
	for _, a := range f[min(1, len(f)):] {
		if k, v, ok := strings.Cut(a, "="); ok {
			s.opts[k] = v
			s.order = append(s.order, k)
		} else {
			s.args = append(s.args, a)
		}
	}
	return s
}

// knownOpts are the key=value options a step (other than split, whose
// keys name its branches) may take.
var knownOpts = map[string]bool{"store": true, "retention": true, "size": true, "advance": true, "grace": true, "before": true, "after": true}

func (s step) unknownOpts() []string {
	var bad []string
	for _, k := range s.order {
		if !knownOpts[k] {
			bad = append(bad, k)
		}
	}
	return bad
}

func (s step) arg(i int) (string, error) {
	if i >= len(s.args) {
		return "", fmt.Errorf("%s needs %d argument(s), got %d", s.op, i+1, len(s.args))
	}
	return s.args[i], nil
}

func (s step) num(key string) (int64, error) {
	v, ok := s.opts[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %s=%q is not a number", s.op, key, v)
	}
	return n, nil
}

// materialized is the step's Materialized: store=S names the store,
// retention=N (ms) is withRetention; nil when neither is given and
// valueSerde is empty (Kafka's no-Materialized overload).
func (s step) materialized(valueSerde string) *topology.Materialized {
	name, named := s.opts["store"]
	retention, _ := strconv.ParseInt(s.opts["retention"], 10, 64)
	if !named && retention == 0 && valueSerde == "" {
		return nil
	}
	return &topology.Materialized{StoreName: name, ValueSerde: valueSerde, Retention: retention}
}

func (b *dsl) chain(line string) error {
	name := ""
	if n, rest, ok := strings.Cut(line, "="); ok && !strings.ContainsAny(n, "|") && len(strings.Fields(n)) == 1 {
		name, line = strings.TrimSpace(n), rest
	}
	parts := strings.Split(line, " | ")
	h, err := b.source(parseStep(parts[0]))
	if err != nil {
		return err
	}
	for i, p := range parts[1:] {
		st := parseStep(p)
		if st.op == "split" {
			if i != len(parts)-2 {
				return fmt.Errorf("split must be the chain's last step")
			}
			return b.split(h, st)
		}
		if bad := st.unknownOpts(); len(bad) > 0 {
			return fmt.Errorf("%s: unknown option(s) %s", st.op, strings.Join(bad, ", "))
		}
		if h, err = b.apply(h, st); err != nil {
			return fmt.Errorf("%s: %w", st.op, err)
		}
	}
	if name != "" && h != nil {
		b.names[name] = h
	}
	return nil
}

func (b *dsl) source(s step) (*topology.Handle, error) {
	switch s.op {
	case "stream":
		topics, err := s.arg(0)
		if err != nil {
			return nil, err
		}
		return b.b.Stream(topology.StreamOptions{Topics: strings.Split(topics, ","), KeySerde: serde.String, ValueSerde: serde.String})
	case "table":
		topic, err := s.arg(0)
		if err != nil {
			return nil, err
		}
		o := topology.TableOptions{Topic: topic, KeySerde: serde.String, ValueSerde: serde.String}
		if store, ok := s.opts["store"]; ok {
			o.Materialized = &topology.Materialized{StoreName: store}
		}
		return b.b.Table(o)
	}
	if h, ok := b.names[s.op]; ok && len(s.args) == 0 {
		return h, nil
	}
	return nil, fmt.Errorf("source %q is neither stream, table nor a named chain", s.op)
}

func (b *dsl) other(s step) (*topology.Handle, error) {
	n, err := s.arg(0)
	if err != nil {
		return nil, err
	}
	h, ok := b.names[n]
	if !ok {
		return nil, fmt.Errorf("no chain is named %q", n)
	}
	return h, nil
}

func (b *dsl) split(h *topology.Handle, s step) error {
	var branches []topology.Branch
	var names []string
	for _, k := range s.order {
		if k == "default" {
			continue
		}
		f, err := fn[topology.PredicateFunc](predicates, s.opts[k])
		if err != nil {
			return err
		}
		branches = append(branches, topology.Branch{Name: k, Predicate: f})
		names = append(names, k)
	}
	def, hasDefault := s.opts["default"]
	hs, err := b.b.Split(h.ID, "", branches, hasDefault, def)
	if err != nil {
		return err
	}
	if hasDefault {
		names = append(names, def)
	}
	if len(hs) != len(names) {
		return fmt.Errorf("split made %d branches for %d names", len(hs), len(names))
	}
	for i, n := range names {
		b.names[n] = hs[i]
	}
	return nil
}

func (b *dsl) apply(h *topology.Handle, s step) (*topology.Handle, error) {
	table := h.Kind == topology.KindTable
	switch s.op {
	case "mapValues":
		f, err := fnArg[topology.MapValuesFunc](mapValues, s, 0)
		if err != nil {
			return nil, err
		}
		if table {
			return b.b.TableMapValues(h.ID, f, "", s.materialized(""), "")
		}
		return b.b.MapValues(h.ID, f, "", "")
	case "filter", "filterNot":
		f, err := fnArg[topology.PredicateFunc](predicates, s, 0)
		if err != nil {
			return nil, err
		}
		switch {
		case table && s.op == "filter":
			return b.b.TableFilter(h.ID, f, s.materialized(""), "")
		case table:
			return b.b.TableFilterNot(h.ID, f, s.materialized(""), "")
		case s.op == "filter":
			return b.b.Filter(h.ID, f, "")
		}
		return b.b.FilterNot(h.ID, f, "")
	case "flatMapValues":
		f, err := fnArg[topology.FlatMapValuesFunc](flatMapValues, s, 0)
		if err != nil {
			return nil, err
		}
		return b.b.FlatMapValues(h.ID, f, "", "")
	case "map":
		f, err := fnArg[topology.MapFunc](mappers, s, 0)
		if err != nil {
			return nil, err
		}
		return b.b.Map(h.ID, f, "", "", "")
	case "selectKey":
		f, err := fnArg[topology.SelectKeyFunc](keySelectors, s, 0)
		if err != nil {
			return nil, err
		}
		return b.b.SelectKey(h.ID, f, "", "")
	case "merge":
		o, err := b.other(s)
		if err != nil {
			return nil, err
		}
		return b.b.Merge(h.ID, o.ID, "")
	case "groupByKey":
		return b.b.GroupByKey(h.ID, "", "", "")
	case "groupBy":
		if table {
			f, err := fnArg[topology.MapFunc](mappers, s, 0)
			if err != nil {
				return nil, err
			}
			return b.b.TableGroupBy(h.ID, f, "", "", "")
		}
		f, err := fnArg[topology.SelectKeyFunc](keySelectors, s, 0)
		if err != nil {
			return nil, err
		}
		return b.b.GroupBy(h.ID, f, "", "", "")
	case "count":
		if h.Kind == topology.KindGroupedTable {
			return b.b.TableCount(h.ID, s.materialized(""), "")
		}
		return b.b.Count(h.ID, s.materialized(""), "")
	case "reduce":
		f, err := fnArg[topology.ReduceFunc](reducers, s, 0)
		if err != nil {
			return nil, err
		}
		if h.Kind == topology.KindGroupedTable {
			sub, err := fnArg[topology.ReduceFunc](reducers, s, 1)
			if err != nil {
				return nil, err
			}
			return b.b.TableReduce(h.ID, f, sub, s.materialized(""), "")
		}
		return b.b.Reduce(h.ID, f, s.materialized(""), "")
	case "aggregate":
		init, err := fnArg[topology.InitializerFunc](initializers, s, 0)
		if err != nil {
			return nil, err
		}
		f, err := fnArg[topology.AggregateFunc](aggregators, s, 1)
		if err != nil {
			return nil, err
		}
		if h.Kind == topology.KindGroupedTable {
			sub, err := fnArg[topology.AggregateFunc](aggregators, s, 2)
			if err != nil {
				return nil, err
			}
			return b.b.TableAggregate(h.ID, init, f, sub, s.materialized(serde.String), "")
		}
		if h.Kind == topology.KindSessionWindowedStream {
			merger, err := fnArg[topology.AggregateFunc](aggregators, s, 2)
			if err != nil {
				return nil, err
			}
			return b.b.AggregateSessions(h.ID, init, f, merger, s.materialized(serde.String), "")
		}
		return b.b.Aggregate(h.ID, init, f, s.materialized(serde.String), "")
	case "windowedBy":
		return b.windowedBy(h, s)
	case "emitOnClose":
		return b.b.EmitStrategy(h.ID, true)
	case "suppress":
		return b.b.Suppress(h.ID, "")
	case "toStream":
		return b.b.ToStream(h.ID, "")
	case "toTable":
		return b.b.ToTable(h.ID, "", s.materialized(""))
	case "to":
		topic, err := s.arg(0)
		if err != nil {
			return nil, err
		}
		return nil, b.b.To(h.ID, topic, "", "", "")
	case "join", "leftJoin", "outerJoin":
		return b.join(h, s)
	case "fkJoin", "leftFkJoin":
		o, err := b.other(s)
		if err != nil {
			return nil, err
		}
		ex, err := fnArg[topology.MapValuesFunc](mapValues, s, 1)
		if err != nil {
			return nil, err
		}
		j, err := fnArg[topology.ValueJoinerFunc](joiners, s, 2)
		if err != nil {
			return nil, err
		}
		return b.b.ForeignKeyJoin(h.ID, o.ID, ex, j, s.op == "leftFkJoin", s.materialized(""), "", "")
	}
	return nil, fmt.Errorf("unknown step %q", s.op)
}

func (b *dsl) windowedBy(h *topology.Handle, s step) (*topology.Handle, error) {
	kind, err := s.arg(0)
	if err != nil {
		return nil, err
	}
	size, err := s.num("size")
	if err != nil {
		return nil, err
	}
	advance, err := s.num("advance")
	if err != nil {
		return nil, err
	}
	grace, err := s.num("grace")
	if err != nil {
		return nil, err
	}
	w := topology.Windows{Size: size, Grace: grace}
	switch kind {
	case "tumbling":
		w.Kind, w.Advance = topology.TimeWindows, size
	case "hopping":
		w.Kind, w.Advance = topology.TimeWindows, advance
	case "sliding":
		w.Kind = topology.SlidingWindows
	case "session":
		w.Kind = topology.SessionWindows
	default:
		return nil, fmt.Errorf("windows %q are not tumbling, hopping, sliding or session", kind)
	}
	return b.b.WindowedBy(h.ID, w)
}

func (b *dsl) join(h *topology.Handle, s step) (*topology.Handle, error) {
	o, err := b.other(s)
	if err != nil {
		return nil, err
	}
	j, err := fnArg[topology.ValueJoinerFunc](joiners, s, 1)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Kind == topology.KindStream && o.Kind == topology.KindStream:
		var w topology.JoinWindows
		for k, p := range map[string]*int64{"before": &w.Before, "after": &w.After, "grace": &w.Grace} {
			if *p, err = s.num(k); err != nil {
				return nil, err
			}
		}
		kind := map[string]topology.JoinKind{"join": topology.JoinInner, "leftJoin": topology.JoinLeft, "outerJoin": topology.JoinOuter}[s.op]
		return b.b.StreamJoin(h.ID, o.ID, j, topology.StreamJoinOptions{Kind: kind, Windows: &w})
	case h.Kind == topology.KindStream:
		if s.op == "outerJoin" {
			return nil, fmt.Errorf("a stream-table join is inner or left")
		}
		return b.b.Join(h.ID, o.ID, j, s.op == "leftJoin", "", "")
	}
	return b.b.TableJoin(h.ID, o.ID, j, topology.TableJoinOptions{Left: s.op == "leftJoin", Outer: s.op == "outerJoin", Materialized: s.materialized("")})
}

// The function catalogue: Go functions over string values, named as the
// Kafka tests' mocks they stand for (MockMapper, MockReducer,
// MockAggregator, MockInitializer, MockValueJoiner). A name may carry one
// argument after a colon ("suffix:!"). Numbers are decimal strings.
func fnArg[F any](catalogue map[string]func(arg string) F, s step, i int) (topology.Function, error) {
	name, err := s.arg(i)
	if err != nil {
		return topology.Function{}, err
	}
	return fn(catalogue, name)
}

func fn[F any](catalogue map[string]func(arg string) F, name string) (topology.Function, error) {
	base, arg, _ := strings.Cut(name, ":")
	mk, ok := catalogue[base]
	if !ok {
		return topology.Function{}, fmt.Errorf("function %q is not in the catalogue (known: %s)", base, strings.Join(slices.Sorted(maps.Keys(catalogue)), ", "))
	}
	return topology.Function{Name: name, Native: mk(arg)}, nil
}

// text is Java's string concatenation of a value: null prints "null".
func text(b []byte) string {
	if b == nil {
		return "null"
	}
	return string(b)
}

func decimal(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a decimal number", b)
	}
	return n, nil
}

var mapValues = map[string]func(string) topology.MapValuesFunc{
	// upper: String::toUpperCase.
	"upper": func(string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) { return []byte(strings.ToUpper(string(v))), nil }
	},
	// digit: value.charAt(0) - 48 (KTableMapValuesTest).
	"digit": func(string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			if len(v) == 0 {
				return nil, fmt.Errorf("value is empty")
			}
			return []byte(strconv.Itoa(int(v[0]) - 48)), nil
		}
	},
	// suffix:X appends X.
	"suffix": func(x string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) { return []byte(text(v) + x), nil }
	},
	// times:N multiplies a number by N.
	"times": func(x string) topology.MapValuesFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(v []byte) ([]byte, error) {
			d, err := decimal(v)
			return []byte(strconv.FormatInt(d*n, 10)), err
		}
	},
	// before:SEP is the part before the first SEP ("value.split(SEP)[0]");
	// after:SEP is the part after the first SEP (a foreign key extractor:
	// "value.split(SEP)[1]"); none when there is no SEP.
	"before": func(sep string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			fk, _, _ := strings.Cut(string(v), sep)
			return []byte(fk), nil
		}
	},
	// none: no foreign key (value -> null).
	"none": func(string) topology.MapValuesFunc {
		return func([]byte) ([]byte, error) { return nil, nil }
	},
	"after": func(sep string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			if _, fk, ok := strings.Cut(string(v), sep); ok {
				return []byte(fk), nil
			}
			return nil, nil
		}
	},
}

var predicates = map[string]func(string) topology.PredicateFunc{
	// even: value % 2 == 0 (KTableFilterTest's predicate).
	"even": func(string) topology.PredicateFunc {
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return d%2 == 0, err
		}
	},
	"odd": func(string) topology.PredicateFunc {
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return d%2 != 0, err
		}
	},
	// multipleOf:N: value % N == 0.
	"multipleOf": func(x string) topology.PredicateFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return n != 0 && d%n == 0, err
		}
	},
	// keyMultipleOf:N: key % N == 0 (KStreamFilterTest, KStreamSplitTest).
	"keyMultipleOf": func(x string) topology.PredicateFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(k, _ []byte) (bool, error) {
			d, err := decimal(k)
			return n != 0 && d%n == 0, err
		}
	},
	// keyNegative: key < 0.
	"keyNegative": func(string) topology.PredicateFunc {
		return func(k, _ []byte) (bool, error) {
			d, err := decimal(k)
			return d < 0, err
		}
	},
	// keyStartsWith:X.
	"keyStartsWith": func(x string) topology.PredicateFunc {
		return func(k, _ []byte) (bool, error) { return strings.HasPrefix(string(k), x), nil }
	},
}

var flatMapValues = map[string]func(string) topology.FlatMapValuesFunc{
	// words: value.split(" ").
	"words": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			var out [][]byte
			for _, w := range strings.Fields(string(v)) {
				out = append(out, []byte(w))
			}
			return out, nil
		}
	},
	// lowerUpper: "v" + value, "V" + value (KStreamFlatMapValuesTest).
	"lowerUpper": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			return [][]byte{[]byte("v" + text(v)), []byte("V" + text(v))}, nil
		}
	},
	// upTo: the numbers 0 .. value-1 (KStreamFlatMapValuesTest's mapper
	// makes value copies; this makes the count visible).
	"upTo": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			d, err := decimal(v)
			var out [][]byte
			for i := int64(0); i < d; i++ {
				out = append(out, []byte(strconv.FormatInt(i, 10)))
			}
			return out, err
		}
	},
}

var mappers = map[string]func(string) topology.MapFunc{
	// noop: KeyValue.pair(key, value) (MockMapper.noOpKeyValueMapper).
	"noop": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) { return k, v, nil }
	},
	// swap: KeyValue.pair(value, key) (KStreamMapTest).
	"swap": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) { return v, k, nil }
	},
	// byValue: KeyValue.pair(value, value) (MockMapper.selectValueKeyValueMapper).
	"byValue": func(string) topology.MapFunc {
		return func(_, v []byte) ([]byte, []byte, error) { return v, v, nil }
	},
	// byValueNullKeys: byValue, except that key "null" maps to a null key
	// and key "NULL" to a null pair (KTableAggregateTest.testAggRepartition;
	// a Go MapFunc has no null pair, so it is a null key and value here:
	// both are dropped by the grouping).
	"byValueNullKeys": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) {
			switch string(k) {
			case "null":
				return nil, v, nil
			case "NULL":
				return nil, nil, nil
			}
			return v, v, nil
		}
	},
	// keyChars: KeyValue.pair(key.charAt(0), key.charAt(1))
	// (KTableAggregateTest.testRemoveOldBeforeAddNew).
	"keyChars": func(string) topology.MapFunc {
		return func(k, _ []byte) ([]byte, []byte, error) {
			if len(k) < 2 {
				return nil, nil, fmt.Errorf("key %q has fewer than 2 characters", k)
			}
			return k[:1], k[1:2], nil
		}
	},
	// letterIndex: KeyValue.pair(key.charAt(0) - 'A', value) (an Integer
	// key in Kafka's test; its decimal text here).
	"letterIndex": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) {
			if len(k) == 0 {
				return nil, nil, fmt.Errorf("key is empty")
			}
			return []byte(strconv.Itoa(int(k[0]) - 'A')), v, nil
		}
	},
	// keyPrefix:N: KeyValue.pair(key.substring(0, N), value).
	"keyPrefix": func(x string) topology.MapFunc {
		n, _ := strconv.Atoi(x)
		return func(k, v []byte) ([]byte, []byte, error) { return k[:min(n, len(k))], v, nil }
	},
}

var keySelectors = map[string]func(string) topology.SelectKeyFunc{
	// key: the key stays ((k, v) -> k).
	"key": func(string) topology.SelectKeyFunc {
		return func(k, _ []byte) ([]byte, error) { return k, nil }
	},
	// value: the value is the key (MockMapper.selectValueMapper).
	"value": func(string) topology.SelectKeyFunc {
		return func(_, v []byte) ([]byte, error) { return v, nil }
	},
	// keyPrefix:N: key.substring(0, N).
	"keyPrefix": func(x string) topology.SelectKeyFunc {
		n, _ := strconv.Atoi(x)
		return func(k, _ []byte) ([]byte, error) { return k[:min(n, len(k))], nil }
	},
}

var reducers = map[string]func(string) topology.ReduceFunc{
	// concat: value1 + "+" + value2 (MockReducer.STRING_ADDER).
	"concat": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return []byte(text(a) + "+" + text(v)), nil }
	},
	// unconcat: value1 + "-" + value2 (MockReducer.STRING_REMOVER).
	"unconcat": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return []byte(text(a) + "-" + text(v)), nil }
	},
	// sum and minus: numbers.
	"sum": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return arith(a, v, 1) }
	},
	"minus": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return arith(a, v, -1) }
	},
}

func arith(a, v []byte, sign int64) ([]byte, error) {
	x, err := decimal(a)
	if err != nil {
		return nil, err
	}
	y, err := decimal(v)
	if err != nil {
		return nil, err
	}
	return []byte(strconv.FormatInt(x+sign*y, 10)), nil
}

var initializers = map[string]func(string) topology.InitializerFunc{
	// empty: "" (() -> "").
	"empty": func(string) topology.InitializerFunc {
		return func() ([]byte, error) { return []byte{}, nil }
	},
	// zero: "0" (MockInitializer.STRING_INIT).
	"zero": func(string) topology.InitializerFunc {
		return func() ([]byte, error) { return []byte("0"), nil }
	},
}

var aggregators = map[string]func(string) topology.AggregateFunc{
	// adder: aggregate + "+" + value (MockAggregator.TOSTRING_ADDER).
	"adder": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + "+" + text(v)), nil }
	},
	// merge: aggOne + "+" + aggTwo (SessionWindowedKStreamImplTest's
	// sessionMerger; the engine passes the sessions as value and aggregate).
	"merge": func(string) topology.AggregateFunc {
		return func(_, one, two []byte) ([]byte, error) { return []byte(text(one) + "+" + text(two)), nil }
	},
	// append: aggregate + value.
	"append": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + text(v)), nil }
	},
	// removeAll: aggregate.replaceAll(value, "").
	"removeAll": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(strings.ReplaceAll(text(a), text(v), "")), nil }
	},
	// remover: aggregate + "-" + value (MockAggregator.TOSTRING_REMOVER).
	"remover": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + "-" + text(v)), nil }
	},
}

var joiners = map[string]func(string) topology.ValueJoinerFunc{
	// tuple: "(" + value1 + "," + value2 + ")" (the foreign-key join tests').
	"tuple": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte("(" + text(v) + "," + text(o) + ")"), nil }
	},
	// percent: p1 + "%" + p2 (KStreamWindowAggregateTest.testJoin).
	"percent": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte(text(v) + "%" + text(o)), nil }
	},
	// pair: value1 + "+" + value2 (MockValueJoiner.TOSTRING_JOINER).
	"pair": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte(text(v) + "+" + text(o)), nil }
	},
}
