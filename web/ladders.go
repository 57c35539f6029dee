package web

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/ladder"
)

// registerLadders adds the boot-ladder routes:
//
//	GET /ladders                 ladders page (filters: host, target, since, until)
//	GET /ladders/:id             one ladder: rungs, SVG chart (?y=max_model_len ...), boundaries, next rung
//	GET /api/v1/ladders          {"ladders": [ladderSummaryJSON...]}, same filters, since/until RFC 3339
//	GET /api/v1/ladders/:id      ladder.Ladder: rungs (with notes), boundaries, next, notes
//	GET /api/v1/ladders/:id/predict  what if: ladder.Prediction and ladder.Largest (web/predict.go)
//
// Ladders are built on each request from every attempt of the database
// (AttemptReader.ListAttempts with an empty filter), so their ids and rung
// numbers do not depend on the filters. The since/until filters keep the
// ladders with at least one rung started in [since, until).
func (s *server) registerLadders(r *gin.Engine) {
	r.GET("/ladders", s.laddersPage)
	r.GET("/ladders/:id", s.ladderPage)
	r.GET("/api/v1/ladders", s.apiLadders)
	r.GET("/api/v1/ladders/:id", s.apiLadder)
	r.GET("/api/v1/ladders/:id/predict", s.apiLadderPredict)
}

// ladderFuncs are the ladder pages' template helpers; like funcs, none
// returns template.HTML.
var ladderFuncs = template.FuncMap{
	"ladderURL":    ladderURL,
	"outcomeClass": outcomeClass,
	"changes":      changesText,
	"secs":         secondsText,
	"i64p":         int64PtrText,
	"f64p":         float64PtrText,
	"bpt":          bytesPerTokenText,
	"rungList":     rungListText,
	"sizing":       sizingText,
}

// LadderOptions configures how the UI builds boot ladders (Options.Ladder).
type LadderOptions = ladder.Options

// ladderURL is the page of a ladder.
func ladderURL(id string) string { return "/ladders/" + url.PathEscape(id) }

// outcomeClass colours a rung: pass green, capacity failure red, boots but
// dies amber, other grey.
func outcomeClass(r ladder.Rung) string {
	switch r.Outcome() {
	case "pass":
		return "ok"
	case "capacity fail":
		return "fail"
	case "boots, dies":
		return "warn"
	}
	return "off"
}

func changesText(cs []ladder.Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func secondsText(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%.0f s", *p)
}

func int64PtrText(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

func float64PtrText(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

func bytesPerTokenText(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%.0f", *p)
}

// sizingText is a rung's set sizing without the engine's outcome:
// "3 × 262144 bf16 KV 11.05 GB".
func sizingText(s domain.Shape) string {
	t := domain.Shape{}
	for _, k := range []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype, domain.ShapeKVCacheMemoryBytes} {
		if v, ok := s[k]; ok {
			t[k] = v
		}
	}
	return t.Summary()
}

func rungListText(ns []int) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

// ladderRef links an attempt to its ladder.
type ladderRef struct {
	ID, Target, Host string
	// URL is the ladder's page.
	URL string
	// N is the attempt's rung; Rungs the ladder's length.
	N, Rungs int
	// Note is the rung's sentence (ladder.RungNote); Body is the same
	// without its "rung N of ladder T: " head, for the attempt page,
	// which says that itself.
	Note, Body string
	Outcome    string
}

// ladderData is what the ladder pages, and the attempt page's link, need.
type ladderData struct {
	// attempt page
	Ref *ladderRef

	// ladder page
	L     *ladder.Ladder
	Chart *chartView
	// Y is the chart's dimension; YOptions the choices.
	Y        string
	YOptions []string
	// KVPerDtype is L.KVBytesPerToken sorted by dtype.
	KVPerDtype []dtypeFigure
	// WhatIf is the what-if form and its prediction.
	WhatIf *whatIfView

	// ladders page
	Form    ladderForm
	Hosts   []string
	Targets []string
	List    []ladder.Ladder
	Nav     *pageNav // the ladders page's paging
	Error   string
}

type dtypeFigure struct {
	Dtype string
	Bytes string
}

type ladderForm struct{ Host, Target, Since, Until string }

// Versioner is a store that can tell whether its attempts changed and
// which (*store.DB has it): the ladders are then brought up to date only
// after a change, from the attempts that changed.
type Versioner interface {
	// Version is "count/last updated_at (µs)".
	Version(ctx context.Context) (string, error)
	// Updated returns id → updated_at of the attempts saved at or after since.
	Updated(ctx context.Context, since time.Time) (map[string]int64, error)
}

// allLadders returns the ladders of every attempt in the database. They
// are built from all attempts, which every attempt page needs for its
// ladder link. With a Versioner they are held (heldNow) until the
// database changes, and then brought up to date from the attempts saved
// since (fetched by updated_at) with the ladders of unchanged attempts
// reused (ladder.Memo): a page under live ingest costs the change, not the
// database. Callers must not modify the result.
func (s *server) allLadders(ctx context.Context) ([]ladder.Ladder, error) {
	if _, ok := s.db.(Versioner); !ok {
		attempts, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Brief: true})
		if err != nil {
			return nil, err
		}
		return ladder.Build(attempts, s.opts.Ladder), nil
	}
	h, err := s.heldNow(ctx)
	if err != nil {
		return nil, err
	}
	return h.ladders, nil
}

