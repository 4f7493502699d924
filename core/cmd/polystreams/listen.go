package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// security is how the engine's listener is protected: a bearer token every
// request must carry, TLS, and client certificates verified against
// --tls-client-ca (mutual TLS). All are optional on a loopback address;
// anywhere else the engine needs a way to tell who calls: a token, or
// verified client certificates. TLS alone encrypts, but lets anyone in.
type security struct {
	token    string // from $POLYSTREAMS_TOKEN or --token-file; never logged
	certFile string // --tls-cert
	keyFile  string // --tls-key
	clientCA string // --tls-client-ca
	tls      *tls.Config
	// peer is how this engine reaches other instances' engines over https
	// when it forwards an interactive query: the roots their certificates
	// must chain to (--peer-ca; nil: the system's) and the client
	// certificate it presents to those that verify one (--peer-cert, or
	// this engine's own --tls-cert). Nil when the engine serves no TLS.
	peer *tls.Config
}

// loadSecurity reads the token (the file wins over the environment) and
// the TLS key pair. The token never comes from a flag's value, so that it
// does not show in ps.
func loadSecurity(tokenFile, certFile, keyFile, clientCA string) (*security, error) {
	s := &security{token: strings.TrimSpace(os.Getenv("POLYSTREAMS_TOKEN")), certFile: certFile, keyFile: keyFile, clientCA: clientCA}
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
	if clientCA != "" {
		if s.tls == nil {
			return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key: client certificates are verified over TLS")
		}
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s holds no PEM certificate", clientCA)
		}
		s.tls.ClientCAs, s.tls.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return s, nil
}

// loadPeerTLS sets how this engine reaches the other instances' engines
// (their application.server): over https when it serves TLS itself, all
// instances of an application being set up alike. caFile (--peer-ca) holds
// the CA certificates theirs chain to (default: the system's roots);
// certFile/keyFile (--peer-cert, --peer-key) the client certificate it
// presents where they verify one (--tls-client-ca), by default its own
// --tls-cert.
func (s *security) loadPeerTLS(caFile, certFile, keyFile string) error {
	if s.tls == nil {
		for flag, v := range map[string]string{"--peer-ca": caFile, "--peer-cert": certFile, "--peer-key": keyFile} {
			if v != "" {
				return fmt.Errorf("%s needs --tls-cert and --tls-key: engines reach each other over https only when they serve TLS", flag)
			}
		}
		return nil
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("--peer-cert and --peer-key go together: give both or neither")
	}
	s.peer = &tls.Config{Certificates: s.tls.Certificates, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("--peer-cert %s / --peer-key %s: %w", certFile, keyFile, err)
		}
		s.peer.Certificates = []tls.Certificate{pair}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("--peer-ca: %w", err)
		}
		s.peer.RootCAs = x509.NewCertPool()
		if !s.peer.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--peer-ca %s holds no PEM certificate", caFile)
		}
	}
	return nil
}

// authenticates says whether the engine can tell its callers apart from
// anyone: a token, or client certificates it verifies.
func (s *security) authenticates() bool {
	return s.token != "" || s.clientCA != ""
}

// listen binds addr. An address that is not loopback (0.0.0.0, a LAN or
// public address, a name resolving to one) is refused unless callers
// authenticate (a token, or client certificates verified against
// --tls-client-ca): the engine runs the user's topology with the user's
// broker credentials, so an open port on a network is not a default. TLS
// without either is refused too: it hides the traffic but lets anyone who
// reaches the port open sessions.
func (s *security) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !s.authenticates() {
		ln.Close()
		if s.tls != nil {
			return nil, fmt.Errorf("--listen %s is not a loopback address, and TLS alone lets anyone who reaches it in: set a token (POLYSTREAMS_TOKEN or --token-file) or verify client certificates (--tls-client-ca), or bind 127.0.0.1", addr)
		}
		return nil, fmt.Errorf("--listen %s is not a loopback address: set a token (POLYSTREAMS_TOKEN or --token-file) or verify client certificates (--tls-cert, --tls-key and --tls-client-ca), or bind 127.0.0.1", addr)
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
