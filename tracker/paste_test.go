package tracker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// TestPastedJournalFormats renders the bundled journals with the real
// journalctl (from journal files systemd-journal-remote writes) as an
// operator would paste them, in every text format journalctl has, and
// checks that the pastes give the attempts of the JSON capture: the same
// units, verdicts, phases, findings, exit statuses, ends and restart
// counters. `-o cat` keeps only the messages, so only its verdicts and the
// findings that need no clock are compared.
func TestPastedJournalFormats(t *testing.T) {
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Skip("needs journalctl")
	}
	for _, name := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		src := filepath.Join("..", "examples", name+".journal.json")
		file := filepath.Join(t.TempDir(), name+".journal")
		journaldtest.AppendJournal(t, file, journaldtest.ExportRecords(t, src, ""))
		want := analyzeFile(t, src)
		for _, format := range []string{"short", "short-iso", "short-precise", "short-iso-precise", "cat"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				cmd := exec.Command("journalctl", "--file", file, "-o", format, "--all", "--no-pager")
				cmd.Env = append(os.Environ(), "TZ=UTC", "LC_ALL=C")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("journalctl: %v", err)
				}
				paste := filepath.Join(t.TempDir(), "paste.txt")
				if err := os.WriteFile(paste, out, 0o644); err != nil {
					t.Fatal(err)
				}
				got := analyzeFile(t, paste)
				if len(got) != len(want) {
					t.Fatalf("%d attempts, want %d", len(got), len(want))
				}
				for i := range want {
					g, w := summary(got[i], format == "cat"), summary(want[i], format == "cat")
					if g != w {
						t.Errorf("attempt %d:\n got %s\nwant %s", i, g, w)
					}
				}
			})
		}
	}
}

// summary is what a paste must keep of an attempt (withoutClock: what
// -o cat can keep).
func summary(a *domain.Attempt, withoutClock bool) string {
	var findings []string
	for _, id := range a.FindingIDs() {
		if withoutClock && id == domain.FindingBootNotSurvivable {
			continue // needs the time from ready to the death
		}
		findings = append(findings, id)
	}
	slices.Sort(findings)
	if withoutClock {
		return fmt.Sprintf("%s %v", a.Verdict, findings)
	}
	status, restarts := "-", "-"
	if a.ExitStatus != nil {
		status = fmt.Sprint(*a.ExitStatus)
	}
	if a.RestartCounterAfter != nil {
		restarts = fmt.Sprint(*a.RestartCounterAfter)
	}
	return fmt.Sprintf("%s %s %s %s [%s] exit=%s by=%s restarts=%s", a.Unit, a.Engine, a.Verdict, a.Phase,
		strings.Join(findings, " "), status, a.EndedBy, restarts)
}
