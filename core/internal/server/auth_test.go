package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// tokenEngine serves srv's protocol and /metrics behind RequireToken(token),
// over TLS and HTTP/2; it returns the URL and a client trusting it.
func tokenEngine(t *testing.T, token string, o server.Options) (string, *http.Client) {
	t.Helper()
	o.Brokers, o.StateDir = "127.0.0.1:1", t.TempDir()
	srv := server.New(o)
	t.Cleanup(func() { srv.Close(context.Background()) })
	mux := http.NewServeMux()
	mux.Handle(srv.Handler())
	mux.Handle("/metrics", srv.MetricsHandler())
	hs := httptest.NewUnstartedServer(server.RequireToken(token, mux))
	hs.EnableHTTP2 = true
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return hs.URL, hs.Client()
}

// Every protocol (Connect, gRPC, gRPC-Web) and /metrics refuse a request
// without the token, or with another, as unauthenticated; the token opens
// them all, as a bearer token or (for browsers) a Basic password.
func TestTokenIsRequiredEverywhere(t *testing.T) {
	const token = "t0ken-for-tests"
	url, hc := tokenEngine(t, token, server.Options{})
	ctx := context.Background()
	for _, proto := range []struct {
		name string
		opt  connect.ClientOption
	}{{"connect", connect.WithProtoJSON()}, {"grpc", connect.WithGRPC()}, {"grpc-web", connect.WithGRPCWeb()}} {
		for _, tok := range []string{"", "wrong", token + "x", token[:len(token)-1]} {
			opts := []connect.ClientOption{proto.opt}
			if tok != "" {
				opts = append(opts, bearer(tok))
			}
			_, err := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url, opts...).
				OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "a"}))
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Errorf("%s, token %q: %v, want unauthenticated", proto.name, tok, err)
			}
		}
		cl := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url, proto.opt, bearer(token))
		if _, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "a"})); err != nil {
			t.Errorf("%s with the token: %v", proto.name, err)
		}
	}
	_, err := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url).
		OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "a"}))
	if msg := connect.CodeOf(err).String() + ": " + err.Error(); !strings.Contains(msg, `"Authorization: Bearer <token>"`) {
		t.Errorf("a missing token's error does not say how to send one: %s", msg)
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer " + token, 200}, {"Basic " + basic("any", token), 200}, {"Basic " + basic("any", "nope"), 401}, {"Basic !!", 401}, {token, 401}} {
		req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("/metrics with Authorization %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
		if c.want == 401 && len(resp.Header.Values("WWW-Authenticate")) != 2 {
			t.Errorf("a 401 without its challenges: %v", resp.Header)
		}
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// A request message over MaxRequestBytes is refused naming the limit; one
// nesting unknown groups past protobuf's recursion limit is refused as
// malformed; neither harms the engine.
func TestOversizedAndDeepRequestsAreRefused(t *testing.T) {
	url, hc := tokenEngine(t, "", server.Options{MaxRequestBytes: 4096})
	cl := polystreamsv1alpha1connect.NewEngineServiceClient(hc, url)
	ctx := context.Background()
	big := strings.Repeat("x", 5000)
	_, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "a", Config: map[string]string{"k": big}}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "larger than configured max 4096") {
		t.Errorf("an oversized request: %v", err)
	}
	// Unknown field 15 as groups nested n deep (2n bytes): protobuf's
	// recursion limit (10,000) refuses the deep one as malformed.
	url2, hc2 := tokenEngine(t, "", server.Options{})
	nested := func(n int) []byte {
		var b []byte
		for range n {
			b = protowire.AppendTag(b, 15, protowire.StartGroupType)
		}
		for range n {
			b = protowire.AppendTag(b, 15, protowire.EndGroupType)
		}
		return b
	}
	for _, c := range []struct{ depth, want int }{{100, http.StatusOK}, {20000, http.StatusBadRequest}} {
		req, _ := http.NewRequest(http.MethodPost, url2+"/polystreams.v1alpha1.EngineService/GetState", bytes.NewReader(nested(c.depth)))
		req.Header.Set("Content-Type", "application/proto")
		resp, err := hc2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// GetState of no session is NotFound (404) once the request parses.
		if got := resp.StatusCode; (c.want == http.StatusOK) != (got == http.StatusNotFound) || (c.want != http.StatusOK && got != c.want) {
			t.Errorf("a request of groups nested %d deep: HTTP %d", c.depth, got)
		}
	}
	if _, err := cl.OpenSession(ctx, connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "after"})); err != nil {
		t.Errorf("the engine after refusing them: %v", err)
	}
}
