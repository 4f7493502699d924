package config

import (
	"fmt"
	"testing"
)

// max.task.idle.ms takes -1, 0 and positive milliseconds; anything else
// is refused naming the key, and a typo gets a hint.
func TestMaxTaskIdleConfig(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "-1": -1, "0": 0, "250": 250} {
		kv := map[string]string{}
		if v != "" {
			kv["max.task.idle.ms"] = v
		}
		c, eff, err := Parse("x", kv, "127.0.0.1:1")
		if err != nil || c.MaxTaskIdleMs != want || eff["max.task.idle.ms"] != fmt.Sprint(want) {
			t.Errorf("max.task.idle.ms %q: %d (effective %q), %v; want %d", v, c.MaxTaskIdleMs, eff["max.task.idle.ms"], err, want)
		}
	}
	for _, v := range []string{"-2", "soon", "1.5"} {
		if _, _, err := Parse("x", map[string]string{"max.task.idle.ms": v}, "127.0.0.1:1"); err == nil || err.Error() != "max.task.idle.ms: want -1 (never wait), 0 (wait only for records already on the broker; the default) or a positive number of milliseconds" {
			t.Errorf("max.task.idle.ms %q: %v", v, err)
		}
	}
	if _, _, err := Parse("x", map[string]string{"max.task.idle": "0"}, "127.0.0.1:1"); err == nil || err.Error() != `config key "max.task.idle" is not known (did you mean max.task.idle.ms?)` {
		t.Errorf("typo: %v", err)
	}
}

// application.server takes host:port (any host, a port 1..65535) and shows
// in the effective configuration; anything else is refused naming the key
// and the value.
func TestApplicationServerConfig(t *testing.T) {
	for _, v := range []string{"10.0.0.5:8086", "engine-2.internal:443", "[::1]:9000"} {
		c, eff, err := Parse("x", map[string]string{"application.server": v}, "127.0.0.1:1")
		if err != nil || c.ApplicationServer != v || eff["application.server"] != v {
			t.Errorf("application.server %q: %q (effective %q), %v", v, c.ApplicationServer, eff["application.server"], err)
		}
	}
	if c, eff, err := Parse("x", nil, "127.0.0.1:1"); err != nil || c.ApplicationServer != "" || eff["application.server"] != "" {
		t.Errorf("no application.server: %q %q %v", c.ApplicationServer, eff["application.server"], err)
	}
	for _, v := range []string{"10.0.0.5", ":8086", "h:0", "h:70000", "h:port", "http://h:1"} {
		_, _, err := Parse("x", map[string]string{"application.server": v}, "127.0.0.1:1")
		if want := fmt.Sprintf("application.server %q: want host:port, as the other instances reach this one's engine", v); err == nil || err.Error() != want {
			t.Errorf("application.server %q: %v", v, err)
		}
	}
}
