package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Case is one conformance case, as conformance/schema/case.schema.json
// describes it.
type Case struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Pins        *Pins             `json:"pins,omitempty"`
	Config      map[string]string `json:"config,omitempty"`
	Topology    []Step            `json:"topology"`
	Inputs      []Input           `json:"inputs,omitempty"`
	Expect      Expect            `json:"expect"`

	// file is where the case was read from; raw is its text, handed to
	// the executors as is.
	file string
	raw  json.RawMessage
}

type Pins struct {
	Behaviour string `json:"behaviour"`
	Kafka     string `json:"kafka"`
}

// Step is one builder call.
type Step struct {
	Op     string   `json:"op"`
	As     string   `json:"as,omitempty"`
	From   string   `json:"from,omitempty"`
	Name   string   `json:"name,omitempty"`
	Topics []string `json:"topics,omitempty"`
	Topic  string   `json:"topic,omitempty"`
	// Extract "key": to's TopicNameExtractor names the topic Topic + the
	// record's key.
	Extract string `json:"extract,omitempty"`
	// Label is print's Printed.withLabel (absent: the default label).
	Label      string `json:"label,omitempty"`
	Key        string `json:"key,omitempty"`
	Value      string `json:"value,omitempty"`
	Fn         *FnRef `json:"fn,omitempty"`
	Init       *FnRef `json:"init,omitempty"`
	Subtractor *FnRef `json:"subtractor,omitempty"`
	Merger     *FnRef `json:"merger,omitempty"`
	// ForeignKey is a foreign-key join's extractor: value -> the other
	// table's key (a mapper).
	ForeignKey *FnRef `json:"foreign_key,omitempty"`
	Builtin    string `json:"builtin,omitempty"`
	// BuiltinJoiner is a join's built-in joiner (pair, this, other),
	// instead of Fn.
	BuiltinJoiner string        `json:"builtin_joiner,omitempty"`
	Materialized  *Materialized `json:"materialized,omitempty"`
	Windows       *Windows      `json:"windows,omitempty"`
	// Branch picks one stream of the split that From labels: its key in
	// the split's map, "<split name><branch name or number>".
	Branch string `json:"branch,omitempty"`
	// Other is merge's and a stream-stream join's other stream and Table
	// a stream-table join's table, by label.
	Other string `json:"other,omitempty"`
	Table string `json:"table,omitempty"`
	// JoinWindows and StoreName are a stream-stream join's JoinWindows
	// and StreamJoined.withStoreName.
	JoinWindows *JoinWindows `json:"join_windows,omitempty"`
	StoreName   string       `json:"store_name,omitempty"`
	// KeyMapper is a join's with a global table (Table labels one).
	KeyMapper *FnRef `json:"key_mapper,omitempty"`
	// Partitions is repartition's Repartitioned.withNumberOfPartitions
	// (0: the writing sub-topology's count).
	Partitions int `json:"partitions,omitempty"`
	// Branches, DefaultBranch and DefaultName are split's.
	Branches      []SplitBranch `json:"branches,omitempty"`
	DefaultBranch bool          `json:"default_branch,omitempty"`
	DefaultName   string        `json:"default_name,omitempty"`
	// Strategy is emit_strategy's: on_window_update | on_window_close.
	Strategy string `json:"strategy,omitempty"`
	// Processor and Stores are process's and process_values': a processor
	// of the processor catalogue (processors.go) and the stores
	// (add_state_store) it uses.
	Processor *FnRef `json:"processor,omitempty"`
	// Versioned makes an add_state_store's store a versioned one
	// (Stores.versionedKeyValueStoreBuilder over
	// Stores.persistentVersionedKeyValueStore).
	Versioned *Versioned `json:"versioned,omitempty"`
	Stores    []string   `json:"stores,omitempty"`
	// Transformer is transform_values': a transformer of the transformer
	// catalogue (transformers.go); Stores are the stores it uses.
	Transformer *FnRef `json:"transformer,omitempty"`
	// TimeLimitMs is suppress's Suppressed.untilTimeLimit (absent:
	// untilWindowCloses), Buffer its BufferConfig (absent: unbounded).
	TimeLimitMs *int64        `json:"time_limit_ms,omitempty"`
	Buffer      *BufferConfig `json:"buffer,omitempty"`
	// TimestampExtractor is a source's Consumed.withTimestampExtractor: a
	// built-in extractor of Kafka Streams by class name.
	TimestampExtractor string `json:"timestamp_extractor,omitempty"`
	// TimestampExtractorFn is a source's Consumed.withTimestampExtractor
	// with a user TimestampExtractor: a catalogue function of role
	// extractor, run by the language's SDK (Java: a TimestampExtractor).
	TimestampExtractorFn *FnRef `json:"timestamp_extractor_fn,omitempty"`
}

