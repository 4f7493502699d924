package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Timeouts of one case in one language. A mismatch costs at most these;
// a passing case ends as soon as its outputs are in and quiet.
var (
	buildTimeout  = 60 * time.Second // the executor starts and builds
	startTimeout  = 60 * time.Second // the topology starts
	outputTimeout = 20 * time.Second // the outputs are complete
	stopTimeout   = 30 * time.Second // the executor stops and exits
	quiet         = 500 * time.Millisecond
)

// env is what every run shares: the broker and engine.
type env struct {
	brokers  string
	engine   string
	stateDir string
	adm      *kadm.Client
	// driver: run each case in a test driver session (driver.go).
	driver bool
	// ks is Kafka Streams' result for each case (by name), when the
	// Kafka Streams column runs (java.go).
	ks map[string]*ksResult
}

// result is one case in one language.
type result struct {
	problems []string // each mismatch, with want and got
	// ks are the differences from Kafka Streams: in the Kafka Streams
	// column, between the case and Kafka Streams; in an SDK's, between its
	// build (refusal, describe()) and Kafka Streams'.
	// conformance/known-differences.json may list the case.
	ks      []string
	diag    string // the executor's diagnostics, when something failed
	elapsed time.Duration
}

func (r *result) add(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// run runs case c (the idx-th) in language l and checks everything the case
// expects.
func (e *env) run(ctx context.Context, l language, c *Case, idx int) (res result) {
	began := time.Now()
	defer func() { res.elapsed = time.Since(began) }()
	if _, ok := l.(javaLang); ok {
		r := checkKafkaStreams(c, e.ks[c.Name])
		return result{ks: r.problems}
	}
	prefix := fmt.Sprintf("%s-%03d-", l.Name(), idx)
	appID := "conformance-" + strings.TrimSuffix(prefix, "-")
	unprefix := func(s string) string { return strings.ReplaceAll(s, prefix, "") }
	// The record cache is off unless the case turns it on: most cases pin
	// every update, as Kafka Streams emits them with a cache of 0.
	cfg := map[string]string{"commit.interval.ms": "100", "state.dir": e.stateDir, "statestore.cache.max.bytes": "0"}
	for k, v := range c.Config {
		cfg[k] = v
	}
	// Against the broker the wall clock is the real one: a case that
	// advances it only builds there, and says why it did not run.
	start := c.starts() && (e.driver || !c.advancesWallClock())
	if e.driver {
		cfg["polystreams.test.driver"] = "true"
	} else if start {
		if err := e.createTopics(ctx, c, prefix); err != nil {
			res.add("setup: %v", err)
			return res
		}
		if err := e.produceBeforeStart(ctx, c, prefix); err != nil {
			res.add("setup: %v", err)
			return res
		}
	}
	x, err := l.Launch(spec{Case: c.raw, Engine: e.engine, ApplicationID: appID, TopicPrefix: prefix, Config: cfg, Start: start, c: c, brokers: e.brokers})
	if err != nil {
		res.add("launch: %v", err)
		return res
	}
	defer func() {
		if !stop(x) {
			res.add("the executor did not end within %s of being told to stop (killed)", stopTimeout)
		}
		if len(res.problems) > 0 {
			res.diag = x.Diagnostics()
		}
	}()
	ev, ok := next(x, buildTimeout)
	if !ok {
		res.add("the executor ended or hung before reporting its build (%s)", eventText(ev))
		return res
	}
	if e.ks != nil {
		res.ks = compareWithKafkaStreams(e.ks[c.Name], ev, unprefix)
	}
	want := c.Expect
	switch ev.Event {
	case "build_error":
		msg := unprefix(ev.Message)
		if want.BuildError == nil {
			res.add("build: want the topology built, got step %d refused: %s: %s", ev.Step, ev.Code, msg)
			return res
		}
		be := want.BuildError
		if ev.Step != be.Step || ev.Code != be.Code {
			res.add("build error: want step %d refused with %s, got step %d with %s: %s", be.Step, be.Code, ev.Step, ev.Code, msg)
		}
		for _, frag := range be.Contains {
			if !strings.Contains(msg, frag) {
				res.add("build error message: want it to contain %q, got %q", frag, msg)
			}
		}
		return res
	case "built":
		if want.BuildError != nil {
			res.add("build: want step %d refused (%s), got the topology built", want.BuildError.Step, want.BuildError.Code)
			return res
		}
		if want.Describe != nil {
			if got := unprefix(ev.Describe); got != *want.Describe {
				res.add("describe():\n%s", textDiff(*want.Describe, got))
			}
		}
	default:
		res.add("want a build report first, got %s", eventText(ev))
		return res
	}
	if !start {
		if c.starts() {
			res.add("not run: the case advances the wall clock, which is the real one against the broker (run with -driver)")
		}
		return res
	}
	if ev, ok = next(x, startTimeout); !ok || ev.Event != "started" {
		res.add("start: want the topology started, got %s", eventText(ev))
		return res
	}
	if e.driver {
		e.checkDriven(ctx, x, ev, c, prefix, unprefix, &res)
		return res
	}
	e.checkRun(ctx, x, c, prefix, unprefix, &res)
	return res
}

// checkRun produces the inputs and checks the outputs and the failure.
func (e *env) checkRun(ctx context.Context, x execution, c *Case, prefix string, unprefix func(string) string, res *result) {
	outs := map[string]*Output{}
	var topics []string
	for i := range c.Expect.Outputs {
		o := &c.Expect.Outputs[i]
		outs[prefix+o.Topic] = o
		topics = append(topics, prefix+o.Topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		res.add("consumer: %v", err)
		return
	}
	defer cl.Close()
	var inputTopics []string
	for _, in := range c.Inputs {
		if in.BeforeStart {
			continue // produceBeforeStart
		}
		if !c.readByGlobalTable(in.Topic) { // no group commits a global table's offsets
			inputTopics = append(inputTopics, prefix+in.Topic)
		}
		for j, r := range in.Records {
			rec, err := record(prefix+in.Topic, in.Key, in.Value, r)
			if err != nil {
				res.add("input %s[%d]: %v", in.Topic, j, err)
				return
			}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				res.add("producing input %s[%d]: %v", in.Topic, j, err)
				return
			}
		}
	}

	got := map[string][]*kgo.Record{}
	var failed *event
	deadline := time.Now().Add(outputTimeout)
	var quietSince time.Time
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = append(got[r.Topic], r) })
		select {
		case ev, ok := <-x.Events():
			if !ok {
				res.add("the executor ended while the topology ran")
				return
			}
			if ev.Event == "failed" {
				failed = &ev
			}
		default:
		}
		if failed != nil {
			break
		}
		if c.Expect.Failure != nil {
			continue // the failure must come; outputs are not awaited
		}
		if !complete(outs, got) || !e.consumed(ctx, unprefix(prefix), prefix, inputTopics, c) {
			quietSince = time.Time{}
			continue
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= quiet {
			break
		}
	}
	if failed == nil && c.Expect.Failure != nil {
		res.add("failure: want the topology to fail on %s/%d@%d in node %s, got no failure within %s", c.Expect.Failure.Topic, c.Expect.Failure.Partition, c.Expect.Failure.Offset, c.Expect.Failure.Node, outputTimeout)
		return
	}
	if checkFailure(c, failed, unprefix, res) {
		return
	}
	for _, t := range topics {
		compareOutput(outs[t], got[t], res)
	}
	if want := c.Expect.Printed; want != nil {
		comparePrinted(want, awaitPrinted(x, len(want)), res)
	}
	if want := c.Expect.DroppedRecords; want != nil {
		got, ok := droppedOnStop(x)
		switch {
		case !ok:
			res.add("dropped records: want %d, got no dropped_records report when the executor stopped", *want)
		case got != *want:
			res.add("dropped records: want %d, got %d", *want, got)
		}
	}
}

