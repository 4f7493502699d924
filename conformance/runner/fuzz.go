package main

// Differential testing against Kafka Streams (-fuzz, make fuzz-conformance):
// random cases from a subset of the case grammar (chains of stateless
// operators with catalogue functions, grouped and windowed aggregations,
// suppress, tables, stream-table joins; random keyed, timestamped inputs
// with null keys and values, out-of-order and late records) run through
// Kafka Streams (the Java executor's batch mode, TopologyTestDriver) and
// through the Go executor in test driver mode. Both run every topic with one
// partition, so outputs are compared in order, record by record (key,
// value, timestamp), with the refusal to build, the failing input record and
// dropped-records-total. A case that differs is shrunk (steps and records
// dropped while it still differs) and written as
// conformance/cases/fuzz_<hash>.json, its expectation what Kafka Streams
// did, or printed (-fuzz-save=false).

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fuzzOptions are the -fuzz-* flags.
type fuzzOptions struct {
	seed     uint64
	cases    int           // stop after this many cases (0: no limit)
	duration time.Duration // stop after this long (0: no limit)
	batch    int           // cases per Kafka Streams run
	save     bool          // write shrunk cases under conformance/cases
}

// fuzzGen generates random cases; it tracks the serdes of the stream it
// builds so that every case is valid and every function fits its input.
type fuzzGen struct {
	r *rand.Rand
	n int
}

var (
	fuzzKeys   = []string{"a", "b", "c", "ab", "ba"}
	fuzzValues = []string{"a", "apple", "b x", "banana split", "cherry", "", "c", "ant bee"}
)

func (g *fuzzGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *fuzzGen) chance(p float64) bool    { return g.r.Float64() < p }

// MarshalJSON writes f in the case's form: "name" or {"name", "arg"}.
func (f FnRef) MarshalJSON() ([]byte, error) {
	if f.Arg == nil {
		return json.Marshal(f.Name)
	}
	return json.Marshal(map[string]any{"name": f.Name, "arg": f.Arg})
}

func fn(name string, arg ...any) *FnRef {
	f := &FnRef{Name: name}
	if len(arg) > 0 {
		f.Arg = arg[0]
	}
	return f
}

// stateless is a random stateless step over a string/string stream; nulls
// says whether it may turn values into null (to_null, swap of a null key).
func (g *fuzzGen) stateless(nulls bool) Step {
	switch g.r.IntN(7) {
	case 5:
		// The with-key mappers: a null key becomes a null value.
		if !nulls {
			return Step{Op: "map_values_with_key", Fn: fn("raise_on", "never-a-value")}
		}
		if g.r.IntN(2) == 0 {
			return Step{Op: "map_values_with_key", Fn: fn("key_as_value")}
		}
		return Step{Op: "flat_map_values_with_key", Fn: fn(g.pick("key_and_value", "nothing"))}
	case 6:
		// flat_map re-keys; swap_and_keep turns a null key into a null value.
		if !nulls {
			return Step{Op: "flat_map", Fn: fn("nothing")}
		}
		return Step{Op: "flat_map", Fn: fn(g.pick("swap_and_keep", "nothing"))}
	case 0:
		fs := []*FnRef{fn("upper"), fn("lower"), fn("prefix", "p-"), fn("identity")}
		if nulls {
			fs = append(fs, fn("to_null"))
		}
		return Step{Op: "map_values", Fn: fs[g.r.IntN(len(fs))]}
	case 1:
		fs := []*FnRef{fn("is_long_word"), fn("value_contains", "a"), fn("key_starts_with", "a"), fn("has_key"), fn("always")}
		return Step{Op: g.pick("filter", "filter_not"), Fn: fs[g.r.IntN(len(fs))]}
	case 2:
		fs := []*FnRef{fn("split_words"), fn("duplicate"), fn("nothing")}
		return Step{Op: "flat_map_values", Fn: fs[g.r.IntN(len(fs))]}
	case 3:
		fs := []*FnRef{fn("first_word_key"), fn("key_upper"), fn("first_letter"), fn("value_as_key")}
		return Step{Op: "select_key", Fn: fs[g.r.IntN(len(fs))]}
	}
	if !nulls { // swap turns a null key into a null value
		return Step{Op: "map", Fn: fn("upper_both")}
	}
	return Step{Op: "map", Fn: fn(g.pick("swap", "upper_both"))}
}

