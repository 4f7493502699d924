package config

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/testcert"
)

// Broker TLS settings are read at OpenSession: a half client pair or a file
// that is not there is refused naming the keys and files.
func TestBrokerTLSConfig(t *testing.T) {
	cert := testcert.New(t)
	c, eff, err := Parse("app", map[string]string{"security.protocol": "SSL", "ssl.ca.location": cert.CertFile,
		"ssl.certificate.location": cert.CertFile, "ssl.key.location": cert.KeyFile}, "127.0.0.1:9092")
	if err != nil || c.ClientCert == nil || c.CARoots == nil || eff["ssl.key.location"] != cert.KeyFile {
		t.Fatalf("a full TLS config: %v %+v", err, eff)
	}
	for _, bad := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"ssl.certificate.location": cert.CertFile}, "ssl.certificate.location and ssl.key.location go together"},
		{map[string]string{"ssl.certificate.location": cert.CertFile, "ssl.key.location": "/nonexistent.pem"}, "ssl.key.location: cannot open the file: no such file or directory"},
		{map[string]string{"ssl.ca.location": "/nonexistent-ca.pem"}, "ssl.ca.location: cannot open the file"},
		{map[string]string{"ssl.ca.location": cert.KeyFile}, "holds no PEM certificate"},
	} {
		if _, _, err := Parse("app", bad.kv, "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%v): %v, want %q", bad.kv, err, bad.want)
		} else if strings.Contains(err.Error(), "nonexistent") || strings.Contains(err.Error(), cert.KeyFile) {
			t.Errorf("Parse(%v): %v echoes a config value", bad.kv, err)
		}
	}
}

// A connection the broker drops is explained with the security settings
// (never the password) only when there are some.
func TestExplainAuth(t *testing.T) {
	eof := fmt.Errorf("engine: reading metadata: %w", io.EOF)
	plain := &App{SecurityProtocol: "PLAINTEXT"}
	if got := plain.ExplainAuth(eof); got != eof {
		t.Errorf("PLAINTEXT: %v", got)
	}
	sasl := &App{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", SASLUsername: "bob", SASLPassword: "pw-123"}
	got := sasl.ExplainAuth(eof).Error()
	if !strings.Contains(got, `check security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, sasl.username="bob" and its sasl.password`) || strings.Contains(got, "pw-123") {
		t.Errorf("SASL: %s", got)
	}
	if other := fmt.Errorf("unknown topic"); sasl.ExplainAuth(other) != other {
		t.Errorf("an unrelated error was explained")
	}
}
