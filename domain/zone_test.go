package domain

import (
	"testing"
	"time"
)

func TestZoneOf(t *testing.T) {
	// The night fixture: vLLM printed 21:40:04 local at 04:40:04 UTC the next day.
	at := time.Date(2026, 10, 2, 4, 40, 4, 200000000, time.UTC)
	for line, want := range map[string]string{
		"(APIServer pid=1) INFO 10-01 21:40:04 [api_server.py:1885] vLLM API server version 0.19.2": "-07:00",
		"[2026-10-02 10:10:04 TP0] Load weight begin. avail mem=23.30 GB":                           "+05:30",
		"[2026-10-02 04:40:03] Init torch distributed begin.":                                       "Z",
	} {
		t.Run(line, func(t *testing.T) {
			loc, ok := ZoneOf(line, at)
			if !ok {
				t.Errorf("%q: no zone", line)
				return
			}
			if got := at.In(loc).Format("Z07:00"); got != want {
				t.Errorf("%q: offset %s, want %s", line, got, want)
			}
		})
	}
	for _, line := range []string{"halogen: config HALOGEN_CTX=262144", "INFO 03-01 21:40:04 [x.py:1] far away"} {
		t.Run(line, func(t *testing.T) {
			if _, ok := ZoneOf(line, at); ok {
				t.Errorf("%q: inferred a zone", line)
			}
		})
	}
}

func TestAttemptInKeepsInstants(t *testing.T) {
	at := time.Date(2026, 10, 2, 4, 40, 0, 0, time.UTC)
	a := &Attempt{StartedAt: at, Evidence: []Evidence{{Time: at.Add(time.Second)}},
		Findings: []Finding{{Time: at, Evidence: []Evidence{{Time: at}}}}, Timeline: []PhaseMark{{Time: at}}}
	loc := time.FixedZone("UTC-07:00", -7*3600)
	b := a.In(loc)
	if !b.StartedAt.Equal(at) || b.StartedAt.Format(time.RFC3339) != "2026-10-01T21:40:00-07:00" {
		t.Errorf("started %s", b.StartedAt.Format(time.RFC3339))
	}
	if b.Evidence[0].Time.Location() != loc || b.Findings[0].Evidence[0].Time.Location() != loc || b.Timeline[0].Time.Location() != loc {
		t.Error("a time kept its old zone")
	}
	if a.StartedAt.Location() != time.UTC {
		t.Error("the original attempt changed")
	}
}
