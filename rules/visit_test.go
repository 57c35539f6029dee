package rules

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestRuleVisitOrder compares MatchPrepared, which visits the rules a
// line's candidate bits name (ruleVisit), with asking every rule of
// lineRules in turn, on the bundled journals' messages and the corpus
// logs, for every engine: the same hits, in the same order, with the
// same sequence and count state.
func TestRuleVisitOrder(t *testing.T) {
	s, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := bundledMessages(t)
	logs, _ := filepath.Glob("../testdata/corpus/*/log.txt")
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	var engines []string
	for e := range s.lineRules {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	hits := 0
	for _, engine := range engines {
		seqA, seqB := SeqState{}, SeqState{}
		for _, line := range lines {
			env := LineEnv{Line: line, Engine: engine, Error: true}
			envB := env
			got := s.MatchPrepared(s.NewLine(line), &env, seqA)
			want := askEveryRule(s, s.NewLine(line), &envB, seqB)
			if len(got) != len(want) {
				t.Fatalf("%s: %q: %d hits, asking every rule %d", engine, line, len(got), len(want))
			}
			for i := range got {
				if got[i].Rule != want[i].Rule || got[i].At != want[i].At || got[i].End != want[i].End || !reflect.DeepEqual(got[i].Captures, want[i].Captures) {
					t.Fatalf("%s: %q: hit %d is %s, asking every rule %s", engine, line, i, got[i].Rule.ID, want[i].Rule.ID)
				}
			}
			hits += len(got)
		}
	}
	if hits < 100 {
		t.Fatalf("only %d hits: the lines test little", hits)
	}
}

// askEveryRule is MatchPrepared as it was before ruleVisit: every rule of
// lineRules in turn.
func askEveryRule(s *Set, l *Line, env *LineEnv, seq SeqState) []Hit {
	var hits []Hit
	var c matchCache
	for _, r := range s.lineRules[env.Engine] {
		if r.after == nil && r.count == nil {
			if !l.may(r.matchID) {
				continue
			}
			if h, ok := r.matchLine(l, env, &c); ok {
				hits = append(hits, h)
			}
			continue
		}
		if h, ok := r.step(l, env, seq, &c); ok {
			hits = append(hits, h)
		}
	}
	return hits
}
