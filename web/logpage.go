package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// GET /attempts/:id/log is the attempt's own log as the tracker kept it
// (domain.LogHead first lines, domain.LogTail last), laid out as the
// attempt page lays out its evidence (logview.go): numbered lines, lines
// not kept shown as a gap with their count, cited lines highlighted, the
// decisive words marked, and each error line linked to the next (lnav's
// "jump to next error").

// logPage is the data of the log page.
type logPage struct {
	Lines  []logLine
	Total  int // lines the attempt had
	Kept   int
	Errors int
}

func (s *server) attemptLogPage(c *gin.Context) {
	ctx := c.Request.Context()
	a, err := s.db.GetAttempt(ctx, c.Param("id"))
	if errors.Is(err, domain.ErrNotFound) {
		s.render(c, http.StatusNotFound, "notfound", pageData{Title: "Attempt not found",
			Message: "No boot attempt has the id " + strconv.Quote(c.Param("id")) + "."})
		return
	}
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	zone, err := s.zone(c)
	if err != nil {
		s.render(c, http.StatusBadRequest, "notfound", pageData{Title: "Bad time zone", Message: err.Error()})
		return
	}
	a = zone.localize(a)
	loc := a.StartedAt.Location()
	if a.StartedAt.IsZero() {
		loc = nil
	}
	l, err := s.db.AttemptLog(ctx, a.ID, loc)
	if err != nil {
		s.serverError(c, err, false)
		return
	}
	lp := &logPage{Lines: buildFullLog(a, l), Total: l.Total, Kept: len(l.Lines)}
	lp.Errors = numberErrors(lp.Lines)
	title := a.Unit + " · log"
	if a.Unit == "" {
		title = a.ID + " · log"
	}
	s.render(c, http.StatusOK, "log", pageData{Title: title, A: a, FullLog: lp, Decisive: decisiveRow(lp.Lines), Zone: zone})
}

// buildFullLog lays out the kept lines of l: cited lines (a's evidence and
// context that is evidence) highlighted, the verdict's match marked, gaps
// between kept lines counted.
func buildFullLog(a *domain.Attempt, l *domain.AttemptLog) []logLine {
	match, decisiveMsg := decisiveMatch(a)
	// Log lines keep no cursor: a cited line is known by its time and text.
	cited := map[string]bool{}
	for _, e := range a.Evidence {
		cited[e.Time.Format(time.RFC3339Nano)+"\x00"+e.Message] = true
	}
	out := make([]logLine, 0, len(l.Lines))
	next := 0 // the seq the next line would have without a gap
	marked := false
	for _, ln := range l.Lines {
		ll := logLine{Time: ln.Time, N: ln.Seq + 1, Skipped: ln.Seq - next,
			Evidence: cited[ln.Time.Format(time.RFC3339Nano)+"\x00"+ln.Message], Error: rules.IsErrorText(ln.Message)}
		m := ""
		if !marked && match != "" && ln.Message == decisiveMsg {
			m = match
		}
		ll.Rows, ll.Decisive = layoutLine(ln.Message, m)
		if ll.Decisive {
			marked = true
			ll.Anchor = "decisive"
		}
		out = append(out, ll)
		next = ln.Seq + 1
	}
	return out
}
