package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The command line wins, then $POLYSTREAMS_<NAME>, then the config file,
// then the default; bad names and values say where they came from.
func TestSettingsFromEnvironmentAndFile(t *testing.T) {
	newFlags := func() (*flag.FlagSet, *string, *string, *time.Duration, *bool) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		listen := fs.String("listen", "127.0.0.1:8086", "")
		stateDir := fs.String("state-dir", "", "")
		timeout := fs.Duration("session-timeout", time.Minute, "")
		metrics := fs.Bool("metrics", true, "")
		fs.String("config", "", "")
		return fs, listen, stateDir, timeout, metrics
	}
	file := filepath.Join(t.TempDir(), "polystreams.conf")
	if err := os.WriteFile(file, []byte("# the service\nlisten = 0.0.0.0:9000\nstate-dir = \"/var/lib/polystreams\"\n\nsession-timeout=2m\nmetrics = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"POLYSTREAMS_STATE_DIR": "/srv/state"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fs, listen, stateDir, timeout, metrics := newFlags()
	if err := fs.Parse([]string{"--listen", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := settings(fs, file, lookup); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:1" || *stateDir != "/srv/state" || *timeout != 2*time.Minute || *metrics {
		t.Errorf("listen %s, state-dir %s, session-timeout %v, metrics %v", *listen, *stateDir, *timeout, *metrics)
	}
	for _, tt := range []struct{ file, env, want string }{
		{"lisen = x\n", "", `:1: "lisen" is no setting of 'polystreams serve'`},
		{"session-timeout = soon\n", "", ":1: session-timeout: "},
		{"just words\n", "", ":1: want name = value"},
		{"", "nope", "POLYSTREAMS_METRICS: "},
	} {
		if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
			t.Fatal(err)
		}
		env = map[string]string{}
		if tt.env != "" {
			env["POLYSTREAMS_METRICS"] = tt.env
		}
		fs, _, _, _, _ := newFlags()
		_ = fs.Parse(nil)
		if err := settings(fs, file, lookup); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("file %q env %q: %v, want it to say %q", tt.file, tt.env, err, tt.want)
		}
	}
}
