package engine

import (
	"testing"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// unstartedApp is an App for topo that is never started: kv parsed under
// application.id appID with an unreachable broker, adjusted by tune (when
// not nil), host serving topo's host functions (nil: it has none), its
// state open in a temporary directory until tb ends.
func unstartedApp(tb testing.TB, appID string, kv map[string]string, topo *topology.Topology, host Host, tune func(*config.App)) *App {
	tb.Helper()
	cfg, _, err := config.Parse(appID, kv, "127.0.0.1:1")
	if err != nil {
		tb.Fatal(err)
	}
	if tune != nil {
		tune(&cfg)
	}
	a, err := New(cfg, topo, host)
	if err != nil {
		tb.Fatal(err)
	}
	if a.db, err = state.Open(tb.TempDir()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.db.Close() })
	return a
}

// openStores gives task t its plan's stores, on partition 0 of db and
// without changelogs.
func openStores(t *task, db *state.DB) {
	for _, st := range t.plan.stores {
		t.stores[st.Name] = &storeTx{store: st, Tx: state.NewTx(db.Partition(st.Name, 0), false), keys: codecFor(st)}
	}
}
