package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// goLang is Go, the reference: the case is built through the engine's
// public Go API (core/streams) in the runner's process, its functions native
// Go over bytes, so nothing crosses.
type goLang struct{}

func (goLang) Name() string { return "go" }

func (goLang) Launch(s spec) (execution, error) {
	e := &goExec{events: make(chan event, 8), stop: make(chan struct{}), log: &tail{max: 4096}}
	go e.run(s)
	return e, nil
}

type goExec struct {
	events   chan event
	stop     chan struct{}
	stopOnce sync.Once
	log      *tail
	// td is the test driver in test driver mode (set before "started").
	td *streams.TestDriver
	// printed receives what print steps write.
	printed lines
}

// lines is an io.Writer keeping the complete lines written to it; safe for
// concurrent use.
type lines struct {
	mu      sync.Mutex // guards partial and done
	partial []byte
	done    []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.done = append(l.done, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.done)
}

// driver is the execution's test driver (test driver mode).
func (e *goExec) driver() driven { return goDriver{e.td} }

// goDriver drives the Go executor's streams.TestDriver.
type goDriver struct{ td *streams.TestDriver }

func (d goDriver) Pipe(_ context.Context, recs []*kgo.Record) (*event, error) {
	for _, r := range recs {
		opts := []streams.PipeOption{streams.Timestamp(r.Timestamp.UnixMilli())}
		for _, h := range r.Headers {
			opts = append(opts, streams.WithHeader(h.Key, h.Value))
		}
		err := d.td.PipeInput(r.Topic, r.Key, r.Value, opts...)
		var re *streams.RecordError
		switch {
		case errors.As(err, &re):
			return &event{Event: "failed", Code: "aborted", Message: err.Error(), Topic: re.Topic, Partition: re.Partition, Offset: re.Offset, Node: re.Node}, nil
		case err != nil:
			return nil, err
		}
	}
	return nil, nil
}

func (d goDriver) AdvanceWallClock(_ context.Context, ms int64) error {
	_, err := d.td.AdvanceWallClock(time.Duration(ms) * time.Millisecond)
	return err
}

