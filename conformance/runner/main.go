// Command runner is the conformance runner (make conformance): it runs every
// case of conformance/cases through Kafka Streams itself (the reference
// column, java.go: TopologyTestDriver in one JVM, results cached), then
// starts the engine with its embedded broker and runs every case in every
// language — Go through core/streams in this process, Python, Node and Rust
// through their executors, which build each case with their SDK's public
// API — and owns every assertion: it checks each case against Kafka
// Streams, each SDK's build against Kafka Streams', produces the inputs,
// reads the outputs read_committed, compares, and prints a matrix of case x
// column with want/got for every mismatch. It exits non-zero on any
// mismatch that conformance/known-failures/<language>.json does not list,
// on any difference from Kafka Streams that
// conformance/known-differences.json does not list, and on a listed one
// that passes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	langs := flag.String("lang", "java,go,python,node,rust", "columns to run, comma-separated: java (Kafka Streams, the reference), go, python, node, rust")
	only := flag.String("run", "", "run only the cases whose name matches this regular expression")
	parallel := flag.Int("parallel", 6, "case runs at once")
	python := flag.String("python", "/usr/bin/python3", "the Python interpreter")
	validate := flag.Bool("validate", false, "only validate the case files")
	ksSays := flag.Bool("kafka-streams-says", false, "print what Kafka Streams does with each case (-run selects them), in the case's terms, and exit: an aid to writing expectations")
	driver := flag.Bool("driver", false, "run each case in a test driver session (TopologyTestDriver's mode: one record at a time, each processed completely), as the SDKs' test drivers do")
	fuzz := flag.Bool("fuzz", false, "differential testing: run random cases through Kafka Streams and Go's test driver, compare, shrink and save each difference (fuzz.go)")
	var fo fuzzOptions
	flag.Uint64Var(&fo.seed, "fuzz-seed", 1, "the fuzzer's random seed")
	flag.IntVar(&fo.cases, "fuzz-cases", 0, "stop after this many random cases (0: no limit; give this or -fuzz-duration)")
	flag.DurationVar(&fo.duration, "fuzz-duration", 0, "stop starting batches after this long (0: no limit)")
	flag.IntVar(&fo.batch, "fuzz-batch", 100, "random cases per Kafka Streams run (one JVM)")
	flag.BoolVar(&fo.save, "fuzz-save", true, "write each shrunk difference as conformance/cases/fuzz_<hash>.json (false: print it)")
	flag.Parse()
	if *fuzz {
		os.Exit(fuzzMain(*repo, fo))
	}
	os.Exit(run(*repo, *langs, *only, *parallel, *python, *validate, *driver, *ksSays))
}