// heldState is what the server holds of the database at one Version:
// every attempt (brief) in ListAttempts' order, their ladders, and their
// failure groups once asked for. Read-only once published.
type heldState struct {
	version string
	all     []*domain.Attempt
	ladders []ladder.Ladder

	groupsOnce sync.Once
	groups     []domain.FailureGroup
	groupsByID map[string]int
}

// failureGroups returns the failure groups of h's attempts and their
// indexes by group id, computed once.
func (h *heldState) failureGroups() ([]domain.FailureGroup, map[string]int) {
	h.groupsOnce.Do(func() {
		rows := make([]domain.FailureRow, 0, len(h.all))
		for _, a := range h.all {
			if a.Verdict.IsFailure() {
				rows = append(rows, domain.FailureRowOf(a))
			}
		}
		domain.SortFailureRows(rows)
		h.groups = domain.GroupFailures(rows)
		h.groupsByID = make(map[string]int, len(h.groups))
		for i, g := range h.groups {
			h.groupsByID[g.ID] = i
		}
	})
	return h.groups, h.groupsByID
}

// heldNow returns the held state of a Versioner store: brought up to date
// first, or with Options.LiveUpdate the last one published, an update then
// starting in the background unless one runs.
func (s *server) heldNow(ctx context.Context) (*heldState, error) {
	if s.opts.LiveUpdate {
		if h := s.held.Load(); h != nil {
			s.startUpdate()
			return h, nil
		}
	}
	return s.update(ctx)
}

// startUpdate brings the held state up to date in the background unless
// an update runs already.
func (s *server) startUpdate() {
	if !s.updating.CompareAndSwap(false, true) {
		return
	}
	ctx := s.opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		defer s.updating.Store(false)
		if _, err := s.update(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Error("web: ladders", "err", err)
		}
	}()
}

// keepCurrent checks the database for a change every LiveInterval until
// ctx is done (Options.LiveUpdate).
func (s *server) keepCurrent(ctx context.Context) {
	t := time.NewTicker(s.opts.LiveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.startUpdate()
		}
	}
}

