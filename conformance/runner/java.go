package main

// The Kafka Streams column (-lang java): every case runs through real Kafka
// Streams — its TopologyTestDriver, in one JVM for the whole batch
// (conformance/executors/java, built by `make java-executor`) — and the
// runner compares what Kafka Streams did with the case's expectation. Kafka
// Streams is the reference: where it disagrees with a case, the case is
// wrong, unless conformance/known-differences.json lists the case with the
// reason polystreams keeps the divergence. Each SDK's describe() and its
// refusal to build are also compared with Kafka Streams' own.
//
// Results are cached in .cache/conformance-java/, keyed by the case file,
// the executor's sources (with conformance/catalogue.json) and the Kafka
// version, so a rerun of the matrix costs nothing for cases that did not
// change.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ksFormat versions the batch and result formats and the configuration the
// runner gives every case; change it when they change (the cache key holds
// it).
const ksFormat = "1"

// ksResult is what Kafka Streams did with one case (the Java executor's
// result file).
type ksResult struct {
	KafkaStreams string  `json:"kafka_streams"`
	Describe     *string `json:"describe"`
	// Refused: the DSL call, build() or the driver's creation threw.
	Refused *struct {
		Step    int    `json:"step"`
		Class   string `json:"class"`
		Message string `json:"message"`
	} `json:"refused"`
	// Failure: processing failed at this input record.
	Failure *struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Node      string `json:"node"`
		Class     string `json:"class"`
		Message   string `json:"message"`
	} `json:"failure"`
	Outputs        map[string][]ksRecord `json:"outputs"`
	DroppedRecords *int64                `json:"dropped_records"`
	// Printed: the lines print steps wrote (Printed.toSysOut), in order.
	Printed []string `json:"printed"`
	// Error: the executor could not run the case (not Kafka Streams' doing).
	Error string `json:"error"`
}

