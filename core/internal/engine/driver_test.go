package engine_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/testdriver"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// startOnDriver starts topo on a new test driver: the driver's
// configuration with props added, parsed under application.id appID with
// a silent logger, adjusted by tune (when not nil), run by an engine whose
// host functions host serves (nil: topo has none). It does not wait for
// the driver to be ready. On success the caller stops the application and
// closes the driver; on failure nothing is left open.
func startOnDriver(ctx context.Context, appID string, props map[string]string, topo *topology.Topology, host engine.Host, tune func(*config.App)) (*testdriver.Driver, *engine.App, error) {
	td, kv, err := testdriver.New(props)
	if err != nil {
		return nil, nil, err
	}
	cfg, _, err := config.Parse(appID, kv, "")
	if err != nil {
		td.Close()
		return nil, nil, err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if tune != nil {
		tune(&cfg)
	}
	app, err := engine.New(cfg, topo, host)
	if err != nil {
		td.Close()
		return nil, nil, err
	}
	if err := td.Start(ctx, app); err != nil {
		td.Close()
		return nil, nil, err
	}
	return td, app, nil
}

// driven is startOnDriver for a test: it waits (at most 30 s, the bound
// of the context it returns) until the driver is ready, fails t on any
// error, and stops the application and closes the driver when t ends.
func driven(t *testing.T, appID string, props map[string]string, topo *topology.Topology, host engine.Host, tune func(*config.App)) (*testdriver.Driver, *engine.App, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	td, app, err := startOnDriver(ctx, appID, props, topo, host, tune)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(td.Close)
	t.Cleanup(func() { app.Stop(ctx) })
	if err := td.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return td, app, ctx
}
