package tracker_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/llmfleet/analyzer/domain"
)

type corpusCase struct {
	ID       string `yaml:"id"`
	Engine   string `yaml:"engine"`
	Verdict  string `yaml:"expected_verdict"`
	Phase    string `yaml:"expected_phase"`
	Evidence string `yaml:"evidence"`
}

// knownFailures reads testdata/corpus-known-failures.txt: "case-id reason".
func knownFailures(t *testing.T) map[string]string {
	f, err := os.Open("testdata/corpus-known-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		out[id] = reason
	}
	return out
}

// TestCorpus runs every real bug-report log of ../shared/corpus through the
// analyzer and checks the expected verdict, phase and evidence line. Cases
// listed in testdata/corpus-known-failures.txt are reported, not failed; a
// listed case that now passes must be removed from the list.
func TestCorpus(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(sharedDir, "corpus", "*"))
	if len(dirs) == 0 {
		t.Fatal("no corpus cases")
	}
	known := knownFailures(t)
	var n, verdictOK, phaseOK, evidenceOK, falseReady int
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
		if err != nil {
			continue
		}
		var c corpusCase
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		n++
		attempts := analyzeFile(t, filepath.Join(dir, "log.txt"))
		var problems []string
		if len(attempts) == 0 {
			problems = append(problems, "no attempt")
		} else {
			a := pickAttempt(attempts, c.Evidence)
			if string(a.Verdict) == c.Verdict {
				verdictOK++
			} else {
				problems = append(problems, "verdict want "+c.Verdict+" got "+string(a.Verdict))
				if a.Verdict == domain.VerdictReady {
					falseReady++
				}
			}
			if string(a.Phase) == c.Phase {
				phaseOK++
			} else {
				problems = append(problems, "phase want "+c.Phase+" got "+string(a.Phase))
			}
			if c.Evidence == "" || evidenceHas(a, c.Evidence) {
				evidenceOK++
			} else {
				problems = append(problems, "evidence line not in the attempt's evidence")
			}
		}
		id := filepath.Base(dir)
		reason, isKnown := known[id]
		switch {
		case len(problems) > 0 && isKnown:
			t.Logf("known failure %s (%s): %s", id, reason, strings.Join(problems, "; "))
		case len(problems) > 0:
			t.Errorf("%s: %s", id, strings.Join(problems, "; "))
		case isKnown:
			t.Errorf("%s passes now: remove it from testdata/corpus-known-failures.txt", id)
		}
	}
	t.Logf("corpus: verdict %d/%d, phase %d/%d, evidence %d/%d, false ready %d", verdictOK, n, phaseOK, n, evidenceOK, n, falseReady)
	if falseReady > 0 {
		t.Errorf("%d failed boots were called ready", falseReady)
	}
}

func evidencePrefix(ev string) string {
	ev = strings.Trim(ev, "'")
	if len(ev) > 60 {
		ev = ev[:60]
	}
	return ev
}

func evidenceHas(a *domain.Attempt, ev string) bool {
	p := evidencePrefix(ev)
	for _, e := range a.Evidence {
		if strings.Contains(e.Message, p) {
			return true
		}
	}
	// The scorer joins evidence lines with spaces.
	var all []string
	for _, e := range a.Evidence {
		all = append(all, e.Message)
	}
	return strings.Contains(strings.Join(all, " "), p)
}

// pickAttempt chooses, like ../shared/tools/score.py, the last attempt whose
// evidence holds the expected line, else the last attempt.
func pickAttempt(attempts []*domain.Attempt, ev string) *domain.Attempt {
	var pick *domain.Attempt
	if ev != "" {
		for _, a := range attempts {
			if evidenceHas(a, ev) {
				pick = a
			}
		}
	}
	if pick == nil {
		pick = attempts[len(attempts)-1]
	}
	return pick
}