func (d goDriver) Read(_ context.Context, topic string) ([]*kgo.Record, error) {
	recs, err := d.td.ReadOutput(topic)
	if err != nil {
		return nil, err
	}
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}
		for _, h := range r.Headers {
			out[i].Headers = append(out[i].Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	return out, nil
}

// runDriven runs the built topology in a streams.TestDriver; the runner
// pipes and reads through driver().
func (e *goExec) runDriven(s spec, b *streams.Builder) {
	td, err := streams.NewTestDriver(b, streams.Config{
		ApplicationID: s.ApplicationID, Properties: s.Config,
		Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		e.events <- event{Event: "failed", Code: goCode(err), Message: err.Error()}
		<-e.stop
		return
	}
	e.td = td
	e.events <- event{Event: "started"}
	<-e.stop
	e.events <- event{Event: "dropped_records", Count: td.DroppedRecords()}
	td.Close()
	e.events <- event{Event: "stopped"}
}

func (e *goExec) Events() <-chan event { return e.events }
func (e *goExec) Stop()                { e.stopOnce.Do(func() { close(e.stop) }) }
func (e *goExec) Kill()                { e.Stop() }
func (e *goExec) Diagnostics() string  { return e.log.String() }
func (e *goExec) Printed() []string    { return e.printed.get() }

func (e *goExec) run(s spec) {
	defer close(e.events)
	b, step, err := buildGo(s.c, s.TopicPrefix, &e.printed)
	if err != nil {
		e.events <- event{Event: "build_error", Step: step, Code: goCode(err), Message: err.Error()}
		<-e.stop
		return
	}
	text, err := b.Describe()
	if err != nil {
		e.events <- event{Event: "build_error", Step: len(s.c.Topology), Code: goCode(err), Message: err.Error()}
		<-e.stop
		return
	}
	e.events <- event{Event: "built", Describe: text}
	if !s.Start {
		<-e.stop
		return
	}
	if s.Config["polystreams.test.driver"] == "true" {
		e.runDriven(s, b)
		return
	}
	app, err := streams.New(b, streams.Config{
		ApplicationID: s.ApplicationID, Brokers: s.brokers, Properties: s.Config,
		Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		e.events <- event{Event: "failed", Code: goCode(err), Message: err.Error()}
		<-e.stop
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		e.events <- event{Event: "failed", Code: "failed_precondition", Message: err.Error()}
		<-e.stop
		return
	}
	e.events <- event{Event: "started"}
	select {
	case <-e.stop:
		e.events <- event{Event: "dropped_records", Count: app.DroppedRecords()}
		app.Stop(ctx)
		e.events <- event{Event: "stopped"}
	case <-app.Done():
		_, err := app.State()
		ev := event{Event: "failed", Code: "aborted", Message: fmt.Sprint(err)}
		var re *streams.RecordError
		if errors.As(err, &re) {
			ev.Topic, ev.Partition, ev.Offset, ev.Node = re.Topic, re.Partition, re.Offset, re.Node
		}
		if err == nil {
			ev = event{Event: "stopped"}
		}
		e.events <- ev
		<-e.stop
	}
}

func goCode(err error) string {
	switch {
	case errors.Is(err, streams.ErrNotFound):
		return "not_found"
	case errors.Is(err, streams.ErrInvalid):
		return "invalid_argument"
	}
	return "unknown"
}

// buildGo replays the case's steps on a streams.Builder. On a refused step
// it returns the step's index.
func buildGo(c *Case, prefix string, printer io.Writer) (*streams.Builder, int, error) {
	b := streams.NewBuilder()
	labels := map[string]any{}
	var prev any
	for i, st := range c.Topology {
		in := prev
		if st.From != "" {
			in = labels[st.From]
		}
		if st.Branch != "" {
			in = in.(map[string]*streams.Stream)[st.Branch]
		}
		out, err := goStep(b, st, in, prefix, labels, printer)
		if err != nil {
			return nil, i, err
		}
		if st.Op == "split" { // reached only through its label
			labels[st.As] = out
			continue
		}
		if out != nil {
			prev = out
			if st.As != "" {
				labels[st.As] = out
			}
		}
	}
	return b, 0, nil
}

// sourceOpts are a stream's or table's options: opts, and its
// Consumed.withTimestampExtractor.
func sourceOpts(st Step) []streams.Option {
	o := opts(st, true, true)
	if st.TimestampExtractor != "" {
		o = append(o, streams.BuiltinTimestampExtractor(st.TimestampExtractor))
	}
	if f := st.TimestampExtractorFn; f != nil {
		o = append(o, streams.TimestampExtractor(extractFn(catalogue[f.Name], f.Arg, st.Key, st.Value)))
	}
	return o
}

// extractFn is a catalogue extractor as a TimestampExtractorFunc over the
// source's serdes.
func extractFn(f fnImpl, arg any, ks, vs string) streams.TimestampExtractorFunc {
	return func(r streams.ExtractorRecord, partitionTime int64) (int64, error) {
		k, v, err := decodeKV(ks, vs, r.Key, r.Value)
		if err != nil {
			return 0, err
		}
		return f.extract(arg, k, v, r.Timestamp, partitionTime)
	}
}

func opts(st Step, key, value bool) []streams.Option {
	var o []streams.Option
	if st.Name != "" {
		o = append(o, streams.Name(st.Name))
	}
	if key && st.Key != "" {
		o = append(o, streams.KeySerde(st.Key))
	}
	if value && st.Value != "" {
		o = append(o, streams.ValueSerde(st.Value))
	}
	if m := st.Materialized; m != nil {
		if m.Store != "" {
			o = append(o, streams.Store(m.Store))
		}
		if m.Key != "" || m.Value != "" || m.Store == "" {
			o = append(o, streams.StoreSerdes(m.Key, m.Value))
		}
		if m.RetentionMs != 0 {
			o = append(o, streams.Retention(time.Duration(m.RetentionMs)*time.Millisecond))
		}
		if v := m.Versioned; v != nil {
			o = append(o, streams.Versioned(time.Duration(v.HistoryRetentionMs)*time.Millisecond))
			if v.SegmentIntervalMs != 0 {
				o = append(o, streams.SegmentInterval(time.Duration(v.SegmentIntervalMs)*time.Millisecond))
			}
		}
	}
	return o
}

// goJoinWindows is a stream-stream join's windows.
func goJoinWindows(jw *JoinWindows) streams.JoinWindows {
	d := time.Duration(jw.TimeDifferenceMs) * time.Millisecond
	var grace time.Duration
	if jw.GraceMs != nil {
		grace = time.Duration(*jw.GraceMs) * time.Millisecond
	}
	w := streams.JoinTimeDifference(d, grace)
	if jw.BeforeMs != nil {
		w = w.Before(time.Duration(*jw.BeforeMs) * time.Millisecond)
	}
	if jw.AfterMs != nil {
		w = w.After(time.Duration(*jw.AfterMs) * time.Millisecond)
	}
	return w
}

// goWindows is windowed_by's windows (no grace_ms: 0, as the
// ...WithNoGrace factories).
func goWindows(w *Windows) streams.Windows {
	d := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	var grace time.Duration
	if w.GraceMs != nil {
		grace = d(*w.GraceMs)
	}
	switch w.Type {
	case "sliding":
		return streams.SlidingWindows(d(w.TimeDifferenceMs), grace)
	case "session":
		return streams.SessionWindows(d(w.InactivityGapMs), grace)
	}
	if w.AdvanceMs != nil {
		return streams.HoppingWindows(d(w.SizeMs), d(*w.AdvanceMs), grace)
	}
	return streams.TumblingWindows(d(w.SizeMs), grace)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// goStep performs one step; it returns nil (and no error) for a terminal
// step.
func goStep(b *streams.Builder, st Step, in any, prefix string, labels map[string]any, printer io.Writer) (any, error) {
	if st.Op == "stream" {
		topics := make([]string, len(st.Topics))
		for i, t := range st.Topics {
			topics[i] = prefix + t
		}
		return b.Stream(topics, sourceOpts(st)...)
	}
	if st.Op == "table" {
		return b.Table(prefix+st.Topic, sourceOpts(st)...)
	}
	if st.Op == "add_state_store" {
		labels[storeLabel+st.Name] = [2]string{st.Key, st.Value}
		if v := st.Versioned; v != nil {
			sb := streams.VersionedKeyValueStoreBuilder(st.Name, time.Duration(v.HistoryRetentionMs)*time.Millisecond, st.Key, st.Value)
			if v.SegmentIntervalMs != 0 {
				sb = sb.WithSegmentInterval(time.Duration(v.SegmentIntervalMs) * time.Millisecond)
			}
			return nil, b.AddStateStore(sb)
		}
		return nil, b.AddStateStore(streams.KeyValueStoreBuilder(st.Name, st.Key, st.Value))
	}
	if st.Op == "global_table" {
		return b.GlobalTable(prefix+st.Topic, opts(st, true, true)...)
	}
	var f fnImpl
	var arg any
	if st.Fn != nil {
		f, arg = catalogue[st.Fn.Name], st.Fn.Arg
	}
	switch in := in.(type) {
	case *streams.Stream:
		ks, vs := in.KeySerde(), in.ValueSerde()
		switch st.Op {
		case "process", "process_values":
			return goProcess(in, st, labels)
		case "map_values":
			return in.MapValues(mapperFn(f, arg, vs, or(st.Value, vs)), opts(st, false, true)...)
		case "flat_map_values":
			return in.FlatMapValues(flatFn(f, arg, vs, or(st.Value, vs)), opts(st, false, true)...)
		case "map_values_with_key":
			return in.MapValuesWithKey(mapperKFn(f, arg, ks, vs, or(st.Value, vs)), opts(st, false, true)...)
		case "flat_map_values_with_key":
			return in.FlatMapValuesWithKey(flatKFn(f, arg, ks, vs, or(st.Value, vs)), opts(st, false, true)...)
		case "flat_map":
			return in.FlatMap(flatKVFn(f, arg, ks, vs, or(st.Key, ks), or(st.Value, vs)), opts(st, true, true)...)
		case "filter":
			return in.Filter(predFn(f, arg, ks, vs), opts(st, false, false)...)
		case "filter_not":
			return in.FilterNot(predFn(f, arg, ks, vs), opts(st, false, false)...)
		case "map":
			return in.Map(kvFn(f, arg, ks, vs, or(st.Key, ks), or(st.Value, vs)), opts(st, true, true)...)
		case "select_key":
			return in.SelectKey(keyFn(f, arg, ks, vs, or(st.Key, ks)), opts(st, true, false)...)
		case "group_by":
			return in.GroupBy(keyFn(f, arg, ks, vs, or(st.Key, ks)), opts(st, true, true)...)
		case "group_by_key":
			return in.GroupByKey(opts(st, true, true)...)
		case "peek":
			return in.Peek(actionFn(f, arg, ks, vs), opts(st, false, false)...)
		case "foreach":
			return nil, in.Foreach(actionFn(f, arg, ks, vs), opts(st, false, false)...)
		case "print":
			return nil, in.Print(streams.Printed{Writer: printer, Label: st.Label}, opts(st, false, false)...)
		case "to":
			if st.Extract == "key" {
				topic := prefix + st.Topic
				return nil, in.ToExtractor(func(k, _ []byte, _ streams.RecordContext) (string, error) {
					return topic + string(k), nil
				}, "topic_by_key", opts(st, true, true)...)
			}
			return nil, in.To(prefix+st.Topic, opts(st, true, true)...)
		case "to_table":
			return in.ToTable(opts(st, false, false)...)
		case "merge":
			return in.Merge(labels[st.Other].(*streams.Stream), opts(st, false, false)...)
		case "repartition":
			return in.Repartition(st.Partitions, opts(st, false, false)...)
		case "split":
			branches := make([]streams.Branch, len(st.Branches))
			for i, br := range st.Branches {
				branches[i] = streams.Branch{Name: br.Name, Predicate: predFn(catalogue[br.Fn.Name], br.Fn.Arg, ks, vs)}
			}
			return in.Split(branches, st.DefaultBranch, st.DefaultName, opts(st, false, false)...)
		case "join", "left_join", "outer_join":
			if st.Other != "" {
				other := labels[st.Other].(*streams.Stream)
				j := joiner(st, joinerFn(f, arg, vs, other.ValueSerde(), or(st.Value, vs)))
				o := opts(st, false, true)
				if st.StoreName != "" {
					o = append(o, streams.Store(st.StoreName))
				}
				w := goJoinWindows(st.JoinWindows)
				switch st.Op {
				case "join":
					return in.JoinStream(other, j, w, o...)
				case "left_join":
					return in.LeftJoinStream(other, j, w, o...)
				}
				return in.OuterJoinStream(other, j, w, o...)
			}
			if g, ok := labels[st.Table].(*streams.GlobalTable); ok && st.KeyMapper != nil {
				km := keyFn(catalogue[st.KeyMapper.Name], st.KeyMapper.Arg, ks, vs, g.KeySerde())
				j := joiner(st, joinerFn(f, arg, vs, g.ValueSerde(), or(st.Value, vs)))
				if st.Op == "join" {
					return in.JoinGlobal(g, km, j, opts(st, false, true)...)
				}
				return in.LeftJoinGlobal(g, km, j, opts(st, false, true)...)
			}
			table := labels[st.Table].(*streams.Table)
			j := joiner(st, joinerFn(f, arg, vs, table.ValueSerde(), or(st.Value, vs)))
			if st.Op == "join" {
				return in.Join(table, j, opts(st, false, true)...)
			}
			return in.LeftJoin(table, j, opts(st, false, true)...)
		}
	case *streams.GroupedStream:
		vs := in.ValueSerde()
		aggSerde := vs
		if st.Materialized != nil && st.Materialized.Value != "" {
			aggSerde = st.Materialized.Value
		}
		switch st.Op {
		case "cogroup":
			return &goCogroup{parts: []goCogroupPart{{in, f, arg}}}, nil
		case "windowed_by":
			return in.WindowedBy(goWindows(st.Windows))
		case "count":
			return in.Count(opts(st, false, false)...)
		case "reduce":
			if st.Builtin != "" {
				return in.ReduceBuiltin(streams.Builtin(st.Builtin), opts(st, false, false)...)
			}
			return in.Reduce(reducerFn(f, arg, vs, aggSerde), opts(st, false, false)...)
		case "aggregate":
			init := catalogue[st.Init.Name]
			return in.Aggregate(initFn(init, st.Init.Arg, aggSerde), aggFn(f, arg, in.KeySerde(), vs, aggSerde), opts(st, false, false)...)
		}
	case *streams.WindowedStream:
		vs := in.ValueSerde()
		aggSerde := vs
		if st.Materialized != nil && st.Materialized.Value != "" {
			aggSerde = st.Materialized.Value
		}
		switch st.Op {
		case "emit_strategy":
			strategy := streams.OnWindowUpdate
			if st.Strategy == "on_window_close" {
				strategy = streams.OnWindowClose
			}
			return in.EmitStrategy(strategy)
		case "count":
			return in.Count(opts(st, false, false)...)
		case "reduce":
			if st.Builtin != "" {
				return in.ReduceBuiltin(streams.Builtin(st.Builtin), opts(st, false, false)...)
			}
			return in.Reduce(reducerFn(f, arg, vs, aggSerde), opts(st, false, false)...)
		case "aggregate":
			init := catalogue[st.Init.Name]
			agg := aggFn(f, arg, in.KeySerde(), vs, aggSerde)
			if st.Merger != nil {
				m := catalogue[st.Merger.Name]
				return in.AggregateSessions(initFn(init, st.Init.Arg, aggSerde), agg, mergerFn(m, st.Merger.Arg, in.KeySerde(), aggSerde), opts(st, false, false)...)
			}
			return in.Aggregate(initFn(init, st.Init.Arg, aggSerde), agg, opts(st, false, false)...)
		}
	case *goCogroup:
		switch st.Op {
		case "cogroup":
			parts := append(slices.Clone(in.parts), goCogroupPart{labels[st.Other].(*streams.GroupedStream), f, arg})
			return &goCogroup{parts: parts}, nil
		case "windowed_by":
			return &goCogroup{parts: in.parts, windows: st.Windows}, nil
		case "aggregate":
			return in.aggregate(st)
		}
	case *streams.Table:
		ks, vs := in.KeySerde(), in.ValueSerde()
		switch st.Op {
		case "transform_values":
			return goTransformValues(in, st, labels)
		case "foreign_key_join", "left_foreign_key_join":
			other := labels[st.Table].(*streams.Table)
			fk := mapperFn(catalogue[st.ForeignKey.Name], st.ForeignKey.Arg, vs, other.KeySerde())
			j := joiner(st, joinerFn(f, arg, vs, other.ValueSerde(), or(st.Value, vs)))
			if st.Op == "foreign_key_join" {
				return in.ForeignKeyJoin(other, fk, j, opts(st, false, true)...)
			}
			return in.LeftForeignKeyJoin(other, fk, j, opts(st, false, true)...)
		case "filter":
			return in.Filter(predFn(f, arg, ks, vs), opts(st, false, false)...)
		case "filter_not":
			return in.FilterNot(predFn(f, arg, ks, vs), opts(st, false, false)...)
		case "map_values":
			out := or(st.Value, vs)
			if st.Materialized != nil && st.Materialized.Value != "" {
				out = st.Materialized.Value
			}
			return in.MapValues(mapperFn(f, arg, vs, out), opts(st, false, true)...)
		case "group_by":
			return in.GroupBy(kvFn(f, arg, ks, vs, or(st.Key, ks), or(st.Value, vs)), opts(st, true, true)...)
		case "to_stream":
			if st.Fn != nil {
				return in.ToStreamKeyed(keyFn(f, arg, ks, vs, or(st.Key, ks)), opts(st, true, false)...)
			}
			return in.ToStream(opts(st, false, false)...)
		case "join", "left_join", "outer_join":
			other := labels[st.Table].(*streams.Table)
			out := or(st.Value, vs)
			if st.Materialized != nil && st.Materialized.Value != "" {
				out = st.Materialized.Value
			}
			j := joiner(st, joinerFn(f, arg, vs, other.ValueSerde(), out))
			switch st.Op {
			case "join":
				return in.Join(other, j, opts(st, false, true)...)
			case "left_join":
				return in.LeftJoin(other, j, opts(st, false, true)...)
			}
			return in.OuterJoin(other, j, opts(st, false, true)...)
		case "suppress":
			return in.Suppress(suppressed(st), opts(st, false, false)...)
		}
	case *streams.GroupedTable:
		vs := in.ValueSerde()
		aggSerde := vs
		if st.Materialized != nil && st.Materialized.Value != "" {
			aggSerde = st.Materialized.Value
		}
		var sub fnImpl
		var subArg any
		if st.Subtractor != nil {
			sub, subArg = catalogue[st.Subtractor.Name], st.Subtractor.Arg
		}
		switch st.Op {
		case "count":
			return in.Count(opts(st, false, false)...)
		case "reduce":
			if st.Builtin != "" {
				return in.ReduceBuiltin(streams.Builtin(st.Builtin), opts(st, false, false)...)
			}
			var subFn streams.ReducerFunc
			if st.Subtractor != nil {
				subFn = reducerFn(sub, subArg, vs, aggSerde)
			}
			return in.Reduce(reducerFn(f, arg, vs, aggSerde), subFn, opts(st, false, false)...)
		case "aggregate":
			init := catalogue[st.Init.Name]
			var subFn streams.AggregatorFunc
			if st.Subtractor != nil {
				subFn = aggFn(sub, subArg, in.KeySerde(), vs, aggSerde)
			}
			return in.Aggregate(initFn(init, st.Init.Arg, aggSerde), aggFn(f, arg, in.KeySerde(), vs, aggSerde), subFn, opts(st, false, false)...)
		}
	}
	return nil, fmt.Errorf("executor: %s cannot apply to %T", st.Op, in)
}

// The wrappers decode a record's bytes with its serdes, call the catalogue
// function on natural values and encode its result.

func raised(f fnImpl, arg, v any) error {
	if f.raise != nil {
		return f.raise(arg, v)
	}
	return nil
}

func mapperFn(f fnImpl, arg any, in, out string) streams.MapValuesFunc {
	return func(b []byte) ([]byte, error) {
		v, err := decode(in, b)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return b, err
		}
		r, err := f.mapper(arg, v)
		if err != nil {
			return nil, err
		}
		return encodeValue(out, r)
	}
}

func flatFn(f fnImpl, arg any, in, out string) streams.FlatMapValuesFunc {
	return func(b []byte) ([][]byte, error) {
		v, err := decode(in, b)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return [][]byte{b}, err
		}
		rs, err := f.flat(arg, v)
		if err != nil {
			return nil, err
		}
		outs := make([][]byte, len(rs))
		for i, r := range rs {
			if outs[i], err = encodeValue(out, r); err != nil {
				return nil, err
			}
		}
		return outs, nil
	}
}

func mapperKFn(f fnImpl, arg any, ks, vs, out string) streams.MapValuesWithKeyFunc {
	return func(kb, vb []byte) ([]byte, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return vb, err
		}
		r, err := f.mapperK(arg, k, v)
		if err != nil {
			return nil, err
		}
		return encodeValue(out, r)
	}
}

func flatKFn(f fnImpl, arg any, ks, vs, out string) streams.FlatMapValuesWithKeyFunc {
	return func(kb, vb []byte) ([][]byte, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return [][]byte{vb}, err
		}
		rs, err := f.flatK(arg, k, v)
		if err != nil {
			return nil, err
		}
		outs := make([][]byte, len(rs))
		for i, r := range rs {
			if outs[i], err = encodeValue(out, r); err != nil {
				return nil, err
			}
		}
		return outs, nil
	}
}