// gen returns a random case (not yet parsed): its topology, inputs and the
// output it reads (no expected records: Kafka Streams is the expectation).
func (g *fuzzGen) gen() *Case {
	g.n++
	c := &Case{Config: map[string]string{"statestore.cache.max.bytes": "0"}}
	if g.chance(0.3) {
		c.Config["processing.guarantee"] = "exactly_once_v2"
	}
	out := Output{Topic: "output", Key: "string", Value: "string", Records: []Record{}}
	src := Step{Op: "stream", Topics: []string{"input"}, Key: "string", Value: "string"}
	nullValues := true // may the inputs hold null values
	shape := g.r.IntN(10)
	var steps []Step
	switch {
	case shape < 2: // stateless chain
		steps = append(steps, src)
		for range 1 + g.r.IntN(4) {
			steps = append(steps, g.stateless(true))
		}
	case shape < 5: // grouped aggregation
		steps = append(steps, src)
		for range g.r.IntN(3) {
			steps = append(steps, g.stateless(true))
		}
		if g.chance(0.5) {
			steps = append(steps, Step{Op: "group_by_key"})
		} else {
			steps = append(steps, Step{Op: "group_by", Fn: fn(g.pick("first_letter", "key_upper", "first_word_key"))})
		}
		steps = append(steps, g.aggregation(&out, false)...)
		steps = append(steps, Step{Op: "to_stream"})
	case shape < 8: // windowed aggregation
		steps = append(steps, src)
		for range g.r.IntN(2) {
			steps = append(steps, g.stateless(false))
		}
		steps = append(steps, Step{Op: "group_by_key"})
		w := &Windows{}
		size := int64(10 * (1 + g.r.IntN(10)))
		session := g.chance(0.3)
		if session {
			w.Type, w.InactivityGapMs = "session", size
			out.Key = "session-windowed(string)"
		} else {
			w.Type, w.SizeMs = "time", size
			if g.chance(0.4) {
				adv := size / int64(1+g.r.IntN(4))
				w.AdvanceMs = &adv
			}
			out.Key = fmt.Sprintf("windowed(string,%d)", size)
		}
		if g.chance(0.7) {
			grace := int64(g.r.IntN(6) * 10)
			w.GraceMs = &grace
		}
		steps = append(steps, Step{Op: "windowed_by", Windows: w})
		if !session && g.chance(0.15) {
			steps = append(steps, Step{Op: "emit_strategy", Strategy: "on_window_close"})
		}
		// A windowed reduce over null values is a known difference
		// (window_reduce_null_value): null values only reach counts.
		agg := g.aggregation(&out, session)
		if agg[0].Op != "count" {
			nullValues = false
		}
		steps = append(steps, agg...)
		if g.chance(0.3) && steps[len(steps)-2].Op != "emit_strategy" && !hasOp(steps, "emit_strategy") {
			steps = append(steps, Step{Op: "suppress"})
		}
		steps = append(steps, Step{Op: "to_stream"})
	case shape < 9: // table
		steps = append(steps, Step{Op: "table", Topic: "input", Key: "string", Value: "string"})
		for range 1 + g.r.IntN(2) {
			if g.chance(0.5) {
				steps = append(steps, Step{Op: "map_values", Fn: fn(g.pick("upper", "lower", "identity"))})
			} else {
				steps = append(steps, Step{Op: g.pick("filter", "filter_not"), Fn: fn(g.pick("is_long_word", "has_key", "key_starts_with"), "a")})
				if s := &steps[len(steps)-1]; s.Fn.Name != "key_starts_with" {
					s.Fn.Arg = nil
				}
			}
		}
		steps = append(steps, Step{Op: "to_stream"})
	default: // stream-table join
		steps = append(steps, Step{Op: "table", Topic: "table", Key: "string", Value: "string", As: "t"})
		if g.chance(0.3) {
			steps = append(steps, Step{Op: "map_values", Fn: fn("upper"), As: "t2"})
			steps[0].As = ""
			steps[1].From = ""
		}
		table := steps[len(steps)-1].As
		steps = append(steps, src)
		for range g.r.IntN(3) {
			steps = append(steps, g.stateless(true))
		}
		steps = append(steps, Step{Op: g.pick("join", "left_join"), Table: table, Fn: fn("concat", "|")})
	}
	steps = append(steps, Step{Op: "to", Topic: "output"})
	c.Topology = steps
	if hasTopic(steps, "table") {
		// The table's rows come first, before the topology starts, so
		// that a saved case means the same against the broker (which
		// interleaves topics) as in the test drivers.
		t := g.input("table", nullValues)
		t.BeforeStart = true
		c.Inputs = append(c.Inputs, t)
	}
	c.Inputs = append(c.Inputs, g.input("input", nullValues))
	c.Expect.Outputs = []Output{out}
	return c
}

