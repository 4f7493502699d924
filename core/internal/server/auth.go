package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// DefaultMaxRequestBytes bounds one request message (after decompression)
// unless Options.MaxRequestBytes says otherwise: 64 MiB, well above a
// bundle answer at the default polystreams.bundle.max.bytes (1 MiB) even
// when a flat_map multiplies it.
const DefaultMaxRequestBytes = 64 << 20

// RequireToken wraps next (the whole engine: the protocol, /metrics,
// /describe and /ui) so that every request must carry the bearer token:
// "Authorization: Bearer <token>", or for browsers on /ui HTTP Basic with the
// token as the password (any user name). A request without it, or with
// another, is answered 401 with a Connect error of code unauthenticated,
// which Connect, gRPC and gRPC-Web clients all read as
// connect.CodeUnauthenticated. The comparison takes the same time whatever
// the token sent (both sides are hashed, then compared with crypto/subtle),
// and no answer or log line contains a token. An empty token returns next
// unchanged.
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, how := presented(r)
		sum := sha256.Sum256([]byte(got))
		if how != "" && subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		msg := "polystreams: this engine requires a token: send \"Authorization: Bearer <token>\" (the SDKs' token option or POLYSTREAMS_TOKEN)"
		if how != "" {
			msg = "polystreams: the " + how + " token is not this engine's token"
		}
		h := w.Header()
		h.Add("WWW-Authenticate", `Bearer realm="polystreams"`)
		h.Add("WWW-Authenticate", `Basic realm="polystreams"`)
		h.Set("Content-Type", "application/json")
		// gRPC clients read the status from trailers-only responses;
		// Connect ones from the body. Both map HTTP 401 to unauthenticated.
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			h.Set("Content-Type", r.Header.Get("Content-Type"))
			h.Set("Grpc-Status", "16")
			h.Set("Grpc-Message", msg)
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		body, _ := json.Marshal(map[string]string{"code": "unauthenticated", "message": msg})
		w.Write(body)
	})
}

// presented returns the token a request carries and how it carried it
// ("bearer" or "basic"); how is "" when it carries none.
func presented(r *http.Request) (token, how string) {
	auth := r.Header.Get("Authorization")
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok {
		return "", ""
	}
	switch strings.ToLower(scheme) {
	case "bearer":
		return strings.TrimSpace(rest), "bearer"
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
		if err != nil {
			return "", "basic"
		}
		_, pass, _ := strings.Cut(string(raw), ":")
		return pass, "basic"
	}
	return "", ""
}
