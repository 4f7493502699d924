// Command polystreams runs the polystreams engine.
//
//	polystreams dev       engine + embedded Kafka broker (kfake), for development, demos and tests:
//	                      topics a topology reads or writes are created when missing, and
//	                      commit.interval.ms defaults to 1000 (results show within a second)
//	polystreams serve     engine against any Kafka: --brokers host:port
//	polystreams describe  a topology as text, json, mermaid, dot or svg
//
// Both bind 127.0.0.1 unless told otherwise (any other address needs a
// token, $POLYSTREAMS_TOKEN or --token-file, or TLS: listen.go), print the
// addresses they serve
// ("polystreams: broker ..." and "polystreams: engine http://...") on
// standard output, and stop cleanly on SIGINT/SIGTERM (or, with
// --exit-on-stdin-close, when standard input closes: a parent that spawned
// the engine died).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/observe/logging"
	"github.com/polystreams/polystreams/core/internal/server"
)

const usage = `polystreams: Kafka Streams for Python, Node.js and Rust, on one Go engine.

Usage:
  polystreams dev   [flags]   run the engine with an embedded Kafka broker; it
                              creates the topics a topology reads or writes when
                              missing, and commits every 1000 ms unless
                              commit.interval.ms is set
  polystreams serve [flags]   run the engine against Kafka at --brokers
  polystreams describe [flags] [TOPOLOGY-FILE]
                              print a topology (of a running engine, or a file)
                              as text, json, mermaid, dot or svg
  polystreams version

The engine serves the protocol, /metrics (Prometheus), /describe and a live
page, /ui, on its --listen address.

Run 'polystreams dev -h' or 'polystreams serve -h' for flags.
`

// version is stamped from the repository's VERSION file by make (-ldflags -X
// main.version=...); "dev" in a plain go build.
var version = "dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "dev":
		err = run(os.Args[2:], true)
	case "serve":
		err = run(os.Args[2:], false)
	case "describe":
		err = describe(os.Args[2:], os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("polystreams", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "polystreams: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "polystreams:", err)
		os.Exit(1)
	}
}

