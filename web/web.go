// Package web serves the analyzer's UI and JSON API over an AttemptReader: an
// attempts list with filters, one page per attempt, and /api/v1 in the
// `analyzer explain` JSON contract. Pages are rendered on the server with
// html/template (all log text escaped); templates, CSS and one small script
// (static/page.js: the browser's zone, copy buttons, scrolling the log to the
// decisive line; every page works without it) are embedded, and nothing is
// loaded from outside (no CDN; the CSP allows no inline script).
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/ladder"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// AttemptReader is what the UI needs from storage (*store.DB has it).
type AttemptReader interface {
	ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error)
	// PageAttempts returns one page of a list with its total and the
	// cursors of the pages around it.
	PageAttempts(ctx context.Context, f domain.AttemptFilter) (domain.AttemptPage, error)
	// FailureGroups groups the failed attempts f matches by verdict, rule
	// and fingerprint.
	FailureGroups(ctx context.Context, f domain.AttemptFilter) ([]domain.FailureGroup, error)
	GetAttempt(ctx context.Context, id string) (*domain.Attempt, error)
	// AttemptLog returns the kept lines of an attempt's own log, times in
	// loc.
	AttemptLog(ctx context.Context, id string, loc *time.Location) (*domain.AttemptLog, error)
	Facets(ctx context.Context) (hosts, units, engines, verdicts []string, err error)
	Ping(ctx context.Context) error
}

// Options configures the server. The zero value is usable.
type Options struct {
	// Title is shown in the page header and <title>; default "Boot attempts".
	Title string
	// Location interprets the UI's since/until inputs (datetime-local has no
	// offset); default time.Local. Times are always displayed with the
	// offset of their source.
	Location *time.Location
	// WarmLadders builds the ladders in the background at once instead of
	// on the first page that needs them (serve sets it).
	WarmLadders bool
	// LiveUpdate keeps what the server holds of the database (every
	// attempt, brief; the ladders; the failure groups) current in the
	// background, checking every LiveInterval and after each request: a
	// page is answered from the last complete update instead of waiting
	// for the next one, so it may lag a save by one update (serve sets
	// it). Without it a page after a save brings them up to date first.
	// It needs a Versioner store.
	LiveUpdate bool
	// LiveInterval is how often LiveUpdate checks the database for a
	// change; default 250ms.
	LiveInterval time.Duration
	// Context bounds that background work (the first build, LiveUpdate's
	// updates): it stops when Context is done (serve passes its own, so the
	// work ends with it instead of running on against a closed database and
	// logging that); default context.Background().
	Context context.Context
	// PageLimit caps the rows of the attempts page; default 200.
	PageLimit int
	// APILimit is the default `limit` of GET /api/v1/attempts; default 500.
	// A larger limit may be asked for, up to MaxAPILimit.
	APILimit int
	// Logger receives server-side errors (database failures); default
	// slog.Default().
	Logger *slog.Logger
	// Ladder configures how boot ladders are built (gap, granularity).
	Ladder LadderOptions
	// Routes are extra handlers mounted beside the UI (GET /metrics,
	// POST /loki/api/v1/push); see routes.go.
	Routes []Route
	// AllowedHosts, when set, are the only Host header names answered
	// (421 otherwise): a server on loopback answers for its loopback names
	// only, so a hostile page cannot reach it through a name it resolves to
	// 127.0.0.1 (DNS rebinding). Empty: any.
	AllowedHosts []string
	// Health, when set, adds its checks (the journal follower, free disk)
	// to GET /healthz and GET /-/ready.
	Health func() []Check
	// Suggester, when set, adds the form that writes a rule for an
	// unknown failure group (/unknown/:group/rule).
	Suggester Suggester
	// StallQuiet is how long a boot with no history of its phase may
	// print nothing before it counts as stalled; default
	// progress.DefaultQuiet. StallFloor is the least time past a phase's
	// p90 in earlier boots before a boot stalls; default
	// progress.StallMargin.
	StallQuiet, StallFloor time.Duration
	// Now is the clock the progress of boots is judged at (tests set it);
	// default time.Now.
	Now func() time.Time
}

