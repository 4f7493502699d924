package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/testcert"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// startEngine runs the engine with args and env added to the test's
// environment, and returns the port it serves on, or (when it exits
// before serving) "" and what it wrote.
func startEngine(t *testing.T, env []string, args ...string) (port, output string) {
	t.Helper()
	cmd := exec.Command(engineBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &syncBuffer{}
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
		if u, ok := strings.CutPrefix(sc.Text(), "polystreams: engine "); ok {
			go io.Copy(io.Discard, stdout)
			_, p, err := net.SplitHostPort(u[strings.Index(u, "://")+3:])
			if err != nil {
				t.Fatalf("engine URL %q: %v", u, err)
			}
			return p, ""
		}
	}
	cmd.Wait()
	return "", stderr.String()
}

// Finding 9: docs/deploy.md's container recipe runs as written: its
// ENTRYPOINT with the arguments and environment of its `docker run` line
// serves on 0.0.0.0, and refuses a request without the token. Only what a
// container changes is substituted: the binary's and state directory's
// paths, the port (a free one) and the broker's address.
func TestDeployContainerRecipeRuns(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var entrypoint []string
	var run string
	for line := range strings.SplitSeq(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			if err := json.Unmarshal([]byte(rest), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: %v", rest, err)
			}
		}
		if strings.HasPrefix(line, "# ") && strings.Contains(line, "docker run ") {
			run = line
		}
	}
	if len(entrypoint) < 2 || run == "" {
		t.Fatalf("docs/deploy.md has no ENTRYPOINT and docker run line (%q, %q)", entrypoint, run)
	}
	// docker run [options] IMAGE [args]: -e NAME passes NAME from the
	// caller's environment; args are appended to the ENTRYPOINT.
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const token = "deploy-recipe-token"
	var env, appended []string
	fields := strings.Fields(run[strings.Index(run, "docker run ")+len("docker run "):])
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-e":
			i++
			name, value, ok := strings.Cut(fields[i], "=")
			if !ok {
				value = token // from the caller's environment
			}
			env = append(env, name+"="+value)
		case f == "-v" || f == "-p":
			i++
		case strings.HasPrefix(f, "polystreams:"):
			appended = fields[i+1:]
			i = len(fields)
		}
	}
	stateDir := t.TempDir()
	var args []string
	for _, a := range append(entrypoint[1:], appended...) {
		switch a {
		case "/var/lib/polystreams":
			a = stateDir
		case "0.0.0.0:8086":
			a = "0.0.0.0:0"
		case "kafka:9092":
			a = b.Addr()
		}
		args = append(args, a)
	}
	if !strings.Contains(strings.Join(args, " "), "--listen 0.0.0.0:0") {
		t.Fatalf("the recipe no longer listens on 0.0.0.0:8086: %q", args)
	}
	port, out := startEngine(t, append([]string{"POLYSTREAMS_TOKEN="}, env...), args...)
	if port == "" {
		t.Fatalf("the documented command line (%s %q, environment %q) does not start:\n%s", entrypoint[0], args, env, out)
	}
	url := "http://127.0.0.1:" + port + "/metrics"
	for _, c := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		req, _ := http.NewRequest("GET", url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET /metrics with %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
}

// Finding 3: TLS alone does not open a network address: the engine
// refuses to start, saying that TLS lets anyone in and what would not.
func TestTLSAloneIsRefusedBeyondLoopback(t *testing.T) {
	tc := testcert.New(t)
	port, out := startEngine(t, []string{"POLYSTREAMS_TOKEN="}, "dev", "--listen", "0.0.0.0:0", "--broker", "127.0.0.1:0",
		"--state-dir", t.TempDir(), "--tls-cert", tc.CertFile, "--tls-key", tc.KeyFile)
	if port != "" {
		t.Fatal("the engine served 0.0.0.0 with TLS and no way to authenticate callers")
	}
	for _, want := range []string{"--listen 0.0.0.0:0 is not a loopback address, and TLS alone lets anyone who reaches it in", "POLYSTREAMS_TOKEN", "--tls-client-ca"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
}

// With --tls-client-ca the engine serves 0.0.0.0 without a token: a
// caller must present a certificate the CA signed. One without a
// certificate, or with another CA's, is refused at the handshake; one with
// it opens a session.
func TestClientCertificatesAuthenticate(t *testing.T) {
	server, client, stranger := testcert.New(t), testcert.New(t), testcert.New(t)
	port, out := startEngine(t, []string{"POLYSTREAMS_TOKEN="}, "dev", "--listen", "0.0.0.0:0", "--broker", "127.0.0.1:0",
		"--state-dir", t.TempDir(), "--tls-cert", server.CertFile, "--tls-key", server.KeyFile, "--tls-client-ca", client.CertFile)
	if port == "" {
		t.Fatalf("the engine did not start with --tls-client-ca:\n%s", out)
	}
	url := "https://127.0.0.1:" + port
	call := func(cert *testcert.Cert) error {
		cfg := &tls.Config{RootCAs: server.Pool}
		if cert != nil {
			cfg.Certificates = cert.TLS.Certificates
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		cl := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url)
		_, err := cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "mtls"}))
		return err
	}
	if err := call(client); err != nil {
		t.Errorf("with the CA's certificate: %v", err)
	}
	// Under TLS 1.3 the client's handshake completes before the server
	// checks its certificate, so an RPC can fail in several ways (the
	// server's alert, a reset, a broken pipe while writing the request).
	// The RPC must fail; the refusal itself is read from a bare TLS
	// connection, where the server's alert arrives on the first read.
	for name, cert := range map[string]*testcert.Cert{"no certificate": nil, "another CA's certificate": stranger} {
		if err := call(cert); err == nil {
			t.Errorf("with %s: the call succeeded, want it refused", name)
		}
		cfg := &tls.Config{RootCAs: server.Pool}
		if cert != nil {
			cfg.Certificates = cert.TLS.Certificates
		}
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, cfg)
		if err == nil {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "tls:") {
			t.Errorf("with %s: %v, want the server's TLS alert refusing the certificate", name, err)
		}
	}
}