func hasOp(steps []Step, op string) bool {
	for _, s := range steps {
		if s.Op == op {
			return true
		}
	}
	return false
}

func hasTopic(steps []Step, topic string) bool {
	for _, s := range steps {
		if s.Topic == topic && s.Op == "table" {
			return true
		}
	}
	return false
}

// aggregation is a random aggregation of a grouped (or windowed) stream of
// strings; it sets out's value serde.
func (g *fuzzGen) aggregation(out *Output, session bool) []Step {
	n := 4
	if session {
		n = 1 // session reduce and aggregate: issue 19 §4 (known divergences being fixed)
	}
	switch g.r.IntN(n) {
	case 0:
		out.Value = "long"
		return []Step{{Op: "count"}}
	case 1:
		if g.chance(0.3) {
			return []Step{{Op: "reduce", Builtin: "latest"}}
		}
		if g.chance(0.5) {
			return []Step{{Op: "reduce", Fn: fn("longer")}}
		}
		return []Step{{Op: "reduce", Fn: fn("concat", "+")}}
	case 2:
		return []Step{{Op: "aggregate", Init: fn("empty_string"), Fn: fn("concat", ",")}}
	}
	out.Value = "long"
	return []Step{{Op: "aggregate", Init: fn("zero"), Fn: fn("count_agg"), Materialized: &Materialized{Value: "long"}}}
}

// input is 1..12 random records: keys and values from small sets (so that
// keys collide and words split), some null; timestamps mostly rising, some
// out of order, some far behind (late for any grace).
func (g *fuzzGen) input(topic string, nullValues bool) Input {
	in := Input{Topic: topic, Key: "string", Value: "string"}
	ts := int64(g.r.IntN(20))
	for range 1 + g.r.IntN(12) {
		var r Record
		if g.chance(0.1) {
			r.Key = json.RawMessage("null")
		} else {
			r.Key, _ = json.Marshal(g.pick(fuzzKeys...))
		}
		if nullValues && g.chance(0.1) {
			r.Value = json.RawMessage("null")
		} else {
			r.Value, _ = json.Marshal(g.pick(fuzzValues...))
		}
		t := ts
		switch x := g.r.Float64(); {
		case x < 0.15:
			t = max(0, ts-int64(g.r.IntN(40))) // out of order
		case x < 0.2:
			t = max(0, ts-100-int64(g.r.IntN(100))) // late
		default:
			ts += int64(g.r.IntN(30))
			t = ts
		}
		r.Timestamp = &t
		in.Records = append(in.Records, r)
	}
	return in
}

// fuzzCase turns c into a parsed, valid case named name: the runner's
// validator (schema and rules) checks it.
func fuzzCase(c *Case, name, description string, sch *schema) (*Case, error) {
	c.Name, c.Description = name, description
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return parseCase(name+".json", append(data, '\n'), sch)
}

// fuzzRun is what one side did with a case.
type fuzzRun struct {
	refused string // the build was refused: why
	failure string // processing failed: at which input record
	outputs map[string][]*kgo.Record
	dropped *int64
}

