package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/lokitest"
)

const nightLadder = "../../examples/dankserver-night-ladder.journal.json"

// attemptSummary is what must agree between two replays of the same
// journal: identity, verdict, phase, shape, timeline, findings, lines.
func attemptSummary(a *domain.Attempt) string {
	type mark struct {
		Phase domain.Phase
		Time  time.Time
	}
	var marks []mark
	for _, m := range a.Timeline {
		marks = append(marks, mark{m.Phase, m.Time.UTC()})
	}
	var findings []string
	for _, f := range a.Findings {
		findings = append(findings, f.ID+"/"+f.Rule+"@"+f.Time.UTC().Format(time.RFC3339Nano))
	}
	b, _ := json.Marshal(struct {
		ID, Host, Unit, Invocation string
		Phase                      domain.Phase
		Verdict                    domain.Verdict
		Shape                      domain.Shape
		Start, End                 time.Time
		Lines                      int
		Marks                      []mark
		Findings                   []string
	}{a.ID, a.Host, a.Unit, a.InvocationID, a.Phase, a.Verdict, a.Shape, a.StartedAt.UTC(), a.EndedAt.UTC(), a.Lines, marks, findings})
	return string(b)
}

// TestReplayFromLokiGivesTheAttemptsOfReplay serves the night-ladder
// capture from an in-process Loki query_range API, stored as a host
// running deploy/alloy/config.alloy pushes it (labels and structured
// metadata from its relabel rules), and checks that `replay --from-loki`
// stores the attempts `replay FILE` stores: ids, verdicts, phases, shapes,
// timelines, findings. Small pages force page boundaries inside bursts of
// lines; the bearer token must be sent.
func TestReplayFromLokiGivesTheAttemptsOfReplay(t *testing.T) {
	dir := t.TempDir()
	fileDB := filepath.Join(dir, "file.db")
	fileOut := runCmd(t, "replay", "--db", fileDB, nightLadder)
	var entries int
	if _, err := fmt.Sscanf(fileOut, "replayed %d entries", &entries); err != nil || entries < 800 {
		t.Fatalf("replay output %q: %v", fileOut, err)
	}
	want := listStored(t, fileDB)
	if len(want) < 10 {
		t.Fatalf("replay of the file found only %d attempts", len(want))
	}
	streams := lokitest.AlloyStreams(t, lokitest.JournalRecords(t, nightLadder))
	var first, last time.Time
	total := 0 // records served
	for _, s := range streams {
		for _, e := range s.Entries {
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
			if e.Time.After(last) {
				last = e.Time
			}
			total++
		}
	}
	if len(streams) < 2 {
		t.Fatalf("the Alloy mapping made %d streams, want several", len(streams))
	}
	for _, limit := range []int{5000, 97, 7} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			srv := &lokitest.Server{Query: `{job="systemd-journal"}`, Token: "tok", Streams: streams}
			srv.Start(t)
			db := filepath.Join(t.TempDir(), "loki.db")
			out := runCmd(t, "replay", "--db", db, "--from-loki", srv.URL, "--from-loki-token", "tok",
				"--from-loki-limit", strconv.Itoa(limit),
				"--since", first.Add(-time.Hour).UTC().Format(time.RFC3339), "--until", last.Add(time.Hour).UTC().Format(time.RFC3339))
			if !strings.Contains(out, fmt.Sprintf("replayed %d entries from %s", entries, srv.URL)) {
				t.Errorf("output does not report the %d entries of the file replay:\n%s", entries, out)
			}
			if !strings.Contains(out, "(0 malformed skipped") {
				t.Errorf("malformed entries reported:\n%s", out)
			}
			var twice int
			if m := regexp.MustCompile(`, (\d+) read twice`).FindStringSubmatch(out); m != nil {
				twice, _ = strconv.Atoi(m[1])
			}
			if limit < 5000 && twice == 0 {
				t.Errorf("no entry read twice at a page boundary with limit %d: the test does not test paging\n%s", limit, out)
			}
			if pages := srv.Requests(); limit == 7 && pages < total/7 {
				t.Errorf("%d pages for %d entries with limit 7", pages, total)
			}
			got := listStored(t, db)
			if len(got) != len(want) {
				t.Errorf("want %d attempts, got %d", len(want), len(got))
			}
			byID := map[string]*domain.Attempt{}
			for _, a := range got {
				byID[a.ID] = a
			}
			for _, w := range want {
				g := byID[w.ID]
				if g == nil {
					t.Errorf("attempt %s (%s %s) missing", w.ID, w.Unit, w.Verdict)
					continue
				}
				if ws, gs := attemptSummary(w), attemptSummary(g); ws != gs {
					t.Errorf("attempt %s differs:\nfile: %s\nloki: %s", w.ID, ws, gs)
				}
			}
		})
	}
}

// TestReplayFromLokiRefusals: a wrong token surfaces Loki's status and
// body; FILEs and --from-loki together, and a bad --since, are usage errors.
func TestReplayFromLokiRefusals(t *testing.T) {
	srv := &lokitest.Server{Query: `{job="systemd-journal"}`, Token: "tok"}
	srv.Start(t)
	db := filepath.Join(t.TempDir(), "x.db")
	err := run(t.Context(), []string{"replay", "--db", db, "--from-loki", srv.URL, "--from-loki-token", "wrong", "--since", "2h"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "no org id") {
		t.Errorf("wrong token: %v, want HTTP 401 with Loki's body", err)
	}
	err = run(t.Context(), []string{"replay", "--db", db, "--from-loki", srv.URL, nightLadder})
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "not both") {
		t.Errorf("FILE with --from-loki: %v, want a usage error", err)
	}
	err = run(t.Context(), []string{"replay", "--db", db, "--from-loki", srv.URL, "--since", "last tuesday"})
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "--since") {
		t.Errorf("bad --since: %v, want a usage error", err)
	}
}
