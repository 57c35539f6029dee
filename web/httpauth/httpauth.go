// Package httpauth is the analyzer's one implementation of the HTTP access
// checks its endpoints share: the bearer token of the push endpoint and of
// POST /-/reload, and the loopback test of a client or listen address. It
// imports nothing of the analyzer, so every adapter serving HTTP may use it.
package httpauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// UnauthorizedBody is the body of every 401 answer.
const UnauthorizedBody = "missing or wrong bearer token"

// BearerOK reports whether r sends want as "Authorization: Bearer TOKEN"
// (the scheme in any case). The tokens are compared in constant time, as
// SHA-256 digests so that the length of want does not leak either.
func BearerOK(r *http.Request, want string) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(h[len(prefix):])))
	exp := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(got[:], exp[:]) == 1
}

// Unauthorized answers 401 with a WWW-Authenticate challenge for a bearer
// token and UnauthorizedBody as text.
func Unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="analyzer"`)
	http.Error(w, UnauthorizedBody, http.StatusUnauthorized)
}

// Loopback reports whether hostport (a listen address such as
// "localhost:8080" or a request's RemoteAddr such as "[::1]:5000"; the port
// is optional) names only the local machine: "localhost" or a loopback IP.
func Loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
