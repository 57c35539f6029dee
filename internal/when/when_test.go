package when

import (
	"strings"
	"testing"
	"time"
)

// TestParse reads every form with the three parsers in use: the CLI's
// (journalctl and kubectl forms, local zone, relative), the web page's
// (datetime-local in the page's zone) and the JSON API's (RFC 3339 only).
func TestParse(t *testing.T) {
	loc := time.FixedZone("host", -7*3600)
	now := time.Date(2026, 12, 1, 16, 30, 0, 0, time.UTC) // 09:30 at the host
	cli := Parser{Loc: loc, Now: func() time.Time { return now }}
	page := Parser{Loc: loc}
	api := Parser{}
	type want struct {
		cli, page, api time.Time // zero: refused
	}
	rfc := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	offset := time.Date(2026, 10, 1, 21, 40, 0, 0, time.FixedZone("", 2*3600))
	for _, tc := range []struct {
		in string
		want
	}{
		{"2026-01-01T10:00:00Z", want{rfc, rfc, rfc}},
		{"2026-10-01T21:40:00+02:00", want{offset, offset, offset}},
		{"2026-10-01T21:40:00 02:00", want{offset, offset, offset}}, // '+' of a query string decoded as a space
		{"  2026-01-01T10:00:00Z\n", want{rfc, rfc, rfc}},
		{"2026-01-01", want{d(loc, 0, 0, 0), d(loc, 0, 0, 0), time.Time{}}},
		{"2026-01-01 10:00", want{d(loc, 10, 0, 0), d(loc, 10, 0, 0), time.Time{}}},
		{"2026-01-01 10:00:05", want{d(loc, 10, 0, 5), d(loc, 10, 0, 5), time.Time{}}},
		{"2026-01-01T10:00", want{d(loc, 10, 0, 0), d(loc, 10, 0, 0), time.Time{}}},    // datetime-local
		{"2026-01-01T10:00:05", want{d(loc, 10, 0, 5), d(loc, 10, 0, 5), time.Time{}}}, // datetime-local with seconds
		{"today", want{time.Date(2026, 12, 1, 0, 0, 0, 0, loc), time.Time{}, time.Time{}}},
		{"yesterday", want{time.Date(2026, 11, 30, 0, 0, 0, 0, loc), time.Time{}, time.Time{}}},
		{"now", want{now, time.Time{}, time.Time{}}},
		{"-1h", want{now.Add(-time.Hour), time.Time{}, time.Time{}}},
		{"1h30m", want{now.Add(-90 * time.Minute), time.Time{}, time.Time{}}},
		{"30d", want{now.AddDate(0, 0, -30), time.Time{}, time.Time{}}},
		{"-2d", want{now.AddDate(0, 0, -2), time.Time{}, time.Time{}}},
		{"", want{}},
		{"soon", want{}},
		{"2026-13-01", want{}},
		{"--1h", want{}},
		{"1.5d", want{}},
		{"d", want{}},
		{"-3x", want{}},
		{"100001d", want{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			for _, p := range []struct {
				name string
				p    Parser
				want time.Time
			}{{"cli", cli, tc.cli}, {"page", page, tc.page}, {"api", api, tc.api}} {
				got, err := p.p.Parse(tc.in)
				switch {
				case p.want.IsZero() && err == nil:
					t.Errorf("%s: %q parsed as %v", p.name, tc.in, got)
				case p.want.IsZero() && !strings.Contains(err.Error(), "RFC 3339"):
					t.Errorf("%s: error %q does not name the forms", p.name, err)
				case !p.want.IsZero() && (err != nil || !got.Equal(p.want)):
					t.Errorf("%s: %v %v, want %v", p.name, got, err, p.want)
				}
			}
		})
	}
}

// d is 2026-01-01 at h:m:s in loc.
func d(loc *time.Location, h, m, s int) time.Time { return time.Date(2026, 1, 1, h, m, s, 0, loc) }

// TestParseErrors: the error names the input and exactly the forms the
// parser accepts.
func TestParseErrors(t *testing.T) {
	now := func() time.Time { return time.Unix(0, 0) }
	for _, tc := range []struct {
		name string
		p    Parser
		want string
	}{
		{"api", Parser{}, `"soon": want RFC 3339 (e.g. 2026-10-01T21:40:00-07:00)`},
		{"page", Parser{Loc: time.UTC}, `"soon": want RFC 3339 (e.g. 2026-10-01T21:40:00-07:00), 2006-01-02[ 15:04[:05]] or 2006-01-02T15:04[:05]`},
		{"relative only", Parser{Now: now}, `"soon": want RFC 3339, today, yesterday, now or a duration ago (-1h, 30m, 30d)`},
		{"cli", Parser{Loc: time.UTC, Now: now}, `"soon": want RFC 3339, 2006-01-02[ 15:04[:05]], today, yesterday, now or a duration ago (-1h, 30m, 30d)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.p.Parse("soon"); err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
}
