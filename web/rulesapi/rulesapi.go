// Package rulesapi serves the rule endpoints of serve: GET /-/rules (the
// rule set in use) and POST /-/reload (load the rule files again), over a
// rules.Manager. cmd/analyzer mounts them as web.Route values.
package rulesapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/web/httpauth"
)

// Paths of the rule endpoints.
const (
	ReloadPath = "/-/reload"
	RulesPath  = "/-/rules"
)

// Status serves GET /-/rules: m's rules.Status as JSON.
func Status(m *rules.Manager) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.Status())
	})
}

// Reload serves POST /-/reload: m.Update, then 200 with the new
// rules.Status, 400 when the rule files do not load (the body's
// last_reload.error lists file:line problems), 500 when they cannot be
// read at all. With a token set, a request without it as bearer token is
// answered 401 (httpauth.Unauthorized); without one, a request from a
// non-loopback client is answered 403.
func Reload(m *rules.Manager, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			if !httpauth.BearerOK(r, token) {
				httpauth.Unauthorized(w)
				return
			}
		} else if !httpauth.Loopback(r.RemoteAddr) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "reload is allowed from loopback only unless --push-token is set"})
			return
		}
		err := m.Update("POST " + ReloadPath)
		code := http.StatusOK
		var errs rules.Errors
		switch {
		case errors.As(err, &errs):
			code = http.StatusBadRequest
		case err != nil:
			code = http.StatusInternalServerError
		}
		writeJSON(w, code, m.Status())
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