// update brings the held state up to date with the database and publishes
// it; with LiveUpdate it also groups the failures then, so that no page
// waits for that.
func (s *server) update(ctx context.Context) (*heldState, error) {
	v := s.db.(Versioner)
	s.laddersMu.Lock()
	defer s.laddersMu.Unlock()
	version, err := v.Version(ctx)
	if err != nil {
		return nil, err
	}
	prev := s.held.Load()
	if prev != nil && version == prev.version {
		return prev, nil
	}
	prevVersion := ""
	if prev != nil {
		prevVersion = prev.version
	}
	var count, last int64
	_, _ = fmt.Sscanf(version, "%d/%d", &count, &last)
	prevCount, prevLast := int64(-1), int64(0)
	_, _ = fmt.Sscanf(prevVersion, "%d/%d", &prevCount, &prevLast)
	var fetch []string // ids to read again; nil: read all
	var stamps map[string]int64
	if s.laddersSeen != nil && prevLast > 0 {
		// Saves of another process may carry a slightly older clock: look
		// back a little; only ids whose updated_at moved are read again.
		if stamps, err = v.Updated(ctx, time.UnixMicro(prevLast).Add(-laddersClockSlack)); err != nil {
			return nil, err
		}
		fetch = []string{}
		for id, at := range stamps {
			if s.laddersStamp[id] != at {
				fetch = append(fetch, id)
			}
		}
	}
	var all []*domain.Attempt
	readAll := func() error {
		if err := s.readAllLadderAttempts(ctx, v); err != nil {
			return err
		}
		all = make([]*domain.Attempt, 0, len(s.laddersSeen))
		for _, a := range s.laddersSeen {
			all = append(all, a)
		}
		slices.SortFunc(all, compareAttempts)
		return nil
	}
	switch {
	case fetch == nil || prev == nil || int64(len(s.laddersSeen)+len(fetch)) < count:
		// First build, or attempts the window missed: read all.
		if err := readAll(); err != nil {
			return nil, err
		}
	default:
		// Every read is done before what is held changes: a failed read
		// leaves the held attempts and their stamps as they were, so the
		// next update asks for the same attempts again.
		var fresh []*domain.Attempt
		for i := 0; i < len(fetch); i += 500 {
			as, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Brief: true, IDs: fetch[i:min(i+500, len(fetch))]})
			if err != nil {
				return nil, err
			}
			fresh = append(fresh, as...)
		}
		replaced := map[*domain.Attempt]bool{}
		for _, a := range fresh {
			if old := s.laddersSeen[a.ID]; old != nil {
				replaced[old] = true
			}
			s.laddersSeen[a.ID] = a
		}
		for _, id := range fetch {
			s.laddersStamp[id] = stamps[id]
		}
		if int64(len(s.laddersSeen)) != count {
			// Attempts were deleted: read all.
			if err := readAll(); err != nil {
				return nil, err
			}
		} else {
			// The list stays sorted: only what changed is sorted and
			// merged in (sorting every attempt again was a tenth of an
			// update).
			all = mergeAttempts(prev.all, replaced, fresh)
		}
	}
	h := &heldState{version: version, all: all, ladders: ladder.BuildMemo(all, s.opts.Ladder, &s.laddersMemo)}
	if s.opts.LiveUpdate {
		h.failureGroups()
	}
	s.held.Store(h)
	return h, nil
}