// MaxAPILimit is the largest `limit` the pages and the JSON API accept; a
// larger one is a 400 naming it, as limit=0 is.
const MaxAPILimit = 10000

type server struct {
	db    AttemptReader
	opts  Options
	pages map[string]*template.Template

	// What the server holds of the database at one Version (heldState),
	// published whole. laddersMu is held while it is brought up to date:
	// concurrent requests wait for one update instead of each making its
	// own; the other fields are the update's working state.
	held         atomic.Pointer[heldState]
	updating     atomic.Bool // a LiveUpdate update runs
	laddersMu    sync.Mutex
	laddersSeen  map[string]*domain.Attempt // brief attempts by ID, as of held's version
	laddersStamp map[string]int64           // their updated_at
	laddersMemo  ladder.Memo

	// The attempts page's rows of held attempts (renderRows).
	rowsMu sync.Mutex
	rows   map[rowKey]template.HTML
}

// New returns the HTTP handler of the UI and API, with these routes:
//
//	GET /                     attempts page, newest first, PageLimit rows a page with the total and
//	                          previous/next links, the boots in progress among them on the first page
//	                          (bar segmented by phase, ETA); filters below; a q that finds one attempt opens it
//	GET /attempts/:id         one attempt, with its failure group ("seen 7 times since ..."); an id
//	                          that is no attempt's is searched as q (one match: redirect to it;
//	                          several: the list), else the 404 page
//	GET /api/v1/attempts      {"attempts": [AttemptJSON...], "total": N, "next": CURSOR, "prev": CURSOR}
//	                          (next/prev absent on the last/first page); since/until RFC 3339
//	GET /api/v1/attempts/:id  AttemptJSON + findings_detail, timeline, context, group, and a boot in
//	                          progress's progress; an id that is no attempt's is searched as q (one
//	                          match: that attempt)
//	GET /api/v1/boots         {"boots": [bootJSON...]}: the boots in progress with their progress
//	GET /ladders, /ladders/:id, /api/v1/ladders, /api/v1/ladders/:id, /api/v1/ladders/:id/predict
//	                          boot ladders and the what-if prediction (see registerLadders)
//	GET /failures             failure groups (see registerFailures); /unknown is its unknown_failure view
//	GET /api/v1/failures      {"groups": [failureGroupJSON...], ...}
//	GET /healthz, /-/ready    "ok" and the checks (503 when one fails: readiness)
//	GET, HEAD /-/healthy      200 "Healthy." while the process serves (liveness, as Prometheus' and Loki's)
//	GET /static/*             embedded CSS
//
// List filters (GET / and GET /api/v1/attempts; listParams): host, unit,
// engine, verdict and finding may repeat and then mean any of the values;
// failed=1 keeps failed attempts (as `analyzer explain --failed`); group=ID
// the attempts of one failure group; q= an attempt id, invocation id or
// container id (whole, or a prefix of 8 or more characters) or a container
// name; since, until (what the CLI's --since takes, when.Query); limit
// (default PageLimit / APILimit, at most MaxAPILimit); cursor= the next or prev value of a previous answer. An
// unknown parameter, a repeated single one, or a verdict, finding or
// engine that is not one of the spec's (engines: also those stored) is a
// 400 naming the allowed parameters or values: a JSON error for the API
// ({"error", "parameter", "allowed"}), an error on the page for the UI.
//
// Attempt ids may contain '/': links escape it as %2F and routing matches
// the escaped path. New switches gin to release mode (a process-wide
// setting). It panics only if the embedded templates do not parse, which
// the package tests rule out.
func New(db AttemptReader, opts Options) *gin.Engine {
	if opts.Title == "" {
		opts.Title = "Boot attempts"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.PageLimit <= 0 {
		opts.PageLimit = 200
	}
	if opts.APILimit <= 0 {
		opts.APILimit = 500
	}
	if opts.LiveInterval <= 0 {
		opts.LiveInterval = 250 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &server{db: db, opts: opts, pages: parsePages()}
	if _, ok := db.(Versioner); ok && (opts.WarmLadders || opts.LiveUpdate) {
		// The first build reads every attempt; do it before the first page.
		ctx := opts.Context
		if ctx == nil {
			ctx = context.Background()
		}
		go func() {
			if _, err := s.allLadders(ctx); err != nil && ctx.Err() == nil {
				opts.Logger.Error("web: ladders", "err", err)
			}
			if opts.LiveUpdate {
				s.keepCurrent(ctx)
			}
		}()
	}

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery(), guard(opts.AllowedHosts))
	// Ids hold '/', sent as %2F: route on the escaped path, then unescape
	// the parameter.
	r.UseEscapedPath = true
	r.UnescapePathValues = true
	// No reverse proxy is trusted by default: the client IP is the peer's.
	_ = r.SetTrustedProxies(nil)

	static, _ := fs.Sub(staticFS, "static")
	r.StaticFS("/static", http.FS(static))
	r.GET("/", s.listPage)
	r.GET("/attempts/:id", s.attemptPage)
	r.GET("/attempts/:id/log", s.attemptLogPage)
	r.GET("/api/v1/attempts", s.apiList)
	r.GET("/api/v1/attempts/:id", s.apiGet)
	r.GET("/api/v1/boots", s.apiBoots)
	r.GET("/healthz", s.healthz)
	r.GET("/-/ready", s.healthz)
	r.GET("/-/healthy", healthy)
	r.HEAD("/-/healthy", healthy)
	s.registerLadders(r)
	s.registerFailures(r)
	s.registerRunbooks(r)
	s.registerSuggest(r)
	mountRoutes(r, opts.Routes)
	r.NoRoute(s.notFound)
	return r
}

// Check is the outcome of one health check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// healthz answers GET /healthz and GET /-/ready: "ok" and one line per
// check (the database answers, and Options.Health's: the database takes
// writes, the journal follower is alive, free disk), 503 with "fail" first
// when one fails.
func (s *server) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := []Check{{Name: "database", OK: true}}
	if err := s.db.Ping(ctx); err != nil {
		checks[0] = Check{Name: "database", Detail: err.Error()}
	}
	if s.opts.Health != nil {
		checks = append(checks, s.opts.Health()...)
	}
	status, word := http.StatusOK, "ok"
	var b strings.Builder
	for _, ch := range checks {
		state := "ok"
		if !ch.OK {
			status, word, state = http.StatusServiceUnavailable, "fail", "FAIL"
		}
		fmt.Fprintf(&b, "%s %s", ch.Name, state)
		if ch.Detail != "" {
			fmt.Fprintf(&b, ": %s", ch.Detail)
		}
		b.WriteString("\n")
	}
	c.String(status, "%s\n%s", word, b.String())
}

