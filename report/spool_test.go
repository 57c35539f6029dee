package report_test

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/report"
)

// TestSpoolWritesWhatTheSortedListWould adds the fixtures' attempts to a
// spool in a shuffled order: its output must be byte for byte Text's, and
// the JSON encoder's, of the attempts in start order.
func TestSpoolWritesWhatTheSortedListWould(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.journal.json")
	var all []*domain.Attempt
	for _, p := range paths {
		all = append(all, fixturetest.Attempts(t, p)...)
	}
	if len(all) < 10 {
		t.Fatalf("%d attempts", len(all))
	}
	// What the v1 encoder escapes or replaces: HTML, U+2028/U+2029,
	// invalid UTF-8, control bytes.
	odd := *all[0]
	odd.Note = "<b>a & b</b>\u2028\u2029 \xff\xfe \x01\t\""
	odd.Unit = "x\u00e9<\xc3"
	odd.StartedAt = odd.StartedAt.Add(time.Millisecond) // still before all[1]
	all = slices.Insert(all, 1, &odd)
	// The fixtures' attempts have distinct start times except where the
	// creation number orders them; the index is that number here.
	for _, list := range [][]*domain.Attempt{all, nil} {
		var wantText, wantJSON bytes.Buffer
		if err := report.Text(&wantText, list); err != nil {
			t.Fatal(err)
		}
		doc := struct {
			Attempts []domain.AttemptJSON `json:"attempts"`
		}{Attempts: []domain.AttemptJSON{}}
		for _, a := range list {
			doc.Attempts = append(doc.Attempts, a.JSON())
		}
		enc := json.NewEncoder(&wantJSON)
		enc.SetIndent("", " ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		for format, want := range map[string]string{"text": wantText.String(), "json": wantJSON.String()} {
			s, err := report.NewSpool(format, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range rand.New(rand.NewSource(1)).Perm(len(list)) {
				if err := s.Add(list[i], i); err != nil {
					t.Fatal(err)
				}
			}
			var got bytes.Buffer
			if err := s.WriteSorted(&got); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if got.String() != want {
				t.Errorf("%s, %d attempts: spool differs:\n%s\nwant:\n%s", format, len(list), got.String(), want)
			}
		}
	}
}

// TestSummary: the text report ends with one line counting the attempts by
// outcome, failures by verdict, most frequent first.
func TestSummary(t *testing.T) {
	for want, vs := range map[string][]domain.Verdict{
		"0 attempts":         nil,
		"1 attempt: 1 ready": {domain.VerdictReady},
		"5 attempts: 1 ready, 3 failed (2 oom_graph_capture, 1 config_error), 1 running": {
			domain.VerdictOOMGraphCapture, domain.VerdictReady, domain.VerdictConfigError, domain.VerdictRunning, domain.VerdictOOMGraphCapture},
	} {
		t.Run(want, func(t *testing.T) {
			if got := report.Summary(vs); got != want {
				t.Errorf("Summary(%v) = %q, want %q", vs, got, want)
			}
		})
	}
}