// compareAttempts is ListAttempts' order (Build keeps it among attempts
// that start together): newest start first (to the microsecond, as the
// database compares), then id, unknown starts last.
func compareAttempts(a, b *domain.Attempt) int {
	if a.StartedAt.IsZero() != b.StartedAt.IsZero() {
		if a.StartedAt.IsZero() {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(b.StartedAt.UnixMicro(), a.StartedAt.UnixMicro()); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// mergeAttempts returns sorted (in compareAttempts' order) less the
// attempts in drop, with fresh added in order.
func mergeAttempts(sorted []*domain.Attempt, drop map[*domain.Attempt]bool, fresh []*domain.Attempt) []*domain.Attempt {
	fresh = slices.Clone(fresh)
	slices.SortFunc(fresh, compareAttempts)
	out := make([]*domain.Attempt, 0, len(sorted)+len(fresh))
	for _, a := range sorted {
		if len(drop) > 0 && drop[a] {
			continue
		}
		for len(fresh) > 0 && compareAttempts(fresh[0], a) < 0 {
			out = append(out, fresh[0])
			fresh = fresh[1:]
		}
		out = append(out, a)
	}
	return append(out, fresh...)
}

// readAllLadderAttempts reads every attempt (brief) and its updated_at.
func (s *server) readAllLadderAttempts(ctx context.Context, v Versioner) error {
	stamps, err := v.Updated(ctx, time.Time{})
	if err != nil {
		return err
	}
	attempts, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Brief: true})
	if err != nil {
		return err
	}
	s.laddersSeen, s.laddersStamp = make(map[string]*domain.Attempt, len(attempts)), stamps
	for _, a := range attempts {
		s.laddersSeen[a.ID] = a
	}
	return nil
}

// laddersClockSlack is how far back an update of the ladders re-reads
// attempts before the last save it saw.
const laddersClockSlack = 2 * time.Second

// attemptLadder is the ladder link of the attempt page; nil when the
// ladders cannot be built (the page still renders; the error is logged).
func (s *server) attemptLadder(ctx context.Context, id string) *ladderData {
	ls, err := s.allLadders(ctx)
	if err != nil {
		s.opts.Logger.Error("web: ladders", "err", err)
		return nil
	}
	if l, r := ladder.ForAttempt(ls, id); l != nil {
		return &ladderData{Ref: refOf(l, r)}
	}
	return nil
}

func refOf(l *ladder.Ladder, r *ladder.Rung) *ladderRef {
	return &ladderRef{ID: l.ID, URL: ladderURL(l.ID), Target: l.Target, Host: l.Host, N: r.N, Rungs: len(l.Rungs), Note: r.Note,
		Body: strings.TrimPrefix(r.Note, fmt.Sprintf("rung %d of ladder %s: ", r.N, l.Target)), Outcome: r.Outcome()}
}

// linkLadders fills the ladder link of each attempts-page row.
func (s *server) linkLadders(ctx context.Context, rows []listRow) {
	if len(rows) == 0 {
		return
	}
	ls, err := s.allLadders(ctx)
	if err != nil {
		s.opts.Logger.Error("web: ladders", "err", err)
		return
	}
	for i := range rows {
		if l, r := ladder.ForAttempt(ls, rows[i].A.ID); l != nil {
			rows[i].Ladder = refOf(l, r)
		}
	}
}

// keepLadders applies the list filters. since/until keep ladders with a
// rung started in [since, until).
func keepLadders(ls []ladder.Ladder, host, target string, since, until time.Time, wall bool) []ladder.Ladder {
	out := []ladder.Ladder{}
	for _, l := range ls {
		if (host != "" && l.Host != host) || (target != "" && l.Target != target) {
			continue
		}
		if !since.IsZero() || !until.IsZero() {
			in := false
			for _, r := range l.Rungs {
				at := r.StartedAt
				if wall {
					at = onWallClock(at)
				}
				if !at.IsZero() && !at.Before(since) && (until.IsZero() || at.Before(until)) {
					in = true
				}
			}
			if !in {
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

func (s *server) laddersPage(c *gin.Context) {
	form := ladderForm{Host: c.Query("host"), Target: c.Query("target"), Since: c.Query("since"), Until: c.Query("until")}
	ld := &ladderData{Form: form}
	data := pageData{Title: "Boot ladders", LD: ld}
	ls, err := s.allLadders(c.Request.Context())
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	hosts, targets := map[string]bool{}, map[string]bool{}
	for _, l := range ls {
		hosts[l.Host], targets[l.Target] = true, true
	}
	ld.Hosts, ld.Targets = withValue(sortedKeys(hosts), form.Host), withValue(sortedKeys(targets), form.Target)
	// Read on each host's clock, as the attempts page does by default.
	since, err1 := parseFormTime(form.Since, time.UTC)
	until, err2 := parseFormTime(form.Until, time.UTC)
	wall := (pageZone{Wall: true}).wallClock(form.Since, form.Until)
	if err1 != nil || err2 != nil {
		ld.Error = "Invalid time filter. Use the date picker or RFC 3339, e.g. 2026-10-01T21:40:00-07:00."
		s.render(c, http.StatusBadRequest, "ladders", data)
		return
	}
	all := keepLadders(ls, form.Host, form.Target, since, until, wall)
	page := 1
	if v := c.Query("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			ld.Error = "Invalid page " + strconv.Quote(v) + ": a page number from 1."
			s.render(c, http.StatusBadRequest, "ladders", data)
			return
		}
		page = n
	}
	ld.List, ld.Nav = pageOf(all, page, laddersPerPage, c.Request.URL.Query())
	s.render(c, http.StatusOK, "ladders", data)
}

// laddersPerPage is how many ladders the ladders page shows at once:
// rendering all of a fleet's was most of the page's time.
const laddersPerPage = 100

// pageOf is page n (from 1) of list, per rows a page, and the links to
// the pages around it, keeping the query q's other parameters.
func pageOf[T any](list []T, n, per int, q url.Values) ([]T, *pageNav) {
	from := min((n-1)*per, len(list))
	to := min(from+per, len(list))
	nav := &pageNav{From: from + 1, To: to, Total: len(list)}
	if from == to {
		nav.From = from
	}
	link := func(k int) string {
		v := url.Values{}
		for key, vs := range q {
			if key != "page" {
				v[key] = vs
			}
		}
		if k > 1 {
			v.Set("page", strconv.Itoa(k))
		}
		if len(v) == 0 {
			return "?"
		}
		return "?" + v.Encode()
	}
	if n > 1 {
		nav.First, nav.Prev = link(1), link(min(n-1, (len(list)+per-1)/per))
	}
	if to < len(list) {
		nav.Next = link(n + 1)
	}
	return list[from:to], nav
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// chartDims are the dimensions the chart can plot (?y=).
var chartDims = []string{
	domain.ShapeMaxModelLen, domain.ShapeMaxNumSeqs, ladder.DimContract, domain.ShapeKVCacheTokens,
	domain.ShapeKVCacheMemoryBytes, domain.ShapeMaxConcurrency, domain.ShapeMaxNumBatchedTokens,
	domain.ShapeGPUMemoryUtilization,
}

func (s *server) ladderPage(c *gin.Context) {
	ls, err := s.allLadders(c.Request.Context())
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	l := ladder.Find(ls, c.Param("id"))
	if l == nil {
		s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Ladder not found",
			Message: "No boot ladder has the id " + strconv.Quote(c.Param("id")) + "."})
		return
	}
	y := c.Query("y")
	if !slices.Contains(chartDims, y) {
		y = domain.ShapeMaxModelLen
	}
	ld := &ladderData{L: l, Y: y, YOptions: chartDims}
	ld.WhatIf = whatIfPage(c.Request.Context(), c.Request.URL.Query(), l)
	if p := ld.WhatIf.P; p != nil {
		if ld.WhatIf.ReadyTime, err = s.readyTime(c.Request.Context(), l, *p); err != nil {
			s.serverError(c, err, false)
			return
		}
	}
	ld.Chart = buildChartWith(l, y, ld.WhatIf.point(y))
	dts := make([]string, 0, len(l.KVBytesPerToken))
	for dt := range l.KVBytesPerToken {
		dts = append(dts, dt)
	}
	sort.Strings(dts)
	for _, dt := range dts {
		ld.KVPerDtype = append(ld.KVPerDtype, dtypeFigure{Dtype: dt, Bytes: fmt.Sprintf("%.0f", l.KVBytesPerToken[dt])})
	}
	status := http.StatusOK
	if ld.WhatIf.Invalid != "" {
		status = http.StatusBadRequest // the page still renders, the form names the parameter
	}
	s.render(c, status, "ladder", pageData{Title: "Ladder " + l.Target, LD: ld})
}

// ladderSummaryJSON is a ladder in GET /api/v1/ladders: everything but the
// rungs and boundaries (GET /api/v1/ladders/:id has them).
type ladderSummaryJSON struct {
	ID              string             `json:"id"`
	Host            string             `json:"host"`
	Target          string             `json:"target"`
	TargetFrom      string             `json:"target_from"`
	Engine          string             `json:"engine"`
	Units           []string           `json:"units"`
	StartedAt       string             `json:"started_at,omitempty"`
	EndedAt         string             `json:"ended_at,omitempty"`
	RungCount       int                `json:"rung_count"`
	Passes          int                `json:"passes"`
	CapacityFails   int                `json:"capacity_fails"`
	Others          int                `json:"others"`
	Granularity     int64              `json:"granularity"`
	KVBytesPerToken map[string]float64 `json:"kv_bytes_per_token,omitempty"`
	Next            *ladder.Suggestion `json:"next,omitempty"`
	Notes           []string           `json:"notes"`
	URL             string             `json:"url"`
}

func (s *server) apiLadders(c *gin.Context) {
	var since, until time.Time
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &since}, {"until", &until}} {
		v := c.Query(p.name)
		if v == "" {
			continue
		}
		t, err := when.Query(nil).Parse(v)
		if err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": p.name + " " + err.Error()})
			return
		}
		*p.dst = t
	}
	ls, err := s.allLadders(c.Request.Context())
	if err != nil {
		s.serverError(c, err, true)
		return
	}
	out := []ladderSummaryJSON{}
	for _, l := range keepLadders(ls, c.Query("host"), c.Query("target"), since, until, false) {
		out = append(out, ladderSummaryJSON{
			ID: l.ID, Host: l.Host, Target: l.Target, TargetFrom: l.TargetFrom, Engine: l.Engine, Units: l.Units,
			StartedAt: formatTime(l.StartedAt), EndedAt: formatTime(l.EndedAt), RungCount: len(l.Rungs),
			Passes: l.Passes, CapacityFails: l.CapacityFails, Others: l.Others, Granularity: l.Granularity,
			KVBytesPerToken: l.KVBytesPerToken, Next: l.Next, Notes: l.Notes, URL: "/api/v1/ladders/" + url.PathEscape(l.ID),
		})
	}
	c.JSON(http.StatusOK, gin.H{"ladders": out})
}

