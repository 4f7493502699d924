package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The host test vectors (docs/design/host-vectors.md): each vector is a
// bundle this engine sends, the functions a host registers for it (names
// from the conformance catalogue, conformance/README.md) and the answer
// every host must give, byte for byte. TestHostVectors makes them: it
// builds each topology, runs its input through a task whose host records
// the bundles the engine encodes and answers each with the vecOutcomes the
// vector declares, so that every answer is one the engine decodes and
// accepts. It fails when conformance/vectors differs from what it makes;
// `make generate` (-write-vectors) writes them.

var writeVectors = flag.Bool("write-vectors", false, "write conformance/vectors (make generate)")

// vectorsDir is conformance/vectors, from this package's directory.
const vectorsDir = "../../../conformance/vectors"

// vecFile is one file of vectors, as written. Requires lists the host
// features (OpenSessionRequest.host_features) a host must declare for the
// engine to send such bundles: a host's vector test runs the files whose
// features it declares and skips the others by this list, never by name.
type vecFile struct {
	About    string   `json:"about"`
	Requires []string `json:"requires,omitempty"`
	Vectors  []vector `json:"vectors"`
}

// vecRequires is the host features the vectors' bundles use: value refs
// (fold_value_refs) and fold programs (fold_programs).
func vecRequires(t *testing.T, vs []vector) []string {
	var refs, programs bool
	for _, v := range vs {
		data, err := base64.StdEncoding.DecodeString(v.Bundle)
		if err != nil {
			t.Fatal(err)
		}
		var b pb.Bundle
		if err := proto.Unmarshal(data, &b); err != nil {
			t.Fatalf("vector %s: %v", v.Name, err)
		}
		refs = refs || len(b.ValueRefs) > 0
		programs = programs || len(b.FoldBases) > 0
	}
	var out []string
	if refs {
		out = append(out, "fold_value_refs")
	}
	if programs {
		out = append(out, "fold_programs")
	}
	return out
}

type vector struct {
	Name  string `json:"name"`
	About string `json:"about"`
	// Functions the host registers: token -> catalogue function and role.
	Functions []vecFunc `json:"functions"`
	// Bundle is the pb.Bundle's bytes, Result the pb.BundleResult's with
	// every failure's message cleared (base64, standard encoding).
	Bundle string `json:"bundle"`
	Result string `json:"result"`
	// Failures says, for the result's failures in order, what each
	// message must contain (messages are each language's own).
	Failures []vecFailure `json:"failures,omitempty"`
}

type vecFunc struct {
	Token uint32 `json:"token"`
	Role  string `json:"role"`
	Fn    any    `json:"fn"` // "upper" or {"name": "prefix", "arg": "x"}
}

type vecFailure struct {
	Index           int32  `json:"index"`
	Step            int32  `json:"step"`
	Kind            string `json:"kind"`
	MessageContains string `json:"message_contains"`
}

// vecOutcome is a declared vecOutcome of one record (one fold value) of a
// bundle: its outputs, or its failure.
type vecOutcome struct {
	outs []vecKV
	fail *vecFailure
}

// kv is an output: the key only for a chain that changes keys. Values are
// natural: string, int64, nil (null).
type vecKV struct{ k, v any }

// out is an vecOutcome of values, each keeping its record's key.
func vecOut(vs ...any) vecOutcome {
	o := vecOutcome{outs: []vecKV{}}
	for _, v := range vs {
		o.outs = append(o.outs, vecKV{v: v})
	}
	return o
}

// outKV is an vecOutcome of (key, value) pairs, for a chain that changes keys.
func vecOutKV(pairs ...any) vecOutcome {
	o := vecOutcome{outs: []vecKV{}}
	for i := 0; i < len(pairs); i += 2 {
		o.outs = append(o.outs, vecKV{pairs[i], pairs[i+1]})
	}
	return o
}

func vecFailed(step int32, kind, contains string) vecOutcome {
	return vecOutcome{fail: &vecFailure{Step: step, Kind: kind, MessageContains: contains}}
}

