package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Route is an extra handler that New mounts beside the UI, such as the
// Prometheus endpoint (GET /metrics) or the Loki push endpoint (POST
// /loki/api/v1/push). Handler sees the request as net/http serves it.
type Route struct {
	Method  string // http.MethodGet, http.MethodPost, ...
	Path    string // gin path syntax
	Handler http.Handler
}

func mountRoutes(r *gin.Engine, routes []Route) {
	for _, rt := range routes {
		r.Handle(rt.Method, rt.Path, gin.WrapH(rt.Handler))
	}
}
