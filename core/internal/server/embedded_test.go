package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/server"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// embeddedEnv is an env whose engine runs as `polystreams dev` does
// (server.Options.Embedded) on a broker with no topics; it logs to logs too.
func embeddedEnv(t *testing.T, logs io.Writer) *env {
	t.Helper()
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	e.srv = server.New(server.Options{Brokers: b.Addr(), StateDir: e.stateDir, Embedded: true,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(logs, os.Stderr), nil))})
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	e.http = httptest.NewServer(mux)
	e.cl = polystreamsv1alpha1connect.NewEngineServiceClient(http.DefaultClient, e.http.URL)
	t.Cleanup(func() {
		e.stopEngine()
		b.Close()
	})
	return e
}

// On the embedded broker the topics a topology reads and writes are created
// when missing, in one log line, with the broker's default partition count;
// results commit every second unless commit.interval.ms says otherwise.
func TestEmbeddedCreatesMissingTopics(t *testing.T) {
	var logs lockedBuffer
	e := embeddedEnv(t, &logs)
	h := e.open("dev-wc", nil)
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	if n := strings.Count(logs.String(), "created missing topics"); n != 1 {
		t.Fatalf("logged the created topics %d times, want once:\n%s", n, logs.String())
	}
	line := logs.String()[strings.Index(logs.String(), "created missing topics"):]
	line = line[:strings.Index(line, "\n")]
	if !strings.Contains(line, "topics=lines,word-counts") || !strings.Contains(line, "partitions=3") {
		t.Errorf("log line %q does not name both topics and the broker's 3 partitions", line)
	}
	ls, want := lines(200, 0)
	e.produce("lines", ls...)
	waitCounts(t, e, "word-counts", want)
	h.stopServing(done)

	// A second start finds the topics: nothing to create, nothing logged.
	h2 := e.open("dev-wc-2", nil)
	h2.buildWordCount("lines", "word-counts")
	h2.start()
	h2.stop()
	if n := strings.Count(logs.String(), "created missing topics"); n != 1 {
		t.Errorf("logged created topics %d times after a start that needed none, want still 1", n)
	}
}

// The embedded engine's default commit interval is 1 s under
// at_least_once; a session's own commit.interval.ms wins, and
// exactly_once_v2 keeps its 100 ms. A plain engine keeps Kafka Streams'
// 30 s.
func TestEmbeddedCommitInterval(t *testing.T) {
	var logs lockedBuffer
	e := embeddedEnv(t, &logs)
	plain := newEnv(t)
	for _, tc := range []struct {
		cl     polystreamsv1alpha1connect.EngineServiceClient
		config map[string]string
		want   string
	}{
		{e.cl, nil, server.DevCommitInterval},
		{e.cl, map[string]string{"commit.interval.ms": "5000"}, "5000"},
		{e.cl, map[string]string{"processing.guarantee": "exactly_once_v2"}, "100"},
		{plain.cl, nil, "30000"},
	} {
		resp, err := tc.cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "commit-interval", Config: tc.config}))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Msg.Config["commit.interval.ms"]; got != tc.want {
			t.Errorf("config %v: commit.interval.ms = %s, want %s", tc.config, got, tc.want)
		}
	}
}

// Against any broker but the embedded one a missing source topic fails
// Start naming it (Kafka Streams' MissingSourceTopicException), and so does
// a session on the embedded engine that names brokers of its own.
func TestMissingSourceTopicOutsideEmbedded(t *testing.T) {
	var logs lockedBuffer
	e := embeddedEnv(t, &logs)
	plain := newEnv(t)
	for name, h := range map[string]*testHost{
		"plain engine":                   plain.open("missing-src", nil),
		"embedded engine, own bootstrap": e.open("missing-src", map[string]string{"bootstrap.servers": e.broker.Addr()}),
	} {
		h.buildWordCount("lines", "word-counts")
		_, err := h.cl.Start(context.Background(), connect.NewRequest(&pb.StartRequest{SessionId: h.session}))
		if err == nil || !strings.Contains(err.Error(), `source topic "lines" does not exist (Kafka Streams' MissingSourceTopicException)`) {
			t.Errorf("%s: Start = %v, want MissingSourceTopicException naming \"lines\"", name, err)
		}
	}
	if strings.Contains(logs.String(), "created missing topics") {
		t.Errorf("topics were created for a session with its own bootstrap.servers:\n%s", logs.String())
	}
}

// The engine's --broker-wait (Options.BrokerWait) is
// polystreams.broker.wait.ms for sessions that do not set it; without it
// the runtime's default holds.
func TestBrokerWaitDefault(t *testing.T) {
	for _, tc := range []struct {
		wait   *time.Duration
		config map[string]string
		want   string
	}{
		{nil, nil, "60000"},
		{ptr(2500 * time.Millisecond), nil, "2500"},
		{ptr(time.Duration(0)), nil, "0"},
		{ptr(2500 * time.Millisecond), map[string]string{"polystreams.broker.wait.ms": "700"}, "700"},
	} {
		srv := server.New(server.Options{Brokers: "127.0.0.1:9", StateDir: t.TempDir(), BrokerWait: tc.wait})
		resp, err := srv.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "wait", Config: tc.config}))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Msg.Config["polystreams.broker.wait.ms"]; got != tc.want {
			t.Errorf("BrokerWait %v, config %v: polystreams.broker.wait.ms = %s, want %s", tc.wait, tc.config, got, tc.want)
		}
		srv.Close(context.Background())
	}
}

func ptr[T any](v T) *T { return &v }
