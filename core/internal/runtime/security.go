package runtime

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// explainAuth adds the session's broker security settings to a broker error
// that they may have caused: a broker refusing SASL credentials answers
// SASL_AUTHENTICATION_FAILED (Apache Kafka) or just closes the connection
// (kfake, and a TLS listener spoken to in the clear), which franz-go
// reports as a bare EOF. It names the protocol, mechanism and user, never
// the password.
func (c *Config) explainAuth(err error) error {
	if err == nil || (c.SASLMechanism == "" && c.SSLCALocation == "" && c.SecurityProtocol != "SSL") {
		return err
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) &&
		!errors.Is(err, kerr.SaslAuthenticationFailed) && !errors.Is(err, kerr.UnsupportedSaslMechanism) && !errors.Is(err, kerr.IllegalSaslState) {
		return err
	}
	how := "security.protocol=" + c.SecurityProtocol
	if c.SASLMechanism != "" {
		how += fmt.Sprintf(", sasl.mechanism=%s, sasl.username=%q and its sasl.password", c.SASLMechanism, c.SASLUsername)
	}
	return fmt.Errorf("%w (the broker refused or closed the connection: SASL authentication or TLS failed; check %s)", err, how)
}