// runKSBatch runs cases through Kafka Streams in one JVM, uncached.
func runKSBatch(x *javaExecutor, cases []*Case, tmp string) (map[string]*ksResult, error) {
	var batch []ksItem
	for i, c := range cases {
		it, err := newKSItem(c, filepath.Join(tmp, fmt.Sprintf("ks-%d.json", i)))
		if err != nil {
			return nil, err
		}
		batch = append(batch, it)
	}
	out, err := x.execute(batch, filepath.Join(tmp, "kafka-streams-fuzz-batch.json"))
	if err != nil {
		return nil, err
	}
	results := map[string]*ksResult{}
	for _, it := range batch {
		r, err := readKS(it.Result)
		if err != nil {
			return nil, fmt.Errorf("case %s: the Kafka Streams executor wrote no result: %v\n%s", it.Name, err, out)
		}
		if r.Error != "" {
			return nil, fmt.Errorf("case %s: the Kafka Streams executor could not run it: %s", it.Name, r.Error)
		}
		results[it.Name] = r
	}
	return results, nil
}

func ksRun(c *Case, r *ksResult) (*fuzzRun, error) {
	run := &fuzzRun{outputs: map[string][]*kgo.Record{}, dropped: r.DroppedRecords}
	if r.Refused != nil {
		run.refused = fmt.Sprintf("step %d: %s: %s", r.Refused.Step, r.Refused.Class, r.Refused.Message)
		return run, nil
	}
	if f := r.Failure; f != nil {
		run.failure = fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset)
	}
	for _, o := range c.Expect.Outputs {
		recs, err := r.records(o.Topic)
		if err != nil {
			return nil, err
		}
		run.outputs[o.Topic] = recs
	}
	return run, nil
}

// goRun runs c through the Go executor in test driver mode.
func goRun(c *Case) (*fuzzRun, error) {
	cfg := map[string]string{"polystreams.test.driver": "true"}
	for k, v := range ksConfig(c) {
		cfg[k] = v
	}
	x, err := goLang{}.Launch(spec{Case: c.raw, ApplicationID: "fuzz", Config: cfg, Start: true, c: c})
	if err != nil {
		return nil, err
	}
	run := &fuzzRun{outputs: map[string][]*kgo.Record{}}
	ev, ok := next(x, buildTimeout)
	switch {
	case !ok:
		stop(x)
		return nil, fmt.Errorf("case %s: the Go executor ended or hung before its build (%s)", c.Name, eventText(ev))
	case ev.Event == "build_error":
		stop(x)
		run.refused = fmt.Sprintf("step %d: %s: %s", ev.Step, ev.Code, ev.Message)
		return run, nil
	}
	if ev, ok = next(x, startTimeout); !ok || ev.Event != "started" {
		stop(x)
		return nil, fmt.Errorf("case %s: the Go test driver did not start (%s)", c.Name, eventText(ev))
	}
	d := x.(*goExec).driver()
	ctx := context.Background()
	for _, in := range c.Inputs {
		var recs []*kgo.Record
		for j, r := range in.Records {
			rec, err := record(in.Topic, in.Key, in.Value, r)
			if err != nil {
				stop(x)
				return nil, fmt.Errorf("case %s: input %s[%d]: %w", c.Name, in.Topic, j, err)
			}
			recs = append(recs, rec)
		}
		failed, err := d.Pipe(ctx, recs)
		if err != nil {
			stop(x)
			return nil, fmt.Errorf("case %s: piping %s: %w", c.Name, in.Topic, err)
		}
		if failed != nil {
			run.failure = fmt.Sprintf("%s/%d@%d", failed.Topic, failed.Partition, failed.Offset)
			break
		}
	}
	if run.failure == "" {
		for _, o := range c.Expect.Outputs {
			recs, err := d.Read(ctx, o.Topic)
			if err != nil {
				stop(x)
				return nil, fmt.Errorf("case %s: reading %s: %w", c.Name, o.Topic, err)
			}
			run.outputs[o.Topic] = recs
		}
	}
	if n, ok := droppedOnStop(x); ok {
		run.dropped = &n
	}
	return run, nil
}