func run(args []string, dev bool) error {
	name := "serve"
	if dev {
		name = "dev"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8086", "address the engine serves the protocol on (port 0 picks a free one)")
	stateDir := fs.String("state-dir", "", "state.dir for sessions that name none (default <tmp>/polystreams)")
	exitOnStdin := fs.Bool("exit-on-stdin-close", false, "stop when standard input closes (for engines spawned by an SDK)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json (log/slog's handlers), on standard error")
	metricsOn := fs.Bool("metrics", true, "count node records, crossings, commits and drops (polystreams.metrics.enabled for sessions that do not set it)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token every request must carry (default $POLYSTREAMS_TOKEN; none: no token)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate (chain) to serve TLS with; needs --tls-key")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "PEM CA certificates that client certificates must chain to: every caller must present a verified one (mutual TLS); needs --tls-cert")
	peerCA := fs.String("peer-ca", "", "PEM CA certificates that other instances' engine certificates chain to, for interactive queries this engine forwards to them over https (default: the system's roots); needs --tls-cert")
	peerCert := fs.String("peer-cert", "", "PEM client certificate this engine presents to other instances' engines that verify client certificates (default: --tls-cert); needs --peer-key")
	peerKey := fs.String("peer-key", "", "PEM private key of --peer-cert")
	maxSessions := fs.Int("max-sessions", server.DefaultMaxSessions, "refuse OpenSession while this many sessions are open")
	maxCache := fs.Int64("max-cache-bytes", server.DefaultMaxCacheBytes, "refuse a session whose statestore.cache.max.bytes is larger")
	maxAppMemory := fs.Int64("max-app-memory", config.DefaultMemoryMaxBytes, "polystreams.memory.max.bytes of sessions that set none, and the most a session may set: what the engine holds in memory for one application")
	maxRequest := fs.Int("max-request-bytes", server.DefaultMaxRequestBytes, "refuse a request message larger than this")
	sessionTimeout := fs.Duration("session-timeout", 60*time.Second, "stop a started session whose host has not called for this long")
	brokerWait := fs.Duration("broker-wait", config.DefaultBrokerWait, "how long a session's start waits for a broker to answer before it fails (polystreams.broker.wait.ms for sessions that do not set it; 0 fails at once)")
	configFile := fs.String("config", "", "file of name = value lines setting these flags (names without dashes' prefix; # comments); a flag given on the command line wins, then $POLYSTREAMS_<NAME>, then the file")
	var brokers, brokerAddr, topics, dataDir *string
	var partitions *int
	if dev {
		brokerAddr = fs.String("broker", "127.0.0.1:9092", "address of the embedded broker (port 0 picks a free one)")
		partitions = fs.Int("partitions", 8, "partitions of topics the embedded broker creates without a count")
		topics = fs.String("topics", "", "comma-separated topics to create at start")
		dataDir = fs.String("data-dir", "", "persist the embedded broker's log here (default: in memory)")
	} else {
		brokers = fs.String("brokers", "", "bootstrap.servers of the Kafka cluster (required)")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := settings(fs, *configFile, os.LookupEnv); err != nil {
		return err
	}
	var level slog.Level
	if *logLevel == "" {
		*logLevel = "info"
	}
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if *maxAppMemory < config.MinMemoryMaxBytes {
		return fmt.Errorf("--max-app-memory %d: want at least %d (Pebble's share of an application and a few bundles)", *maxAppMemory, config.MinMemoryMaxBytes)
	}
	sec, err := loadSecurity(*tokenFile, *tlsCert, *tlsKey, *tlsClientCA)
	if err != nil {
		return err
	}
	if err := sec.loadPeerTLS(*peerCA, *peerCert, *peerKey); err != nil {
		return err
	}
	log, recent, err := logging.New(os.Stderr, *logFormat, level)
	if err != nil {
		return fmt.Errorf("--log-format: %w", err)
	}
	slog.SetDefault(log)

	bootstrap := ""
	if dev {
		var ts []string
		for _, t := range strings.Split(*topics, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		b, err := broker.Start(broker.Options{Addr: *brokerAddr, Partitions: *partitions, DataDir: *dataDir, Topics: ts})
		if err != nil {
			return err
		}
		defer b.Close()
		bootstrap = b.Addr()
		fmt.Printf("polystreams: broker %s\n", bootstrap)
	} else {
		bootstrap = *brokers
		if bootstrap == "" {
			return errors.New("serve needs --brokers host:port (or use 'polystreams dev' for an embedded broker)")
		}
		if strings.Contains(bootstrap, "@") {
			// Never echoed: it holds a credential.
			return errors.New("--brokers holds 'user:password@': Kafka takes credentials from the session's sasl.username and sasl.password, never from bootstrap.servers")
		}
	}

	srv := server.New(server.Options{Brokers: bootstrap, StateDir: *stateDir, SessionTimeout: *sessionTimeout, Logger: log,
		Recent: recent, Version: version, MetricsDisabled: !*metricsOn, MaxRequestBytes: *maxRequest, MaxSessions: *maxSessions, MaxCacheBytes: *maxCache,
		MaxAppMemory: *maxAppMemory, Embedded: dev, BrokerWait: brokerWait, PeerToken: sec.token, PeerScheme: sec.scheme(), PeerTLS: sec.peer})
	ln, err := sec.listen(*listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	srv.Mount(mux)
	observe(mux)
	hs := &http.Server{Handler: server.RequireToken(sec.token, mux), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- sec.serve(hs, ln) }()
	fmt.Printf("polystreams: engine %s://%s\n", sec.scheme(), ln.Addr())
	os.Stdout.Sync()
	log.Info("engine serving", "address", ln.Addr().String(), "brokers", bootstrap, "version", version,
		"token", sec.token != "", "tls", sec.tls != nil, "tls.client.ca", sec.clientCA != "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go watchRestores(ctx, srv)
	if *exitOnStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	log.Info("engine stopping")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Close(shutdown)
	hs.Shutdown(shutdown)
	return nil
}