// awaitPrinted answers the lines x printed once it printed n, or after a
// short wait (a line written before the inputs' commit may still be in the
// pipe) with what it printed then.
func awaitPrinted(x execution, n int) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := x.Printed()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// comparePrinted reports every line that differs from the case's.
func comparePrinted(want, got []string, res *result) {
	if slices.Equal(want, got) {
		return
	}
	res.add("printed: want %d lines, got %d", len(want), len(got))
	for i := range max(len(want), len(got)) {
		var w, g string = "(none)", "(none)"
		if i < len(want) {
			w = strconv.Quote(want[i])
		}
		if i < len(got) {
			g = strconv.Quote(got[i])
		}
		if w != g {
			res.add("  printed[%d]: want %s, got %s", i, w, g)
		}
	}
}

// droppedOnStop tells the executor to stop and reads its events until it
// ends; it returns the dropped_records count it reported on the way.
func droppedOnStop(x execution) (int64, bool) {
	x.Stop()
	var n int64
	found := false
	for {
		ev, ok := next(x, stopTimeout)
		if !ok {
			return n, found
		}
		if ev.Event == "dropped_records" {
			n, found = ev.Count, true
		}
	}
}

// consumed reports whether the application has committed every input
// record's offset: its outputs of them are written.
func (e *env) consumed(ctx context.Context, _ string, prefix string, inputs []string, c *Case) bool {
	if len(inputs) == 0 {
		return true
	}
	ends, err := e.adm.ListEndOffsets(ctx, inputs...)
	if err != nil {
		return false
	}
	appID := "conformance-" + strings.TrimSuffix(prefix, "-")
	committed, err := e.adm.FetchOffsets(ctx, appID)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		co, found := committed.Lookup(o.Topic, o.Partition)
		if !found || co.At < o.Offset {
			ok = false
		}
	})
	return ok
}

