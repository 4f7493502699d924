package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Finding 10 (issue 21): a bootstrap.servers holding 'user:password@',
// given to serve by flag or by $POLYSTREAMS_BROKERS, is refused at start
// without repeating it: neither the error nor the (debug) log shows the
// password.
func TestBrokersHoldingCredentialsAreRefusedUnrepeated(t *testing.T) {
	const password = "planted-broker-pw"
	bin := engineBinary(t)
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"--brokers", []string{"--brokers", "alice:" + password + "@kafka:9092"}, nil},
		{"POLYSTREAMS_BROKERS", nil, []string{"POLYSTREAMS_BROKERS=SASL_PLAINTEXT://alice:" + password + "@kafka:9092"}},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir(), "--log-level", "debug"}, c.args...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "POLYSTREAMS_TOKEN="), c.env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: serve with credentials in the brokers: %v\n%s", c.name, err, out)
			continue
		}
		if !strings.Contains(string(out), "holds 'user:password@'") {
			t.Errorf("%s: the refusal does not say why:\n%s", c.name, out)
		}
		if strings.Contains(string(out), password) {
			t.Errorf("%s: the output repeats the password:\n%s", c.name, out)
		}
	}
}
