package rules

import (
	"testing"
	"time"
)

func TestZoneOf(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	// The night fixture: vLLM printed 21:40:04 local at 04:40:04 UTC the next day.
	at := time.Date(2026, 10, 2, 4, 40, 4, 200000000, time.UTC)
	for line, want := range map[string]string{
		"(APIServer pid=1) INFO 10-01 21:40:04 [api_server.py:1885] vLLM API server version 0.19.2": "-07:00",
		"[2026-10-02 10:10:04 TP0] Load weight begin. avail mem=23.30 GB":                           "+05:30",
		"[2026-10-02 04:40:03] Init torch distributed begin.":                                       "Z",
	} {
		t.Run(line, func(t *testing.T) {
			loc, ok := set.ZoneOf(line, at)
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
			if _, ok := set.ZoneOf(line, at); ok {
				t.Errorf("%q: inferred a zone", line)
			}
		})
	}
}
