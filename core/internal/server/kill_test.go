package server_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// engineBinary is $POLYSTREAMS_ENGINE (set by the Makefile), else a fresh
// build of the engine.
func engineBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("POLYSTREAMS_ENGINE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("POLYSTREAMS_ENGINE=%s: %v (run make build)", p, err)
		}
		return p
	}
	out := filepath.Join(t.TempDir(), "polystreams")
	cmd := exec.Command("go", "build", "-o", out, "github.com/polystreams/polystreams/core/cmd/polystreams")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the engine: %v\n%s", err, b)
	}
	return out
}

// startEngineProcess runs `polystreams serve` against brokers and returns
// the process and its URL.
func startEngineProcess(t *testing.T, bin, brokers, stateDir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--brokers", brokers, "--listen", "127.0.0.1:0", "--state-dir", stateDir, "--log-level", os.Getenv("POLYSTREAMS_TEST_LOG_LEVEL"))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that fails leaves no engine behind (the engines it killed
	// or stopped itself are already reaped).
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "polystreams: engine "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, url
		}
	}
	cmd.Process.Kill()
	t.Fatalf("engine exited without printing its address")
	return nil, ""
}

// killWordCount runs the word count in rounds on engine processes that
// share one broker and state directory: each round produces more lines and
// starts an engine; every round but the last kills it with SIGKILL while it
// works (after some but not all of the round's records crossed). The last
// engine runs until check holds for the totals, then stops cleanly.
func killWordCount(t *testing.T, appID string, config map[string]string, rounds, perRound int, check func(e *env, total map[string]int64)) {
	t.Helper()
	bin := engineBinary(t)
	b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: []string{"lines", "word-counts"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &env{t: t, broker: b}
	stateDir := t.TempDir()
	total := map[string]int64{}
	for round := range rounds {
		ls, want := lines(perRound, round)
		for k, v := range want {
			total[k] += v
		}
		e.produce("lines", ls...)
		cmd, url := startEngineProcess(t, bin, b.Addr(), stateDir)
		e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
		h := e.open(appID, config)
		h.buildWordCount("lines", "word-counts")
		h.start()
		ctx, cancel := context.WithCancel(context.Background())
		go h.serve(ctx)
		if round < rounds-1 {
			waitFor(t, "processing to begin", 30*time.Second, func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return h.records > 0
			})
			time.Sleep(time.Duration(50+round*100) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			cancel()
			continue
		}
		check(e, total)
		cancel()
		h.stop()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
}

// An engine killed with SIGKILL while counting loses nothing: a restarted
// engine restores the counts from the changelog and continues; under
// at-least-once no word is ever below its exact count.
func TestKilledEngineContinuesCounting(t *testing.T) {
	config := map[string]string{"commit.interval.ms": "100", "session.timeout.ms": "6000", "polystreams.bundle.max.records": "200"}
	killWordCount(t, "killed", config, 3, 4000, func(e *env, total map[string]int64) {
		waitFor(t, "counts to reach the totals", 90*time.Second, func() bool {
			got := e.lastCounts("word-counts")
			for w, n := range total {
				if got[w] < n {
					return false
				}
			}
			return len(got) == len(total)
		})
	})
}