func flatKVFn(f fnImpl, arg any, ks, vs, outK, outV string) streams.FlatMapFunc {
	return func(kb, vb []byte) ([]streams.KeyValue, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return []streams.KeyValue{{Key: kb, Value: vb}}, err
		}
		rs, err := f.flatKV(arg, k, v)
		if err != nil {
			return nil, err
		}
		outs := make([]streams.KeyValue, len(rs))
		for i, r := range rs {
			if outs[i].Key, err = encodeValue(outK, r[0]); err != nil {
				return nil, err
			}
			if outs[i].Value, err = encodeValue(outV, r[1]); err != nil {
				return nil, err
			}
		}
		return outs, nil
	}
}

func decodeKV(ks, vs string, kb, vb []byte) (any, any, error) {
	k, err := decode(ks, kb)
	if err != nil {
		return nil, nil, err
	}
	v, err := decode(vs, vb)
	return k, v, err
}

func predFn(f fnImpl, arg any, ks, vs string) streams.PredicateFunc {
	return func(kb, vb []byte) (bool, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return false, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return true, err
		}
		return f.pred(arg, k, v)
	}
}

func keyFn(f fnImpl, arg any, ks, vs, out string) streams.KeyValueMapper {
	return func(kb, vb []byte) ([]byte, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return kb, err
		}
		r, err := f.key(arg, k, v)
		if err != nil {
			return nil, err
		}
		return encodeValue(out, r)
	}
}