type ksRecord struct {
	Key       *string `json:"key"`   // base64; nil: null
	Value     *string `json:"value"` // base64; nil: null
	Timestamp int64   `json:"timestamp"`
	Headers   []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

// ksItem is one case of a batch the Java executor runs.
type ksItem struct {
	Name    string            `json:"name"`
	Case    json.RawMessage   `json:"case"`
	Config  map[string]string `json:"config"`
	Inputs  []ksInput         `json:"inputs"`
	Outputs []string          `json:"outputs"`
	Result  string            `json:"result"`
}

// ksInput is one record to pipe, or (AdvanceWallClockMs set) an
// advanceWallClockTime call.
type ksInput struct {
	AdvanceWallClockMs *int64     `json:"advance_wall_clock_ms,omitempty"`
	Topic              string     `json:"topic"`
	Key                []byte     `json:"key"`   // base64 in JSON; nil: null
	Value              []byte     `json:"value"` // base64 in JSON; nil: null
	Timestamp          int64      `json:"timestamp"`
	Headers            []ksHeader `json:"headers,omitempty"`
}

type ksHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// javaLang is the Kafka Streams column. Its cells are computed by
// runKafkaStreams before the matrix runs; env.run compares them.
type javaLang struct{}

func (javaLang) Name() string { return "java" }

func (javaLang) Launch(spec) (execution, error) {
	return nil, errors.New("the Kafka Streams column runs as one batch (runKafkaStreams), not per case")
}

// ksConfig is the configuration Kafka Streams runs a case with: the
// runner's defaults (record cache off, commit every 100 ms) and the case's.
func ksConfig(c *Case) map[string]string {
	cfg := map[string]string{"statestore.cache.max.bytes": "0", "commit.interval.ms": "100"}
	for k, v := range c.Config {
		cfg[k] = v
	}
	return cfg
}

// ksInputs are the records piped into the test driver, in the order the
// runner produces them: first every input marked before_start (in the
// order the case lists them), then the others, topic by topic in the order
// the case lists them, each topic's records in order. This is the order
// TopologyTestDriver sees; against the broker the engine reads each topic
// partition in order, but interleaves topics as their fetches arrive, which
// is why cases whose result depends on the interleaving pin it only with
// per_key or latest outputs. An advance_wall_clock_ms entry is an
// advanceWallClockTime call at its place.
func ksInputs(c *Case) ([]ksInput, error) {
	var out []ksInput
	for _, early := range []bool{true, false} {
		for _, in := range c.Inputs {
			if in.BeforeStart != early {
				continue
			}
			if in.AdvanceWallClockMs != nil {
				out = append(out, ksInput{AdvanceWallClockMs: in.AdvanceWallClockMs})
				continue
			}
			for j, r := range in.Records {
				rec, err := record(in.Topic, in.Key, in.Value, r)
				if err != nil {
					return nil, fmt.Errorf("input %s[%d]: %w", in.Topic, j, err)
				}
				ki := ksInput{Topic: in.Topic, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp.UnixMilli()}
				for _, h := range rec.Headers {
					ki.Headers = append(ki.Headers, ksHeader{Key: h.Key, Value: h.Value})
				}
				out = append(out, ki)
			}
		}
	}
	return out, nil
}

// javaExecutor is the built Java executor: its classpath and the hash of
// what built it (sources, pom, catalogue.json, Kafka version).
type javaExecutor struct {
	classpath string
	version   string // hex, part of every cache key
	kafka     string
}

// findJavaExecutor checks that the executor is built and not older than
// its sources and the catalogue it carries (a stale build would fill the
// cache with wrong results).
func findJavaExecutor(root string) (*javaExecutor, error) {
	dir := filepath.Join(root, "conformance", "executors", "java")
	jar := filepath.Join(dir, "target", "conformance-java.jar")
	kafka, err := os.ReadFile(filepath.Join(root, "tools", "kafka", "VERSION"))
	if err != nil {
		return nil, err
	}
	built, err := os.Stat(jar)
	if err != nil {
		return nil, fmt.Errorf("the Kafka Streams executor is not built (%s): run make java-executor", jar)
	}
	h := sha256.New()
	fmt.Fprintf(h, "kafka %s\nformat %s\n", strings.TrimSpace(string(kafka)), ksFormat)
	var newest time.Time
	var files []string
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// The pom, and the catalogue the jar carries (its expr functions, Expr.java).
	files = append(files, filepath.Join(dir, "pom.xml"), filepath.Join(root, "conformance", "catalogue.json"))
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	if newest.After(built.ModTime()) {
		return nil, fmt.Errorf("the Kafka Streams executor (%s) is older than its sources: run make java-executor", jar)
	}
	return &javaExecutor{
		classpath: jar + string(os.PathListSeparator) + filepath.Join(dir, "target", "lib", "*"),
		version:   hex.EncodeToString(h.Sum(nil)),
		kafka:     strings.TrimSpace(string(kafka)),
	}, nil
}

// runKafkaStreams returns Kafka Streams' result for every case: from the
// cache, or from one run of the Java executor over the cases not cached.
func runKafkaStreams(root string, cases []*Case, tmp string) (map[string]*ksResult, error) {
	began := time.Now()
	x, err := findJavaExecutor(root)
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(root, ".cache", "conformance-java")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	results := map[string]*ksResult{}
	files := map[string]string{}
	var batch []ksItem
	for _, c := range cases {
		h := sha256.New()
		fmt.Fprintf(h, "%s\n", x.version)
		h.Write(c.raw)
		file := filepath.Join(cache, c.Name+"-"+hex.EncodeToString(h.Sum(nil))[:24]+".json")
		files[c.Name] = file
		if r, err := readKS(file); err == nil {
			results[c.Name] = r
			continue
		}
		it, err := newKSItem(c, file+".tmp")
		if err != nil {
			return nil, err
		}
		batch = append(batch, it)
	}
	if len(batch) > 0 {
		out, err := x.execute(batch, filepath.Join(tmp, "kafka-streams-batch.json"))
		if err != nil {
			return nil, err
		}
		for _, it := range batch {
			r, err := readKS(it.Result)
			if err != nil {
				return nil, fmt.Errorf("case %s: the Kafka Streams executor wrote no result: %v\n%s", it.Name, err, out)
			}
			results[it.Name] = r
			if r.Error == "" { // a case the executor could not run is retried next time
				if err := os.Rename(it.Result, files[it.Name]); err != nil {
					return nil, err
				}
			}
		}
	}
	fmt.Printf("conformance: Kafka Streams %s: %d cases (%d run, %d cached) in %s\n", x.kafka, len(cases), len(batch), len(cases)-len(batch), time.Since(began).Round(100*time.Millisecond))
	return results, nil
}

// newKSItem is case c as the Kafka Streams executor takes it, its result
// to be written to result.
func newKSItem(c *Case, result string) (ksItem, error) {
	inputs, err := ksInputs(c)
	if err != nil {
		return ksItem{}, fmt.Errorf("case %s: %w", c.Name, err)
	}
	var outputs []string
	for _, o := range c.Expect.Outputs {
		outputs = append(outputs, o.Topic)
	}
	return ksItem{Name: c.Name, Case: c.raw, Config: ksConfig(c), Inputs: inputs, Outputs: outputs, Result: result}, nil
}

// execute runs batch through Kafka Streams in one JVM (at most four cases
// at once), the batch written to file first; it returns the tail of what
// the executor printed, for a report.
func (x *javaExecutor) execute(batch []ksItem, file string) (string, error) {
	data, err := json.Marshal(batch)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	threads := max(1, min(runtime.NumCPU(), 4))
	cmd := exec.CommandContext(ctx, "java", "-cp", x.classpath, "dev.polystreams.conformance.Main", file, fmt.Sprint(threads))
	out := &tail{max: 4000}
	cmd.Stderr, cmd.Stdout = out, out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("the Kafka Streams executor failed: %v\n%s", err, out.String())
	}
	return out.String(), nil
}

