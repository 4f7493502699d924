package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/testcert"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// An address other than loopback needs a token or TLS; the refusal names
// the address and both options.
func TestNonLoopbackListenNeedsTokenOrTLS(t *testing.T) {
	cmd := exec.Command(engineBinary(t), "dev", "--listen", "0.0.0.0:0", "--broker", "127.0.0.1:0", "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "POLYSTREAMS_TOKEN=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("engine on 0.0.0.0 without a token: %v\n%s", err, out)
	}
	for _, want := range []string{"--listen 0.0.0.0:0 is not a loopback address", "POLYSTREAMS_TOKEN", "--token-file", "--tls-cert"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "polystreams: engine ") {
		t.Errorf("the engine served anyway:\n%s", out)
	}
}

// The engine serves TLS with a token: each protocol (Connect, gRPC) and
// each page refuses a request without the token or with another as
// unauthenticated, accepts the right one, and neither the token nor a
// session's SASL password shows anywhere the engine writes or answers.
func TestTLSAndTokenProtectEverything(t *testing.T) {
	const token = "tok-9f1c2e7a-planted"
	const password = "sasl-pw-5b7d-planted"
	tc := testcert.New(t)
	cert, key, pool := tc.CertFile, tc.KeyFile, tc.Pool
	url, stderr, stdout := startDevEnv(t, []string{"POLYSTREAMS_TOKEN=" + token},
		"--tls-cert", cert, "--tls-key", key, "--log-format", "json", "--log-level", "debug")
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("engine URL %q, want https://127.0.0.1:<port>", url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	seen := map[string]string{}
	ctx := context.Background()
	withToken := func(tok string) connect.Option {
		return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				if tok != "" {
					req.Header().Set("Authorization", "Bearer "+tok)
				}
				return next(ctx, req)
			}
		}))
	}
	for _, proto := range []struct {
		name string
		opt  connect.ClientOption
	}{{"connect", connect.WithProtoJSON()}, {"grpc", connect.WithGRPC()}} {
		for _, tok := range []string{"", "not-" + token} {
			cl := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url, proto.opt, withToken(tok))
			_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "x"}))
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Errorf("%s with token %q: %v, want unauthenticated", proto.name, tok, err)
			}
			if err != nil {
				seen[proto.name+" error "+tok] = err.Error()
			}
		}
	}
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url, withToken(token))
	open, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "secure", Config: map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": password,
	}}))
	if err != nil {
		t.Fatalf("OpenSession with the token: %v", err)
	}
	seen["OpenSession"] = open.Msg.String()
	if _, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: open.Msg.SessionId,
		Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}})); err != nil {
		t.Fatal(err)
	}
	if d, err := cl.Describe(ctx, connect.NewRequest(&pb.DescribeRequest{SessionId: open.Msg.SessionId, Format: "json"})); err == nil {
		seen["Describe"] = d.Msg.String()
	} else {
		t.Error(err)
	}
	if st, err := cl.GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: open.Msg.SessionId})); err == nil {
		seen["GetState"] = st.Msg.String()
	} else {
		t.Error(err)
	}
	if m, err := cl.GetMetrics(ctx, connect.NewRequest(&pb.GetMetricsRequest{SessionId: open.Msg.SessionId})); err == nil {
		seen["GetMetrics"] = m.Msg.String()
	} else {
		t.Error(err)
	}
	if _, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "bad", Config: map[string]string{"sasl.password": password, "nope": "1"}})); err != nil {
		seen["config error"] = err.Error()
	}
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/metrics", "/ui/", "/ui/api/status", "/describe?format=json"} {
		if code, body := get(path, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d %s", path, code, body)
		}
		if code, _ := get(path, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d", path, code)
		}
		code, body := get(path, token)
		if code != http.StatusOK {
			t.Errorf("GET %s with the token: %d %s", path, code, body)
		}
		seen[path] = body
	}
	// A browser on /ui sends the token as a Basic password.
	req, _ := http.NewRequest(http.MethodGet, url+"/ui/api/status", nil)
	req.SetBasicAuth("me", token)
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ui/api/status with Basic auth: %v %v", resp, err)
	}
	// polystreams describe sends $POLYSTREAMS_TOKEN and trusts --ca-file.
	t.Setenv("POLYSTREAMS_TOKEN", token)
	var out strings.Builder
	if err := describe([]string{"--engine", url, "--ca-file", cert}, &out); err != nil || !strings.Contains(out.String(), "KSTREAM-SOURCE-0000000000") {
		t.Errorf("describe over TLS with the token: %v\n%s", err, out.String())
	}
	seen["describe command"] = out.String()
	t.Setenv("POLYSTREAMS_TOKEN", "wrong")
	if err := describe([]string{"--engine", url, "--ca-file", cert}, io.Discard); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("describe with a wrong token: %v", err)
	} else {
		seen["describe error"] = err.Error()
	}
	time.Sleep(100 * time.Millisecond)
	seen["stderr"], seen["stdout"] = stderr.String(), stdout.String()
	if !strings.Contains(seen["stderr"], `"token":true`) || !strings.Contains(seen["stderr"], `"tls":true`) {
		t.Errorf("the log does not say the engine is protected:\n%s", seen["stderr"])
	}
	for where, text := range seen {
		for _, secret := range []string{token, password} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows a secret:\n%s", where, text)
			}
		}
	}
}

