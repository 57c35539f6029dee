package domain

import (
	"testing"
	"time"
)

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