// vecSpec makes the vectors of one topology: one per bundle the engine
// sends while processing input (answers gives each bundle's vecOutcomes, in
// order), or with mutate one vector of a bundle changed so that the
// engine would never send it.
type vecSpec struct {
	file, name, about string
	build             func(b *topology.Builder, fn func(role string, ref any) topology.Function) error
	config            map[string]string
	// batches of input, each processed as one batch (so a later batch's
	// folds start from the stored aggregates of earlier ones).
	batches [][]*kgo.Record
	answers [][]vecOutcome
	// unregistered tokens are left out of the vector's functions.
	unregistered []uint32
	mutate       func(*pb.Bundle)
}

// vecHost records each bundle and answers with the spec's vecOutcomes.
type vecHost struct {
	tb      testing.TB
	spec    *vecSpec
	mu      sync.Mutex
	bundles []*pb.Bundle
	results []*pb.BundleResult
}

func (h *vecHost) Process(_ context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := len(h.bundles)
	if i >= len(h.spec.answers) {
		return nil, fmt.Errorf("vector %s: bundle %d has no declared answer: %s", h.spec.name, i, vecDump(b))
	}
	b = proto.Clone(b).(*pb.Bundle)
	b.Id = uint64(100 + i)
	res, err := vecAnswer(b, h.spec.answers[i])
	if err != nil {
		return nil, fmt.Errorf("vector %s: bundle %d: %w: %s", h.spec.name, i, err, vecDump(b))
	}
	h.bundles = append(h.bundles, b)
	h.results = append(h.results, res)
	return proto.Clone(res).(*pb.BundleResult), nil
}

// answer encodes the declared vecOutcomes as b's result.
func vecAnswer(b *pb.Bundle, vecOutcomes []vecOutcome) (*pb.BundleResult, error) {
	n := len(b.ValueLengths)
	if len(b.ValueRefs) > 0 {
		n = len(b.ValueRefs)
	}
	if len(vecOutcomes) != n {
		return nil, fmt.Errorf("%d outcomes declared for %d records", len(vecOutcomes), n)
	}
	valueSerde := vecOr(b.OutputValueSerde, b.ValueSerde)
	keySerde := vecOr(b.OutputKeySerde, b.KeySerde)
	fold := len(b.Steps) == 1 && (b.Steps[0].Operation == pb.Operation_OPERATION_REDUCE || b.Steps[0].Operation == pb.Operation_OPERATION_AGGREGATE)
	if fold {
		valueSerde = b.AggregateSerde
	}
	keysChange := false
	for _, s := range b.Steps {
		keysChange = keysChange || s.Operation == pb.Operation_OPERATION_MAP || s.Operation == pb.Operation_OPERATION_SELECT_KEY ||
			s.Operation == pb.Operation_OPERATION_FLAT_MAP
	}
	res := &pb.BundleResult{BundleId: b.Id, OutputCounts: make([]int32, n)}
	for i, o := range vecOutcomes {
		if o.fail != nil {
			f := *o.fail
			f.Index = int32(i)
			kind := pb.RecordFailure_KIND_PROCESSING
			if f.Kind == "deserialization" {
				kind = pb.RecordFailure_KIND_DESERIALIZATION
			}
			res.Failures = append(res.Failures, &pb.RecordFailure{Index: f.Index, Step: f.Step, Kind: kind, Message: "declared: " + f.MessageContains})
			continue
		}
		res.OutputCounts[i] = int32(len(o.outs))
		for _, x := range o.outs {
			v, err := vecNatural(valueSerde, x.v)
			if err != nil {
				return nil, err
			}
			res.ValueLengths = append(res.ValueLengths, length(v))
			res.Values = append(res.Values, v...)
			if keysChange {
				k, err := vecNatural(keySerde, x.k)
				if err != nil {
					return nil, err
				}
				res.KeyLengths = append(res.KeyLengths, length(k))
				res.Keys = append(res.Keys, k...)
			}
		}
	}
	return res, nil
}

func vecOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// natural encodes a natural value with a serde (nil: null).
func vecNatural(serdeName string, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if serdeName == "string" {
			return []byte(x), nil
		}
	case int64:
		if serdeName == "long" {
			return serde.AppendLong(make([]byte, 0, 8), x), nil
		}
	}
	return nil, fmt.Errorf("the vectors encode no %T with serde %q", v, serdeName)
}

// vin makes an input record of topic: key and value natural values in
// the string or long serde.
func vecIn(topic string, off int64, k, v any, ts int64) *kgo.Record {
	enc := func(x any) []byte {
		switch x := x.(type) {
		case nil:
			return nil
		case string:
			return []byte(x)
		case int64:
			return serde.AppendLong(nil, x)
		case []byte:
			return x
		}
		panic(fmt.Sprintf("vin: %T", x))
	}
	return &kgo.Record{Topic: topic, Partition: 0, Offset: off, Key: enc(k), Value: enc(v), Timestamp: time.UnixMilli(ts)}
}

// records makes consecutive records of one topic, from offset first on,
// from (key, value, ts) triples.
func vecRecords(topic string, first int64, kvts ...any) []*kgo.Record {
	var rs []*kgo.Record
	for i := 0; i < len(kvts); i += 3 {
		rs = append(rs, vecIn(topic, first+int64(i/3), kvts[i], kvts[i+1], int64(kvts[i+2].(int))))
	}
	return rs
}

// generate builds the spec's topology, runs its input and returns its
// vectors.
func (s *vecSpec) generate(tb testing.TB) []vector {
	tb.Helper()
	b := topology.NewBuilder()
	b.FoldPrograms = true // a host that runs the vectors declares fold_programs and fold_value_refs
	var fns []vecFunc
	fn := func(role string, ref any) topology.Function {
		tok := uint32(len(fns) + 1)
		name := ref
		if m, ok := ref.(map[string]any); ok {
			name = m["name"]
		}
		fns = append(fns, vecFunc{Token: tok, Role: role, Fn: ref})
		return topology.Function{Token: tok, Name: fmt.Sprint(name)}
	}
	if err := s.build(b, fn); err != nil {
		tb.Fatalf("vector %s: %v", s.name, err)
	}
	topo, err := b.Topology()
	if err != nil {
		tb.Fatalf("vector %s: %v", s.name, err)
	}
	h := &vecHost{tb: tb, spec: s}
	config := map[string]string{"processing.exception.handler": "log_and_continue", "default.deserialization.exception.handler": "log_and_continue", "statestore.cache.max.bytes": "0"}
	for k, v := range s.config {
		config[k] = v
	}
	vecRun(tb, topo, h, config, s.batches)
	if len(h.bundles) != len(s.answers) {
		tb.Fatalf("vector %s: the engine sent %d bundles, %d answers declared", s.name, len(h.bundles), len(s.answers))
	}
	registered := slices.DeleteFunc(fns, func(f vecFunc) bool { return slices.Contains(s.unregistered, f.Token) })
	var vs []vector
	for i, bundle := range h.bundles {
		res := h.results[i]
		if s.mutate != nil {
			s.mutate(bundle)
			// The engine never sends this bundle: its answer is the
			// declared one for the bundle as changed.
			if res, err = vecAnswer(bundle, s.answers[i]); err != nil {
				tb.Fatalf("vector %s: %v", s.name, err)
			}
		}
		name := s.name
		if len(h.bundles) > 1 {
			name = fmt.Sprintf("%s#%d", s.name, i+1)
		}
		v := vector{Name: name, About: s.about, Functions: registered}
		res = proto.Clone(res).(*pb.BundleResult)
		for _, f := range res.Failures {
			o := s.answers[i][f.Index].fail
			v.Failures = append(v.Failures, vecFailure{Index: f.Index, Step: f.Step, Kind: o.Kind, MessageContains: o.MessageContains})
			f.Message = ""
		}
		v.Bundle = base64.StdEncoding.EncodeToString(vecMarshal(tb, bundle))
		v.Result = base64.StdEncoding.EncodeToString(vecMarshal(tb, res))
		vs = append(vs, v)
	}
	return vs
}

