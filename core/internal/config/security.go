package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ExplainAuth adds the session's broker security settings to a broker error
// that they may have caused: a broker refusing SASL credentials answers
// SASL_AUTHENTICATION_FAILED (Apache Kafka) or just closes the connection
// (kfake, and a TLS listener spoken to in the clear), which franz-go
// reports as a bare EOF. It names the protocol, mechanism and user, never
// the password.
func (c *App) ExplainAuth(err error) error {
	if err == nil || (c.SASLMechanism == "" && c.SSLCALocation == "" && c.SecurityProtocol != "SSL") {
		return err
	}
	// A TLS alert from the broker: Apache Kafka (Java) refuses a missing
	// or untrusted client certificate with bad_certificate, Go servers
	// (kfake) with certificate_required.
	// crypto/tls reports a received alert as a net.OpError "remote error".
	var op *net.OpError
	isAlert := errors.As(err, &op) && op.Op == "remote error"
	if !isAlert && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) &&
		!errors.Is(err, kerr.SaslAuthenticationFailed) && !errors.Is(err, kerr.UnsupportedSaslMechanism) && !errors.Is(err, kerr.IllegalSaslState) {
		return err
	}
	how := "security.protocol=" + c.SecurityProtocol
	if c.SASLMechanism != "" {
		how += fmt.Sprintf(", sasl.mechanism=%s, sasl.username=%q and its sasl.password", c.SASLMechanism, c.SASLUsername)
	}
	if isAlert {
		how += ", ssl.ca.location, and ssl.certificate.location with ssl.key.location where the broker requires a client certificate"
	}
	return fmt.Errorf("%w (the broker refused or closed the connection: SASL authentication or TLS failed; check %s)", err, how)
}
