package tracker_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
)

// The shared fixtures as the repository holds them: the journals in
// examples/, the attempts they must give in testdata/fixtures/. The corpus
// and torch-real logs are only in ../shared beside the repository: their
// tests skip without it (needShared).
const (
	fixtureDir  = "../examples"
	expectedDir = "../testdata/fixtures"
	sharedDir   = "../../shared"
)

// needShared skips t when dir, shared material kept beside the repository
// rather than in it, is absent: a checkout alone tests everything else.
func needShared(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("skipped: %s is absent; this test needs the shared material beside the repository (../shared)", dir)
	}
}

// analyzeFile runs one file through ingest and a fresh tracker.
func analyzeFile(t *testing.T, path string) []*domain.Attempt { return fixturetest.Attempts(t, path) }

type expectedAttempt struct {
	Unit                string         `json:"unit"`
	InvocationID        string         `json:"invocation_id"`
	Container           string         `json:"container"`
	Engine              string         `json:"engine"`
	Verdict             string         `json:"verdict"`
	Phase               string         `json:"phase"`
	Evidence            string         `json:"evidence"`
	ExitStatus          *int           `json:"exit_status"`
	EndedBy             *string        `json:"ended_by"`
	RestartCounterAfter *int           `json:"restart_counter_after"`
	ReachedReady        *bool          `json:"reached_ready"`
	Findings            []string       `json:"findings"`
	Shape               map[string]any `json:"shape"`
}

// TestFixturesMatchExpected compares every attempt the analyzer finds in the
// two fixture hosts with the expected files, field by field, and reports
// every difference (not only the first).
func TestFixturesMatchExpected(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*.journal.json"))
	if len(paths) != 2 {
		t.Fatalf("want the 2 fixtures, found %d", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			var exp struct {
				Attempts []expectedAttempt `json:"attempts"`
			}
			data, err := os.ReadFile(filepath.Join(expectedDir, strings.Replace(filepath.Base(p), ".journal.json", ".expected.json", 1)))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatal(err)
			}
			got := analyzeFile(t, p)
			if len(got) != len(exp.Attempts) {
				t.Errorf("want %d attempts, got %d", len(exp.Attempts), len(got))
			}
			for i, e := range exp.Attempts {
				if i >= len(got) {
					t.Errorf("#%d %s %s: missing", i, e.Unit, e.InvocationID)
					continue
				}
				for _, d := range diffAttempt(e, got[i]) {
					t.Errorf("#%d %s %s (%s): %s", i, e.Unit, e.InvocationID, e.Verdict, d)
				}
			}
		})
	}
}

func diffAttempt(e expectedAttempt, a *domain.Attempt) []string {
	var d []string
	cmp := func(name, want, got string) {
		if want != "" && want != got {
			d = append(d, fmt.Sprintf("%s: want %q, got %q", name, want, got))
		}
	}
	cmp("unit", e.Unit, a.Unit)
	cmp("invocation_id", e.InvocationID, a.InvocationID)
	cmp("container", e.Container, a.Container)
	cmp("engine", e.Engine, a.Engine)
	cmp("verdict", e.Verdict, string(a.Verdict))
	cmp("phase", e.Phase, string(a.Phase))
	if e.EndedBy != nil {
		cmp("ended_by", *e.EndedBy, a.EndedBy)
	} else if a.EndedBy != "" {
		d = append(d, fmt.Sprintf("ended_by: want none (still running), got %q", a.EndedBy))
	}
	if e.ExitStatus != nil && (a.ExitStatus == nil || *a.ExitStatus != *e.ExitStatus) {
		d = append(d, fmt.Sprintf("exit_status: want %d, got %v", *e.ExitStatus, fmtIntp(a.ExitStatus)))
	}
	if e.RestartCounterAfter != nil && (a.RestartCounterAfter == nil || *a.RestartCounterAfter != *e.RestartCounterAfter) {
		d = append(d, fmt.Sprintf("restart_counter_after: want %d, got %v", *e.RestartCounterAfter, fmtIntp(a.RestartCounterAfter)))
	}
	if e.ReachedReady != nil && *e.ReachedReady != !a.ReadyAt.IsZero() {
		d = append(d, fmt.Sprintf("reached_ready: want %v", *e.ReachedReady))
	}
	want := append([]string{}, e.Findings...)
	got := a.FindingIDs()
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, ",") != strings.Join(got, ",") {
		d = append(d, fmt.Sprintf("findings: want %v, got %v", want, got))
	}
	if e.Evidence != "" {
		found := false
		for _, ev := range a.Evidence {
			if strings.Contains(ev.Message, e.Evidence) {
				found = true
			}
		}
		if !found {
			d = append(d, fmt.Sprintf("evidence: no line contains %q", e.Evidence))
		}
	}
	keys := make([]string, 0, len(e.Shape))
	for k := range e.Shape {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !sameValue(e.Shape[k], a.Shape[k]) {
			d = append(d, fmt.Sprintf("shape.%s: want %v, got %v", k, e.Shape[k], a.Shape[k]))
		}
	}
	return d
}

func fmtIntp(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}

// sameValue compares a JSON-decoded expected value with a shape value.
func sameValue(want, got any) bool {
	switch w := want.(type) {
	case float64:
		var g float64
		switch x := got.(type) {
		case int64:
			g = float64(x)
		case float64:
			g = x
		default:
			return false
		}
		return math.Abs(w-g) < 1e-9
	case string:
		s, ok := got.(string)
		return ok && s == w
	case bool:
		b, ok := got.(bool)
		return ok && b == w
	}
	return false
}