func vecMarshal(tb testing.TB, m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// runVectorTopology runs input through the tasks of topo's sub-topologies
// (partition 0 each, an App never started): a task's records to an
// internal topic go on to the task that reads it.
func vecRun(tb testing.TB, topo *topology.Topology, host Host, kv map[string]string, batches [][]*kgo.Record) {
	tb.Helper()
	a := unstartedApp(tb, "vectors", kv, topo, host, func(c *config.App) {
		c.FoldValueRefs, c.FoldPrograms = true, true // the host features every SDK declares
	})
	var err error
	if a.cl, err = kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.cl.Close)
	tasks := map[int]*task{}
	taskOf := func(p *plan) *task {
		if t, ok := tasks[p.id]; ok {
			return t
		}
		t := newTask(a, taskID{p.id, 0}, p)
		openStores(t, a.db)
		t.restored.Store(true)
		tasks[p.id] = t
		return t
	}
	for _, pending := range batches {
		vecRunBatch(tb, a, taskOf, pending)
	}
}

// runVectorBatch feeds one batch to the tasks that read it, and what they
// write to internal topics on to the tasks reading those.
func vecRunBatch(tb testing.TB, a *App, taskOf func(*plan) *task, pending []*kgo.Record) {
	tb.Helper()
	for len(pending) > 0 {
		byPlan := map[*plan][]*kgo.Record{}
		var order []*plan
		for _, r := range pending {
			p := a.planOf[r.Topic]
			if p == nil {
				tb.Fatalf("no sub-topology reads topic %s", r.Topic)
			}
			if byPlan[p] == nil {
				order = append(order, p)
			}
			byPlan[p] = append(byPlan[p], r)
		}
		pending = nil
		for _, p := range order {
			t := taskOf(p)
			byTopic := map[string][]*kgo.Record{}
			var topics []string
			for _, r := range byPlan[p] {
				if byTopic[r.Topic] == nil {
					topics = append(topics, r.Topic)
				}
				byTopic[r.Topic] = append(byTopic[r.Topic], r)
			}
			var fetches [][]*kgo.Record
			for _, topic := range topics {
				fetches = append(fetches, byTopic[topic])
			}
			t.feed(tb, fetches...)
			for i, o := range t.out {
				if a.planOf[o.Topic] != nil {
					r := *o
					r.Partition, r.Offset = 0, int64(i)
					pending = append(pending, &r)
				}
			}
		}
	}
}

// dumpBundle shows a bundle while a vector's answers are written.
func vecDump(b *pb.Bundle) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "steps %v serdes key %q value %q out %q/%q agg %q\n", b.Steps, b.KeySerde, b.ValueSerde, b.OutputKeySerde, b.OutputValueSerde, b.AggregateSerde)
	fmt.Fprintf(&sb, "keys %v %q values %v %q old %v %q\n", b.KeyLengths, b.Keys, b.ValueLengths, b.Values, b.OldValueLengths, b.OldValues)
	fmt.Fprintf(&sb, "groups %v aggs %v %q refs %v bases %v merges %v %v others %v %q", b.GroupSizes, b.AggregateLengths, b.Aggregates, b.ValueRefs, b.FoldBases, b.MergeCounts, b.MergeRefs, b.OtherValueLengths, b.OtherValues)
	return sb.String()
}

// TestHostVectors makes the host vectors and checks conformance/vectors
// holds them (with -write-vectors, writes them).
func TestHostVectors(t *testing.T) {
	files := map[string]*vecFile{}
	var names []string
	for i := range hostVectors {
		s := &hostVectors[i]
		f := files[s.file]
		if f == nil {
			f = &vecFile{About: vectorFileAbout[s.file]}
			files[s.file] = f
			names = append(names, s.file)
		}
		f.Vectors = append(f.Vectors, s.generate(t)...)
	}
	for _, name := range names {
		files[name].Requires = vecRequires(t, files[name].Vectors)
		data, err := json.MarshalIndent(files[name], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, '\n')
		path := filepath.Join(vectorsDir, name+".json")
		if *writeVectors {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil || string(have) != string(data) {
			t.Errorf("%s is not what the generator makes: run make generate", path)
		}
	}
}
