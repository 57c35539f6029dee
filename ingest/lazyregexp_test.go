package ingest

import (
	"regexp"
	"testing"
)

// TestLazyRegexpsCompile: every pattern compiled on first use compiles
// (a typo fails here, not in an operator's run), and once.
func TestLazyRegexpsCompile(t *testing.T) {
	all := []func() *regexp.Regexp{syslogLine, isoSyslogLine, criLine, stampLine, columnLine,
		catalogLine, catalogUnit, catUnitMessage, unitName, logLike}
	for _, um := range unitMessages {
		all = append(all, um.re)
	}
	for _, re := range all {
		if first := re(); first == nil || re() != first {
			t.Errorf("%v: not one compiled Regexp", first)
		}
	}
}