func readKS(file string) (*ksResult, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r ksResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &r, nil
}

// records turns Kafka Streams' output records into what compareOutput
// reads.
func (r *ksResult) records(topic string) ([]*kgo.Record, error) {
	var out []*kgo.Record
	b64 := func(s *string) ([]byte, error) {
		if s == nil {
			return nil, nil
		}
		return base64.StdEncoding.DecodeString(*s)
	}
	for _, x := range r.Outputs[topic] {
		k, err := b64(x.Key)
		if err != nil {
			return nil, err
		}
		v, err := b64(x.Value)
		if err != nil {
			return nil, err
		}
		rec := &kgo.Record{Topic: topic, Key: k, Value: v, Timestamp: time.UnixMilli(x.Timestamp)}
		for _, h := range x.Headers {
			hv, err := b64(h.Value)
			if err != nil {
				return nil, err
			}
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: hv})
		}
		out = append(out, rec)
	}
	return out, nil
}

// checkKafkaStreams compares the case's expectation with what Kafka
// Streams did: its refusal, describe(), outputs (in the case's output
// mode), failure (the input record: topic, partition, offset; not the
// message, which is Kafka Streams' own) and dropped records.
func checkKafkaStreams(c *Case, ks *ksResult) (res result) {
	if ks == nil {
		res.add("no Kafka Streams result")
		return res
	}
	if ks.Error != "" {
		res.add("the Kafka Streams executor could not run the case: %s", ks.Error)
		return res
	}
	want := c.Expect
	if want.BuildError != nil {
		if ks.Refused == nil {
			res.add("build: the case wants step %d refused (%s), but Kafka Streams builds the topology and starts it", want.BuildError.Step, want.BuildError.Code)
		}
		return res
	}
	if ks.Refused != nil {
		res.add("build: Kafka Streams refuses step %d: %s: %s", ks.Refused.Step, ks.Refused.Class, ks.Refused.Message)
		return res
	}
	if want.Describe != nil && ks.Describe != nil && *ks.Describe != *want.Describe {
		res.add("describe() (want: the case; got: Kafka Streams' Topology.describe()):\n%s", textDiff(*want.Describe, *ks.Describe))
	}
	if !c.starts() {
		return res
	}
	if f := want.Failure; f != nil {
		switch g := ks.Failure; {
		case g == nil:
			res.add("failure: the case wants processing to fail at %s/%d@%d, Kafka Streams processes every record", f.Topic, f.Partition, f.Offset)
		case g.Topic != f.Topic || g.Partition != f.Partition || g.Offset != f.Offset:
			res.add("failure: the case wants it at %s/%d@%d, Kafka Streams fails at %s/%d@%d in node %s (%s: %s)", f.Topic, f.Partition, f.Offset, g.Topic, g.Partition, g.Offset, g.Node, g.Class, g.Message)
		}
		return res
	}
	if g := ks.Failure; g != nil {
		res.add("failure: Kafka Streams fails at %s/%d@%d in node %s: %s: %s", g.Topic, g.Partition, g.Offset, g.Node, g.Class, g.Message)
		return res
	}
	for i := range want.Outputs {
		o := &want.Outputs[i]
		got, err := ks.records(o.Topic)
		if err != nil {
			res.add("output %s: %v", o.Topic, err)
			continue
		}
		compareOutput(o, got, &res)
	}
	if w := want.DroppedRecords; w != nil && ks.DroppedRecords != nil && *w != *ks.DroppedRecords {
		res.add("dropped records (dropped-records-total): the case wants %d, Kafka Streams %d", *w, *ks.DroppedRecords)
	}
	if want.Printed != nil {
		comparePrinted(want.Printed, ks.Printed, &res)
	}
	return res
}

