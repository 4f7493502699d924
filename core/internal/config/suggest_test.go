package config

import (
	"strings"
	"testing"
)

// Every key of configKeys is one Parse knows (a value it may refuse,
// but never as an unknown key).
func TestConfigKeysAreKnown(t *testing.T) {
	for _, k := range configKeys {
		_, _, err := Parse("app", map[string]string{k: "x"}, "127.0.0.1:9092")
		if err != nil && strings.Contains(err.Error(), "is not known") {
			t.Errorf("configKeys lists %q, which Parse does not know: %v", k, err)
		}
	}
}

// An unknown key names the nearest known one when it is a likely typo, and
// none when nothing is close.
func TestUnknownConfigKeySuggests(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"comit.interval.ms", `config key "comit.interval.ms" is not known (did you mean commit.interval.ms?)`},
		{"commit.interval", `config key "commit.interval" is not known (did you mean commit.interval.ms?)`},
		{"num.standby.replica", `(did you mean num.standby.replicas?)`},
		{"sasl.passwords", `config key "sasl.passwords" is not known (did you mean sasl.password?) (its value is hidden)`},
		{"polystreams.broker.wait", `(did you mean polystreams.broker.wait.ms?)`},
	} {
		_, _, err := Parse("app", map[string]string{tc.key: "1"}, "127.0.0.1:9092")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.key, err, tc.want)
		}
	}
	_, _, err := Parse("app", map[string]string{"buffer.memory": "1"}, "127.0.0.1:9092")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("buffer.memory: %v, want unknown with no suggestion", err)
	}
}

// polystreams.broker.wait.ms: 60 s unless set, in the effective config.
func TestBrokerWaitConfig(t *testing.T) {
	c, eff, err := Parse("app", nil, "127.0.0.1:9092")
	if err != nil || c.BrokerWait != DefaultBrokerWait || eff["polystreams.broker.wait.ms"] != "60000" {
		t.Errorf("default: %v, %v, %q", err, c.BrokerWait, eff["polystreams.broker.wait.ms"])
	}
	c, _, err = Parse("app", map[string]string{"polystreams.broker.wait.ms": "2500"}, "127.0.0.1:9092")
	if err != nil || c.BrokerWait.Milliseconds() != 2500 {
		t.Errorf("2500: %v, %v", err, c.BrokerWait)
	}
	if _, _, err = Parse("app", map[string]string{"polystreams.broker.wait.ms": "soon"}, "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), "polystreams.broker.wait.ms") {
		t.Errorf("soon: %v, want the key named", err)
	}
}
