package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

func parseTestCase(t *testing.T, text string) *Case {
	t.Helper()
	c, err := parseCase("", []byte(text), testSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Kafka Streams gets the inputs in the order the runner produces them:
// before_start inputs first, then the others in the order the case lists
// them, each encoded with its serdes.
func TestKafkaStreamsInputOrder(t *testing.T) {
	c := parseTestCase(t, `{"name": "x", "description": "d",
		"topology": [{"op": "stream", "topics": ["orders"]}],
		"inputs": [
			{"topic": "orders", "key": "string", "value": "long", "records": [{"key": "o1", "value": 7, "timestamp": 5}]},
			{"topic": "products", "key": "string", "value": "string", "before_start": true, "records": [{"key": "p", "value": "v", "headers": {"h": "1"}}]}
		],
		"expect": {"outputs": [{"topic": "out", "key": "string", "value": "string", "records": []}]}}`)
	in, err := ksInputs(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || in[0].Topic != "products" || in[1].Topic != "orders" {
		t.Fatalf("inputs %+v, want products (before_start) then orders", in)
	}
	if string(in[0].Headers[0].Value) != "1" || in[1].Timestamp != 5 || len(in[1].Value) != 8 || in[1].Value[7] != 7 {
		t.Errorf("records not encoded as the runner produces them: %+v", in)
	}
}

func b64(s string) *string {
	e := base64.StdEncoding.EncodeToString([]byte(s))
	return &e
}

// The case is checked against what Kafka Streams did: outputs in the
// case's mode, a refusal by refusing too, a failure by its input record.
func TestCheckKafkaStreams(t *testing.T) {
	withOutput := parseTestCase(t, `{"name": "x", "description": "d",
		"topology": [{"op": "stream", "topics": ["in"]}],
		"inputs": [{"topic": "in", "key": "string", "value": "string", "records": [{"key": "a", "value": "1"}]}],
		"expect": {"outputs": [{"topic": "out", "key": "string", "value": "string", "records": [{"key": "a", "value": "1"}]}], "dropped_records": 0}}`)
	refusing := parseTestCase(t, `{"name": "x", "description": "d",
		"topology": [{"op": "stream", "topics": ["in"]}],
		"expect": {"build_error": {"step": 0, "code": "invalid_argument", "contains": ["in"]}}}`)
	failing := parseTestCase(t, `{"name": "x", "description": "d",
		"topology": [{"op": "stream", "topics": ["in"]}],
		"inputs": [{"topic": "in", "key": "string", "value": "string", "records": [{"value": "1"}, {"value": "2"}]}],
		"expect": {"failure": {"node": "n", "topic": "in", "partition": 0, "offset": 1, "contains": ["x"]}}}`)
	zero, one := int64(0), int64(1)
	agrees := &ksResult{Outputs: map[string][]ksRecord{"out": {{Key: b64("a"), Value: b64("1")}}}, DroppedRecords: &zero}
	differs := &ksResult{Outputs: map[string][]ksRecord{"out": {{Key: b64("a"), Value: b64("2")}}}, DroppedRecords: &one}
	refused := &ksResult{}
	refused.Refused = &struct {
		Step    int    `json:"step"`
		Class   string `json:"class"`
		Message string `json:"message"`
	}{0, "org.apache.kafka.streams.errors.TopologyException", "Invalid topology"}
	failedAt := func(offset int64) *ksResult {
		r := &ksResult{}
		r.Failure = &struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
			Node      string `json:"node"`
			Class     string `json:"class"`
			Message   string `json:"message"`
		}{"in", 0, offset, "KSTREAM-MAPVALUES-0000000001", "StreamsException", "boom"}
		return r
	}
	for _, tc := range []struct {
		name string
		c    *Case
		ks   *ksResult
		says []string // nil: no problem
	}{
		{"same outputs", withOutput, agrees, nil},
		{"other outputs", withOutput, differs, []string{`"a" => "2"`, "dropped records (dropped-records-total): the case wants 0, Kafka Streams 1"}},
		{"Kafka Streams refuses an output case", withOutput, refused, []string{"Kafka Streams refuses step 0: org.apache.kafka.streams.errors.TopologyException"}},
		{"both refuse", refusing, refused, nil},
		{"only the case refuses", refusing, agrees, []string{"Kafka Streams builds the topology"}},
		{"fails at the same record", failing, failedAt(1), nil},
		{"fails at another record", failing, failedAt(0), []string{"Kafka Streams fails at in/0@0"}},
		{"does not fail", failing, agrees, []string{"Kafka Streams processes every record"}},
		{"executor error", withOutput, &ksResult{Error: "no JVM"}, []string{"could not run the case: no JVM"}},
	} {
		got := strings.Join(checkKafkaStreams(tc.c, tc.ks).problems, "\n")
		if tc.says == nil && got != "" {
			t.Errorf("%s: want no problem, got:\n%s", tc.name, got)
		}
		for _, s := range tc.says {
			if !strings.Contains(got, s) {
				t.Errorf("%s: want a problem saying %q, got:\n%s", tc.name, s, got)
			}
		}
	}
}

// An SDK's build is compared with Kafka Streams': both refuse or both
// build, and describe() byte for byte.
func TestCompareWithKafkaStreams(t *testing.T) {
	text := "Topologies:\n   Sub-topology: 0\n    Source: S (topics: [in])\n"
	built := &ksResult{Describe: &text}
	refused := &ksResult{}
	refused.Refused = &struct {
		Step    int    `json:"step"`
		Class   string `json:"class"`
		Message string `json:"message"`
	}{1, "TopologyException", "bad"}
	same := func(s string) string { return strings.ReplaceAll(s, "go-001-", "") }
	for _, tc := range []struct {
		name string
		ks   *ksResult
		ev   event
		says string // "": no difference
	}{
		{"same describe", built, event{Event: "built", Describe: text}, ""},
		{"same describe once unprefixed", built, event{Event: "built", Describe: strings.ReplaceAll(text, "[in]", "[go-001-in]")}, ""},
		{"other describe", built, event{Event: "built", Describe: strings.ReplaceAll(text, "[in]", "[other]")}, "describe() differs from Kafka Streams'"},
		{"only the SDK refuses", built, event{Event: "build_error", Step: 1, Code: "invalid_argument", Message: "no"}, "but Kafka Streams builds the topology"},
		{"only Kafka Streams refuses", refused, event{Event: "built", Describe: text}, "but Kafka Streams refuses step 1"},
		{"both refuse", refused, event{Event: "build_error", Step: 0, Code: "invalid_argument", Message: "no"}, ""},
	} {
		got := strings.Join(compareWithKafkaStreams(tc.ks, tc.ev, same), "\n")
		if (tc.says == "") != (got == "") || !strings.Contains(got, tc.says) {
			t.Errorf("%s: want %q, got %q", tc.name, tc.says, got)
		}
	}
}
