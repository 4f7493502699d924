package server_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/polystreams/polystreams/core/internal/kafkatest"
	"github.com/polystreams/polystreams/core/internal/server"
	"github.com/polystreams/polystreams/core/internal/testcert"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// secretLog is a log sink safe for the engine's goroutines.
type secretLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *secretLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *secretLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The broker credentials a session names reach the broker: against a broker
// (kfake, or the listeners of a real Apache Kafka broker with
// POLYSTREAMS_TEST_BROKER=kafka) that requires SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512; in the clear and over TLS) or a client certificate (mutual
// TLS), a session with the right password or certificate processes records,
// one with a wrong password (or none) fails naming the authentication, and
// the password shows in no answer, error or log line.
func TestSASLToTheBroker(t *testing.T) {
	const password = "broker-pw-73a1-planted"
	cert := testcert.New(t)
	var real *kafkatest.Broker // with POLYSTREAMS_TEST_BROKER=kafka: one broker, a listener per case
	if kafkatest.Enabled() {
		b, err := kafkatest.Start(kafkatest.Options{Partitions: 2, Topics: []string{"in", "out"},
			CertFile: cert.CertFile, KeyFile: cert.KeyFile, ClientCA: cert.CertFile, Users: map[string]string{"alice": password}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		real = b
	}
	for _, tc := range []struct {
		mech string // "" for mutual TLS without SASL
		tls  bool
	}{{"PLAIN", false}, {"SCRAM-SHA-256", false}, {"SCRAM-SHA-512", true}, {"", true}} {
		t.Run(cmp.Or(tc.mech, "mTLS"), func(t *testing.T) {
			protocol := "SASL_PLAINTEXT"
			if tc.tls {
				protocol = "SASL_SSL"
			}
			if tc.mech == "" {
				protocol = "SSL"
			}
			var addr string
			if real != nil {
				addr = real.ListenerAddr(protocol)
				// Each case starts from empty topics: "right" reads "out" from the start.
				if err := real.Reset(2, "in", "out"); err != nil {
					t.Fatal(err)
				}
			} else {
				addr = kfakeSASL(t, cert, tc.mech, tc.tls, password)
			}
			clientOpts := []kgo.Opt{kgo.SeedBrokers(addr)}
			if tc.mech != "" {
				clientOpts = append(clientOpts, kgo.SASL(saslMechanism(tc.mech, password)))
			}
			if tc.tls {
				clientOpts = append(clientOpts, kgo.DialTLSConfig(&tls.Config{RootCAs: cert.Pool, Certificates: cert.TLS.Certificates}))
			}

			logs := &secretLog{}
			srv := server.New(server.Options{Brokers: addr, StateDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			mux := http.NewServeMux()
			mux.Handle(srv.Handler())
			hs := httptest.NewServer(mux)
			defer hs.Close()
			defer srv.Close(context.Background())
			cl := polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, hs.URL)
			seen := map[string]string{}
			run := func(appID, pass string) (*testHost, <-chan string) {
				config := map[string]string{"security.protocol": protocol, "commit.interval.ms": "100"}
				if tc.mech != "" {
					config["sasl.mechanism"], config["sasl.username"], config["sasl.password"] = tc.mech, "alice", pass
				}
				if tc.tls {
					config["ssl.ca.location"] = cert.CertFile
				}
				if tc.mech == "" && pass == password { // mTLS: the right "credential" is the client certificate
					config["ssl.certificate.location"], config["ssl.key.location"] = cert.CertFile, cert.KeyFile
				}
				resp, err := cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: appID, Config: config}))
				if err != nil {
					t.Fatalf("OpenSession: %v", err)
				}
				seen[appID+" OpenSession"] = resp.Msg.String()
				h := &testHost{t: t, cl: cl, session: resp.Msg.SessionId, funcs: map[uint32]any{}}
				up := h.register("upper", valueFn(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }))
				s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}, ValueSerde: "string"})
				m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: up})
				h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "out"})
				_, err = cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h.session}))
				if err != nil {
					seen[appID+" Start"] = err.Error()
					return h, nil
				}
				return h, h.serveAsync()
			}

			// Right credentials: records go through.
			pc, err := kgo.NewClient(append(clientOpts, kgo.DefaultProduceTopic("in"))...)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			if err := pc.ProduceSync(context.Background(), &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
				t.Fatalf("produce with SASL: %v", err)
			}
			h, done := run("right", password)
			if done == nil {
				t.Fatalf("Start with the right password: %s", seen["right Start"])
			}
			got := readSASLValues(t, clientOpts, "out", 2)
			if strings.Join(got, ",") != "A,B" && strings.Join(got, ",") != "B,A" {
				t.Errorf("out holds %q, want A and B", got)
			}
			h.stopServing(done)

			// Wrong credentials: the session fails, naming SASL.
			bad, done := run("wrong", "not-the-password")
			if done != nil {
				deadline := time.Now().Add(60 * time.Second)
				for time.Now().Before(deadline) {
					st, err := cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: bad.session}))
					if err != nil {
						t.Fatal(err)
					}
					if st.Msg.State == pb.State_STATE_ERROR {
						seen["wrong Start"] = st.Msg.Error
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			t.Logf("wrong credentials: %s", seen["wrong Start"])
			// mTLS without the engine's certificate: the broker's TLS alert
			// (Apache Kafka's bad_certificate, kfake's certificate_required)
			// and the settings to check.
			want := "remote error: tls: "
			if tc.mech != "" {
				want = "SASL authentication or TLS failed; check security.protocol=" + protocol + ", sasl.mechanism=" + tc.mech + `, sasl.username="alice"`
			}
			if msg := seen["wrong Start"]; !strings.Contains(msg, want) {
				t.Errorf("wrong credentials fail with %q, want %q", msg, want)
			}
			if msg := seen["wrong Start"]; tc.mech == "" && !strings.Contains(msg, "check security.protocol=SSL, ssl.ca.location, and ssl.certificate.location with ssl.key.location") {
				t.Errorf("a refused certificate fails with %q, which does not name the settings to check", msg)
			}
			seen["log"] = logs.String()
			for where, text := range seen {
				if strings.Contains(text, password) || strings.Contains(text, "not-the-password") {
					t.Errorf("%s shows the password:\n%s", where, text)
				}
			}
		})
	}
}

// kfakeSASL starts a kfake cluster requiring mech (SASL) and/or TLS (mutual
// TLS when mech is ""); it returns its address.
func kfakeSASL(t *testing.T, cert *testcert.Cert, mech string, withTLS bool, password string) string {
	opts := []kfake.Opt{kfake.Ports(0), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(2), kfake.SeedTopics(2, "in", "out")}
	if mech != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(mech, "alice", password))
	}
	if withTLS {
		serverTLS := cert.TLS.Clone()
		if mech == "" { // the broker requires the engine's certificate
			serverTLS.ClientAuth, serverTLS.ClientCAs = tls.RequireAndVerifyClientCert, cert.Pool
		}
		opts = append(opts, kfake.TLS(serverTLS))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func saslMechanism(name, password string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: "alice", Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: "alice", Pass: password}.AsSha256Mechanism()
	}
	return scram.Auth{User: "alice", Pass: password}.AsSha512Mechanism()
}

// readSASLValues reads n values of topic from the start.
func readSASLValues(t *testing.T, opts []kgo.Opt, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: got %q of %d", topic, got, n)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
