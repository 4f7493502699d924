package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// Credentials are never echoed: not in the OpenSession answer, not in the
// engine's log, not in errors about the configuration.
func TestCredentialsAreNeverEchoed(t *testing.T) {
	const secret = "s3cr3t-p4ss"
	var logs bytes.Buffer
	srv := server.New(server.Options{Brokers: "127.0.0.1:1", StateDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer srv.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	hs := httptest.NewServer(mux)
	defer hs.Close()
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, hs.URL)

	resp, err := cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "secure", Config: map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": secret,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Msg.Config["sasl.password"]; got != "[hidden]" {
		t.Errorf("effective config shows sasl.password = %q, want [hidden]", got)
	}
	// A bad configuration next to a credential: the error names the bad key,
	// never the credential's value.
	_, err = cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "secure2", Config: map[string]string{
		"sasl.password": secret, "ssl.truststore.password": secret, "commit.interval.ms": "soon",
	}}))
	if err == nil || !strings.Contains(err.Error(), "commit.interval.ms") || !strings.Contains(err.Error(), "ssl.truststore.password") {
		t.Errorf("bad config error: %v", err)
	}
	for where, text := range map[string]string{"answer": resp.Msg.String(), "error": err.Error(), "log": logs.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s contains the password: %s", where, text)
		}
	}
	if !strings.Contains(logs.String(), "session opened") {
		t.Errorf("expected the session to be logged (with its config redacted); log: %s", logs.String())
	}
}
