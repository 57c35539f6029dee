package main

import (
	"time"

	"github.com/llmfleet/analyzer/internal/when"
)

// parseWhen reads --since as when.Parser does with loc and the relative
// forms of journalctl and kubectl. Only journal.go's --since calls it; that
// file is being moved out of cmd/analyzer, which can then call when.Parser
// directly and drop this.
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	return when.Parser{Loc: loc, Now: func() time.Time { return now }}.Parse(s)
}
