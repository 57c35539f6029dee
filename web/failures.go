package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
)

// registerFailures adds the failure-group routes, Sentry's issues for boot
// attempts: every failed attempt belongs to the group of its verdict, the
// rule that decided it and its fingerprint.
//
//	GET /failures          the groups, most attempts first: count, first and last seen, hosts, units,
//	                       "came back after N days" (a gap of more than domain.RegressionGap), links
//	                       to the group's attempts (/?group=ID) and its newest attempt
//	GET /api/v1/failures   {"groups": [failureGroupJSON...], "total_attempts": N, "regression_gap_days": 7}
//	GET /unknown           the same page for verdict unknown_failure only (a fixed view: no verdict
//	                       parameter)
//	GET /api/v1/unknown    the same JSON for verdict unknown_failure only
//
// Parameters (failureParams): verdict (repeatable; failure verdicts of the
// spec only), host, unit, engine (repeatable), group=ID, since and until
// narrow the attempts counted; limit=N keeps N groups (default all). Bad
// parameters are a 400 naming the allowed values, as for the list.
func (s *server) registerFailures(r *gin.Engine) {
	r.GET("/failures", func(c *gin.Context) { s.failuresPage(c, false) })
	r.GET("/unknown", func(c *gin.Context) { s.failuresPage(c, true) })
	r.GET("/api/v1/failures", func(c *gin.Context) { s.apiFailures(c, false) })
	r.GET("/api/v1/unknown", func(c *gin.Context) { s.apiFailures(c, true) })
}

// failureGroupJSON is one group of GET /api/v1/failures. Fingerprint is
// "hash masked-text" (or "" for most rule verdicts); Hash and Text are its
// two parts. Times are RFC 3339 with the source offset, omitted when
// unknown; came_back_* are omitted when the group never came back.
type failureGroupJSON struct {
	ID            string   `json:"id"`
	Verdict       string   `json:"verdict"`
	Rule          string   `json:"rule,omitempty"`
	Fingerprint   string   `json:"fingerprint"`
	Hash          string   `json:"hash,omitempty"`
	Text          string   `json:"text,omitempty"`
	Count         int      `json:"count"`
	FirstSeen     string   `json:"first_seen,omitempty"`
	LastSeen      string   `json:"last_seen,omitempty"`
	Newest        string   `json:"newest_attempt"`
	AttemptIDs    []string `json:"example_attempt_ids"`
	Hosts         []string `json:"hosts"`
	Units         []string `json:"units"`
	Regressions   int      `json:"regressions"`
	CameBackAt    string   `json:"came_back_at,omitempty"`
	CameBackAfter float64  `json:"came_back_after_days,omitempty"`
	// Attempts is the API list of the group's attempts.
	Attempts string `json:"attempts_url"`
}

// failuresJSON is GET /api/v1/failures.
type failuresJSON struct {
	Groups        []failureGroupJSON `json:"groups"`
	TotalAttempts int                `json:"total_attempts"`
	// RegressionGapDays is domain.RegressionGap in days.
	RegressionGapDays float64 `json:"regression_gap_days"`
}

func groupJSON(g domain.FailureGroup) failureGroupJSON {
	j := failureGroupJSON{ID: g.ID, Verdict: string(g.Verdict), Rule: g.Rule, Fingerprint: g.Fingerprint, Count: g.Count,
		FirstSeen: formatTime(g.FirstSeen), LastSeen: formatTime(g.LastSeen), AttemptIDs: nonNil(g.AttemptIDs),
		Hosts: nonNil(g.Hosts), Units: nonNil(g.Units), Regressions: g.Regressions, CameBackAt: formatTime(g.CameBackAt),
		CameBackAfter: math.Round(g.CameBackAfter.Hours()/24*10) / 10, Attempts: "/api/v1/attempts?group=" + g.ID}
	j.Hash, j.Text = splitFingerprint(g.Fingerprint)
	if len(g.AttemptIDs) > 0 {
		j.Newest = g.AttemptIDs[0]
	}
	return j
}