func kvFn(f fnImpl, arg any, ks, vs, outK, outV string) streams.MapFunc {
	return func(kb, vb []byte) ([]byte, []byte, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return kb, vb, err
		}
		nk, nv, err := f.kv(arg, k, v)
		if err != nil {
			return nil, nil, err
		}
		if kb, err = encodeValue(outK, nk); err != nil {
			return nil, nil, err
		}
		vb, err = encodeValue(outV, nv)
		return kb, vb, err
	}
}

func actionFn(f fnImpl, arg any, ks, vs string) streams.ForeachFunc {
	return func(kb, vb []byte) error {
		_, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return err
		}
		return raised(f, arg, v)
	}
}

func reducerFn(f fnImpl, arg any, vs, aggSerde string) streams.ReducerFunc {
	return func(ab, vb []byte) ([]byte, error) {
		a, err := decode(aggSerde, ab)
		if err != nil {
			return nil, err
		}
		v, err := decode(vs, vb)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return vb, err
		}
		r, err := f.reducer(arg, a, v)
		if err != nil {
			return nil, err
		}
		return encodeValue(aggSerde, r)
	}
}

func initFn(f fnImpl, arg any, aggSerde string) streams.InitializerFunc {
	return func() ([]byte, error) {
		r, err := f.init(arg)
		if err != nil {
			return nil, err
		}
		return encodeValue(aggSerde, r)
	}
}

