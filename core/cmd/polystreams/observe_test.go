package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// engineBinary is $POLYSTREAMS_ENGINE (make test sets it), else one built
// for the test.
func engineBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("POLYSTREAMS_ENGINE"); p != "" {
		return p
	}
	p := filepath.Join(t.TempDir(), "polystreams")
	if out, err := exec.Command("go", "build", "-o", p, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev runs `polystreams dev` with args and returns its URL and stderr.
func startDev(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	url, stderr, _ := startDevEnv(t, nil, args...)
	return url, stderr
}

// startDevEnv is startDev with env added to the engine's environment; it
// also returns what the engine prints on standard output.
func startDevEnv(t *testing.T, env []string, args ...string) (string, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(engineBinary(t), append([]string{"dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--state-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, out := &syncBuffer{}, &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.Write([]byte(sc.Text() + "\n"))
		if u, ok := strings.CutPrefix(sc.Text(), "polystreams: engine "); ok {
			go io.Copy(out, stdout)
			return u, stderr, out
		}
	}
	t.Fatalf("the engine never said where it serves; stderr:\n%s", stderr.String())
	return "", nil, nil
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

// A SASL password given to a session appears nowhere: not in the engine's
// JSON log (at debug level), not in /metrics, /ui, its status JSON or
// /describe.
func TestCredentialsAppearInNoLogOrPage(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	url, stderr := startDev(t, "--log-format", "json", "--log-level", "debug")
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
	ctx := context.Background()
	open, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "secure", Config: map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": secret,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: open.Msg.SessionId,
		Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}})); err != nil {
		t.Fatal(err)
	}
	// A config error beside the secret is logged too.
	cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "bad", Config: map[string]string{"sasl.password": secret, "nope": "1"}}))
	pages := map[string]string{}
	for _, path := range []string{"/metrics", "/ui/", "/ui/app.js", "/ui/api/status", "/describe?format=json", "/describe?format=svg"} {
		pages[path] = fetch(t, url+path)
	}
	if !strings.Contains(pages["/ui/api/status"], `"application_id":"secure"`) || !strings.Contains(pages["/metrics"], `polystreams_application_state{application_id="secure",state="created"} 1`) {
		t.Errorf("the pages do not show the session:\n%s\n%s", pages["/ui/api/status"], pages["/metrics"])
	}
	time.Sleep(100 * time.Millisecond)
	pages["log"] = stderr.String()
	for where, text := range pages {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the password:\n%s", where, text)
		}
	}
	// The log is JSON, a record per line, and shows the session (config redacted).
	opened := false
	for _, line := range strings.Split(strings.TrimSpace(pages["log"]), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec["msg"] == "session opened" && rec["application.id"] == "secure" {
			opened = strings.Contains(line, `"sasl.password":"[hidden]"`)
		}
	}
	if !opened {
		t.Errorf("no 'session opened' record with sasl.password hidden:\n%s", pages["log"])
	}
}

// polystreams describe renders a running engine's topology and a topology
// file, in either form.
func TestDescribeCommand(t *testing.T) {
	url, _ := startDev(t)
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, url)
	ctx := context.Background()
	open, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "shown"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: open.Msg.SessionId,
		Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: open.Msg.SessionId,
		Operation: &pb.BuildRequest_To{To: &pb.ToOp{Input: s.Msg.Handle.Id, Topic: "out"}}})); err != nil {
		t.Fatal(err)
	}
	d, err := cl.Describe(ctx, connect.NewRequest(&pb.DescribeRequest{SessionId: open.Msg.SessionId}))
	if err != nil {
		t.Fatal(err)
	}
	text := d.Msg.Text
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := describe(args, &out)
		return out.String(), err
	}
	got, err := run("--engine", url)
	if err != nil || got != text {
		t.Fatalf("describe --engine: %v\n%s\nwant\n%s", err, got, text)
	}
	js, err := run("--engine", url, "--application-id", "shown", "--format", "json")
	if err != nil || !strings.Contains(js, `"name": "KSTREAM-SOURCE-0000000000"`) {
		t.Fatalf("describe --format json: %v\n%s", err, js)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"topology.json": js, "topology.txt": text} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		if got, err := run(path); err != nil || got != text {
			t.Errorf("describe %s: %v\n%s", name, err, got)
		}
		if got, err := run("--format", "mermaid", path); err != nil || !strings.HasPrefix(got, "flowchart TB\n") {
			t.Errorf("describe --format mermaid %s: %v\n%s", name, err, got)
		}
	}
	svg := filepath.Join(dir, "t.svg")
	if _, err := run("--format", "svg", "-o", svg, filepath.Join(dir, "topology.json")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(svg); !bytes.HasPrefix(b, []byte("<svg ")) {
		t.Errorf("-o %s holds %.60q", svg, b)
	}
	if _, err := run("--engine", url, "--application-id", "absent"); err == nil || !strings.Contains(err.Error(), `404 Not Found: describe: no application "absent"`) {
		t.Errorf("describe of an absent application: %v", err)
	}
	if _, err := run("--format", "png", filepath.Join(dir, "topology.json")); err == nil || !strings.Contains(err.Error(), `"png" is not one of`) {
		t.Errorf("describe --format png: %v", err)
	}
}