func (s *server) apiLadder(c *gin.Context) {
	if l := s.apiFindLadder(c); l != nil {
		c.JSON(http.StatusOK, l)
	}
}

// apiFindLadder returns the ladder of the request's :id, or answers 404
// (500 when the ladders cannot be built) and returns nil.
func (s *server) apiFindLadder(c *gin.Context) *ladder.Ladder {
	ls, err := s.allLadders(c.Request.Context())
	if err != nil {
		s.serverError(c, err, true)
		return nil
	}
	l := ladder.Find(ls, c.Param("id"))
	if l == nil {
		c.JSON(http.StatusNotFound, gin.H{"error": "ladder " + strconv.Quote(c.Param("id")) + " not found"})
	}
	return l
}

// chartView is the ladder chart, laid out on the server: rungs in time
// order on x, the chosen dimension on y.
type chartView struct {
	Width, Height          int
	Left, Right, Top, Base float64
	PlotW, PlotH           float64
	Dim                    string
	Points                 []chartPoint
	Line                   string // polyline points of the rungs that have a value
	Ticks                  []chartTick
	Guides                 []chartGuide
	Missing                []int // rungs without a value
	// Predicted is the what-if shape, drawn after the last rung; nil: none.
	Predicted *predictedPoint
}

type chartPoint struct {
	N       int
	X, Y    float64
	HasY    bool
	Class   string
	Title   string
	Label   string
	AttURL  string
	Outcome string
}

