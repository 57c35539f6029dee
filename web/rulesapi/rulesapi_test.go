package rulesapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/web/httpauth"
	"github.com/llmfleet/analyzer/web/rulesapi"
)

func newManager(t *testing.T, dir string) *rules.Manager {
	t.Helper()
	m, err := rules.NewManager(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func post(h http.Handler, remote, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, rulesapi.ReloadPath, nil)
	req.RemoteAddr = remote
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestReloadAccess: with a push token, POST /-/reload needs it; without
// one, only loopback clients may reload.
func TestReloadAccess(t *testing.T) {
	withToken := rulesapi.Reload(newManager(t, ""), "tok")
	open := rulesapi.Reload(newManager(t, ""), "")
	for _, tc := range []struct {
		name   string
		h      http.Handler
		remote string
		auth   string
		want   int
	}{
		{"token", withToken, "192.0.2.7:5000", "Bearer tok", 200},
		{"token, any case", withToken, "192.0.2.7:5000", "bearer tok", 200},
		{"wrong token", withToken, "127.0.0.1:5000", "Bearer nope", 401},
		{"no token sent", withToken, "127.0.0.1:5000", "", 401},
		{"loopback v4", open, "127.0.0.1:5000", "", 200},
		{"loopback v6", open, "[::1]:5000", "", 200},
		{"remote", open, "192.0.2.7:5000", "", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := post(tc.h, tc.remote, tc.auth)
			if w.Code != tc.want {
				t.Fatalf("%d, want %d (%s)", w.Code, tc.want, w.Body.String())
			}
			if tc.want == 401 {
				if got := w.Header().Get("WWW-Authenticate"); got != `Bearer realm="analyzer"` {
					t.Errorf("WWW-Authenticate %q", got)
				}
				if got := strings.TrimSpace(w.Body.String()); got != httpauth.UnauthorizedBody {
					t.Errorf("401 body %q, want %q", got, httpauth.UnauthorizedBody)
				}
			}
			if tc.want == 200 {
				var st rules.Status
				if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || !st.LastReload.OK || st.Source != "builtin" || st.Rules == 0 {
					t.Errorf("status %+v (%v)", st, err)
				}
			}
		})
	}
}

// TestReloadMissingDir: a rule directory that cannot be read at all is a
// 500 and keeps the old set; GET /-/rules reports the failure.
func TestReloadMissingDir(t *testing.T) {
	dir := t.TempDir()
	fixturetest.CopyBuiltinRules(t, dir)
	m := newManager(t, dir)
	before := m.Current()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	w := post(rulesapi.Reload(m, ""), "127.0.0.1:1", "")
	if w.Code != 500 || !strings.Contains(w.Body.String(), filepath.Base(dir)) || m.Current() != before {
		t.Errorf("missing directory: %d %s", w.Code, w.Body.String())
	}
	rec := httptest.NewRecorder()
	rulesapi.Status(m).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, rulesapi.RulesPath, nil))
	var st rules.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || st.LastReload.OK || st.Source != dir || st.Rules != len(before.Rules()) {
		t.Errorf("GET %s after the failure: %d %+v", rulesapi.RulesPath, rec.Code, st)
	}
}
