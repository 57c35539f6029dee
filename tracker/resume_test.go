package tracker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

func readEntries(t *testing.T, path string) []domain.Entry {
	t.Helper()
	var out []domain.Entry
	if _, err := ingest.ReadFile(context.Background(), path, ingest.Options{}, func(e domain.Entry) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func judgeAll(set *rules.Set, entries []domain.Entry) map[string]string {
	tr := tracker.New(set, tracker.Options{})
	for _, e := range entries {
		tr.Add(e)
	}
	out := map[string]string{}
	for _, a := range tr.Attempts() {
		b, _ := json.Marshal(a)
		out[a.ID] = string(b)
	}
	return out
}

// TestReplayCursorRebuildsOpenAttempts is the property a restarted follower
// relies on: cut the journal anywhere, re-read it from the tracker's
// ReplayCursor, and every attempt still open at the cut (or started after
// it) comes out exactly as in an uninterrupted run.
func TestReplayCursorRebuildsOpenAttempts(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	entries := readEntries(t, filepath.Join(fixtureDir, "dankserver-night-ladder.journal.json"))
	whole := judgeAll(set, entries)
	total := 0
	for _, cut := range []int{1, 37, 120, 333, 500, 611, 777, len(entries) - 1} {
		tr := tracker.New(set, tracker.Options{})
		for _, e := range entries[:cut] {
			tr.Add(e)
		}
		ended := map[string]bool{}
		for _, a := range tr.Attempts() {
			if a.EndedBy != "" {
				ended[a.ID] = true
			}
		}
		from := 0
		if rc := tr.ReplayCursor(); rc != "" {
			from = -1
			for i, e := range entries {
				if e.Cursor == rc {
					from = i
				}
			}
			if from < 0 {
				t.Fatalf("cut %d: replay cursor %q is not an entry cursor", cut, rc)
			}
		} else {
			from = cut
		}
		if from > cut {
			t.Fatalf("cut %d: replay cursor lies after the cut (%d)", cut, from)
		}
		again := judgeAll(set, entries[from:])
		checked := 0
		for id, want := range whole {
			if ended[id] {
				continue // saved before the cut, final already
			}
			got, ok := again[id]
			if !ok {
				t.Errorf("cut %d: attempt %s lost after the restart", cut, id)
				continue
			}
			if got != want {
				t.Errorf("cut %d: attempt %s differs after the restart:\n got %s\nwant %s", cut, id, got, want)
			}
			checked++
		}
		if rc := tr.ReplayCursor(); (rc == "") != (checked == 0) && cut < len(entries)-1 {
			t.Errorf("cut %d: replay cursor %q but %d open attempts checked", cut, rc, checked)
		}
		total += checked
	}
	if total < 8 {
		t.Errorf("only %d open attempts checked over all cuts", total)
	}
}

func TestPruneKeepsOpenAndLatest(t *testing.T) {
	set, _ := rules.LoadBuiltin()
	entries := readEntries(t, filepath.Join(fixtureDir, "dankserver-night-ladder.journal.json"))
	tr := tracker.New(set, tracker.Options{})
	for _, e := range entries {
		tr.Add(e)
	}
	before := len(tr.Attempts())
	dropped := tr.Prune(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	after := tr.Attempts()
	if before != 16 || dropped != 14 || len(after) != 2 {
		t.Fatalf("before %d, dropped %d, after %d; want 16, 14, 2 (the latest attempt of each unit)", before, dropped, len(after))
	}
	for _, a := range after {
		if a.InvocationID != "65bd34a85f0c63c83709981b412da342" && a.InvocationID != "f076b1acdc79d2edf85dd616e732bd00" {
			t.Errorf("kept %s %s", a.Unit, a.InvocationID)
		}
	}
}

// TestSurvivableWindow: the oom_runtime rung of the night died 8 min 45 s
// after ready; it is not survivable within the default 30 min window, and
// no longer counts as such with a 5 min window.
func TestSurvivableWindow(t *testing.T) {
	set, _ := rules.LoadBuiltin()
	entries := readEntries(t, filepath.Join(fixtureDir, "dankserver-night-ladder.journal.json"))
	for window, want := range map[time.Duration]bool{0: true, 10 * time.Minute: true, 5 * time.Minute: false} {
		t.Run(window.String(), func(t *testing.T) {
			tr := tracker.New(set, tracker.Options{SurvivableWindow: window})
			for _, e := range entries {
				tr.Add(e)
			}
			found := false
			for _, a := range tr.Attempts() {
				if a.InvocationID == "70419ea177e8fec375b3be41d62ef430" {
					found = true
					if got := a.HasFinding(domain.FindingBootNotSurvivable); got != want {
						t.Errorf("window %v: boot_not_survivable = %v, want %v", window, got, want)
					}
				}
			}
			if !found {
				t.Fatal("the oom_runtime rung is missing")
			}
		})
	}
}