type chartTick struct {
	Y     float64
	Label string
}

// chartGuide is a boundary of the plotted dimension: a dashed line at the
// highest passing and the lowest failing value.
type chartGuide struct {
	Y     float64
	DY    int // label offset: above a fail line, below a pass line
	Class string
	Label string
}

// chartValue is a rung's value of dimension dim.
func chartValue(r ladder.Rung, dim string) (float64, bool) {
	if dim == ladder.DimContract {
		n, ok1 := r.Shape.Int(domain.ShapeMaxNumSeqs)
		m, ok2 := r.Shape.Int(domain.ShapeMaxModelLen)
		return float64(n * m), ok1 && ok2
	}
	return r.Shape.Float(dim)
}

func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// buildChartWith builds the chart of l's rungs along dim, with a predicted
// shape drawn after the last rung (nil: none).
func buildChartWith(l *ladder.Ladder, dim string, pred *predictedPoint) *chartView {
	ch := &chartView{Width: 960, Height: 320, Left: 90, Right: 940, Top: 24, Base: 272, Dim: dim}
	ch.PlotW, ch.PlotH = ch.Right-ch.Left, ch.Base-ch.Top
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range l.Rungs {
		if v, ok := chartValue(r, dim); ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if pred != nil && pred.HasY {
		lo, hi = math.Min(lo, pred.Value), math.Max(hi, pred.Value)
	}
	var guides []struct {
		v            float64
		class, label string
	}
	for _, b := range l.Boundaries {
		if b.Dimension != dim || b.Kind != ladder.KindBoot || (b.Status != ladder.StatusFound && b.Status != ladder.StatusOpen) {
			continue
		}
		guides = append(guides,
			struct {
				v            float64
				class, label string
			}{float64(*b.Pass), "ok", "passes at " + formatValue(float64(*b.Pass)) + " (" + b.AtText + ")"},
			struct {
				v            float64
				class, label string
			}{float64(*b.Fail), "fail", "fails at " + formatValue(float64(*b.Fail)) + " (" + b.AtText + ")"})
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	yOf := func(v float64) float64 { return ch.Base - (v-lo)/(hi-lo)*(ch.Base-ch.Top) }
	n := len(l.Rungs)
	if pred != nil {
		n++
	}
	step := (ch.Right - ch.Left) / float64(max(n, 1))
	var line []string
	for i, r := range l.Rungs {
		p := chartPoint{N: r.N, X: round1(ch.Left + step*(float64(i)+0.5)), Class: outcomeClass(r), Outcome: r.Outcome(), AttURL: attemptURL(r.AttemptID)}
		v, ok := chartValue(r, dim)
		val := "no value"
		if ok {
			p.HasY, p.Y = true, round1(yOf(v))
			val = formatValue(v)
			line = append(line, fmt.Sprintf("%g,%g", p.X, p.Y))
		} else {
			ch.Missing = append(ch.Missing, r.N)
		}
		p.Label = val
		p.Title = fmt.Sprintf("rung %d: %s = %s; %s; %s (%s)", r.N, dim, val, r.Summary, r.Verdict, r.Outcome())
		ch.Points = append(ch.Points, p)
	}
	ch.Line = strings.Join(line, " ")
	if pred != nil {
		pred.X = round1(ch.Left + step*(float64(len(l.Rungs))+0.5))
		if pred.HasY {
			pred.Y = round1(yOf(pred.Value))
		}
		ch.Predicted = pred
	}
	tstep := niceStep((hi - lo) / 4)
	// By index, at most a dozen: with values near 2^63 (a log line states
	// what it likes) v += tstep no longer moves v, and a range that
	// overflowed gives a step of 1.
	start := math.Ceil(lo/tstep) * tstep
	for i := 0; i < 12; i++ {
		v := start + float64(i)*tstep
		if v > hi || math.IsNaN(v) {
			break
		}
		ch.Ticks = append(ch.Ticks, chartTick{Y: round1(yOf(v)), Label: strconv.FormatFloat(v, 'f', decimals(tstep), 64)})
	}
	for _, g := range guides {
		if g.v >= lo && g.v <= hi {
			dy := 13
			if g.class == "fail" {
				dy = -4
			}
			ch.Guides = append(ch.Guides, chartGuide{Y: round1(yOf(g.v)), DY: dy, Class: g.class, Label: g.label})
		}
	}
	return ch
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// niceStep rounds a tick step up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// decimals is how many decimals the labels of a tick step need.
func decimals(step float64) int {
	d := 0
	for step != math.Trunc(step) && d < 6 {
		step *= 10
		d++
	}
	return d
}