func run(repo, langs, only string, parallel int, python string, validateOnly, driver, ksSays bool) int {
	began := time.Now()
	root, err := filepath.Abs(repo)
	if err != nil {
		return fail(err)
	}
	dir := filepath.Join(root, "conformance")
	sch, err := loadSchema(filepath.Join(dir, "schema", "case.schema.json"))
	if err != nil {
		return fail(err)
	}
	cases, err := loadCases(filepath.Join(dir, "cases"), sch)
	if err != nil {
		return fail(err)
	}
	if validateOnly {
		fmt.Printf("conformance: %d cases valid\n", len(cases))
		return 0
	}
	all := cases // known failures name cases of the whole set, run or not
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fail(fmt.Errorf("-run: %w", err))
		}
		var kept []*Case
		for _, c := range cases {
			if re.MatchString(c.Name) {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	tmp, err := os.MkdirTemp("", "polystreams-conformance-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	if ksSays {
		ks, err := runKafkaStreams(root, cases, tmp)
		if err == nil {
			err = says(os.Stdout, cases, ks)
		}
		if err != nil {
			return fail(err)
		}
		return 0
	}

	reasons, err := loadReasons(filepath.Join(dir, reasonsFile))
	if err != nil {
		return fail(err)
	}
	var languages []language
	known := map[string]map[string]string{}
	for _, name := range strings.Split(langs, ",") {
		var l language
		switch name = strings.TrimSpace(name); name {
		case "java":
			l = javaLang{}
		case "go":
			l = goLang{}
		case "python":
			l = &procLang{name: "python", command: []string{python, filepath.Join(dir, "executors", "python", "executor.py")},
				dir: root, env: []string{"PYTHONPATH=" + filepath.Join(root, "sdk-python", "src")}, tmp: tmp}
		case "node":
			l = &procLang{name: "node", command: []string{"node", "--import", "tsx", filepath.Join(dir, "executors", "node", "executor.ts")},
				dir: filepath.Join(root, "sdk-node"), tmp: tmp}
		case "rust":
			// The executor is a binary of sdk-rust's cargo workspace, built
			// (crates.io, at sdk-rust/Cargo.lock's versions) before the matrix runs.
			bin, err := buildRust(root)
			if err != nil {
				return fail(err)
			}
			l = &procLang{name: "rust", command: []string{bin}, dir: root, tmp: tmp}
		default:
			return fail(fmt.Errorf("-lang: %q is not a language (java, go, python, node, rust)", name))
		}
		k, err := loadKnown(filepath.Join(dir, "known-failures", name+".json"), all, reasons)
		if name == "java" {
			// The Kafka Streams column's known differences are the
			// divergences polystreams keeps (report prints them).
			k, err = map[string]string{}, nil
		}
		if err != nil {
			return fail(err)
		}
		if driver {
			// What the test driver mode cannot show, in every language:
			// behaviour that needs more than one partition.
			d, err := loadKnown(filepath.Join(dir, "known-failures", "driver.json"), all, reasons)
			if err != nil {
				return fail(err)
			}
			for c, reason := range d {
				k[c] = "test driver mode: " + reason
			}
		} else if name != "java" {
			// What the batched mode (all input produced, then processed
			// in batches) cannot show, in every polystreams language:
			// behaviour TopologyTestDriver shows because it processes one
			// record at a time (punctuation after each record).
			d, err := loadKnown(filepath.Join(dir, "known-failures", "batched.json"), all, reasons)
			if err != nil {
				return fail(err)
			}
			for c, reason := range d {
				k[c] = "batched mode: " + reason
			}
		}
		known[name] = k
		languages = append(languages, l)
	}

	diffs, err := loadKnown(filepath.Join(dir, "known-differences.json"), all, reasons)
	if err != nil {
		return fail(err)
	}
	e := &env{stateDir: filepath.Join(tmp, "go-state"), driver: driver}
	sdks := 0
	for _, l := range languages {
		if _, ok := l.(javaLang); ok {
			if e.ks, err = runKafkaStreams(root, cases, tmp); err != nil {
				return fail(err)
			}
		} else {
			sdks++
		}
	}
	var eng *engine
	if sdks > 0 { // the Kafka Streams column needs no engine
		eng, err = startEngine(filepath.Join(root, "bin", "polystreams"), tmp)
		if err != nil {
			return fail(err)
		}
		defer eng.close()
		adm, err := kgo.NewClient(kgo.SeedBrokers(eng.broker))
		if err != nil {
			return fail(err)
		}
		defer adm.Close()
		e.brokers, e.engine, e.adm = eng.broker, eng.url, kadm.NewClient(adm)
		fmt.Printf("conformance: %d cases x %d languages; broker %s, engine %s\n", len(cases), len(languages), eng.broker, eng.url)
	}

	results := runAll(e, cases, languages, parallel)
	code := report(os.Stdout, cases, languages, results, known, diffs)
	if code != 0 && eng != nil {
		fmt.Printf("\nengine log (tail):\n%s\n", eng.log.String())
	}
	fmt.Printf("conformance: %s\n", time.Since(began).Round(100*time.Millisecond))
	return code
}

func fuzzMain(repo string, o fuzzOptions) int {
	root, err := filepath.Abs(repo)
	if err != nil {
		return fail(err)
	}
	if o.cases <= 0 && o.duration <= 0 {
		return fail(fmt.Errorf("-fuzz: give -fuzz-cases or -fuzz-duration"))
	}
	if o.batch <= 0 {
		return fail(fmt.Errorf("-fuzz-batch: %d is not a positive count", o.batch))
	}
	sch, err := loadSchema(filepath.Join(root, "conformance", "schema", "case.schema.json"))
	if err != nil {
		return fail(err)
	}
	return runFuzz(root, sch, o)
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "conformance:", err)
	return 2
}

