package web

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/web/httpauth"
)

// Suggester writes the rule for an unknown failure from its own lines
// (*suggest.Suggester has it): Suggest proposes (and, with req.Save,
// saves and reloads) it; CanSave reports whether a rule directory is in
// use to save into.
type Suggester interface {
	Suggest(ctx context.Context, id string, req domain.RuleSuggestionRequest) (*domain.RuleSuggestion, error)
	CanSave() bool
}

// suggestData is the rule-writing page's data.
type suggestData struct {
	Group    string
	Text     string // the group's fingerprint text
	Verdicts []string
	Req      domain.RuleSuggestionRequest
	Result   *domain.RuleSuggestion
	CanSave  bool
	// SaveRefused says why this request may not save (not from loopback).
	SaveRefused string
}

// registerSuggest adds the form that writes a rule for an unknown failure
// group, when Options.Suggester is set:
//
//	GET  /unknown/:group/rule              the form: the verdict, optionally rule id and title
//	GET  /unknown/:group/rule?verdict=V    the proposed entry, its tests, the stored failures it names
//	POST /unknown/:group/rule              saves it into the rule directory and reloads the rules
//	                                       (from loopback only: a form cannot send a bearer token)
//
// A group that is no unknown failure group is a 404; a verdict that is no
// failure verdict of the spec, or a rule that cannot be made, a 400 on the
// page naming why.
func (s *server) registerSuggest(r *gin.Engine) {
	if s.opts.Suggester == nil {
		return
	}
	r.GET("/unknown/:group/rule", func(c *gin.Context) { s.suggestPage(c, false) })
	r.POST("/unknown/:group/rule", func(c *gin.Context) { s.suggestPage(c, true) })
}

func (s *server) suggestPage(c *gin.Context, save bool) {
	ctx := c.Request.Context()
	id := c.Param("group")
	groups, err := s.db.FailureGroups(ctx, domain.AttemptFilter{Group: id, Verdict: string(domain.VerdictUnknownFailure)})
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	if len(groups) == 0 || groups[0].Verdict != domain.VerdictUnknownFailure {
		s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Not found", Message: "No unknown failure group has the id " + id + "."})
		return
	}
	sg := s.opts.Suggester
	d := &suggestData{Group: id, CanSave: sg.CanSave(), Req: domain.RuleSuggestionRequest{
		Verdict: domain.Verdict(c.Request.FormValue("verdict")), RuleID: c.Request.FormValue("id"), Title: c.Request.FormValue("title")}}
	_, d.Text = splitFingerprint(groups[0].Fingerprint)
	for _, v := range domain.Verdicts {
		if v.IsFailure() && v != domain.VerdictUnknownFailure {
			d.Verdicts = append(d.Verdicts, string(v))
		}
	}
	if !httpauth.Loopback(c.Request.RemoteAddr) {
		d.SaveRefused = "Saving is allowed from this machine only; elsewhere, save with analyzer rules suggest --write DIR."
	}
	data := pageData{Title: "Write a rule for an unknown failure", Suggest: d}
	if d.Req.Verdict == "" {
		s.render(c, http.StatusOK, "suggest", data)
		return
	}
	if save && d.SaveRefused != "" {
		data.Error = d.SaveRefused
		s.render(c, http.StatusForbidden, "suggest", data)
		return
	}
	d.Req.Save = save
	d.Result, err = sg.Suggest(ctx, id, d.Req)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		data.Error = err.Error()
		s.render(c, http.StatusBadRequest, "suggest", data)
		return
	}
	s.render(c, http.StatusOK, "suggest", data)
}
