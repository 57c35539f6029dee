// Package when reads the points in time that bound a search: the CLI's
// --since and --until (explain, replay --from-loki, serve's journal
// catch-up) and the web UI's and API's since and until. One Parser reads
// all of them; its fields say which forms a caller accepts.
package when

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// localLayouts are the forms without a zone: a date, a date and time as
// journalctl writes them, and what an HTML datetime-local input sends
// (with or without seconds).
var localLayouts = []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// Parser reads a point in time. RFC 3339 is always accepted, also with
// the '+' of the offset turned into a space (an unencoded query string).
// The zero Parser accepts nothing else, as the JSON API wants.
type Parser struct {
	// Loc, when set, also accepts the forms without a zone, read in Loc:
	// "2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05",
	// "2006-01-02T15:04" and "2006-01-02T15:04:05" (datetime-local).
	Loc *time.Location
	// Now, when set, also accepts the relative forms of journalctl and
	// kubectl --since: "now", "today" and "yesterday" (midnight in Loc,
	// UTC without one) and a duration ago, "-1h", "1h30m" or whole days
	// "30d" (the sign is optional).
	Now func() time.Time
}

// Query is the parser of the web pages' and the JSON API's since and
// until: the CLI's grammar (RFC 3339, dates, today, yesterday, now, a
// duration ago), the forms without a zone read in loc, UTC when loc is
// nil, so whatever --since takes, since= takes.
func Query(loc *time.Location) Parser {
	if loc == nil {
		loc = time.UTC
	}
	return Parser{Loc: loc, Now: time.Now}
}

// Parse reads s (surrounding blanks ignored). The error names s and the
// forms p accepts.
func (p Parser) Parse(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, strings.ReplaceAll(s, " ", "+")); err == nil {
		return t, nil
	}
	if p.Loc != nil {
		for _, layout := range localLayouts {
			if t, err := time.ParseInLocation(layout, s, p.Loc); err == nil {
				return t, nil
			}
		}
	}
	if p.Now != nil {
		if t, ok := p.relative(s); ok {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want %s", s, p.forms())
}

// relative reads the forms relative to p.Now.
func (p Parser) relative(s string) (time.Time, bool) {
	now := p.Now()
	loc := p.Loc
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, loc)
	switch s {
	case "now":
		return now, true
	case "today":
		return midnight, true
	case "yesterday":
		return midnight.AddDate(0, 0, -1), true
	}
	ago := strings.TrimPrefix(s, "-")
	if d, err := time.ParseDuration(ago); err == nil && d >= 0 {
		return now.Add(-d), true
	}
	if days, ok := strings.CutSuffix(ago, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 100000 {
			return now.AddDate(0, 0, -n), true
		}
	}
	return time.Time{}, false
}

// forms describes what p accepts, for errors.
func (p Parser) forms() string {
	switch {
	case p.Loc == nil && p.Now == nil:
		return "RFC 3339 (e.g. 2026-10-01T21:40:00-07:00)"
	case p.Now == nil:
		return "RFC 3339 (e.g. 2026-10-01T21:40:00-07:00), 2006-01-02[ 15:04[:05]] or 2006-01-02T15:04[:05]"
	case p.Loc == nil:
		return "RFC 3339, today, yesterday, now or a duration ago (-1h, 30m, 30d)"
	}
	return "RFC 3339, 2006-01-02[ 15:04[:05]], today, yesterday, now or a duration ago (-1h, 30m, 30d)"
}
