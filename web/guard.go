package web

import (
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// contentSecurityPolicy allows the UI's own stylesheet and script and the
// server-rendered SVG charts and nothing else: no inline script (so markup
// injected through a log line cannot run any), no framing, no plugins.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// guard is the middleware every request goes through: security headers on
// every answer, a Host allow-list against DNS rebinding (a hostile page's
// name resolving to the analyzer's address), and, for requests that change
// state (the push endpoint, /-/reload), the refusal of anything a browser
// sends on behalf of another origin. Clients that are not browsers (Alloy,
// Promtail, curl, Prometheus) send neither Origin nor Sec-Fetch-Site and
// are not affected. Another port or another loopback address is another
// origin.
func guard(allowedHosts []string) gin.HandlerFunc {
	allowed := map[string]bool{}
	for _, h := range allowedHosts {
		allowed[strings.ToLower(h)] = true
	}
	// The standard library's check (Go 1.25+): safe methods pass;
	// Sec-Fetch-Site must be same-origin or none, else, without it, Origin
	// must name the request's Host.
	cop := http.NewCrossOriginProtection()
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		r := c.Request
		if len(allowed) > 0 && !allowed[hostName(r.Host)] {
			c.AbortWithStatusJSON(http.StatusMisdirectedRequest, gin.H{"error": "host " + r.Host + " is not one this analyzer answers for (--allowed-hosts)"})
			return
		}
		if cop.Check(r) != nil {
			c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "cross-origin request refused"})
			return
		}
		c.Next()
	}
}

// hostName is the host part of a Host header, lower case, without port or
// brackets.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// LoopbackHosts are the names a loopback-only server answers for by
// default.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}