// healthy answers GET and HEAD /-/healthy: 200 whenever the process can
// answer at all, checking nothing else (liveness; /-/ready is readiness).
func healthy(c *gin.Context) {
	c.String(http.StatusOK, "Healthy.\n")
}

func (s *server) notFound(c *gin.Context) {
	if strings.HasPrefix(c.Request.URL.Path, "/api/") {
		c.JSON(http.StatusNotFound, gin.H{"error": "not found"})
		return
	}
	s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Not found", Message: "There is no page at " + c.Request.URL.Path + "."})
}

// serverError logs err and answers 500 without leaking details to HTML.
func (s *server) serverError(c *gin.Context, err error, api bool) {
	s.opts.Logger.Error("web: request failed", "path", c.Request.URL.Path, "err", err)
	if api {
		c.JSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
		return
	}
	s.render(c, http.StatusInternalServerError, "notfound", pageData{Title: "Error", Message: "The database could not be read; see the server log."})
}

// pageData is what every template gets; fields unused by a page stay zero.
type pageData struct {
	Title    string // <title> and heading
	AppTitle string
	Message  string // notfound / error pages

	// attempts page
	Form   formValues
	Facets facets
	Rows   []listRow
	Boots  []bootRow // the boots in progress among them, with their progress
	Limit  int
	Error  string
	Nav    *pageNav

	// attempt page; Group is the attempt's failure group, nil for none
	A        *domain.Attempt
	Group    *domain.FailureGroup
	Log      []logLine // evidence and context as one log (logview.go)
	Decisive *logRow   // the row holding the verdict's match, cut around it
	Errors   int       // lines of Log that look like errors

	// failures page
	Failures *failuresData

	// an attempt's log page
	FullLog *logPage

	// ladder pages, and the attempt pages' link to their ladder
	LD *ladderData

	// verdict runbooks (/verdicts)
	Runbooks []domain.Runbook

	// the rule-writing form of an unknown failure group
	Suggest *suggestData

	// a boot in progress on its attempt page
	Progress *progressView

	// Zone is the zone the page shows times in and reads since/until in.
	Zone pageZone
}

