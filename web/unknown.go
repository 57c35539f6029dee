package web

import (
	"bytes"
	"context"
	"html/template"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
)

// UnknownReader is what the unknown-failures pages need besides an
// AttemptReader (*store.DB has it).
type UnknownReader interface {
	UnknownGroups(ctx context.Context, f domain.AttemptFilter) ([]store.UnknownGroup, error)
}

// registerUnknown adds the unknown-failure routes:
//
//	GET /unknown             groups of unknown_failure attempts by fingerprint, with counts, first/last seen
//	                         and a link to each group's newest attempt; ?host, unit, engine, since, until
//	                         (RFC 3339) narrow the attempts counted, ?limit=N keeps N groups (default all)
//	GET /api/v1/unknown      {"groups": [unknownGroupJSON...]}, same parameters
//
// Both answer 501 when the AttemptReader is not also an UnknownReader.
func (s *server) registerUnknown(r *gin.Engine) {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/base.html"))
	s.pages["unknown"] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/unknown.html"))
	r.GET("/unknown", s.unknownPage)
	r.GET("/api/v1/unknown", s.apiUnknown)
}

// unknownGroupJSON is one group of GET /api/v1/unknown. Fingerprint is
// "hash masked-text"; Hash and Text are its two parts. Times are RFC 3339
// with the source offset, omitted when unknown.
type unknownGroupJSON struct {
	Fingerprint string   `json:"fingerprint"`
	Hash        string   `json:"hash,omitempty"`
	Text        string   `json:"text,omitempty"`
	Count       int      `json:"count"`
	FirstSeen   string   `json:"first_seen,omitempty"`
	LastSeen    string   `json:"last_seen,omitempty"`
	Newest      string   `json:"newest_attempt"`
	AttemptIDs  []string `json:"example_attempt_ids"`
	Hosts       []string `json:"hosts"`
	Units       []string `json:"units"`
}

// unknownRow is one group as the page shows it.
type unknownRow struct {
	store.UnknownGroup
	Hash, Text string
}

// unknownPageData is the page's template data; Title and AppTitle are what
// base.html needs.
type unknownPageData struct {
	Title, AppTitle string
	Rows            []unknownRow
	Total           int
	// Filter is the request's; hosts and units link to the page narrowed
	// to them.
	Filter domain.AttemptFilter
}

// splitFingerprint cuts "hash masked-text" in two; a fingerprint of
// another form is all text.
func splitFingerprint(fp string) (hash, text string) {
	h, rest, ok := strings.Cut(fp, " ")
	if !ok || len(h) != 12 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fp
	}
	return h, rest
}

// unknownGroups reads the groups the request's filter selects; it answers
// the request itself (and returns ok false) on a bad parameter or a failure.
func (s *server) unknownGroups(c *gin.Context, api bool) ([]store.UnknownGroup, domain.AttemptFilter, bool) {
	ur, ok := s.db.(UnknownReader)
	if !ok {
		if api {
			c.JSON(http.StatusNotImplemented, gin.H{"error": "this store does not group unknown failures"})
		} else {
			s.render(c, http.StatusNotImplemented, "notfound", pageData{Title: "Not available",
				Message: "This store does not group unknown failures."})
		}
		return nil, domain.AttemptFilter{}, false
	}
	f, err := queryFilter(c, 0)
	if err != nil {
		if api {
			c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		} else {
			s.render(c, http.StatusBadRequest, "notfound", pageData{Title: "Bad request", Message: err.Error() + "."})
		}
		return nil, f, false
	}
	gs, err := ur.UnknownGroups(c.Request.Context(), f)
	if err != nil {
		s.serverError(c, err, api)
		return nil, f, false
	}
	return gs, f, true
}

func (s *server) apiUnknown(c *gin.Context) {
	gs, _, ok := s.unknownGroups(c, true)
	if !ok {
		return
	}
	out := make([]unknownGroupJSON, 0, len(gs))
	for _, g := range gs {
		j := unknownGroupJSON{Fingerprint: g.Fingerprint, Count: g.Count, FirstSeen: formatTime(g.FirstSeen),
			LastSeen: formatTime(g.LastSeen), AttemptIDs: nonNil(g.AttemptIDs), Hosts: nonNil(g.Hosts), Units: nonNil(g.Units)}
		j.Hash, j.Text = splitFingerprint(g.Fingerprint)
		if len(g.AttemptIDs) > 0 {
			j.Newest = g.AttemptIDs[0]
		}
		out = append(out, j)
	}
	c.JSON(http.StatusOK, gin.H{"groups": out})
}

func (s *server) unknownPage(c *gin.Context) {
	gs, f, ok := s.unknownGroups(c, false)
	if !ok {
		return
	}
	data := unknownPageData{Title: "Unknown failures", AppTitle: s.opts.Title, Filter: f}
	for _, g := range gs {
		r := unknownRow{UnknownGroup: g}
		r.Hash, r.Text = splitFingerprint(g.Fingerprint)
		data.Rows = append(data.Rows, r)
		data.Total += g.Count
	}
	var buf bytes.Buffer
	// As render: a template error gives a clean 500, not half a page.
	if err := s.pages["unknown"].ExecuteTemplate(&buf, "base", data); err != nil {
		s.opts.Logger.Error("web: template failed", "page", "unknown", "err", err)
		c.String(http.StatusInternalServerError, "template error")
		return
	}
	c.Data(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
