package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

const describeUsage = `Usage:
  polystreams describe [flags]                  the topology of an application running on an engine
  polystreams describe [flags] TOPOLOGY-FILE    the topology in a file ("-": standard input)

A topology file is what 'describe --format json' prints, or Kafka Streams'
Topology.describe() text (so a JVM application's topology renders too).

Flags:
`

// describe prints a topology in a format: from a running engine (its
// /describe endpoint) or from a topology file.
func describe(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), describeUsage)
		fs.PrintDefaults()
	}
	engine := fs.String("engine", envOr("POLYSTREAMS_URL", "http://127.0.0.1:8086"), "URL of the running engine (default $POLYSTREAMS_URL or http://127.0.0.1:8086)")
	appID := fs.String("application-id", "", "the application to describe, when the engine runs several")
	format := fs.String("format", "text", "text (Kafka Streams' describe()), json, mermaid, dot or svg")
	caFile := fs.String("ca-file", os.Getenv("POLYSTREAMS_CA_FILE"), "PEM CA certificates to trust for an https --engine (default $POLYSTREAMS_CA_FILE, else the system's)")
	out := fs.String("o", "", "write to this file instead of standard output")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	var rendered string
	switch fs.NArg() {
	case 0:
		var err error
		if rendered, err = describeEngine(*engine, *appID, *format, *caFile); err != nil {
			return err
		}
	case 1:
		var data []byte
		var err error
		if name := fs.Arg(0); name == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		d, err := topology.ParseDescription(data)
		if err != nil {
			return fmt.Errorf("describe %s: %w", fs.Arg(0), err)
		}
		if rendered, err = d.Render(*format); err != nil {
			return fmt.Errorf("describe: %w", err)
		}
	default:
		return fmt.Errorf("describe: one topology file at most, got %d arguments", fs.NArg())
	}
	if *out != "" {
		return os.WriteFile(*out, []byte(rendered), 0o644)
	}
	_, err := io.WriteString(stdout, rendered)
	return err
}

// describeEngine asks the engine's /describe, with the bearer token of
// $POLYSTREAMS_TOKEN when set.
func describeEngine(engine, appID, format, caFile string) (string, error) {
	q := url.Values{"format": {format}}
	if appID != "" {
		q.Set("application.id", appID)
	}
	u := strings.TrimSuffix(engine, "/") + "/describe?" + q.Encode()
	cl := &http.Client{Timeout: 30 * time.Second}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return "", fmt.Errorf("describe: --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return "", fmt.Errorf("describe: --ca-file %s holds no PEM certificate", caFile)
		}
		cl.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("describe: the engine at %s: %w", engine, err)
	}
	if token := os.Getenv("POLYSTREAMS_TOKEN"); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return "", fmt.Errorf("describe: the engine at %s: %w", engine, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("describe: the engine at %s: %w", engine, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the engine at %s answered %s: %s", engine, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
