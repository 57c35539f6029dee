package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/report"
	"github.com/llmfleet/analyzer/rules"
)

const nightFixture = "../../examples/dankserver-night-ladder.journal.json"

// TestLadderFromFiles analyzes the fixture directly and prints the
// runbook table.
func TestLadderFromFiles(t *testing.T) {
	out := runCmd(t, "ladder", "--target", "frank-primary", nightFixture)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "ladder frank-primary on dankserver (vllm, 16 rungs, 2026-10-01 21:40 -07:00 → 01:55)  id ") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "RUNG  STARTED") || !strings.Contains(lines[1], "CHANGE") || !strings.Contains(lines[1], "KV TOKENS  CONC") {
		t.Errorf("columns %q", lines[1])
	}
	// rung, shape diff, verdict, KV tokens, concurrency
	for i, want := range map[int][]string{
		2:  {"1 ", "21:40:00", "3 × 262144 bf16 KV 11.05 GB", "(first)", "oom_graph_capture", "798280", "3.05x", "capacity fail"},
		3:  {"2 ", "max_model_len 262144 → 245760", "oom_graph_capture", "3.25x"},
		5:  {"4 ", "max_model_len 237568 → 241664", "ready", "732359", "3.03x", "pass"},
		8:  {"7 ", "unit frank-primary-probe.service → frank-primary.service", "oom_runtime", "1350182", "boots, dies"},
		16: {"15 ", "dynamo_constraint_violation", "other"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	for _, w := range []string{
		"max_model_len at max_num_seqs=3, kv_cache_dtype=auto, booting: passes at 241664 (rung 4), fails at 245760 (rung 2, oom_graph_capture): boundary found",
		"contract_tokens at kv_cache_dtype=fp8, booting: passes at 1310720 = 5 × 262144 (rung 6), fails at 1449984 = 6 × 241664 (rung 5, oom_kv_alloc)",
		"contract_tokens at kv_cache_dtype=fp8, surviving: passes at 1048576 = 4 × 262144 (rung 8), fails at 1310720 = 5 × 262144 (rung 7, oom_runtime)",
		"next rung: 5 × 233472 fp8 (contract_tokens 1167360), the midpoint of the surviving boundary at kv_cache_dtype=fp8 between 1048576 and 1310720",
		"note: rungs 14–15 (2 × 262144 bf16) failed with dynamo_constraint_violation, which is not a capacity failure",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if strings.Contains(out, "frank-small") {
		t.Error("--target did not filter")
	}
}

// TestLadderFromDatabase replays both fixtures into SQLite and reads the
// ladders back as JSON, filtered by host.
func TestLadderFromDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	runCmd(t, "replay", "--db", db, nightFixture, "../../examples/dankclaw-day.journal.json")
	var doc struct {
		Ladders []struct {
			ID, Host, Target string
			Rungs            []struct {
				N       int    `json:"n"`
				Verdict string `json:"verdict"`
				Note    string `json:"note"`
			} `json:"rungs"`
			Next struct {
				Shape string `json:"shape"`
			} `json:"next"`
		} `json:"ladders"`
	}
	out := runCmd(t, "ladder", "--db", db, "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(doc.Ladders) != 3 {
		t.Fatalf("want 3 ladders (frank-small, frank-large, frank-primary), got %d", len(doc.Ladders))
	}
	out = runCmd(t, "ladder", "--db", db, "--format", "json", "--host", "dankserver")
	doc.Ladders = nil
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Ladders) != 1 || doc.Ladders[0].Target != "frank-primary" || len(doc.Ladders[0].Rungs) != 16 {
		t.Fatalf("--host dankserver: %+v", doc.Ladders)
	}
	l := doc.Ladders[0]
	if l.Rungs[13].Verdict != "dynamo_constraint_violation" || !strings.HasPrefix(l.Rungs[1].Note, "rung 2 of ladder frank-primary: same OOM at graph capture as rung 1") {
		t.Errorf("rungs from the database: %+v", l.Rungs[:2])
	}
	if l.Next.Shape != "5 × 233472 fp8" {
		t.Errorf("next %q", l.Next.Shape)
	}
	// The same ladder id from the database as from the files.
	var files struct {
		Ladders []struct{ ID string } `json:"ladders"`
	}
	if err := json.Unmarshal([]byte(runCmd(t, "ladder", "--format", "json", nightFixture)), &files); err != nil || len(files.Ladders) != 1 || files.Ladders[0].ID != l.ID {
		t.Errorf("ids differ between database and files: %v %+v vs %s", err, files.Ladders, l.ID)
	}
	// A target that names no ladder: ladder and fit exit 1 alike and name
	// the targets there are.
	for _, args := range [][]string{
		{"ladder", "--db", db, "--target", "nope"},
		{"fit", "--db", db, "--target", "nope", "--max-num-seqs", "1", "--max-model-len", "1"},
	} {
		err := run(t.Context(), args)
		want := `no ladder of target "nope"; known targets: "frank-large", "frank-primary", "frank-small"`
		if err == nil || err.Error() != want || exitStatus(err, io.Discard) != 1 {
			t.Errorf("%s --target nope: %v, want %q and exit status 1", args[0], err, want)
		}
	}
	err := run(t.Context(), []string{"ladder", "--db", db, "--target", "frank-primary", "--host", "elsewhere"})
	if err == nil || err.Error() != `no ladder of target "frank-primary" on host "elsewhere": no ladders on that host` {
		t.Errorf("--host elsewhere: %v", err)
	}
}

