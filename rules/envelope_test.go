package rules

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/randline"
)

// checkEnvelopeNames fails t where procName, bracketInner or levelName,
// read from a prefix's match, is not the regexp's submatch 1 of s.
func checkEnvelopeNames(t *testing.T, s string) int {
	t.Helper()
	found := 0
	for _, c := range []struct {
		name string
		p    PrefixRegexp
		sub  func(string) string
	}{{"procName", procPrefix, procName}, {"bracketInner", bracketPrefix, bracketInner}, {"levelName", levelPrefix, levelName}} {
		want := c.p.Regexp.FindStringSubmatch(s)
		m := c.p.FindString(s)
		if (m != "") != (want != nil) {
			t.Fatalf("%s: FindString(%q) = %q, regexp %q", c.name, s, m, want)
		}
		if m == "" {
			continue
		}
		found++
		if got := c.sub(m); m != want[0] || got != want[1] {
			t.Fatalf("%s of %q = %q, regexp %q", c.name, s, got, want)
		}
	}
	return found
}

// TestEnvelopeNames: the envelope's names read from the prefixes' matches
// are the regexps' submatches, on every bundled message and on random
// lines built from the prefixes' grammar.
func TestEnvelopeNames(t *testing.T) {
	found := 0
	for _, m := range bundledMessages(t) {
		found += checkEnvelopeNames(t, strings.TrimLeft(m, " \t"))
	}
	if found == 0 {
		t.Fatal("no bundled message has a prefix: the test does not exercise it")
	}
	r := rand.New(rand.NewPCG(5, 6))
	parts := []string{"(", ")", "[", "]", ":", ",", " ", "\t", "pid=", "1", " rank=2 ", ", ip=10.0.0.1", "rank0", "A", "b.c",
		"INFO", "WARN", "WARNING", "ERR", "ERROR", "é", "-"}
	for range 200000 {
		checkEnvelopeNames(t, randline.Join(r, parts, 7))
	}
}

func FuzzEnvelopeNames(f *testing.F) {
	for _, s := range []string{"(EngineCore_DP0 pid=12) x", "(ServeReplica:app:LLM pid=3, ip=10.0.0.1) ", "[rank0]: x", "[core.py:708] x", "WARNING: x", "ERR x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkEnvelopeNames(t, s) })
}
