package tracker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// TestDrainHandsOverWhatAttemptsWould feeds both fixtures and drains after
// every entry with a cutoff lagging the newest entry by lag: the attempts
// drained, then the rest from Each, sorted by start and creation number,
// must be exactly what Attempts gives without draining, and no attempt
// may be drained before it ended.
func TestDrainHandsOverWhatAttemptsWould(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*.journal.json"))
	for _, lag := range []time.Duration{0, time.Minute, 10 * time.Minute} {
		whole := tracker.New(set, tracker.Options{})
		drained := tracker.New(set, tracker.Options{})
		type got struct {
			a   *domain.Attempt
			seq int
		}
		var out []got
		var newest time.Time
		for _, p := range paths {
			if _, err := ingest.ReadFile(context.Background(), p, ingest.Options{Fields: tracker.Fields}, func(e domain.Entry) error {
				whole.Add(e)
				drained.Add(e)
				if e.Time.After(newest) {
					newest = e.Time
				}
				drained.Drain(newest.Add(-lag), func(a *domain.Attempt, seq int) {
					if a.EndedAt.IsZero() || !a.EndedAt.Before(newest.Add(-lag)) {
						t.Errorf("lag %v: %s drained before it ended (ended %v)", lag, a.ID, a.EndedAt)
					}
					out = append(out, got{a, seq})
				})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		n := len(out)
		whole.Finish()
		drained.Finish()
		drained.Each(func(a *domain.Attempt, seq int) { out = append(out, got{a, seq}) })
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].a.StartedAt.Equal(out[j].a.StartedAt) {
				return out[i].seq < out[j].seq
			}
			return out[i].a.StartedAt.Before(out[j].a.StartedAt)
		})
		want := whole.Attempts()
		if len(out) != len(want) {
			t.Fatalf("lag %v: %d attempts drained and left, want %d", lag, len(out), len(want))
		}
		if n == 0 {
			t.Errorf("lag %v: nothing was drained", lag)
		}
		for i := range want {
			g, _ := json.Marshal(out[i].a.JSON())
			w, _ := json.Marshal(want[i].JSON())
			if string(g) != string(w) {
				t.Errorf("lag %v: attempt %d differs:\n got %s\nwant %s", lag, i, g, w)
			}
		}
		t.Logf("lag %v: %d of %d attempts drained while reading", lag, n, len(want))
	}
}