// TestLadderOptions: --gap splits, --granularity changes the next rung.
func TestLadderOptions(t *testing.T) {
	// The longest pause of the night, from an end to the next start, is
	// the 14 minutes after rung 7 (05:58:15 → 06:12:16); the next is 10.
	out := runCmd(t, "ladder", "--gap", "12m", "--format", "json", nightFixture)
	var doc struct {
		Ladders []struct {
			Rungs []json.RawMessage `json:"rungs"`
		} `json:"ladders"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, l := range doc.Ladders {
		sizes = append(sizes, len(l.Rungs))
	}
	if fmt.Sprint(sizes) != "[7 9]" {
		t.Errorf("--gap 12m: ladders of %v rungs, want [7 9]", sizes)
	}
	out = runCmd(t, "ladder", "--granularity", "vllm=65536", nightFixture)
	if !strings.Contains(out, "ladder frank-primary on dankserver") || strings.Contains(out, "5 × 233472") ||
		!strings.Contains(out, "boundary found (step 4096, no multiple of the granularity 65536 lies between)") {
		t.Errorf("--granularity vllm=65536:\n%s", out)
	}
	for _, bad := range []string{"x", "vllm=0", "=-1"} {
		t.Run(bad, func(t *testing.T) {
			if err := run(context.Background(), []string{"ladder", "--granularity", bad, nightFixture}); err == nil {
				t.Errorf("--granularity %q accepted", bad)
			}
		})
	}
}

// TestLadderFitsTheTerminal: at a terminal's width every line of the
// ladder fits, the CHANGE column folds instead of being cut, and the next
// rung is printed as vLLM's own flags, whole.
func TestLadderFitsTheTerminal(t *testing.T) {
	ls := ladder.Build(analyzeForTest(t, nightFixture), ladder.Options{})
	var l *ladder.Ladder
	for i := range ls {
		if ls[i].Target == "frank-primary" {
			l = &ls[i]
		}
	}
	if l == nil {
		t.Fatal("no frank-primary ladder")
	}
	var wide, narrow strings.Builder
	if err := ladderTable(&wide, l, report.Style{}); err != nil {
		t.Fatal(err)
	}
	if err := ladderTable(&narrow, l, report.Style{Width: 100}); err != nil {
		t.Fatal(err)
	}
	const flags = "  vllm flags: --max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype fp8\n"
	for name, out := range map[string]string{"unlimited": wide.String(), "100 columns": narrow.String()} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(out, flags) {
				t.Errorf("%s: the next rung is not printed as vLLM flags:\n%s", name, out)
			}
		})
	}
	longest := 0
	for _, line := range strings.Split(wide.String(), "\n") {
		longest = max(longest, utf8.RuneCountInString(line))
	}
	if longest < 200 {
		t.Fatalf("the unlimited table is only %d columns wide: the test proves nothing", longest)
	}
	lines := strings.Split(narrow.String(), "\n")
	for _, line := range lines {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line of %d columns at width 100: %q", n, line)
		}
	}
	// Rung 2's change folds onto the next lines, its values whole.
	found := false
	for i, line := range lines {
		if strings.HasPrefix(line, "2     21:48:18") {
			found = true
			next := strings.Join(lines[i+1:i+3], "\n")
			if !strings.Contains(line+next, "262144 →") || !strings.Contains(next, "245760") || !strings.Contains(line, "oom_graph_capture") {
				t.Errorf("rung 2 at 100 columns:\n%s\n%s", line, next)
			}
		}
	}
	if !found {
		t.Errorf("no line of rung 2:\n%s", narrow.String())
	}
}

// analyzeForTest returns the attempts of files, judged by the built-in
// rules.
func analyzeForTest(t *testing.T, files ...string) []*domain.Attempt {
	t.Helper()
	set, err := rules.LoadSource("")
	if err != nil {
		t.Fatal(err)
	}
	as, err := analyzeFiles(t.Context(), "explain", loaded(set), files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// TestLadderNeverWider: at 60, 80, 120 and 200 columns no line of the
// ladder table is wider, and every rung keeps its number, shape's start
// and verdict; phase, outcome, concurrency and start give way first.
func TestLadderNeverWider(t *testing.T) {
	ls := ladder.Build(analyzeForTest(t, nightFixture), ladder.Options{})
	var l *ladder.Ladder
	for i := range ls {
		if ls[i].Target == "frank-primary" {
			l = &ls[i]
		}
	}
	if l == nil {
		t.Fatal("no frank-primary ladder")
	}
	for _, cols := range []int{60, 80, 120, 200} {
		var b strings.Builder
		if err := ladderTable(&b, l, report.Style{Width: cols}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		for _, line := range lines {
			if n := utf8.RuneCountInString(line); n > cols {
				t.Errorf("%d columns: line of %d: %q", cols, n, line)
			}
		}
		header := ""
		for _, line := range lines {
			if strings.HasPrefix(line, "RUNG") {
				header = line
			}
		}
		for _, want := range []string{"RUNG", "SHAPE", "VERDICT", "KV TOKENS"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%d columns: no %s column:\n%s", cols, want, b.String())
			}
		}
		// The flags, broken with the shell's "\", join back whole.
		if joined := strings.ReplaceAll(b.String(), " \\\n    ", " "); !strings.Contains(joined, "  vllm flags: --max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype fp8\n") {
			t.Errorf("%d columns: the flags do not join back:\n%s", cols, b.String())
		}
		if cols < 120 && strings.Contains(header, "OUTCOME") {
			t.Errorf("%d columns: OUTCOME kept: %q", cols, header)
		}
		if !strings.Contains(b.String(), "oom_graph_capture") || !regexp.MustCompile(`(?m)^2 +(\d\d:\d\d:\d\d +)?3 × 2`).MatchString(b.String()) {
			t.Errorf("%d columns: rung 2 unreadable:\n%s", cols, b.String())
		}
	}
}