// compareWithKafkaStreams compares what an SDK's executor built with what
// Kafka Streams built: both refuse or both build, and describe() byte for
// byte. It returns the differences.
func compareWithKafkaStreams(ks *ksResult, built event, unprefix func(string) string) []string {
	if ks == nil || ks.Error != "" {
		return nil
	}
	switch {
	case built.Event == "build_error" && ks.Refused == nil:
		return []string{fmt.Sprintf("refuses step %d (%s: %s), but Kafka Streams builds the topology", built.Step, built.Code, unprefix(built.Message))}
	case built.Event == "built" && ks.Refused != nil:
		return []string{fmt.Sprintf("builds the topology, but Kafka Streams refuses step %d: %s: %s", ks.Refused.Step, ks.Refused.Class, ks.Refused.Message)}
	case built.Event == "built" && ks.Describe != nil:
		if got := unprefix(built.Describe); got != *ks.Describe {
			return []string{fmt.Sprintf("describe() differs from Kafka Streams' Topology.describe() (want: Kafka Streams):\n%s", textDiff(*ks.Describe, got))}
		}
	}
	return nil
}

// says prints what Kafka Streams did with each case, in the case's own
// terms (-kafka-streams-says): describe(), the refusal or failure, each
// expected output topic's records decoded with the case's serdes
// (timestamps included) and dropped-records-total. It helps write a case's
// expectation; it never writes one.
func says(w io.Writer, cases []*Case, results map[string]*ksResult) error {
	for _, c := range cases {
		ks := results[c.Name]
		fmt.Fprintf(w, "=== %s (Kafka Streams %s)\n", c.Name, ks.KafkaStreams)
		switch {
		case ks.Error != "":
			fmt.Fprintf(w, "not run: %s\n", ks.Error)
			continue
		case ks.Refused != nil:
			fmt.Fprintf(w, "refused at step %d: %s: %s\n", ks.Refused.Step, ks.Refused.Class, ks.Refused.Message)
			continue
		}
		if ks.Describe != nil {
			fmt.Fprintf(w, "describe: %s\n", jsonText(*ks.Describe))
		}
		if f := ks.Failure; f != nil {
			fmt.Fprintf(w, "failure: %s/%d@%d in node %s: %s: %s\n", f.Topic, f.Partition, f.Offset, f.Node, f.Class, f.Message)
		}
		for _, o := range c.Expect.Outputs {
			recs, err := ks.records(o.Topic)
			if err != nil {
				return err
			}
			var out []map[string]any
			for _, r := range recs {
				m := map[string]any{"timestamp": r.Timestamp.UnixMilli()}
				for field, b := range map[string][]byte{"key": r.Key, "value": r.Value} {
					serde := o.Value
					if field == "key" {
						serde = o.Key
					}
					v, err := decode(serde, b)
					if err != nil {
						return fmt.Errorf("case %s: output %s: %s: %w", c.Name, o.Topic, field, err)
					}
					if bs, ok := v.([]byte); ok {
						v = base64.StdEncoding.EncodeToString(bs)
					}
					m[field] = v
				}
				out = append(out, m)
			}
			fmt.Fprintf(w, "output: %s\n", jsonText(map[string]any{"topic": o.Topic, "records": out}))
		}
		if ks.DroppedRecords != nil {
			fmt.Fprintf(w, "dropped_records: %d\n", *ks.DroppedRecords)
		}
		for _, line := range ks.Printed {
			fmt.Fprintf(w, "printed: %s\n", jsonText(line))
		}
	}
	return nil
}

// jsonText is v as indented JSON, without HTML escapes (describe() has
// arrows).
func jsonText(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}