// complete reports whether every output holds what it should (in count,
// or for latest, in content).
func complete(outs map[string]*Output, got map[string][]*kgo.Record) bool {
	for t, o := range outs {
		if o.Mode == "latest" {
			if len(diffLatest(o, got[t])) > 0 {
				return false
			}
		} else if len(got[t]) < len(o.Records) {
			return false
		}
	}
	return true
}

func record(topic, keySerde, valueSerde string, r Record) (*kgo.Record, error) {
	k, err := encode(keySerde, r.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	v, err := encode(valueSerde, r.Value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	rec := &kgo.Record{Topic: topic, Key: k, Value: v}
	if r.Timestamp != nil {
		rec.Timestamp = time.UnixMilli(*r.Timestamp)
	} else {
		rec.Timestamp = time.UnixMilli(0)
	}
	for _, h := range sortedKeys(r.Headers) {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h, Value: []byte(r.Headers[h])})
	}
	return rec, nil
}

// shown is a record as compared: canonical key and value, and the
// timestamp and headers when the expectation gives them.
type shown struct {
	key, value string
	ts         *int64
	headers    map[string]string
}

func (s shown) String() string {
	out := s.key + " => " + s.value
	if s.ts != nil {
		out += fmt.Sprintf(" @%d", *s.ts)
	}
	if s.headers != nil {
		out += " headers" + canonJSON(toAny(s.headers))
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func wantShown(o *Output) []shown {
	out := make([]shown, len(o.Records))
	for i, r := range o.Records {
		k, _ := encode(o.Key, r.Key)
		v, _ := encode(o.Value, r.Value)
		out[i] = shown{key: canon(o.Key, k), value: canon(o.Value, v), ts: r.Timestamp, headers: r.Headers}
	}
	return out
}

// gotShown shows got as the expectation does: with timestamps and headers
// only if some wanted record has them.
func gotShown(o *Output, got []*kgo.Record) []shown {
	withTS, withHeaders := false, false
	for _, r := range o.Records {
		withTS = withTS || r.Timestamp != nil
		withHeaders = withHeaders || r.Headers != nil
	}
	out := make([]shown, len(got))
	for i, r := range got {
		s := shown{key: canon(o.Key, r.Key), value: canon(o.Value, r.Value)}
		if withTS {
			ts := r.Timestamp.UnixMilli()
			s.ts = &ts
		}
		if withHeaders {
			s.headers = map[string]string{}
			for _, h := range r.Headers {
				s.headers[h.Key] = string(h.Value)
			}
		}
		out[i] = s
	}
	return out
}

func diffLatest(o *Output, got []*kgo.Record) []string {
	want := map[string]shown{}
	for _, s := range wantShown(o) {
		want[s.key] = s
	}
	last := map[string]shown{}
	for _, s := range gotShown(o, got) {
		last[s.key] = s
	}
	var diffs []string
	for _, k := range sortedKeys(want) {
		g, ok := last[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("key %s: want %s, got no record", k, want[k]))
		case g.String() != want[k].String():
			diffs = append(diffs, fmt.Sprintf("key %s: want %s, got %s", k, want[k], g))
		}
	}
	for _, k := range sortedKeys(last) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("key %s: want no record, got %s", k, last[k]))
		}
	}
	return diffs
}