func loadSchema(file string) (*schema, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parseSchema(data)
}

// reasonsFile is where the reasons shared by known failures (and known
// differences) are, under conformance/.
const reasonsFile = "known-failures/reasons.json"

// loadReasons reads known-failures/reasons.json: a shared reason's name ->
// its text, for a reason that several entries give (in one file or in
// several). No file: no shared reasons.
func loadReasons(file string) (map[string]string, error) {
	r, err := readReasons(file, "reason name")
	if err != nil {
		return nil, err
	}
	for name, reason := range r {
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s: %q gives no reason", file, name)
		}
	}
	return r, nil
}

// readReasons reads file, a JSON object of what (a case name, a reason
// name) -> reason. No file: an empty map.
func readReasons(file, what string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var r map[string]string
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: want an object of %s -> reason: %w", file, what, err)
	}
	return r, nil
}

// loadKnown reads a language's known failures: case name -> reason. Every
// entry must name a case and give a reason: its text, or "@name", the
// shared reason name of reasons (loadReasons), which it returns in full.
func loadKnown(file string, cases []*Case, reasons map[string]string) (map[string]string, error) {
	k, err := readReasons(file, "case name")
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	for name, reason := range k {
		if !names[name] {
			return nil, fmt.Errorf("%s: %q names no case", file, name)
		}
		if ref, ok := strings.CutPrefix(reason, "@"); ok {
			shared, ok := reasons[ref]
			if !ok {
				return nil, fmt.Errorf("%s: %q gives reason %q, which %s does not define (it defines %s)", file, name, reason, reasonsFile, strings.Join(slices.Sorted(maps.Keys(reasons)), ", "))
			}
			k[name] = shared
			continue
		}
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s: %q gives no reason", file, name)
		}
	}
	return k, nil
}

type cell struct{ c, l int }

func runAll(e *env, cases []*Case, languages []language, parallel int) map[cell]result {
	jobs := make(chan cell)
	var mu sync.Mutex // guards results
	results := map[cell]result{}
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := e.run(context.Background(), languages[j.l], cases[j.c], j.c)
				mu.Lock()
				results[j] = r
				mu.Unlock()
			}
		}()
	}
	// Interleave languages, so that slow executors start early and each
	// language's runs spread over the whole run.
	for ci := range cases {
		for li := range languages {
			jobs <- cell{ci, li}
		}
	}
	close(jobs)
	wg.Wait()
	return results
}

