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
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kgo"

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
	ctx, cancel := context.WithTimeout(context.Background(), semanticsTimeout)
	defer cancel()
	td, app, err := startOnDriver(ctx, "semantics", props, topo, nil, nil)
	if err != nil {
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