// BufferConfig is suppress's Suppressed.BufferConfig: maxRecords and
// maxBytes (absent: no bound) and what a full buffer does: emit_early
// (absent: maxRecords' and maxBytes' default) or shut_down.
type BufferConfig struct {
	MaxRecords *int64 `json:"max_records,omitempty"`
	MaxBytes   *int64 `json:"max_bytes,omitempty"`
	WhenFull   string `json:"when_full,omitempty"`
}

// SplitBranch is one branch of a split: its predicate and Branched.as name
// (empty: its number, from 1).
type SplitBranch struct {
	Fn   *FnRef `json:"fn"`
	Name string `json:"name,omitempty"`
}

// branchKeys is the keys of a named split's map, in Kafka Streams' form;
// nil when the split has no name (the engine numbers it).
func (s Step) branchKeys() []string {
	if s.Name == "" {
		return nil
	}
	var keys []string
	for i, b := range s.Branches {
		keys = append(keys, s.Name+or(b.Name, fmt.Sprint(i+1)))
	}
	if s.DefaultBranch {
		keys = append(keys, s.Name+or(s.DefaultName, "0"))
	}
	return keys
}

// Windows are windowed_by's windows (milliseconds); GraceMs nil means the
// ...WithNoGrace factory, AdvanceMs nil a tumbling window.
type Windows struct {
	Type             string `json:"type"` // time | sliding | session
	SizeMs           int64  `json:"size_ms,omitempty"`
	AdvanceMs        *int64 `json:"advance_ms,omitempty"`
	TimeDifferenceMs int64  `json:"time_difference_ms,omitempty"`
	InactivityGapMs  int64  `json:"inactivity_gap_ms,omitempty"`
	GraceMs          *int64 `json:"grace_ms,omitempty"`
}

// JoinWindows are a stream-stream join's windows (milliseconds), built as
// JoinWindows.ofTimeDifferenceAndGrace (GraceMs nil:
// ofTimeDifferenceWithNoGrace), then .before / .after when given.
type JoinWindows struct {
	TimeDifferenceMs int64  `json:"time_difference_ms"`
	GraceMs          *int64 `json:"grace_ms,omitempty"`
	BeforeMs         *int64 `json:"before_ms,omitempty"`
	AfterMs          *int64 `json:"after_ms,omitempty"`
}

// FnRef names a catalogue function: "upper", or {"name": "prefix", "arg": "x-"}.
type FnRef struct {
	Name string
	Arg  any // string or json.Number; nil when none
}

func (f *FnRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		f.Name = s
		return nil
	}
	var o struct {
		Name string `json:"name"`
		Arg  any    `json:"arg"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&o); err != nil {
		return err
	}
	f.Name, f.Arg = o.Name, o.Arg
	return nil
}

func (f *FnRef) String() string {
	if f.Arg == nil {
		return f.Name
	}
	return fmt.Sprintf("%s(%v)", f.Name, f.Arg)
}

type Materialized struct {
	Store       string `json:"store,omitempty"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value,omitempty"`
	RetentionMs int64  `json:"retention_ms,omitempty"`
	// Versioned: Materialized.as(Stores.persistentVersionedKeyValueStore(
	// store, history retention[, segment interval])), on a table.
	Versioned *Versioned `json:"versioned,omitempty"`
}

// Versioned is a versioned store's settings (ms).
type Versioned struct {
	HistoryRetentionMs int64 `json:"history_retention_ms"`
	SegmentIntervalMs  int64 `json:"segment_interval_ms,omitempty"`
}

