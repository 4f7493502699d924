package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// versionedTx is a versioned store partition of history retention h over a
// fresh Pebble, as a task's storeTx holds it.
func versionedTx(t *testing.T, h int64) *storeTx {
	t.Helper()
	db, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &topology.Store{Name: "prices", Kind: topology.StoreVersioned, Versioned: &topology.Versioned{HistoryRetention: h}, ChangelogTopic: "prices-changelog"}
	return &storeTx{store: st, Tx: state.NewTx(db.Partition(st.Name, 0), false), changelog: "app-prices-changelog", keys: codecFor(st)}
}

// flush writes the batch to Pebble as task.finish does, and answers its
// changelog records in the order they are produced.
func flush(t *testing.T, tx *storeTx) string {
	t.Helper()
	ws := state.Writes(tx.Dirty)
	sortVersions(ws)
	var logged []string
	for _, w := range ws {
		if r := tx.changelogRecord(0, w); r != nil {
			v := "null"
			if r.Value != nil {
				v = string(r.Value)
			}
			logged = append(logged, fmt.Sprintf("%s=%s@%d", r.Key, v, r.Timestamp.UnixMilli()))
		}
	}
	if err := tx.Part.Apply(ws); err != nil {
		t.Fatal(err)
	}
	clear(tx.Dirty)
	return strings.Join(logged, " ")
}

// put is putVersion with its outcome as text: "latest", "past" (put, not
// the latest) or "dropped", and the old (latest) value.
func put(t *testing.T, tx *storeTx, key string, value *string, ts int64) string {
	t.Helper()
	var v []byte
	if value != nil {
		v = []byte(*value)
	}
	p, err := tx.putVersion(false, []byte(key), v, ts)
	if err != nil {
		t.Fatal(err)
	}
	what := "dropped"
	switch {
	case p.Put && p.Latest:
		what = "latest"
	case p.Put:
		what = "past"
	}
	return fmt.Sprintf("%s old=%s", what, p.Old)
}

func sp(s string) *string { return &s }

// putVersion: the put return codes KTableSource acts on, the old value it
// forwards, the changelog records (plain key, value or null, the version's
// time, in time order; the stream-time row never logged), and versions no
// read can find any more leaving Pebble.
func TestPutVersion(t *testing.T) {
	tx := versionedTx(t, 100)
	steps := []struct {
		key   string
		value *string
		ts    int64
		want  string
	}{
		{"a", sp("1"), 10, "latest old="},
		{"a", sp("3"), 30, "latest old=1"},
		{"a", sp("2"), 20, "past old=3"},
		{"a", nil, 40, "latest old=3"},
		{"a", sp("2b"), 20, "past old="}, // replaces the version of 20
	}
	for _, s := range steps {
		if got := put(t, tx, s.key, s.value, s.ts); got != s.want {
			t.Errorf("put %s@%d: %s, want %s", s.key, s.ts, got, s.want)
		}
	}
	if got, want := flush(t, tx), "a=1@10 a=2b@20 a=3@30 a=null@40"; got != want {
		t.Errorf("changelog: %s, want %s", got, want)
	}
	// Stream time 235: the cut-off is 135; a put before it is dropped.
	if got := put(t, tx, "b", sp("x"), 235); got != "latest old=" {
		t.Errorf("b@235: %s", got)
	}
	if got := put(t, tx, "a", sp("old"), 134); got != "dropped old=" {
		t.Errorf("a@134, older than the history retention: %s, want dropped", got)
	}
	flush(t, tx)
	// The next put of a drops the versions before the one valid at the
	// cut-off (the tombstone of 40) from Pebble.
	if got := put(t, tx, "a", sp("5"), 150); got != "latest old=" {
		t.Errorf("a@150: %s", got)
	}
	flush(t, tx)
	vs, err := tx.Part.Versions([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, v := range vs {
		left = append(left, fmt.Sprintf("%d", v.ValidFrom))
	}
	if got := strings.Join(left, " "); got != "40 150" {
		t.Errorf("a's versions in Pebble after the expiry: %s, want 40 150", got)
	}
	for _, c := range []struct {
		asOf int64
		want string
	}{{135, ""}, {149, ""}, {150, "5"}, {134, ""}} {
		v, ok, err := tx.getVersion([]byte("a"), false, c.asOf)
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]string{true: string(v.Value)}[ok]; got != c.want {
			t.Errorf("a as of %d: %q, want %q", c.asOf, got, c.want)
		}
	}
	if st, err := tx.StreamTime(); err != nil || st != 235 {
		t.Errorf("stream time %d (%v), want 235", st, err)
	}
}