// fuzzDiff lists how got (Go) differs from want (Kafka Streams), in the
// case's terms; nil when they agree.
func fuzzDiff(c *Case, want, got *fuzzRun) []string {
	var d []string
	if (want.refused == "") != (got.refused == "") {
		return []string{fmt.Sprintf("build: Kafka Streams refused: %q; Go refused: %q", want.refused, got.refused)}
	}
	if want.refused != "" {
		return nil
	}
	if want.failure != got.failure {
		return []string{fmt.Sprintf("failure: Kafka Streams failed at %q, Go at %q (empty: no failure)", want.failure, got.failure)}
	}
	if want.failure != "" {
		return nil
	}
	for _, o := range c.Expect.Outputs {
		w, g := want.outputs[o.Topic], got.outputs[o.Topic]
		ws, gs := fuzzShown(&o, w), fuzzShown(&o, g)
		if strings.Join(ws, "\n") != strings.Join(gs, "\n") {
			d = append(d, fmt.Sprintf("output %s (in order):\n  Kafka Streams: [%s]\n  Go:            [%s]", o.Topic, strings.Join(ws, ", "), strings.Join(gs, ", ")))
		}
	}
	if want.dropped != nil && got.dropped != nil && *want.dropped != *got.dropped {
		d = append(d, fmt.Sprintf("dropped records: Kafka Streams %d, Go %d", *want.dropped, *got.dropped))
	}
	return d
}

// fuzzShown is each record as key=value@timestamp, decoded with the
// output's serdes.
func fuzzShown(o *Output, recs []*kgo.Record) []string {
	s := make([]string, len(recs))
	for i, r := range recs {
		s[i] = fmt.Sprintf("%s=%s@%d", canon(o.Key, r.Key), canon(o.Value, r.Value), r.Timestamp.UnixMilli())
	}
	return s
}

// fuzzSide runs cases through both sides and returns each one's
// differences (by name); a case both sides refuse has none.
func fuzzSides(x *javaExecutor, cases []*Case, tmp string) (map[string][]string, map[string]*fuzzRun, error) {
	ks, err := runKSBatch(x, cases, tmp)
	if err != nil {
		return nil, nil, err
	}
	diffs, runs := map[string][]string{}, map[string]*fuzzRun{}
	for _, c := range cases {
		want, err := ksRun(c, ks[c.Name])
		if err != nil {
			return nil, nil, err
		}
		got, err := goRun(c)
		if err != nil {
			return nil, nil, err
		}
		runs[c.Name] = want
		if d := fuzzDiff(c, want, got); len(d) > 0 {
			diffs[c.Name] = d
		}
	}
	return diffs, runs, nil
}

// shrinkCandidates are c without one step or one record, each valid.
func shrinkCandidates(c *Case, sch *schema) []*Case {
	var out []*Case
	add := func(k *Case) {
		name := fmt.Sprintf("shrink_%d", len(out))
		if p, err := fuzzCase(k, name, c.Description, sch); err == nil {
			out = append(out, p)
		}
	}
	// Halves first: a difference that needs few records (or none: a
	// build) shrinks in a few rounds.
	for i, in := range c.Inputs {
		if n := len(in.Records); n > 1 {
			for _, half := range [][2]int{{0, n / 2}, {n / 2, n}} {
				k := cloneCase(c)
				k.Inputs[i].Records = k.Inputs[i].Records[half[0]:half[1]]
				add(k)
			}
		}
	}
	for i, in := range c.Inputs {
		for j := range in.Records {
			k := cloneCase(c)
			k.Inputs[i].Records = append(k.Inputs[i].Records[:j:j], k.Inputs[i].Records[j+1:]...)
			if len(k.Inputs[i].Records) == 0 {
				continue
			}
			add(k)
		}
	}
	for i := 1; i < len(c.Topology)-1; i++ {
		if c.Topology[i].As != "" || c.Topology[i].Op == "stream" || c.Topology[i].Op == "table" {
			continue
		}
		k := cloneCase(c)
		k.Topology = append(k.Topology[:i:i], k.Topology[i+1:]...)
		add(k)
		if c.Topology[i].Windows != nil && c.Topology[i].Windows.GraceMs != nil {
			k := cloneCase(c)
			k.Topology[i].Windows.GraceMs = nil
			add(k)
		}
	}
	if c.Config["processing.guarantee"] != "" {
		k := cloneCase(c)
		delete(k.Config, "processing.guarantee")
		add(k)
	}
	return out
}