// Record is a record in its serdes' natural JSON form.
type Record struct {
	Key       json.RawMessage   `json:"key,omitempty"`
	Value     json.RawMessage   `json:"value"`
	Timestamp *int64            `json:"timestamp,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// Input is one entry of a case's inputs: records for one topic, or, when
// AdvanceWallClockMs is set, a step that moves the wall clock forward
// (TopologyTestDriver.advanceWallClockTime; test driver mode only, as the
// wall clock against the broker is the real one).
type Input struct {
	// AdvanceWallClockMs moves the wall clock by this many milliseconds,
	// running the wall-clock punctuators that become due.
	AdvanceWallClockMs *int64 `json:"advance_wall_clock_ms,omitempty"`
	Topic              string `json:"topic"`
	Key                string `json:"key"`
	Value              string `json:"value"`
	Partitions         int    `json:"partitions,omitempty"`
	// BeforeStart: produced before the topology starts (a global table's
	// rows, restored before any record is processed).
	BeforeStart bool     `json:"before_start,omitempty"`
	Records     []Record `json:"records"`
}

type Output struct {
	Topic      string   `json:"topic"`
	Key        string   `json:"key"`
	Value      string   `json:"value"`
	Partitions int      `json:"partitions,omitempty"`
	Mode       string   `json:"mode,omitempty"`
	Records    []Record `json:"records"`
}

type Expect struct {
	Describe   *string     `json:"describe,omitempty"`
	BuildError *BuildError `json:"build_error,omitempty"`
	Outputs    []Output    `json:"outputs,omitempty"`
	Failure    *Failure    `json:"failure,omitempty"`
	// DroppedRecords is the application's dropped-records-total once the
	// inputs are processed (executors report it when told to stop).
	DroppedRecords *int64 `json:"dropped_records,omitempty"`
	// Printed are the lines print steps write, in order, once the inputs
	// are processed (Printed.toSysOut; the Java executor prints to a file).
	Printed []string `json:"printed,omitempty"`
}

type BuildError struct {
	Step     int      `json:"step"`
	Code     string   `json:"code"`
	Contains []string `json:"contains"`
}

type Failure struct {
	Node      string   `json:"node"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Contains  []string `json:"contains"`
}

// advancesWallClock reports whether an input moves the wall clock (such a
// case runs in test driver mode only).
func (c *Case) advancesWallClock() bool {
	return slices.ContainsFunc(c.Inputs, func(in Input) bool { return in.AdvanceWallClockMs != nil })
}

// starts reports whether the case runs its topology (else it only builds).
func (c *Case) starts() bool {
	return c.Expect.BuildError == nil && (len(c.Inputs) > 0 || len(c.Expect.Outputs) > 0 || c.Expect.Failure != nil)
}

// CaseError is a case file that does not match the schema (or the rules
// the schema cannot say): the file, and every violation with its JSON path.
type CaseError struct {
	File       string
	Violations []violation
}

func (e *CaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %s is invalid:", e.File)
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n  %s", v)
	}
	return b.String()
}

// loadCases reads every *.json file of dir, in name order. Every invalid
// file is reported, not only the first.
func loadCases(dir string, sch *schema) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files (*.json) in %s", dir)
	}
	sort.Strings(files)
	var cases []*Case
	var errs []string
	names := map[string]string{}
	for _, f := range files {
		c, err := loadCase(f, sch)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if other, ok := names[c.Name]; ok {
			errs = append(errs, fmt.Sprintf("case %s: name %q is taken by %s", f, c.Name, other))
			continue
		}
		names[c.Name] = f
		cases = append(cases, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return cases, nil
}

func loadCase(file string, sch *schema) (*Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parseCase(file, data, sch)
}

func parseCase(file string, data []byte, sch *schema) (*Case, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, &CaseError{File: file, Violations: []violation{{"$", "not JSON: " + err.Error()}}}
	}
	if vs := sch.validate(doc); len(vs) > 0 {
		return nil, &CaseError{File: file, Violations: vs}
	}
	c := &Case{file: file, raw: data}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, &CaseError{File: file, Violations: []violation{{"$", err.Error()}}}
	}
	if vs := c.rules(); len(vs) > 0 {
		return nil, &CaseError{File: file, Violations: vs}
	}
	return c, nil
}

