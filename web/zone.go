package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
)

// Pages read their since/until inputs (datetime-local carries no offset) and
// show their times in one zone, named on the page and chosen with ?tz=:
//
//	host (default)  each host's own clock, as its engines print it: times
//	                show the host's offset, and 00:00 in the filter is
//	                midnight on every host (domain.AttemptFilter.WallClock)
//	UTC             UTC
//	<IANA name>     that zone, e.g. the browser's (page.js fills it in)
type pageZone struct {
	Choice string         // "host", "UTC" or an IANA name
	Show   *time.Location // nil: each time in its host's offset
	Read   *time.Location // where since/until inputs are read
	Wall   bool           // inputs are read on each host's own clock
	Label  string         // the zone as the page names it
	Notice string         // why the zone is not the one asked for
}

// zone reads ?tz=; the error names the allowed values.
func (s *server) zone(c *gin.Context) (pageZone, error) {
	choice := strings.TrimSpace(c.Query("tz"))
	switch {
	case choice == "" || choice == "host":
		return pageZone{Choice: "host", Read: time.UTC, Wall: true, Label: "each host's own"}, nil
	case strings.EqualFold(choice, "utc"):
		return pageZone{Choice: "UTC", Show: time.UTC, Read: time.UTC, Label: "UTC"}, nil
	case choice == "browser":
		// The form sends "browser" when page.js did not replace it with
		// the browser's zone name (scripts off).
		return pageZone{Choice: "UTC", Show: time.UTC, Read: time.UTC, Label: "UTC",
			Notice: "The browser did not say its zone (scripts are off), so times are in UTC."}, nil
	}
	loc, err := time.LoadLocation(choice)
	if err != nil || choice == "Local" {
		return pageZone{}, fmt.Errorf("tz: unknown zone %q: use host, UTC or an IANA zone name such as Europe/Berlin", choice)
	}
	return pageZone{Choice: choice, Show: loc, Read: loc, Label: choice}, nil
}

// wallClock tells whether the since/until values v are clock readings to
// compare on each host's clock: the zone is the hosts' and no value names
// an offset of its own (RFC 3339 does).
func (z pageZone) wallClock(vs ...string) bool {
	if !z.Wall {
		return false
	}
	for _, v := range vs {
		if _, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
			return false
		}
	}
	return true
}

// onWallClock is t's clock reading as if it were UTC, to compare wall
// clocks of different offsets.
func onWallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}

// localize returns a with its times in the page's zone (a itself for
// "host").
func (z pageZone) localize(a *domain.Attempt) *domain.Attempt {
	if z.Show == nil {
		return a
	}
	return a.In(z.Show)
}
