package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// security is how the engine's listener is protected: a bearer token every
// request must carry, and TLS. Both are optional on a loopback address; one
// of them is required anywhere else.
type security struct {
	token    string // from $POLYSTREAMS_TOKEN or --token-file; never logged
	certFile string // --tls-cert
	keyFile  string // --tls-key
	tls      *tls.Config
}

// loadSecurity reads the token (the file wins over the environment) and
// the TLS key pair. The token never comes from a flag's value, so that it
// does not show in ps.
func loadSecurity(tokenFile, certFile, keyFile string) (*security, error) {
	s := &security{token: strings.TrimSpace(os.Getenv("POLYSTREAMS_TOKEN")), certFile: certFile, keyFile: keyFile}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if s.token = strings.TrimSpace(string(b)); s.token == "" {
			return nil, fmt.Errorf("--token-file %s is empty", tokenFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

// listen binds addr. An address that is not loopback (0.0.0.0, a LAN or
// public address, a name resolving to one) is refused unless a token or TLS
// protects it: the engine runs the user's topology with the user's broker
// credentials, so an open port on a network is not a default.
func (s *security) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && s.token == "" && s.tls == nil {
		ln.Close()
		return nil, fmt.Errorf("--listen %s is not a loopback address: set a token (POLYSTREAMS_TOKEN or --token-file) or TLS (--tls-cert and --tls-key), or bind 127.0.0.1", addr)
	}
	return ln, nil
}

// scheme is the URL scheme clients use.
func (s *security) scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// serve serves h on ln: HTTP/1.1 and h2c in the clear, HTTP/1.1 and HTTP/2
// (ALPN) over TLS.
func (s *security) serve(hs *http.Server, ln net.Listener) error {
	var p http.Protocols
	p.SetHTTP1(true)
	if s.tls == nil {
		p.SetUnencryptedHTTP2(true)
		hs.Protocols = &p
		return hs.Serve(ln)
	}
	p.SetHTTP2(true)
	hs.Protocols = &p
	hs.TLSConfig = s.tls
	return hs.ServeTLS(ln, "", "")
}