// rules checks what the schema cannot say: the file's name, step labels,
// that each catalogue function fits its operator, and that expectations
// agree with each other.
func (c *Case) rules() []violation {
	var out []violation
	add := func(path, format string, args ...any) {
		out = append(out, violation{path, fmt.Sprintf(format, args...)})
	}
	if base := strings.TrimSuffix(filepath.Base(c.file), ".json"); c.file != "" && base != c.Name {
		add("$.name", "%q differs from the file's name %q", c.Name, base)
	}
	labels := map[string]int{}
	kinds := c.kinds()
	for i, s := range c.Topology {
		p := fmt.Sprintf("$.topology[%d]", i)
		if i == 0 && s.Op != "stream" && s.Op != "table" && s.Op != "global_table" {
			add(p+".op", "the first step must be stream, table or global_table, got %s", s.Op)
		}
		if s.From != "" {
			if _, ok := labels[s.From]; !ok {
				add(p+".from", "names label %q, which no earlier step has", s.From)
			}
		}
		in := c.inputKind(i, kinds)
		if s.Branch != "" {
			j, ok := labels[s.From]
			switch {
			case !ok || c.Topology[j].Op != "split":
				add(p+".branch", "branch picks a stream of a split, but from names no split")
			default:
				if keys := c.Topology[j].branchKeys(); keys != nil && !slices.Contains(keys, s.Branch) {
					add(p+".branch", "names branch %q, which the split does not make (it makes %s)", s.Branch, strings.Join(keys, ", "))
				}
			}
		}
		if in == kindBranches {
			add(p+".branch", "the step applies to a split: give the branch it takes (\"<split name><branch name or number>\")")
		}
		if s.Op == "split" && s.As == "" {
			add(p+".as", "a split's streams are reached only through its label: give one")
		}
		if s.DefaultName != "" && !s.DefaultBranch {
			add(p+".default_name", "names a default branch, but default_branch is not true")
		}
		ref := func(field, label string, want kind) {
			j, ok := labels[label]
			switch {
			case !ok:
				add(p+"."+field, "names label %q, which no earlier step has", label)
			case kinds[j] != want:
				add(p+"."+field, "names label %q, a %s, not a %s", label, kinds[j], want)
			}
		}
		if s.Op == "merge" {
			ref("other", s.Other, kindStream)
		}
		if s.Op == "join" || s.Op == "left_join" || s.Op == "outer_join" {
			switch {
			case s.Other != "" && s.Table != "":
				add(p+".other", "a join takes a table or another stream, not both")
			case s.Other != "":
				ref("other", s.Other, kindStream)
				if s.JoinWindows == nil {
					add(p+".join_windows", "a stream-stream join needs join_windows")
				}
				if in != kindStream {
					add(p+".op", "a stream-stream %s applies to a stream, not a %s", s.Op, in)
				}
			case s.Op == "outer_join" && in != kindTable:
				add(p+".other", "an outer join takes another stream (KStream.outerJoin) or applies to a table (KTable.outerJoin)")
			case s.KeyMapper != nil:
				ref("table", s.Table, kindGlobalTable)
				if in != kindStream {
					add(p+".op", "a join with a global table applies to a stream, not a %s", in)
				}
			default:
				ref("table", s.Table, kindTable)
				if in != kindStream && in != kindTable {
					add(p+".op", "%s applies to a stream or a table, not a %s", s.Op, in)
				}
			}
		}
		if isForeignKeyJoin(s.Op) {
			ref("table", s.Table, kindTable)
			if in != kindTable {
				add(p+".op", "%s applies to a table, not a %s", s.Op, in)
			}
		}
		if (s.JoinWindows != nil || s.StoreName != "") && s.Other == "" {
			add(p+".join_windows", "join_windows and store_name are a stream-stream join's")
		}
		if (s.Op == "merge" || s.Op == "split" || s.Op == "repartition") && in != kindStream {
			add(p+".op", "%s applies to a stream, not a %s", s.Op, in)
		}
		if s.As != "" {
			if j, ok := labels[s.As]; ok {
				add(p+".as", "label %q is taken by step %d", s.As, j)
			}
			labels[s.As] = i
		}
		roles := stepRoles[s.Op]
		if s.Op == "group_by" && in == kindTable {
			roles.fn = roleMap // KTable.groupBy maps each row to a new (key, value)
		}
		check := func(field string, f *FnRef, role role) {
			if f == nil {
				return
			}
			e, ok := catalogue[f.Name]
			if !ok {
				add(p+"."+field, "function %q is not in the catalogue", f.Name)
				return
			}
			if !e.roles.has(role) {
				add(p+"."+field, "function %q cannot be used as %s (it is a %s)", f.Name, role, e.roles)
			}
			switch {
			case e.arg == argNone && f.Arg != nil:
				add(p+"."+field, "function %q takes no argument", f.Name)
			case e.arg == argRequired && f.Arg == nil:
				add(p+"."+field, "function %q needs an argument", f.Name)
			}
		}
		check("fn", s.Fn, roles.fn)
		check("init", s.Init, roleInit)
		check("subtractor", s.Subtractor, roles.fn)
		check("merger", s.Merger, roleMerger)
		check("foreign_key", s.ForeignKey, roleMapper)
		if (s.ForeignKey != nil) != isForeignKeyJoin(s.Op) {
			add(p+".foreign_key", "a foreign key extractor goes with foreign_key_join and left_foreign_key_join, and only with them")
		}
		check("key_mapper", s.KeyMapper, roleKey)
		check("timestamp_extractor_fn", s.TimestampExtractorFn, roleExtractor)
		if s.TimestampExtractorFn != nil && s.TimestampExtractor != "" {
			add(p+".timestamp_extractor_fn", "a source takes one extractor: timestamp_extractor (built-in) or timestamp_extractor_fn (a catalogue function), not both")
		}
		for j, b := range s.Branches {
			check(fmt.Sprintf("branches[%d].fn", j), b.Fn, rolePredicate)
		}
		if s.Subtractor != nil && in != kindGroupedTable {
			add(p+".subtractor", "a subtractor is for a grouped table's %s, but the step applies to a %s", s.Op, in)
		}
		if s.Op == "cogroup" {
			switch {
			case in == kindGroupedStream && s.Other != "":
				add(p+".other", "cogroup on a grouped stream starts a cogroup; add other grouped streams with a cogroup step on its result")
			case in == kindGroupedStream:
			case in == kindCogrouped && s.Other == "":
				add(p+".other", "cogroup on a cogrouped stream adds the grouped stream other labels: give one")
			case in == kindCogrouped:
				ref("other", s.Other, kindGroupedStream)
			default:
				add(p+".op", "cogroup applies to a grouped stream or a cogrouped stream, not a %s", in)
			}
		}
		cogrouped := in == kindCogrouped || in == kindWindowedCogrouped || in == kindSessionWindowedCogrouped
		if s.Op == "aggregate" && (s.Fn == nil) != cogrouped {
			add(p+".fn", "aggregate of a cogrouped stream takes no fn (its cogroup steps gave the aggregators), and every other aggregate needs one")
		}
		if s.Merger != nil && in != kindSessionWindowed && in != kindSessionWindowedCogrouped {
			add(p+".merger", "a merger is for a session-windowed stream's aggregate, but the step applies to a %s", in)
		}
		if s.Op == "windowed_by" && in != kindGroupedStream && in != kindCogrouped {
			add(p+".op", "windowed_by applies to a grouped stream, not a %s", in)
		}
		if s.Op == "emit_strategy" && in != kindWindowed && in != kindSessionWindowed {
			add(p+".op", "emit_strategy applies to a windowed stream, not a %s", in)
		}
		if (s.Strategy != "") != (s.Op == "emit_strategy") {
			add(p+".strategy", "a strategy goes with emit_strategy, and emit_strategy needs one")
		}
		if s.Op == "to_stream" && in != kindTable {
			add(p+".op", "to_stream applies to a table, not a %s", in)
		}
		if s.Label != "" && s.Op != "print" {
			add(p+".label", "a label is print's (Printed.withLabel)")
		}
		if s.Op == "print" && in != kindStream {
			add(p+".op", "print applies to a stream, not a %s", in)
		}
		if s.Op == "to_table" && in != kindStream {
			add(p+".op", "to_table applies to a stream, not a %s", in)
		}
		if s.Op == "suppress" && in != kindTable {
			add(p+".op", "suppress applies to a table, not a %s", in)
		}
		if s.Materialized != nil && in == kindStream && s.Op != "to_table" {
			add(p+".materialized", "materialized is for table operators, but %s applies to a stream", s.Op)
		}
		if m := s.Materialized; m != nil && m.Versioned != nil && m.Store == "" {
			add(p+".materialized.versioned", "a versioned store needs a store name (Stores.persistentVersionedKeyValueStore(name, ...))")
		}
		if s.Op == "reduce" && (s.Fn == nil) == (s.Builtin == "") {
			add(p, "reduce needs exactly one of fn and builtin")
		}
		if isJoin(s.Op) && (s.Fn == nil) == (s.BuiltinJoiner == "") {
			add(p, "%s needs exactly one of fn and builtin_joiner", s.Op)
		}
	}
	e := c.Expect
	if e.Describe == nil && e.BuildError == nil && len(e.Outputs) == 0 && e.Failure == nil && e.Printed == nil {
		add("$.expect", "expects nothing: give describe, build_error, outputs, printed or failure")
	}
	printing := slices.ContainsFunc(c.Topology, func(s Step) bool { return s.Op == "print" })
	if e.Printed != nil && !printing {
		add("$.expect.printed", "expects printed lines, but no step prints")
	}
	if e.DroppedRecords != nil && len(e.Outputs) == 0 {
		add("$.expect.dropped_records", "goes with outputs: it is read once they are in")
	}
	if e.BuildError != nil {
		if len(e.Outputs) > 0 || e.Failure != nil || e.Describe != nil || len(c.Inputs) > 0 {
			add("$.expect.build_error", "a refused build cannot also expect describe, outputs, failure or take inputs")
		}
		if e.BuildError.Step >= len(c.Topology) {
			add("$.expect.build_error.step", "step %d does not exist (the topology has %d)", e.BuildError.Step, len(c.Topology))
		}
	}
	for i, o := range e.Outputs {
		p := fmt.Sprintf("$.expect.outputs[%d]", i)
		if (o.Mode == "" || o.Mode == "ordered") && o.Partitions > 1 {
			add(p+".mode", "ordered needs one partition; use per_key or latest")
		}
		if o.Mode == "latest" {
			seen := map[string]bool{}
			for j, r := range o.Records {
				if seen[string(r.Key)] {
					add(fmt.Sprintf("%s.records[%d].key", p, j), "latest lists each key once; %s is listed again", r.Key)
				}
				seen[string(r.Key)] = true
			}
		}
		for j, r := range o.Records {
			if _, err := encode(o.Key, r.Key); err != nil {
				add(fmt.Sprintf("%s.records[%d].key", p, j), "%v", err)
			}
			if _, err := encode(o.Value, r.Value); err != nil {
				add(fmt.Sprintf("%s.records[%d].value", p, j), "%v", err)
			}
		}
	}
	for i, in := range c.Inputs {
		for j, r := range in.Records {
			p := fmt.Sprintf("$.inputs[%d].records[%d]", i, j)
			if _, err := encode(in.Key, r.Key); err != nil {
				add(p+".key", "%v", err)
			}
			if _, err := encode(in.Value, r.Value); err != nil {
				add(p+".value", "%v", err)
			}
		}
	}
	return out
}

