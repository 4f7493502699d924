package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func testSchema(t *testing.T) *schema {
	t.Helper()
	s, err := loadSchema(filepath.Join("..", "schema", "case.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every case checked in is valid (make conformance would refuse to run).
func TestCasesAreValid(t *testing.T) {
	cases, err := loadCases(filepath.Join("..", "cases"), testSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Errorf("%d cases, want at least 40", len(cases))
	}
}

// A bad file is refused with the file, the JSON path of each mistake and
// what is wrong with it.
func TestBadCaseIsRejectedWithPaths(t *testing.T) {
	_, err := loadCase(filepath.Join("testdata", "bad_case.json"), testSchema(t))
	if err == nil {
		t.Fatal("bad_case.json was accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"testdata/bad_case.json",
		`$.topology[3].op: "fliter" is not one of stream, table, map_values`,
		`$.topology[4].colour: is not allowed here`,
		`$.topology[1].fn: "shout" is not one of`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
}

// Rules beyond the schema: a function in the wrong role, an input value
// that does not fit its serde, ordered output over two partitions.
func TestCaseRules(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad_case.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Fix the schema violations; keep the rule violations.
	text := strings.NewReplacer(`"shout"`, `"upper"`, `"fliter"`, `"filter"`, `, "colour": "red"`, "").Replace(string(data))
	_, err = parseCase("bad_case.json", []byte(text), testSchema(t))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`$.topology[2].fn: function "upper" cannot be used as predicate (it is a mapper)`,
		`$.inputs[0].records[0].value: long serde: want an integer, got a string`,
		`$.expect.outputs[0].mode: ordered needs one partition`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	for _, bad := range []struct{ text, want string }{
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]}],"expect":{}}`, "$.expect: expects nothing"},
		{`{"name":"x","description":"d","topology":[{"op":"map_values","fn":"upper"}],"expect":{"describe":""}}`, "$.topology[0].op: the first step must be stream"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]},{"op":"count","from":"nope"}],"expect":{"describe":""}}`, `$.topology[1].from: names label "nope"`},
		{`{"name":"x","topology":[],"expect":{}}`, `$: "description" is required`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]},{"op":"reduce"}],"expect":{"describe":""}}`, "reduce needs exactly one of fn and builtin"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]},{"op":"map_values","fn":{"name":"prefix"}}],"expect":{"describe":""}}`, `$.topology[1].fn: "arg" is required`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]}],"expect":{"describe":""},"inputs":[{"topic":"a","key":"string","value":"string","partitions":9,"records":[]}]}`, "$.inputs[0].partitions: 9 is more than the maximum 8"},
		{`not json`, "$: not JSON"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]},{"op":"group_by_key"},{"op":"reduce","fn":"add","subtractor":"subtract"}],"expect":{"describe":""}}`, "$.topology[2].subtractor: a subtractor is for a grouped table's reduce, but the step applies to a grouped stream"},
		{`{"name":"x","description":"d","topology":[{"op":"table","topic":"t"},{"op":"group_by","fn":"first_letter"}],"expect":{"describe":""}}`, `$.topology[1].fn: function "first_letter" cannot be used as key-value mapper`},
		{`{"name":"x","description":"d","topology":[{"op":"table","topic":"t","as":"t"},{"op":"group_by","fn":"swap"},{"op":"aggregate","init":"zero","fn":"add","subtractor":"longer"},{"op":"filter","from":"t","fn":"always","materialized":{}}],"expect":{"describe":""}}`, `$.topology[2].subtractor: function "longer" cannot be used as aggregator`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"]},{"op":"filter","fn":"always","materialized":{"store":"s"}}],"expect":{"describe":""}}`, "$.topology[1].materialized: materialized is for table operators, but filter applies to a stream"},
		// merge, split, repartition and joins.
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"table","topic":"t","as":"t"},{"op":"merge","from":"a","other":"t"}],"expect":{"describe":""}}`, `$.topology[2].other: names label "t", a table, not a stream`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"join","table":"a","fn":"concat"}],"expect":{"describe":""}}`, `$.topology[1].table: names label "a", a stream, not a table`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"table","topic":"t","as":"t"},{"op":"join","from":"a","table":"t","fn":"upper"}],"expect":{"describe":""}}`, `$.topology[2].fn: function "upper" cannot be used as joiner`},
		{`{"name":"x","description":"d","topology":[{"op":"table","topic":"t"},{"op":"repartition"}],"expect":{"describe":""}}`, "$.topology[1].op: repartition applies to a stream, not a table"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"split","branches":[{"fn":"always"}]}],"expect":{"describe":""}}`, `$.topology[1]: "as" is required`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"split","as":"s","branches":[{"fn":"upper"}]}],"expect":{"describe":""}}`, `$.topology[1].branches[0].fn: function "upper" cannot be used as predicate`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"split","name":"s-","as":"s","branches":[{"fn":"always","name":"x"}],"default_branch":true},{"op":"to","from":"s","branch":"s-y","topic":"o"}],"expect":{"describe":""}}`, `$.topology[2].branch: names branch "s-y", which the split does not make (it makes s-x, s-0)`},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"split","as":"s","branches":[{"fn":"always"}]},{"op":"to","from":"s","topic":"o"}],"expect":{"describe":""}}`, "$.topology[2].branch: the step applies to a split: give the branch it takes"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"to","from":"a","branch":"b","topic":"o"}],"expect":{"describe":""}}`, "$.topology[1].branch: branch picks a stream of a split, but from names no split"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"as":"a"},{"op":"split","as":"s","branches":[{"fn":"always"}],"default_name":"rest"}],"expect":{"describe":""}}`, "$.topology[1].default_name: names a default branch, but default_branch is not true"},
		{`{"name":"x","description":"d","topology":[{"op":"stream","topics":["a"],"timestamp_extractor_fn":"upper"}],"expect":{"describe":""}}`, `$.topology[0].timestamp_extractor_fn: function "upper" cannot be used as timestamp extractor (it is a mapper)`},
		{`{"name":"x","description":"d","topology":[{"op":"table","topic":"t","timestamp_extractor":"LogAndSkipOnInvalidTimestamp","timestamp_extractor_fn":{"name":"field_timestamp","arg":"ts"}}],"expect":{"describe":""}}`, "$.topology[0].timestamp_extractor_fn: a source takes one extractor"},
	} {
		_, err := parseCase("x.json", []byte(bad.text), testSchema(t))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want an error saying %q", bad.text, err, bad.want)
		}
	}
}

// The schema can only use keywords the validator implements.
func TestSchemaRefusesUnknownKeywords(t *testing.T) {
	_, err := parseSchema([]byte(`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`))
	if err == nil || !strings.Contains(err.Error(), `"format"`) {
		t.Errorf("got %v, want the keyword named", err)
	}
}

func recs(kv ...string) []*kgo.Record {
	var out []*kgo.Record
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &kgo.Record{Key: []byte(kv[i]), Value: []byte(kv[i+1]), Timestamp: time.UnixMilli(7)})
	}
	return out
}

func output(mode string, kv ...string) *Output {
	o := &Output{Topic: "out", Key: "string", Value: "string", Mode: mode}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Records = append(o.Records, Record{Key: []byte(`"` + kv[i] + `"`), Value: []byte(`"` + kv[i+1] + `"`)})
	}
	return o
}

// The comparison catches a wrong value, a missing record, an extra one and
// a wrong order, and reports want and got.
func TestMismatchesAreReportedWithWantAndGot(t *testing.T) {
	for _, tc := range []struct {
		name string
		want *Output
		got  []*kgo.Record
		says []string
	}{
		{"wrong value", output("", "a", "X"), recs("a", "Y"), []string{"want 1 records:", `"a" => "X"`, "got 1 records:", `"a" => "Y"`}},
		{"missing", output("", "a", "X", "b", "Z"), recs("a", "X"), []string{"want 2 records", "got 1 records"}},
		{"extra", output("", "a", "X"), recs("a", "X", "a", "X"), []string{"want 1 records", "got 2 records"}},
		{"order", output("", "a", "1", "b", "2"), recs("b", "2", "a", "1"), []string{"(ordered)"}},
		{"per key order", output("per_key", "a", "1", "a", "2"), recs("a", "2", "a", "1"), []string{"(per_key)"}},
		{"latest", output("latest", "a", "2", "b", "1"), recs("a", "1", "a", "3"), []string{`key "a": want "a" => "2", got "a" => "3"`, `key "b": want "b" => "1", got no record`}},
		{"timestamp", &Output{Topic: "out", Key: "string", Value: "string", Records: []Record{{Key: []byte(`"a"`), Value: []byte(`"X"`), Timestamp: ptr(int64(8))}}}, recs("a", "X"), []string{`"a" => "X" @8`, `"a" => "X" @7`}},
	} {
		var res result
		compareOutput(tc.want, tc.got, &res)
		if len(res.problems) == 0 {
			t.Errorf("%s: no mismatch reported", tc.name)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(res.problems[0], s) {
				t.Errorf("%s: report does not say %q:\n%s", tc.name, s, res.problems[0])
			}
		}
	}
	var res result
	compareOutput(output("per_key", "a", "1", "b", "1", "a", "2"), recs("b", "1", "a", "1", "a", "2"), &res)
	if len(res.problems) > 0 {
		t.Errorf("per_key: interleaving across keys is not a mismatch: %v", res.problems)
	}
}

func ptr[T any](v T) *T { return &v }

// A serde's natural form survives the round trip, and values compare by
// meaning: a double 2.0 equals 2, JSON key order does not matter.
func TestSerdeCanon(t *testing.T) {
	for _, tc := range []struct{ serde, raw, want string }{
		{"long", "-9223372036854775808", "-9223372036854775808"},
		{"integer", "42", "42"},
		{"double", "2.0", "2"},
		{"double", "-0.25", "-0.25"},
		{"json", `{"b":1,"a":[1,2.5]}`, `{"a":[1,2.5],"b":1}`},
		{"bytes", `"AQID"`, `"AQID"`},
		{"string", `"ünï"`, `"ünï"`},
		{"string", "null", "null"},
	} {
		b, err := encode(tc.serde, []byte(tc.raw))
		if err != nil {
			t.Errorf("%s %s: %v", tc.serde, tc.raw, err)
			continue
		}
		if got := canon(tc.serde, b); got != tc.want {
			t.Errorf("%s %s: canon %s, want %s", tc.serde, tc.raw, got, tc.want)
		}
	}
	if _, err := encode("integer", []byte("4294967296")); err == nil {
		t.Error("integer serde took a value beyond 32 bits")
	}
	if got := canon("long", []byte{1, 2}); !strings.Contains(got, "8 bytes") {
		t.Errorf("a bad long shows %q, want why", got)
	}
}

// Every known-failures file and known-differences.json checked in loads
// (each entry names a case and gives a reason, its "@name" a shared reason
// of reasons.json), and every shared reason is given by some entry.
func TestKnownFailuresLoad(t *testing.T) {
	cases, err := loadCases(filepath.Join("..", "cases"), testSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	reasons, err := loadReasons(filepath.Join("..", reasonsFile))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "known-failures", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "known-differences.json"))
	unused := maps.Clone(reasons)
	loaded := 0
	for _, file := range files {
		if filepath.Base(file) == filepath.Base(reasonsFile) {
			continue
		}
		k, err := loadKnown(file, cases, reasons)
		if err != nil {
			t.Error(err)
			continue
		}
		loaded++
		for name, reason := range k {
			if strings.HasPrefix(reason, "@") {
				t.Errorf("%s: %q: reason %q left unresolved", file, name, reason)
			}
			for ref, text := range reasons {
				if reason == text {
					delete(unused, ref)
				}
			}
		}
	}
	if loaded < 7 {
		t.Errorf("loaded %d files, want the 6 known-failures files and known-differences.json", loaded)
	}
	for ref := range unused {
		t.Errorf("%s: reason %q is given by no entry: remove it", reasonsFile, ref)
	}
}

// An entry's "@name" is the shared reason of that name; a name that
// reasons.json does not define is refused, naming the file, the case and
// the names it does define.
func TestKnownSharedReason(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "go.json")
	cases := []*Case{{Name: "a"}, {Name: "b"}}
	reasons := map[string]string{"gap": "an engine gap"}
	if err := os.WriteFile(file, []byte(`{"a": "@gap", "b": "its own reason"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := loadKnown(file, cases, reasons)
	if err != nil || k["a"] != "an engine gap" || k["b"] != "its own reason" {
		t.Fatalf("got %v, %v; want a: an engine gap, b: its own reason", k, err)
	}
	if err := os.WriteFile(file, []byte(`{"a": "@gaps"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = loadKnown(file, cases, reasons)
	if err == nil || !strings.Contains(err.Error(), `"a" gives reason "@gaps", which known-failures/reasons.json does not define (it defines gap)`) {
		t.Errorf("unknown shared reason: got %v", err)
	}
}

// The matrix fails on an unlisted mismatch and on a listed case that
// passes, and not on a listed mismatch.
func TestReportExitCode(t *testing.T) {
	cases := []*Case{{Name: "a"}, {Name: "b"}}
	langs := []language{goLang{}}
	bad := result{problems: []string{"output out: want X, got Y"}}
	for _, tc := range []struct {
		name    string
		results map[cell]result
		known   map[string]string
		code    int
		says    string
	}{
		{"all pass", map[cell]result{}, nil, 0, "2 ok"},
		{"unlisted mismatch", map[cell]result{{1, 0}: bad}, nil, 1, "--- b [go]: FAIL"},
		{"listed mismatch", map[cell]result{{1, 0}: bad}, map[string]string{"b": "engine gap"}, 0, "known failure (engine gap)"},
		{"listed but passes", map[cell]result{}, map[string]string{"a": "engine gap"}, 1, "XPASS"},
	} {
		var out strings.Builder
		code := report(&out, cases, langs, tc.results, map[string]map[string]string{"go": tc.known}, nil)
		if code != tc.code || !strings.Contains(out.String(), tc.says) {
			t.Errorf("%s: exit %d, want %d; output does not say %q:\n%s", tc.name, code, tc.code, tc.says, out.String())
		}
	}
}

// A difference from Kafka Streams fails the cell unless known-differences
// lists the case; a listed case that agrees with Kafka Streams is XPASS in
// the Kafka Streams column, and the list is printed.
func TestReportKafkaStreamsDifferences(t *testing.T) {
	cases := []*Case{{Name: "a"}, {Name: "b"}}
	langs := []language{javaLang{}, goLang{}}
	differs := result{ks: []string{"output out: want X, got Y"}}
	for _, tc := range []struct {
		name    string
		results map[cell]result
		diffs   map[string]string
		known   map[string]string // go's known failures
		code    int
		says    string
	}{
		{"agrees", map[cell]result{}, nil, nil, 0, "4 ok"},
		{"unlisted difference", map[cell]result{{1, 0}: differs}, nil, nil, 1, "--- b [java]: FAIL"},
		{"unlisted describe difference in an SDK", map[cell]result{{0, 1}: differs}, nil, nil, 1, "--- a [go]: FAIL"},
		{"listed difference", map[cell]result{{1, 0}: differs, {1, 1}: differs}, map[string]string{"b": "kept on purpose"}, nil, 0, "b: kept on purpose"},
		{"listed but agrees", map[cell]result{}, map[string]string{"a": "kept on purpose"}, nil, 1, "--- a [java]: agrees with Kafka Streams, but known-differences.json lists it"},
		{"a known failure of the language covers it", map[cell]result{{1, 1}: {problems: []string{"x"}, ks: []string{"y"}}}, nil, map[string]string{"b": "not expressible in go"}, 0, "known failure (not expressible in go)"},
	} {
		var out strings.Builder
		code := report(&out, cases, langs, tc.results, map[string]map[string]string{"go": tc.known}, tc.diffs)
		if code != tc.code || !strings.Contains(out.String(), tc.says) {
			t.Errorf("%s: exit %d, want %d; output does not say %q:\n%s", tc.name, code, tc.code, tc.says, out.String())
		}
	}
}