func aggFn(f fnImpl, arg any, ks, vs, aggSerde string) streams.AggregatorFunc {
	return func(kb, vb, ab []byte) ([]byte, error) {
		k, v, err := decodeKV(ks, vs, kb, vb)
		if err != nil {
			return nil, err
		}
		a, err := decode(aggSerde, ab)
		if err != nil {
			return nil, err
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return vb, err
		}
		r, err := f.agg(arg, k, v, a)
		if err != nil {
			return nil, err
		}
		return encodeValue(aggSerde, r)
	}
}

func joinerFn(f fnImpl, arg any, vs, ts, out string) streams.ValueJoinerFunc {
	return func(vb, ob []byte) ([]byte, error) {
		v, err := decode(vs, vb)
		if err != nil {
			return nil, err
		}
		var o any // a left join's missing table value stays nil
		if ob != nil {
			if o, err = decode(ts, ob); err != nil {
				return nil, err
			}
		}
		if err := raised(f, arg, v); err != nil || f.raise != nil {
			return vb, err
		}
		r, err := f.joiner(arg, v, o)
		if err != nil {
			return nil, err
		}
		return encodeValue(out, r)
	}
}

func mergerFn(f fnImpl, arg any, ks, aggSerde string) streams.AggregatorFunc {
	return func(kb, ab1, ab2 []byte) ([]byte, error) {
		k, err := decode(ks, kb)
		if err != nil {
			return nil, err
		}
		a1, err := decode(aggSerde, ab1)
		if err != nil {
			return nil, err
		}
		a2, err := decode(aggSerde, ab2)
		if err != nil {
			return nil, err
		}
		r, err := f.merger(arg, k, a1, a2)
		if err != nil {
			return nil, err
		}
		return encodeValue(aggSerde, r)
	}
}