// kind is what a step makes: a stream, a grouped stream, a table or a
// grouped table (none for a terminal step).
type kind string

const (
	kindNone          kind = "nothing"
	kindStream        kind = "stream"
	kindGroupedStream kind = "grouped stream"
	kindTable         kind = "table"
	kindGroupedTable  kind = "grouped table"
	// A TimeWindowedKStream (time or sliding windows) and a
	// SessionWindowedKStream: their count, reduce and aggregate make tables.
	kindWindowed        kind = "time-windowed stream"
	kindSessionWindowed kind = "session-windowed stream"
	// A split's streams by name (a later step takes one with from and
	// branch).
	kindBranches kind = "split"
	// A GlobalKTable: only a join takes it (by label).
	kindGlobalTable kind = "global table" // A CogroupedKStream and its windowed forms
	// (TimeWindowedCogroupedKStream, SessionWindowedCogroupedKStream):
	// aggregate (without fn) makes their table.
	kindCogrouped                kind = "cogrouped stream"
	kindWindowedCogrouped        kind = "time-windowed cogrouped stream"
	kindSessionWindowedCogrouped kind = "session-windowed cogrouped stream"
)

// kinds returns the kind of each step's result, as the DSL types them, so
// that the rules can check a step against its input (a table's group_by
// takes a key-value mapper, a subtractor is for grouped tables).
func (c *Case) kinds() []kind {
	out := make([]kind, len(c.Topology))
	for i, s := range c.Topology {
		in := c.inputKind(i, out)
		switch s.Op {
		case "stream":
			out[i] = kindStream
		case "table", "count", "reduce", "aggregate", "suppress", "foreign_key_join", "left_foreign_key_join", "to_table", "transform_values":
			out[i] = kindTable
		case "join", "left_join", "outer_join":
			out[i] = kindStream
			if in == kindTable {
				out[i] = kindTable
			}
		case "windowed_by":
			out[i] = kindWindowed
			if s.Windows != nil && s.Windows.Type == "session" {
				out[i] = kindSessionWindowed
			}
			if in == kindCogrouped {
				out[i] = kindWindowedCogrouped
				if s.Windows != nil && s.Windows.Type == "session" {
					out[i] = kindSessionWindowedCogrouped
				}
			}
		case "cogroup":
			out[i] = kindCogrouped
		case "map_values", "filter", "filter_not", "emit_strategy":
			out[i] = in
		case "group_by":
			out[i] = kindGroupedStream
			if in == kindTable {
				out[i] = kindGroupedTable
			}
		case "group_by_key":
			out[i] = kindGroupedStream
		case "to", "foreach", "print", "add_state_store":
			out[i] = kindNone
		case "global_table":
			out[i] = kindGlobalTable
		case "split":
			out[i] = kindBranches
		default: // flat_map_values, flat_map, the with-key mappers, map, select_key, peek, to_stream
			out[i] = kindStream
		}
	}
	return out
}