func cloneCase(c *Case) *Case {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	var k Case
	if err := json.Unmarshal(data, &k); err != nil {
		panic(err)
	}
	return &k
}

// shrink drops steps and records from c while it still differs: each round
// runs every candidate in one batch and keeps the first that differs.
func shrink(x *javaExecutor, c *Case, diff []string, sch *schema, tmp string) (*Case, []string, error) {
	for round := 0; round < 40; round++ {
		cands := shrinkCandidates(c, sch)
		if len(cands) == 0 {
			break
		}
		diffs, _, err := fuzzSides(x, cands, tmp)
		if err != nil {
			return nil, nil, err
		}
		var next *Case
		for _, k := range cands {
			if d, ok := diffs[k.Name]; ok {
				next, diff = k, d
				break
			}
		}
		if next == nil {
			break
		}
		c = next
	}
	return c, diff, nil
}

// fuzzSignature is what two differences share when they are very likely
// one divergence: the topology's operators, window types and what
// differed (build, failure, output, dropped records); for a refusal, the
// refusal's text without numbers.
func fuzzSignature(c *Case, diff []string) string {
	if strings.HasPrefix(diff[0], "build:") { // the refusal, whatever the steps
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, strings.ReplaceAll(diff[0], "left_join", "join"))
	}
	var b strings.Builder
	for _, st := range c.Topology {
		b.WriteString(st.Op)
		if st.Windows != nil {
			b.WriteString("[" + st.Windows.Type + "]")
		}
		b.WriteString(" ")
	}
	kind, _, _ := strings.Cut(diff[0], ":")
	return strings.TrimSpace(b.String()) + " / " + kind
}

// fuzzFound writes (or prints) a shrunk case: its expectation is what
// Kafka Streams did, its description what Go did differently. It reports
// true when the case is already saved (a known divergence: its name is the
// hash of its topology, inputs and config, and c.Name becomes that name).
func fuzzFound(root string, c *Case, diff []string, want *fuzzRun, seed uint64, n int, sch *schema, save bool) (bool, error) {
	k := cloneCase(c)
	for i := range k.Expect.Outputs {
		o := &k.Expect.Outputs[i]
		o.Records = []Record{}
		for _, r := range want.outputs[o.Topic] {
			var rec Record
			for field, b := range map[string][]byte{"key": r.Key, "value": r.Value} {
				serde := o.Value
				if field == "key" {
					serde = o.Key
				}
				v, err := decode(serde, b)
				if err != nil {
					return false, fmt.Errorf("output %s: %s: %w", o.Topic, field, err)
				}
				if bs, ok := v.([]byte); ok {
					v = base64.StdEncoding.EncodeToString(bs)
				}
				raw, err := json.Marshal(v)
				if err != nil {
					return false, err
				}
				if field == "key" {
					rec.Key = raw
				} else {
					rec.Value = raw
				}
			}
			ts := r.Timestamp.UnixMilli()
			rec.Timestamp = &ts
			o.Records = append(o.Records, rec)
		}
	}
	if want.failure != "" || want.refused != "" {
		return false, fmt.Errorf("a case Kafka Streams refuses or fails is not saved (%s%s): %s", want.refused, want.failure, strings.Join(diff, "; "))
	}
	k.Expect.DroppedRecords = want.dropped
	h := sha256.New()
	data, _ := json.Marshal(struct {
		T []Step
		I []Input
		C map[string]string
	}{k.Topology, k.Inputs, k.Config})
	h.Write(data)
	name := "fuzz_" + hex.EncodeToString(h.Sum(nil))[:10]
	c.Name = name
	file := filepath.Join(root, "conformance", "cases", name+".json")
	if _, err := os.Stat(file); err == nil {
		return true, nil
	}
	desc := fmt.Sprintf("Found by the conformance fuzzer (make fuzz-conformance, seed %d, case %d) and shrunk; the expectation is what Kafka Streams did. Go's test driver differed: %s", seed, n, strings.Join(diff, "; "))
	p, err := fuzzCase(k, name, desc, sch)
	if err != nil {
		return false, err
	}
	if !save {
		fmt.Printf("%s\n", p.raw)
		return false, nil
	}
	if err := os.WriteFile(file, p.raw, 0o644); err != nil {
		return false, err
	}
	fmt.Printf("fuzz: wrote %s\n", file)
	return false, nil
}