var _ io.Writer = (*tail)(nil)

// joiner is the step's built-in joiner (builtin_joiner) when it names one,
// else fn.
func joiner(st Step, fn streams.ValueJoinerFunc) streams.ValueJoinerFunc {
	switch st.BuiltinJoiner {
	case "pair":
		return streams.PairJoiner
	case "this":
		return streams.ThisJoiner
	case "other":
		return streams.OtherJoiner
	}
	return fn
}

// goCogroup is a cogrouped stream of a case: its grouped streams and their
// aggregators, and its windows. The cogroup's calls are made at aggregate,
// when the aggregate's serde (which the aggregators encode) is known; a
// cogroup takes no name number, so the order is Kafka Streams'.
type goCogroup struct {
	parts   []goCogroupPart
	windows *Windows
}

type goCogroupPart struct {
	g   *streams.GroupedStream
	f   fnImpl
	arg any
}

func (c *goCogroup) aggregate(st Step) (any, error) {
	aggSerde := c.parts[0].g.ValueSerde()
	if st.Materialized != nil && st.Materialized.Value != "" {
		aggSerde = st.Materialized.Value
	}
	agg := func(p goCogroupPart) streams.AggregatorFunc {
		return aggFn(p.f, p.arg, p.g.KeySerde(), p.g.ValueSerde(), aggSerde)
	}
	cg, err := c.parts[0].g.Cogroup(agg(c.parts[0]))
	if err != nil {
		return nil, err
	}
	for _, p := range c.parts[1:] {
		if cg, err = cg.Cogroup(p.g, agg(p)); err != nil {
			return nil, err
		}
	}
	init := initFn(catalogue[st.Init.Name], st.Init.Arg, aggSerde)
	if c.windows == nil {
		return cg.Aggregate(init, opts(st, false, false)...)
	}
	w, err := cg.WindowedBy(goWindows(c.windows))
	if err != nil {
		return nil, err
	}
	if st.Merger != nil {
		m := mergerFn(catalogue[st.Merger.Name], st.Merger.Arg, c.parts[0].g.KeySerde(), aggSerde)
		return w.AggregateSessions(init, m, opts(st, false, false)...)
	}
	return w.Aggregate(init, opts(st, false, false)...)
}

// suppressed is a suppress step's Suppressed.
func suppressed(st Step) streams.Suppressed {
	buffer := streams.Unbounded()
	if b := st.Buffer; b != nil && (b.MaxRecords != nil || b.MaxBytes != nil) {
		buffer = streams.BufferConfig{}
		if b.MaxRecords != nil {
			buffer = buffer.WithMaxRecords(*b.MaxRecords)
		}
		if b.MaxBytes != nil {
			buffer = buffer.WithMaxBytes(*b.MaxBytes)
		}
		if b.WhenFull == "shut_down" {
			buffer = buffer.ShutDownWhenFull()
		} else {
			buffer = buffer.EmitEarlyWhenFull()
		}
	}
	if st.TimeLimitMs != nil {
		return streams.UntilTimeLimit(time.Duration(*st.TimeLimitMs)*time.Millisecond, buffer)
	}
	return streams.UntilWindowCloses(buffer)
}