// The token file wins over the environment; a half TLS pair, an empty
// token file or a bad key pair are refused naming the flag.
func TestLoadSecurity(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	t.Setenv("POLYSTREAMS_TOKEN", " from-env ")
	if s, err := loadSecurity("", "", "", ""); err != nil || s.token != "from-env" || s.scheme() != "http" {
		t.Errorf("from the environment: %+v %v", s, err)
	}
	if s, err := loadSecurity(tokenFile, "", "", ""); err != nil || s.token != "from-file" {
		t.Errorf("from a file: %+v %v", s, err)
	}
	tc := testcert.New(t)
	if s, err := loadSecurity("", tc.CertFile, tc.KeyFile, ""); err != nil || s.scheme() != "https" {
		t.Errorf("TLS: %+v %v", s, err)
	}
	for _, c := range []struct{ token, cert, key, want string }{
		{empty, "", "", "--token-file " + empty + " is empty"},
		{"", tc.CertFile, "", "--tls-cert and --tls-key go together"},
		{"", tc.KeyFile, tc.CertFile, "--tls-cert " + tc.KeyFile},
		{filepath.Join(dir, "absent"), "", "", "--token-file"},
	} {
		if _, err := loadSecurity(c.token, c.cert, c.key, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loadSecurity(%q, %q, %q): %v, want %q", c.token, c.cert, c.key, err, c.want)
		}
	}
}

// --peer-ca, --peer-cert and --peer-key set how the engine reaches other
// instances' engines: only over TLS, the client certificate defaulting to
// --tls-cert; bad values are refused naming the flag.
func TestLoadPeerTLS(t *testing.T) {
	tc := testcert.New(t)
	plain, err := loadSecurity("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.loadPeerTLS("", "", ""); err != nil || plain.peer != nil {
		t.Errorf("without TLS and peer flags: %v, peer %v; want none", err, plain.peer)
	}
	if err := plain.loadPeerTLS(tc.CertFile, "", ""); err == nil || !strings.Contains(err.Error(), "--peer-ca needs --tls-cert") {
		t.Errorf("--peer-ca without TLS: %v", err)
	}
	s, err := loadSecurity("", tc.CertFile, tc.KeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.loadPeerTLS("", "", ""); err != nil || s.peer == nil || s.peer.RootCAs != nil || len(s.peer.Certificates) != 1 {
		t.Errorf("TLS, no peer flags: %v, %+v; want the system's roots and --tls-cert as client certificate", err, s.peer)
	}
	if err := s.loadPeerTLS(tc.CertFile, tc.CertFile, tc.KeyFile); err != nil || s.peer.RootCAs == nil || len(s.peer.Certificates) != 1 {
		t.Errorf("--peer-ca and --peer-cert: %v, %+v", err, s.peer)
	}
	for _, c := range []struct{ ca, cert, key, want string }{
		{tc.KeyFile, "", "", "--peer-ca " + tc.KeyFile + " holds no PEM certificate"},
		{"", tc.CertFile, "", "--peer-cert and --peer-key go together"},
		{"", tc.KeyFile, tc.CertFile, "--peer-cert " + tc.KeyFile},
	} {
		if err := s.loadPeerTLS(c.ca, c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loadPeerTLS(%q, %q, %q): %v, want %q", c.ca, c.cert, c.key, err, c.want)
		}
	}
}