// failuresData is the failures page's data.
type failuresData struct {
	// Path is the page's own path (/failures or /unknown); host and unit
	// links narrow it.
	Path    string
	Unknown bool
	Rows    []failureRow
	Total   int
	Filter  domain.AttemptFilter
	// Verdicts are the failure verdicts the verdict filter offers.
	Verdicts []string
	// GapDays is domain.RegressionGap in days.
	GapDays int
	// Suggest: each group links to the form that writes its rule.
	Suggest bool
}

// failureRow is one group as the page shows it; AttemptsURL lists its
// attempts that the page counted (the page's host, unit, engine and time
// filters kept).
type failureRow struct {
	domain.FailureGroup
	Hash, Text  string
	AttemptsURL string
}

// groupAttemptsURL is the attempts page of group id narrowed as f is.
func groupAttemptsURL(id string, f domain.AttemptFilter) string {
	v := url.Values{"group": {id}}
	for name, vals := range map[string][]string{"host": f.Hosts, "unit": f.Units, "engine": f.Engines} {
		if len(vals) > 0 {
			v[name] = vals
		}
	}
	if !f.Since.IsZero() {
		v.Set("since", f.Since.Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		v.Set("until", f.Until.Format(time.RFC3339))
	}
	return "/?" + v.Encode()
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

// failureGroups reads the groups the request selects; unknown fixes the
// verdict to unknown_failure. It answers the request itself (and returns
// ok false) on a bad parameter or a failure.
func (s *server) failureGroups(c *gin.Context, unknown, api bool) ([]domain.FailureGroup, domain.AttemptFilter, bool) {
	ctx := c.Request.Context()
	o := queryOpts{params: failureParams, verdicts: domain.FailureVerdicts(), maxLimit: MaxAPILimit, engines: s.storedEngines(ctx)}
	if !api {
		o.loc = s.opts.Location
	}
	if unknown {
		o.params = without(failureParams, "verdict")
	}
	f, err := parseQuery(c.Request.URL.Query(), o)
	if unknown {
		f.Verdicts = []string{string(domain.VerdictUnknownFailure)}
	}
	if err != nil {
		if api {
			s.badRequestJSON(c, err)
		} else if pe, ok := err.(*paramError); ok {
			s.render(c, http.StatusBadRequest, "notfound", pageData{Title: "Bad request", Message: pe.Msg + "."})
		} else {
			s.serverError(c, err, false)
		}
		return nil, f, false
	}
	gs, err := s.groupsOf(ctx, f)
	if err != nil {
		s.serverError(c, err, api)
		return nil, f, false
	}
	return gs, f, true
}

func without(list []string, drop string) []string {
	var out []string
	for _, x := range list {
		if x != drop {
			out = append(out, x)
		}
	}
	return out
}

func (s *server) apiFailures(c *gin.Context, unknown bool) {
	gs, _, ok := s.failureGroups(c, unknown, true)
	if !ok {
		return
	}
	out := failuresJSON{Groups: make([]failureGroupJSON, 0, len(gs)), RegressionGapDays: domain.RegressionGap.Hours() / 24}
	for _, g := range gs {
		out.Groups = append(out.Groups, groupJSON(g))
		out.TotalAttempts += g.Count
	}
	c.JSON(http.StatusOK, out)
}

func (s *server) failuresPage(c *gin.Context, unknown bool) {
	gs, f, ok := s.failureGroups(c, unknown, false)
	if !ok {
		return
	}
	d := &failuresData{Path: "/failures", Unknown: unknown, Filter: f, Verdicts: domain.FailureVerdicts(), Suggest: unknown && s.opts.Suggester != nil,
		GapDays: int(domain.RegressionGap / (24 * time.Hour))}
	title := "Failures"
	if unknown {
		d.Path, title = "/unknown", "Unknown failures"
	}
	for _, g := range gs {
		r := failureRow{FailureGroup: g, AttemptsURL: groupAttemptsURL(g.ID, f)}
		r.Hash, r.Text = splitFingerprint(g.Fingerprint)
		d.Rows = append(d.Rows, r)
		d.Total += g.Count
	}
	s.render(c, http.StatusOK, "failures", pageData{Title: title, Failures: d})
}

// narrowURL is path narrowed to one value of a parameter (a host or unit
// link of the failures page).
func narrowURL(path, param, value string) string {
	return path + "?" + url.Values{param: {value}}.Encode()
}

// days renders a duration in whole days: "10 days", "1 day".
func days(d time.Duration) string {
	n := int(math.Round(d.Hours() / 24))
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", n)
}

// times renders a count: "1 time", "7 times".
func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// groupsOf returns the failure groups f selects. When f narrows only by
// exact values (verdict, host, unit, engine, group) they are counted from
// the brief attempts the server holds for the ladders, which allLadders
// keeps current from the attempts whose updated_at moved: no request
// reads every failed attempt of the database while a journal flows.
// Other filters (times, search, findings, ids) ask the store.
func (s *server) groupsOf(ctx context.Context, f domain.AttemptFilter) ([]domain.FailureGroup, error) {
	match, ok := exactMatch(f)
	if !ok {
		return s.db.FailureGroups(ctx, f)
	}
	if onlyGroup(f) {
		// All groups, or one: every group counts its own attempts only,
		// so one group is the same whether grouped alone or with all.
		gs, byID, ok, err := s.heldGroups(ctx)
		if err != nil {
			s.opts.Logger.Error("web: ladders", "err", err)
		}
		if err == nil && ok {
			switch {
			case f.Group != "":
				i, ok := byID[f.Group]
				if !ok {
					return []domain.FailureGroup{}, nil
				}
				gs = []domain.FailureGroup{gs[i]}
			case f.Limit > 0 && len(gs) > f.Limit:
				gs = gs[:f.Limit]
			}
			return gs, nil
		}
	}
	all, ok, err := s.heldAttempts(ctx)
	if err != nil || !ok {
		if err != nil {
			s.opts.Logger.Error("web: ladders", "err", err)
		}
		return s.db.FailureGroups(ctx, f)
	}
	rows := make([]domain.FailureRow, 0, len(all))
	for _, a := range all {
		if a.Verdict.IsFailure() && match(a) {
			rows = append(rows, domain.FailureRowOf(a))
		}
	}
	domain.SortFailureRows(rows)
	gs := domain.GroupFailures(rows)
	if f.Limit > 0 && len(gs) > f.Limit {
		gs = gs[:f.Limit]
	}
	return gs, nil
}

// heldAttempts brings the ladders' attempts up to date and returns them
// (brief, read-only); ok is false without a Versioner store.
func (s *server) heldAttempts(ctx context.Context) ([]*domain.Attempt, bool, error) {
	if _, ok := s.db.(Versioner); !ok {
		return nil, false, nil
	}
	h, err := s.heldNow(ctx)
	if err != nil {
		return nil, false, err
	}
	return h.all, true, nil
}

// exactMatch returns f as a predicate when f narrows by exact values only
// (the store's filterWhere, for those fields); ok is false otherwise.
func exactMatch(f domain.AttemptFilter) (func(*domain.Attempt) bool, bool) {
	if len(f.Findings) > 0 || f.Search != "" || !f.Since.IsZero() || !f.Until.IsZero() || len(f.IDs) > 0 {
		return nil, false
	}
	is := func(v, one string, any []string) bool {
		return (one == "" || v == one) && (len(any) == 0 || slices.Contains(any, v))
	}
	return func(a *domain.Attempt) bool {
		return is(a.Host, f.Host, f.Hosts) && is(a.Unit, f.Unit, f.Units) && is(a.Engine, f.Engine, f.Engines) &&
			is(string(a.Verdict), f.Verdict, f.Verdicts) &&
			(f.Group == "" || domain.GroupID(a.Verdict, a.Rule, a.Fingerprint) == f.Group) &&
			(!f.Failed || a.Verdict.IsFailure())
	}, true
}
