package server_test

import (
	"context"
	"io"
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
// engine's log, not in errors about the configuration or the broker, not in
// GetState, Describe or GetMetrics answers, not on /metrics, /describe or
// /ui's status; nor is the engine's token.
func TestCredentialsAreNeverEchoed(t *testing.T) {
	const secret = "s3cr3t-p4ss"
	const token = "engine-t0ken-planted"
	logs := &secretLog{}
	srv := server.New(server.Options{Brokers: "127.0.0.1:1", StateDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer srv.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	mux.Handle("/metrics", srv.MetricsHandler())
	mux.Handle("/describe", srv.DescribeHandler())
	mux.Handle("/ui/api/status", srv.StatusHandler())
	hs := httptest.NewServer(server.RequireToken(token, mux))
	defer hs.Close()
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, hs.URL, bearer(token))

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
	seen := map[string]string{"answer": resp.Msg.String(), "error": err.Error()}
	ctx := context.Background()
	id := resp.Msg.SessionId
	h, err := cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_Stream{Stream: &pb.StreamOp{Topics: []string{"in"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	cl.Build(ctx, connect.NewRequest(&pb.BuildRequest{SessionId: id, Operation: &pb.BuildRequest_To{To: &pb.ToOp{Input: h.Msg.Handle.Id, Topic: "out"}}}))
	if d, err := cl.Describe(ctx, connect.NewRequest(&pb.DescribeRequest{SessionId: id, Format: "json"})); err == nil {
		seen["Describe"] = d.Msg.String()
	}
	// No broker listens: Start fails, its error and the log say why.
	if _, err := cl.Start(ctx, connect.NewRequest(&pb.StartRequest{SessionId: id})); err != nil {
		seen["Start"] = err.Error()
	}
	if st, err := cl.GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: id})); err == nil {
		seen["GetState"] = st.Msg.String()
	}
	if m, err := cl.GetMetrics(ctx, connect.NewRequest(&pb.GetMetricsRequest{SessionId: id})); err == nil {
		seen["GetMetrics"] = m.Msg.String()
	}
	// A wrong token is refused without echoing either token.
	_, err = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, hs.URL, bearer(secret)).GetState(ctx, connect.NewRequest(&pb.GetStateRequest{SessionId: id}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("GetState with a wrong token: %v", err)
	} else {
		seen["wrong token"] = err.Error()
	}
	for _, path := range []string{"/metrics", "/describe?format=json", "/ui/api/status"} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		seen[path] = string(b)
	}
	if !strings.Contains(seen["/ui/api/status"], "secure") {
		t.Errorf("/ui/api/status does not show the session: %s", seen["/ui/api/status"])
	}
	seen["log"] = logs.String()
	// Against no broker, Start succeeds and the application waits for one
	// (Kafka Streams' start()), logging why: with the broker address, never
	// the credentials.
	if !strings.Contains(seen["log"], "waiting for the brokers") || !strings.Contains(seen["log"], "connection refused") {
		t.Errorf("the wait for the broker is not logged with its reason; log: %s", seen["log"])
	}
	for where, text := range seen {
		for _, s := range []string{secret, token} {
			if strings.Contains(text, s) {
				t.Errorf("the %s contains a secret: %s", where, text)
			}
		}
	}
	if !strings.Contains(seen["log"], "session opened") {
		t.Errorf("expected the session to be logged (with its config redacted); log: %s", logs.String())
	}
}

// bearer sends token on every call, as the SDKs do.
func bearer(token string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}))
}