func compareOutput(o *Output, got []*kgo.Record, res *result) {
	mode := o.Mode
	if mode == "" {
		mode = "ordered"
	}
	if mode == "latest" {
		if d := diffLatest(o, got); len(d) > 0 {
			res.add("output %s (latest value per key):\n  %s", o.Topic, strings.Join(d, "\n  "))
		}
		return
	}
	w, g := wantShown(o), gotShown(o, got)
	if mode == "per_key" {
		byKey := func(s []shown) {
			sort.SliceStable(s, func(i, j int) bool { return s[i].key < s[j].key })
		}
		byKey(w)
		byKey(g)
	}
	if listText(w) != listText(g) {
		res.add("output %s (%s):\n  want %d records:\n%s\n  got %d records:\n%s", o.Topic, mode, len(w), indent(listText(w)), len(g), indent(listText(g)))
	}
}

func listText(s []shown) string {
	lines := make([]string, len(s))
	for i, x := range s {
		lines[i] = x.String()
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	if s == "" {
		return "    (none)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// textDiff shows want and got and the first line where they differ.
func textDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	line := 0
	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}
	first := ""
	switch {
	case line < len(wl) && line < len(gl):
		first = fmt.Sprintf("first difference at line %d: want %q, got %q", line+1, wl[line], gl[line])
	case line < len(wl):
		first = fmt.Sprintf("got ends at line %d; want goes on with %q", line+1, wl[line])
	default:
		first = fmt.Sprintf("want ends at line %d; got goes on with %q", line+1, gl[line])
	}
	return fmt.Sprintf("  %s\n  want:\n%s\n  got:\n%s", first, indent(want), indent(got))
}

// next waits for the executor's next event; ok is false when it ended or
// timed out.
func next(x execution, timeout time.Duration) (event, bool) {
	select {
	case ev, ok := <-x.Events():
		if !ok {
			return event{Event: "(ended)"}, false
		}
		return ev, true
	case <-time.After(timeout):
		return event{Event: fmt.Sprintf("(nothing within %s)", timeout)}, false
	}
}

func eventText(ev event) string {
	if ev.Message != "" {
		return fmt.Sprintf("%s: %s: %s", ev.Event, ev.Code, ev.Message)
	}
	return ev.Event
}

// stop tells the executor to stop and waits for it to end; it reports
// false when it had to be killed.
func stop(x execution) bool {
	x.Stop()
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-x.Events():
			if !ok {
				return true
			}
		case <-timer.C:
			x.Kill()
			for range x.Events() {
			}
			return false
		}
	}
}

func (e *env) createTopics(ctx context.Context, c *Case, prefix string) error {
	parts := map[string]int32{}
	for _, in := range c.Inputs {
		parts[prefix+in.Topic] = int32(max(in.Partitions, 1))
	}
	for _, o := range c.Expect.Outputs {
		if _, ok := parts[prefix+o.Topic]; !ok {
			parts[prefix+o.Topic] = int32(max(o.Partitions, 1))
		}
	}
	for _, st := range c.Topology {
		sources := st.Topics
		if st.Op == "table" || st.Op == "global_table" {
			sources = []string{st.Topic}
		}
		for _, t := range sources {
			if _, ok := parts[prefix+t]; !ok {
				parts[prefix+t] = 1
			}
		}
	}
	for t, n := range parts {
		resp, err := e.adm.CreateTopic(ctx, n, -1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("creating topic %s: %w", t, err)
		}
	}
	return nil
}

// produceBeforeStart produces the inputs marked before_start, before the
// executor starts the topology: a global table's rows, say, which it
// restores before processing any record.
func (e *env) produceBeforeStart(ctx context.Context, c *Case, prefix string) error {
	var rs []*kgo.Record
	for _, in := range c.Inputs {
		if !in.BeforeStart {
			continue
		}
		for j, r := range in.Records {
			rec, err := record(prefix+in.Topic, in.Key, in.Value, r)
			if err != nil {
				return fmt.Errorf("input %s[%d]: %w", in.Topic, j, err)
			}
			rs = append(rs, rec)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, r := range rs {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("producing input to %s: %w", r.Topic, err)
		}
	}
	return nil
}
