package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
)

// registerRunbooks adds the verdict runbooks, the alerts' runbook_url:
//
//	GET /verdicts           every verdict of the spec, what it means and what to try
//	GET /verdicts/VERDICT   one verdict, with a link to its attempts; 404 for no verdict of the spec
func (s *server) registerRunbooks(r *gin.Engine) {
	r.GET("/verdicts", func(c *gin.Context) {
		s.render(c, http.StatusOK, "runbook", pageData{Title: "Verdicts", Runbooks: domain.Runbooks})
	})
	r.GET("/verdicts/:verdict", func(c *gin.Context) {
		rb, ok := domain.RunbookOf(domain.Verdict(c.Param("verdict")))
		if !ok {
			s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Not found", Message: "No verdict of the spec is named " + c.Param("verdict") + "."})
			return
		}
		s.render(c, http.StatusOK, "runbook", pageData{Title: "Verdict " + string(rb.Verdict), Runbooks: []domain.Runbook{rb}})
	})
}
