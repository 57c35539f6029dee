package httpauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBearerOK(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         bool
	}{
		{"exact", "Bearer s3cret", true},
		{"scheme in lower case", "bearer s3cret", true},
		{"scheme in upper case", "BEARER s3cret", true},
		{"trailing space", "Bearer s3cret ", true},
		{"wrong token", "Bearer s3cre", false},
		{"longer token", "Bearer s3cret2", false},
		{"basic scheme", "Basic s3cret", false},
		{"no header", "", false},
		{"scheme only", "Bearer ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			if got := BearerOK(r, "s3cret"); got != tc.want {
				t.Errorf("BearerOK(%q) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

func TestUnauthorized(t *testing.T) {
	w := httptest.NewRecorder()
	Unauthorized(w)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != `Bearer realm="analyzer"` || w.Body.String() != UnauthorizedBody+"\n" {
		t.Errorf("%d %q %q", w.Code, w.Header().Get("WWW-Authenticate"), w.Body.String())
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2:1", true},
		{"[::1]:5000", true},
		{"::1", true},
		{"[::1]", true},
		{"localhost:8080", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"192.0.2.7:5000", false},
		{"[2001:db8::1]:80", false},
		{"example.com:80", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := Loopback(tc.addr); got != tc.want {
				t.Errorf("Loopback(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}