// formValues are the list page's filter inputs as the request gave them.
type formValues struct {
	Hosts, Units, Engines, Verdicts, Findings []string
	Failed                                    bool
	Since, Until, Q, Group, TZ                string
	// Limit is the limit parameter when given, kept in the page links.
	Limit string
}

type facets struct{ Hosts, Units, Engines, Verdicts, Findings []string }

// pageNav is the paging of the attempts page: rows From to To of Total,
// and the links to the first, previous and next pages ("" when there is
// none).
type pageNav struct {
	From, To, Total   int
	First, Prev, Next string
}

type listRow struct {
	A       *domain.Attempt
	Summary string
	Ladder  *ladderRef
	// HTML is the row as the list template's "row" renders it (from the
	// fields above, escaped by html/template).
	HTML template.HTML
}

func (s *server) render(c *gin.Context, status int, page string, data pageData) {
	data.AppTitle = s.opts.Title
	var buf bytes.Buffer
	// Render to a buffer first so a template error gives a clean 500
	// instead of half a page.
	if err := s.pages[page].ExecuteTemplate(&buf, "base", data); err != nil {
		s.opts.Logger.Error("web: template failed", "page", page, "err", err)
		c.String(http.StatusInternalServerError, "template error")
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

func (s *server) listPage(c *gin.Context) {
	q := c.Request.URL.Query()
	form := formValues{
		Hosts: q["host"], Units: q["unit"], Engines: q["engine"], Verdicts: q["verdict"], Findings: q["finding"],
		Since: q.Get("since"), Until: q.Get("until"), Q: q.Get("q"), Group: q.Get("group"), Limit: q.Get("limit"),
		TZ: q.Get("tz"),
	}
	data := pageData{Title: s.opts.Title, Form: form, Limit: s.opts.PageLimit}
	ctx := c.Request.Context()
	zone, err := s.zone(c)
	if err != nil {
		data.Error = err.Error()
		s.render(c, http.StatusBadRequest, "list", data)
		return
	}
	data.Zone = zone
	hosts, units, engines, verdicts, err := s.db.Facets(ctx)
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	// Keep a value the user filtered on selectable even if no attempt has
	// it (any more), so the form shows what is being filtered.
	data.Facets = facets{
		Hosts: withValues(hosts, form.Hosts), Units: withValues(units, form.Units),
		Engines: withValues(engines, form.Engines), Verdicts: withValues(verdicts, form.Verdicts),
		Findings: domain.FindingNames(),
	}
	f, err := parseQuery(q, queryOpts{params: listParams, limit: s.opts.PageLimit, maxLimit: MaxAPILimit,
		loc: zone.Read, engines: func() ([]string, error) { return engines, nil }})
	if err != nil {
		var pe *paramError
		if !errors.As(err, &pe) {
			s.serverError(c, err, false)
			return
		}
		if pe.Param == "since" || pe.Param == "until" {
			data.Error = "Invalid time filter (" + pe.Msg + ")."
		} else {
			data.Error = "Invalid filter: " + pe.Msg + "."
		}
		s.render(c, http.StatusBadRequest, "list", data)
		return
	}
	data.Form.Failed = f.Failed
	f.WallClock = zone.wallClock(form.Since, form.Until)
	data.Limit = f.Limit
	f.Brief = true
	p, held := s.heldPage(ctx, f)
	if !held {
		if p, err = s.db.PageAttempts(ctx, f); err != nil {
			s.serverError(c, err, false)
			return
		}
	}
	// A search that finds exactly one attempt opens it.
	if f.Search != "" && f.Cursor == nil && p.Total == 1 && len(p.Attempts) == 1 {
		c.Redirect(http.StatusFound, attemptURL(p.Attempts[0].ID))
		return
	}
	for _, a := range p.Attempts {
		data.Rows = append(data.Rows, listRow{A: zone.localize(a)})
	}
	data.Nav = navOf(q, p)
	if data.Boots, err = s.bootsOf(ctx, f, zone, s.opts.Now()); err != nil {
		s.serverError(c, err, false)
		return
	}
	s.linkLadders(ctx, data.Rows)
	var heldRows []*domain.Attempt // the held attempts of the rows, whose rows are kept
	if held {
		heldRows = p.Attempts
	}
	if err := s.renderRows(data.Rows, heldRows, zone); err != nil {
		s.opts.Logger.Error("web: template failed", "page", "list", "err", err)
		c.String(http.StatusInternalServerError, "template error")
		return
	}
	s.render(c, http.StatusOK, "list", data)
}

// navOf is the paging of the attempts page p answered for the query q.
func navOf(q url.Values, p domain.AttemptPage) *pageNav {
	nav := &pageNav{From: p.Before + 1, To: p.Before + len(p.Attempts), Total: p.Total}
	if len(p.Attempts) == 0 {
		nav.From = p.Before
	}
	link := func(c *domain.PageCursor) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "cursor" {
				v[k] = vs
			}
		}
		if c != nil {
			v.Set("cursor", c.Encode())
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	if p.Prev != nil {
		nav.Prev, nav.First = link(p.Prev), link(nil)
	}
	if p.Next != nil {
		nav.Next = link(p.Next)
	}
	return nav
}

// withValues adds to list the values not in it.
func withValues(list, vs []string) []string {
	for _, v := range vs {
		list = withValue(list, v)
	}
	return list
}

func withValue(list []string, v string) []string {
	if v == "" {
		return list
	}
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// parseFormTime reads a since/until form field: empty (no bound) or what
// the CLI's --since takes, zoneless forms read in loc (when.Query).
func parseFormTime(v string, loc *time.Location) (time.Time, error) {
	if strings.TrimSpace(v) == "" {
		return time.Time{}, nil
	}
	return when.Query(loc).Parse(v)
}

func (s *server) attemptPage(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	a, err := s.db.GetAttempt(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		// An invocation id, a container id or a prefix of one.
		p, err := s.db.PageAttempts(ctx, domain.AttemptFilter{Search: id, Limit: 1, Brief: true})
		switch {
		case err != nil:
			s.serverError(c, err, false)
		case p.Total == 1:
			c.Redirect(http.StatusFound, attemptURL(p.Attempts[0].ID))
		case p.Total > 1:
			c.Redirect(http.StatusFound, "/?"+url.Values{"q": {id}}.Encode())
		default:
			s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Attempt not found",
				Message: "No boot attempt has the id, invocation id or container id " + strconv.Quote(id) + "."})
		}
		return
	}
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	title := a.Unit
	if title == "" {
		title = a.ID
	}
	if a.Verdict != "" {
		title += " · " + string(a.Verdict)
	}
	zone, err := s.zone(c)
	if err != nil {
		s.render(c, http.StatusBadRequest, "notfound", pageData{Title: "Bad time zone", Message: err.Error()})
		return
	}
	a = zone.localize(a)
	g, err := s.groupOf(ctx, a)
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	prog, course, err := s.courseOf(ctx, a, s.opts.Now())
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	log := buildLogView(a)
	s.render(c, http.StatusOK, "attempt", pageData{Title: title, A: a, Group: g, Log: log, Decisive: decisiveRow(log),
		Errors: numberErrors(log), LD: s.attemptLadder(ctx, a.ID), Zone: zone, Progress: viewOf(prog, course)})
}

// groupOf returns the failure group of a failed attempt, nil for an
// attempt that did not fail.
func (s *server) groupOf(ctx context.Context, a *domain.Attempt) (*domain.FailureGroup, error) {
	if !a.Verdict.IsFailure() {
		return nil, nil
	}
	gs, err := s.groupsOf(ctx, domain.AttemptFilter{Group: domain.GroupID(a.Verdict, a.Rule, a.Fingerprint)})
	if err != nil || len(gs) == 0 {
		return nil, err
	}
	return &gs[0], nil
}

// attemptListJSON is GET /api/v1/attempts: a page of attempts, the total
// that match on all pages, and the cursors of the next and previous pages
// (absent on the last and the first page).
type attemptListJSON struct {
	Attempts []domain.AttemptJSON `json:"attempts"`
	Total    int                  `json:"total"`
	Next     string               `json:"next,omitempty"`
	Prev     string               `json:"prev,omitempty"`
}

func (s *server) apiList(c *gin.Context) {
	ctx := c.Request.Context()
	f, err := parseQuery(c.Request.URL.Query(), queryOpts{params: listParams, limit: s.opts.APILimit,
		maxLimit: MaxAPILimit, engines: s.storedEngines(ctx)})
	if err != nil {
		s.badRequestJSON(c, err)
		return
	}
	p, err := s.db.PageAttempts(ctx, f)
	if err != nil {
		s.serverError(c, err, true)
		return
	}
	out := attemptListJSON{Attempts: make([]domain.AttemptJSON, 0, len(p.Attempts)), Total: p.Total}
	for _, a := range p.Attempts {
		out.Attempts = append(out.Attempts, a.JSON())
	}
	if p.Next != nil {
		out.Next = p.Next.Encode()
	}
	if p.Prev != nil {
		out.Prev = p.Prev.Encode()
	}
	c.JSON(http.StatusOK, out)
}

// badRequestJSON answers a parseQuery error: 400 with the paramError as
// JSON, or 500 when reading the allowed values failed.
func (s *server) badRequestJSON(c *gin.Context, err error) {
	var pe *paramError
	if errors.As(err, &pe) {
		c.JSON(http.StatusBadRequest, pe)
		return
	}
	s.serverError(c, err, true)
}

// attemptDetailJSON is GET /api/v1/attempts/:id: the explain contract's
// attempt plus the detail the UI shows.
type attemptDetailJSON struct {
	domain.AttemptJSON
	FindingsDetail []findingJSON         `json:"findings_detail"`
	Timeline       []phaseMarkJSON       `json:"timeline"`
	Context        []domain.EvidenceJSON `json:"context,omitempty"`
	ExitCode       string                `json:"exit_code,omitempty"`
	Lines          int                   `json:"lines,omitempty"`
	ContainerID    string                `json:"container_id,omitempty"`
	// Group is the attempt's failure group; absent when it did not fail.
	Group *failureGroupJSON `json:"group,omitempty"`
	// Progress is where a boot in progress is and how long it should
	// still take; absent for ended, ready and pasted attempts.
	Progress *progressJSON `json:"progress,omitempty"`
}

// findingJSON is a domain.Finding with the contract's time format.
type findingJSON struct {
	ID        string                `json:"id"`
	Rule      string                `json:"rule"`
	Severity  domain.Severity       `json:"severity"`
	MessageID string                `json:"message_id,omitempty"`
	Phase     domain.Phase          `json:"phase"`
	Time      string                `json:"time,omitempty"`
	Note      string                `json:"note,omitempty"`
	Captures  map[string]string     `json:"captures,omitempty"`
	Evidence  []domain.EvidenceJSON `json:"evidence,omitempty"`
}

// phaseMarkJSON is a timeline entry; Seconds counts from the attempt's
// start; Cursor and Message are the line that moved the attempt into Phase.
type phaseMarkJSON struct {
	Phase   domain.Phase `json:"phase"`
	Time    string       `json:"time"`
	Seconds *float64     `json:"seconds,omitempty"`
	Cursor  string       `json:"cursor,omitempty"`
	Message string       `json:"message,omitempty"`
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(domain.TimeFormat)
}

func evidenceJSON(ev []domain.Evidence) []domain.EvidenceJSON {
	var out []domain.EvidenceJSON
	for _, e := range ev {
		out = append(out, domain.EvidenceJSON{Time: formatTime(e.Time), Cursor: e.Cursor, Message: e.Message})
	}
	return out
}

func (s *server) apiGet(c *gin.Context) {
	ctx := c.Request.Context()
	a, err := s.db.GetAttempt(ctx, c.Param("id"))
	if errors.Is(err, domain.ErrNotFound) {
		// An invocation id, a container id or a prefix of one that names
		// one attempt serves that attempt.
		var p domain.AttemptPage
		if p, err = s.db.PageAttempts(ctx, domain.AttemptFilter{Search: c.Param("id"), Limit: 1, Brief: true}); err == nil {
			switch p.Total {
			case 0:
				err = domain.ErrNotFound
			case 1:
				a, err = s.db.GetAttempt(ctx, p.Attempts[0].ID)
			default:
				c.JSON(http.StatusConflict, gin.H{"error": fmt.Sprintf("%q names %d attempts; list them with GET /api/v1/attempts?q=", c.Param("id"), p.Total)})
				return
			}
		}
	}
	if errors.Is(err, domain.ErrNotFound) {
		c.JSON(http.StatusNotFound, gin.H{"error": "attempt " + strconv.Quote(c.Param("id")) + " not found"})
		return
	}
	if err != nil {
		s.serverError(c, err, true)
		return
	}
	g, err := s.groupOf(ctx, a)
	if err != nil {
		s.serverError(c, err, true)
		return
	}
	out := attemptDetailJSON{
		AttemptJSON: a.JSON(), FindingsDetail: []findingJSON{}, Timeline: []phaseMarkJSON{},
		Context: evidenceJSON(a.Context), ExitCode: a.ExitCode, Lines: a.Lines, ContainerID: a.ContainerID,
	}
	if g != nil {
		gj := groupJSON(*g)
		out.Group = &gj
	}
	if out.Progress, err = s.progressOf(ctx, a, s.opts.Now()); err != nil {
		s.serverError(c, err, true)
		return
	}
	for _, f := range a.Findings {
		out.FindingsDetail = append(out.FindingsDetail, findingJSON{
			ID: f.ID, Rule: f.Rule, Severity: f.Severity, MessageID: f.MessageID, Phase: f.Phase,
			Time: formatTime(f.Time), Note: f.Note, Captures: f.Captures, Evidence: evidenceJSON(f.Evidence),
		})
	}
	for _, m := range a.Timeline {
		pm := phaseMarkJSON{Phase: m.Phase, Time: formatTime(m.Time), Cursor: m.Cursor, Message: m.Message}
		if !a.StartedAt.IsZero() && !m.Time.IsZero() {
			sec := m.Time.Sub(a.StartedAt).Seconds()
			pm.Seconds = &sec
		}
		out.Timeline = append(out.Timeline, pm)
	}
	c.JSON(http.StatusOK, out)
}

// attemptURL is the page of an attempt; the id is path-escaped because it
// may contain '/'.
func attemptURL(id string) string { return "/attempts/" + url.PathEscape(id) }

// apiURL is the JSON of an attempt.
func apiURL(id string) string { return "/api/v1/attempts/" + url.PathEscape(id) }
