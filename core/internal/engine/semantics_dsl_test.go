package engine_test

// The topology language of the semantics tests' `topology` directive
// (semantics_test.go runs them): Kafka Streams' DSL calls, one chain a
// line, over the engine's topology.Builder.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// buildTopology builds the topology a `topology` directive describes: one
// chain a line, "[name =] source | step | step ..." (steps separated by
// " | ", so that a function argument may hold a bare "|"). A source is
// "stream topic[,topic]", "table topic [store=name]" or an earlier chain's
// name; a chain's name stands for its last handle. Steps are Kafka Streams'
// DSL operators; F names a function of the catalogue
// (semantics_fns_test.go); store=S names a step's store and retention=N is
// its Materialized.withRetention:
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
var knownOpts = map[string]bool{"store": true, "retention": true, "size": true, "advance": true, "grace": true, "before": true, "after": true,
	"timeLimit": true, "maxRecords": true, "maxBytes": true, "full": true}

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

// suppress is suppress(untilWindowCloses(unbounded())), or with
// timeLimit=N untilTimeLimit; maxRecords=N and maxBytes=N bound the buffer
// (BufferConfig.maxRecords/maxBytes: emit early), full=shutdown shuts down
// when full instead.
func (b *dsl) suppress(h *topology.Handle, s step) (*topology.Handle, error) {
	sup := topology.UntilWindowCloses
	if _, ok := s.opts["timeLimit"]; ok {
		n, err := s.num("timeLimit")
		if err != nil {
			return nil, err
		}
		sup.TimeLimit = n
	}
	for key, to := range map[string]*int64{"maxRecords": &sup.MaxRecords, "maxBytes": &sup.MaxBytes} {
		if _, ok := s.opts[key]; ok {
			n, err := s.num(key)
			if err != nil {
				return nil, err
			}
			*to, sup.ShutDown = n, false
		}
	}
	if s.opts["full"] == "shutdown" {
		sup.ShutDown = true
	}
	return b.b.Suppress(h.ID, "", sup)
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
		return b.suppress(h, s)
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
