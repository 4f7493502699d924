package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/testcert"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// An engine forwards interactive queries to another instance's engine over
// https with the roots and client certificate of Options.PeerTLS (the
// engine's --peer-ca, --peer-cert or its own --tls-cert): the query then
// reaches the other engine's handler, which says no instance of the
// application runs there. Without the roots the handshake fails on the
// certificate; an engine that verifies client certificates
// (--tls-client-ca) refuses a peer that presents none.
func TestPeersOverMutualTLS(t *testing.T) {
	cert := testcert.New(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	other := New(Options{Logger: quiet})
	defer other.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle(other.Handler())
	ts := httptest.NewUnstartedServer(mux)
	ts.TLS = cert.TLS.Clone()
	ts.TLS.ClientCAs, ts.TLS.ClientAuth = cert.Pool, tls.RequireAndVerifyClientCert
	ts.StartTLS()
	defer ts.Close()
	endpoint := strings.TrimPrefix(ts.URL, "https://")

	query := func(peerTLS *tls.Config) error {
		s := New(Options{Logger: quiet, PeerScheme: "https", PeerTLS: peerTLS})
		defer s.Close(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := s.peer(endpoint).Query(ctx, connect.NewRequest(&pb.QueryRequest{Store: "counts", Query: &pb.QueryRequest_Get{Get: []byte("k")},
			LocalOnly: true, ApplicationId: "app", ApplicationServer: endpoint}))
		return err
	}
	reached := func(err error) bool {
		var ce *connect.Error
		return errors.As(err, &ce) && ce.Code() == connect.CodeUnavailable && strings.Contains(ce.Message(), "has no running instance")
	}

	if err := query(&tls.Config{RootCAs: cert.Pool, Certificates: cert.TLS.Certificates, MinVersion: tls.VersionTLS12}); !reached(err) {
		t.Fatalf("with the peer's CA and a client certificate: %v; want the other engine's answer (no running instance)", err)
	}
	if err := query(nil); reached(err) || err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("with the system's roots: %v; want a certificate error", err)
	}
	if err := query(&tls.Config{RootCAs: cert.Pool, MinVersion: tls.VersionTLS12}); reached(err) || err == nil {
		t.Fatalf("with no client certificate: %v; want the handshake refused", err)
	}
}