// runFuzz generates, runs and compares batches of random cases until the
// count or the duration is reached; it returns the exit code.
func runFuzz(root string, sch *schema, o fuzzOptions) int {
	began := time.Now()
	x, err := findJavaExecutor(root)
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp("", "polystreams-fuzz-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	g := &fuzzGen{r: rand.New(rand.NewPCG(o.seed, 0x9e3779b97f4a7c15))}
	ran, refused, failed, found, records := 0, 0, 0, 0, 0
	seen := map[string]bool{} // fuzzSignature of each difference shrunk
	known := 0                // differences already saved as cases
	for (o.cases == 0 || ran < o.cases) && (o.duration == 0 || time.Since(began) < o.duration) {
		size := o.batch
		if o.cases > 0 {
			size = min(size, o.cases-ran)
		}
		var cases []*Case
		for len(cases) < size {
			c, err := fuzzCase(g.gen(), fmt.Sprintf("fuzz_%d", g.n), "a random case of the conformance fuzzer", sch)
			if err != nil {
				return fail(fmt.Errorf("the generator made an invalid case (a fuzzer bug): %w", err))
			}
			cases = append(cases, c)
		}
		diffs, runs, err := fuzzSides(x, cases, tmp)
		if err != nil {
			return fail(err)
		}
		ran += len(cases)
		for _, c := range cases {
			switch r := runs[c.Name]; {
			case r.refused != "":
				refused++
			case r.failure != "":
				failed++
			default:
				for _, recs := range r.outputs {
					records += len(recs)
				}
			}
			d, ok := diffs[c.Name]
			if !ok {
				continue
			}
			n := 0
			fmt.Sscanf(c.Name, "fuzz_%d", &n)
			sig := fuzzSignature(c, d)
			if seen[sig] {
				fmt.Printf("fuzz: case %d differs as an earlier one did (%s); not shrunk again\n", n, sig)
				continue
			}
			seen[sig] = true
			fmt.Printf("fuzz: case %d differs: %s\n", n, strings.Join(d, "; "))
			small, sd, err := shrink(x, c, d, sch, tmp)
			if err != nil {
				return fail(err)
			}
			_, wr, err := fuzzSides(x, []*Case{small}, tmp)
			if err != nil {
				return fail(err)
			}
			fmt.Printf("fuzz: shrunk to %d steps, %d records: %s\n", len(small.Topology), countRecords(small), strings.Join(sd, "; "))
			saved, err := fuzzFound(root, small, sd, wr[small.Name], o.seed, n, sch, o.save)
			switch {
			case err != nil:
				fmt.Printf("fuzz: %v\n", err)
				found++
			case saved:
				fmt.Printf("fuzz: known: the shrunk case is already conformance/cases/%s.json (the matrix tracks it)\n", small.Name)
				known++
			default:
				found++
			}
		}
		fmt.Printf("fuzz: %d cases run (Kafka Streams refused %d, failed %d, wrote %d output records), %d differences, %s\n", ran, refused, failed, records, found, time.Since(began).Round(100*time.Millisecond))
	}
	fmt.Printf("fuzz: seed %d: %d random cases through Kafka Streams and Go's test driver, %d new differences found (%d known: saved cases), in %s\n", o.seed, ran, found, known, time.Since(began).Round(100*time.Millisecond))
	if found > 0 {
		return 1
	}
	return 0
}

func countRecords(c *Case) int {
	n := 0
	for _, in := range c.Inputs {
		n += len(in.Records)
	}
	return n
}