// inputKind is the kind of step i's input: the labelled step's (a stream
// for a split's branch), else that of the last step before it that made
// something other than a split.
func (c *Case) inputKind(i int, kinds []kind) kind {
	if from := c.Topology[i].From; from != "" {
		for j := i - 1; j >= 0; j-- {
			if c.Topology[j].As == from {
				if kinds[j] == kindBranches && c.Topology[i].Branch != "" {
					return kindStream
				}
				return kinds[j]
			}
		}
		return kindNone
	}
	for j := i - 1; j >= 0; j-- {
		if kinds[j] != kindNone && kinds[j] != kindBranches {
			return kinds[j]
		}
	}
	return kindNone
}

// isForeignKeyJoin reports whether op is a foreign-key table-table join.
func isForeignKeyJoin(op string) bool {
	return op == "foreign_key_join" || op == "left_foreign_key_join"
}

// readByGlobalTable reports whether topic is a global table's, which the
// application reads outside its group (no committed offsets to wait for).
func (c *Case) readByGlobalTable(topic string) bool {
	for _, s := range c.Topology {
		if s.Op == "global_table" && s.Topic == topic {
			return true
		}
	}
	return false
}

// isJoin reports whether op is a join step (stream-table, stream-stream,
// table-table, stream-global-table or foreign-key), which takes a joiner.
func isJoin(op string) bool {
	switch op {
	case "join", "left_join", "outer_join", "foreign_key_join", "left_foreign_key_join":
		return true
	}
	return false
}
