package web

import (
	"bytes"
	"context"
	"html/template"
	"slices"

	"github.com/llmfleet/analyzer/domain"
)

// The attempts page without filters and the failure groups are answered
// from the brief attempts the server holds for the ladders (allLadders
// keeps them current from the attempts whose updated_at moved) instead of
// reading the database on each request: under live ingest those reads were
// most of a page's time.

// unfiltered reports whether f selects every attempt from the first on
// (Limit and Brief aside).
func unfiltered(f domain.AttemptFilter) bool {
	return f.Host == "" && f.Unit == "" && f.Engine == "" && f.Verdict == "" &&
		len(f.Hosts) == 0 && len(f.Units) == 0 && len(f.Engines) == 0 && len(f.Verdicts) == 0 &&
		len(f.Findings) == 0 && !f.Failed && f.Group == "" && f.Search == "" && f.Cursor == nil &&
		f.Since.IsZero() && f.Until.IsZero() && len(f.IDs) == 0
}

// heldPage is PageAttempts of an unfiltered brief first page, from the
// held attempts; ok is false when f is another query or nothing is held
// (then the caller asks the store).
func (s *server) heldPage(ctx context.Context, f domain.AttemptFilter) (p domain.AttemptPage, ok bool) {
	if !unfiltered(f) || !f.Brief || f.Limit <= 0 {
		return p, false
	}
	all, ok, err := s.heldAttempts(ctx)
	if err != nil {
		s.opts.Logger.Error("web: ladders", "err", err)
	}
	if err != nil || !ok {
		return p, false
	}
	n := min(f.Limit, len(all))
	p = domain.AttemptPage{Attempts: slices.Clone(all[:n]), Total: len(all)}
	if n > 0 && n < len(all) {
		p.Next = domain.CursorOf(all[n-1])
	}
	return p, true
}

// heldGroups returns the failure groups of all held attempts and their
// indexes by group id, computed once per database version; ok is false
// without a Versioner store. Callers must not modify them.
func (s *server) heldGroups(ctx context.Context) (gs []domain.FailureGroup, byID map[string]int, ok bool, err error) {
	if _, ok := s.db.(Versioner); !ok {
		return nil, nil, false, nil
	}
	h, err := s.heldNow(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	gs, byID = h.failureGroups()
	return gs, byID, true, nil
}

// onlyGroup reports whether f narrows the failed attempts by group id at
// most (Failed changes nothing there, Limit cuts the list).
func onlyGroup(f domain.AttemptFilter) bool {
	f.Group, f.Failed = "", false
	return unfiltered(f) && !f.WallClock
}

// rowKey is what a row of the attempts page shows: a held attempt (a
// changed attempt is another *Attempt), the zone its times are shown in
// and its ladder link.
type rowKey struct {
	a       *domain.Attempt
	zone    string
	ladder  ladderRef
	hasLink bool
}

// maxRows bounds the rows renderRows keeps; past it they are dropped.
const maxRows = 4 * MaxAPILimit

// renderRows fills each row's HTML from the list template's "row". held,
// when not nil, are the held attempts of the rows (before localizing):
// their rows are kept and reused while the attempt, zone and ladder link
// stay the same, as executing the template was most of the page's time.
func (s *server) renderRows(rows []listRow, held []*domain.Attempt, zone pageZone) error {
	zoneName := ""
	if zone.Show != nil {
		zoneName = zone.Show.String()
	}
	var buf bytes.Buffer
	for i := range rows {
		r := &rows[i]
		var k rowKey
		if held != nil {
			k = rowKey{a: held[i], zone: zoneName, hasLink: r.Ladder != nil}
			if r.Ladder != nil {
				k.ladder = *r.Ladder
			}
			s.rowsMu.Lock()
			h, ok := s.rows[k]
			s.rowsMu.Unlock()
			if ok {
				r.HTML = h
				continue
			}
		}
		r.Summary = r.A.Shape.Summary()
		buf.Reset()
		if err := s.pages["list"].ExecuteTemplate(&buf, "row", r); err != nil {
			return err
		}
		r.HTML = template.HTML(buf.String()) //nolint:gosec // html/template's own output
		if held != nil {
			s.rowsMu.Lock()
			if s.rows == nil || len(s.rows) >= maxRows {
				s.rows = map[rowKey]template.HTML{}
			}
			s.rows[k] = r.HTML
			s.rowsMu.Unlock()
		}
	}
	return nil
}
