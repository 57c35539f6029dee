package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSecurityHeaders: every answer (pages, API, errors) carries the
// security headers; the CSP allows the UI's own script file and no inline
// script.
func TestSecurityHeaders(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/", "/api/v1/attempts", "/nowhere", "/healthz", "/static/style.css"} {
		t.Run(path, func(t *testing.T) {
			_, _, h := get(t, srv, path)
			csp := h.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
				t.Errorf("%s: CSP %q", path, csp)
			}
			for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %s = %q, want %q", path, k, got, want)
				}
			}
		})
	}
}

// TestHostAllowList: with an allow-list, another Host name (a rebinding
// page's) is refused; the listed names are served.
func TestHostAllowList(t *testing.T) {
	srv := serveAttempts(t, nil, Options{AllowedHosts: LoopbackHosts})
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost": 200, "[::1]:8080": 200, "evil.example:8080": 421, "attacker.test": 421} {
		t.Run(host, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
			}
		})
	}
}

// TestCrossOriginWritesRefused: a state-changing request a browser sends
// for another origin (another port or loopback address counts) is refused
// before the handler runs; reads and non-browser clients are not affected.
func TestCrossOriginWritesRefused(t *testing.T) {
	calls := 0
	hit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; w.WriteHeader(http.StatusNoContent) })
	srv := serveAttempts(t, nil, Options{Routes: []Route{{Method: http.MethodPost, Path: "/-/reload", Handler: hit}}})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"curl, no browser headers", nil, 204},
		{"same origin", map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, 204},
		{"another loopback address", map[string]string{"Origin": "http://127.0.0.2:9999"}, 403},
		{"another port", map[string]string{"Origin": "http://" + strings.Split(host, ":")[0] + ":1"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site fetch", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := calls
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/-/reload", strings.NewReader("{}"))
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || (c.want == 403) != (calls == before) {
				t.Errorf("%s: %d (handler ran %d), want %d", c.name, resp.StatusCode, calls-before, c.want)
			}
		})
	}
	if code, _, _ := get(t, srv, "/"); code != 200 {
		t.Errorf("a read: %d", code)
	}
}