// report prints the matrix and the details of every cell that is not a
// plain pass; it returns the exit code. A cell fails on a problem its
// language's known failures do not list, and on a difference from Kafka
// Streams that known-differences.json does not list; a listed case that
// passes is XPASS (the list must stay true): for known failures in the
// language's column, for known differences in the Kafka Streams column.
func report(w io.Writer, cases []*Case, languages []language, results map[cell]result, known map[string]map[string]string, diffs map[string]string) int {
	width := len("case")
	for _, c := range cases {
		width = max(width, len(c.Name))
	}
	fmt.Fprintf(w, "\n%-*s", width, "case")
	for _, l := range languages {
		fmt.Fprintf(w, "  %-8s", l.Name())
	}
	fmt.Fprintln(w)
	var details []string
	counts := map[string]int{}
	for ci, c := range cases {
		fmt.Fprintf(w, "%-*s", width, c.Name)
		for li, l := range languages {
			r := results[cell{ci, li}]
			_, isJava := l.(javaLang)
			reason, isKnown := known[l.Name()][c.Name]
			diff, isDiff := diffs[c.Name]
			// A language's known failure covers its cell's differences
			// from Kafka Streams too (the language cannot express the
			// case); known-differences covers every column's.
			failed := (len(r.problems) > 0 && !isKnown) || (len(r.ks) > 0 && !isDiff && !isKnown)
			status := "ok"
			switch {
			case failed:
				status = "FAIL"
				details = append(details, fmt.Sprintf("--- %s [%s]: FAIL (%s)\n%s", c.Name, l.Name(), c.file, problemsText(r)))
			case len(r.problems) == 0 && isKnown:
				status = "XPASS"
				details = append(details, fmt.Sprintf("--- %s [%s]: passes, but known-failures/%s.json lists it (%s): remove the entry", c.Name, l.Name(), l.Name(), reason))
			case isJava && len(r.ks) == 0 && isDiff:
				status = "XPASS"
				details = append(details, fmt.Sprintf("--- %s [%s]: agrees with Kafka Streams, but known-differences.json lists it (%s): remove the entry", c.Name, l.Name(), diff))
			case len(r.problems) > 0 || len(r.ks) > 0:
				status = "known"
				why := "known failure (" + reason + ")"
				if len(r.ks) > 0 && isDiff {
					why = "known difference from Kafka Streams (" + diff + ")"
				}
				details = append(details, fmt.Sprintf("--- %s [%s]: %s\n%s", c.Name, l.Name(), why, problemsText(r)))
			}
			counts[status]++
			fmt.Fprintf(w, "  %-8s", status)
		}
		fmt.Fprintln(w)
	}
	for _, d := range details {
		fmt.Fprintf(w, "\n%s\n", d)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(w, "\nknown differences from Kafka Streams (conformance/known-differences.json):\n")
		for _, name := range sortedKeys(diffs) {
			fmt.Fprintf(w, "  %s: %s\n", name, diffs[name])
		}
	}
	fmt.Fprintf(w, "\nconformance: %d ok, %d known, %d FAIL, %d XPASS\n", counts["ok"], counts["known"], counts["FAIL"], counts["XPASS"])
	if counts["FAIL"] > 0 || counts["XPASS"] > 0 {
		return 1
	}
	return 0
}

func problemsText(r result) string {
	var b strings.Builder
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(p, "\n", "\n  "))
	}
	for _, p := range r.ks {
		fmt.Fprintf(&b, "  vs Kafka Streams: %s\n", strings.ReplaceAll(p, "\n", "\n  "))
	}
	if r.diag != "" {
		fmt.Fprintf(&b, "  executor diagnostics:\n    %s\n", strings.ReplaceAll(r.diag, "\n", "\n    "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// engine is the polystreams dev process: engine and embedded broker.
type engine struct {
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	broker, url string
	log         *tail
}

func startEngine(bin, tmp string) (*engine, error) {
	state := filepath.Join(tmp, "engine-state")
	cmd := exec.Command(bin, "dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--partitions", "1",
		"--state-dir", state, "--exit-on-stdin-close", "--log-level", "warn")
	e := &engine{cmd: cmd, log: &tail{max: 3000}}
	cmd.Stderr = e.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the engine %s (run make build): %w", bin, err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for e.broker == "" || e.url == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				return nil, fmt.Errorf("the engine exited before serving: %s", e.log.String())
			}
			if a, ok := strings.CutPrefix(line, "polystreams: broker "); ok {
				e.broker = a
			}
			if a, ok := strings.CutPrefix(line, "polystreams: engine "); ok {
				e.url = a
			}
		case <-timeout:
			cmd.Process.Kill()
			return nil, fmt.Errorf("the engine did not report its addresses within 30s: %s", e.log.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	return e, nil
}

func (e *engine) close() {
	e.stdin.Close() // --exit-on-stdin-close: the engine stops
	done := make(chan struct{})
	go func() { e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
}
