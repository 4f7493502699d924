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
