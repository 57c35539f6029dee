package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
)

// Pages read their since/until inputs (datetime-local carries no offset) and
// show their times in one zone, named on the page and chosen with ?tz=:
//
//	host (default)  each host's own offset, as its engines print it; inputs
//	                are read in it when all hosts share one offset, else in UTC
//	UTC             UTC
//	<IANA name>     that zone, e.g. the browser's (page.js fills it in)
type pageZone struct {
	Choice string         // "host", "UTC" or an IANA name
	Show   *time.Location // nil: each time in its host's offset
	Read   *time.Location // where since/until inputs are read
	Label  string         // the zone as the page names it
	Notice string         // why the inputs are not read where the user may think
}

// hostZoneTTL is how long the hosts' offsets are reused between pages.
const hostZoneTTL = 30 * time.Second

// hostZones caches each host's UTC offset, learnt from its newest attempt.
type hostZones struct {
	mu      sync.Mutex
	at      time.Time
	offsets map[string]int // seconds east of UTC
}

// zone reads ?tz=; the error names the allowed values.
func (s *server) zone(c *gin.Context) (pageZone, error) {
	choice := strings.TrimSpace(c.Query("tz"))
	switch {
	case choice == "" || choice == "host":
		return s.hostZone(c.Request.Context()), nil
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

// hostZone is the "host" choice: the hosts' common offset when they share
// one, else UTC for the inputs (each time still shows its host's offset).
func (s *server) hostZone(ctx context.Context) pageZone {
	z := pageZone{Choice: "host", Read: s.opts.Location, Label: "each host's own"}
	offsets := s.hostOffsets(ctx)
	common, first := 0, true
	for _, off := range offsets {
		if first {
			common, first = off, false
		} else if off != common {
			z.Read = time.UTC
			z.Notice = "The hosts are in different zones: times show each host's offset, and the time filter is read in UTC."
			return z
		}
	}
	if !first {
		z.Read = time.FixedZone("", common)
		z.Label = "the hosts' (" + time.Unix(0, 0).In(z.Read).Format("-07:00") + ")"
	}
	return z
}

// hostOffsets returns each host's offset, refreshed every hostZoneTTL.
func (s *server) hostOffsets(ctx context.Context) map[string]int {
	s.zones.mu.Lock()
	defer s.zones.mu.Unlock()
	if s.zones.offsets != nil && time.Since(s.zones.at) < hostZoneTTL {
		return s.zones.offsets
	}
	hosts, _, _, _, err := s.db.Facets(ctx)
	if err != nil {
		return s.zones.offsets
	}
	out := map[string]int{}
	for _, h := range hosts {
		as, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Host: h, Limit: 1, Brief: true})
		if err != nil || len(as) == 0 || as[0].StartedAt.IsZero() {
			continue
		}
		_, off := as[0].StartedAt.Zone()
		out[h] = off
	}
	s.zones.offsets, s.zones.at = out, time.Now()
	return out
}

// localize moves a's times into the page's zone (no change for "host").
func (z pageZone) localize(a *domain.Attempt) {
	loc := z.Show
	if loc == nil {
		return
	}
	in := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.In(loc)
		}
	}
	in(&a.StartedAt)
	in(&a.EndedAt)
	in(&a.ReadyAt)
	for i := range a.Timeline {
		in(&a.Timeline[i].Time)
	}
	for i := range a.Findings {
		in(&a.Findings[i].Time)
		for k := range a.Findings[i].Evidence {
			in(&a.Findings[i].Evidence[k].Time)
		}
	}
	for i := range a.Evidence {
		in(&a.Evidence[i].Time)
	}
	for i := range a.Context {
		in(&a.Context[i].Time)
	}
}
