package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/race"
)

func TestFoldRepeats(t *testing.T) {
	phrase := "(EngineCore) worker rpc collective_rpc('x') failed; remote traceback follows. "
	for _, tc := range []struct {
		name, in string
		want     []logPart
	}{
		{"phrase 78 times then the cause", "E [core.py:708] " + strings.Repeat(phrase, 78) + "RuntimeError: boom",
			[]logPart{{Text: "E [core.py:708] ", Repeat: 1}, {Text: phrase, Repeat: 78}, {Text: "RuntimeError: boom", Repeat: 1}}},
		{"twice is not folded", strings.Repeat(phrase, 2),
			[]logPart{{Text: strings.Repeat(phrase, 2), Repeat: 1}}},
		{"short units stay", strings.Repeat("== ", 40),
			[]logPart{{Text: strings.Repeat("== ", 40), Repeat: 1}}},
		{"plain line", "INFO ready", []logPart{{Text: "INFO ready", Repeat: 1}}},
		{"empty", "", []logPart{{Text: "", Repeat: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := repeatBudget
			got := foldRepeats(tc.in, &budget)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if joined := unfold(got); joined != tc.in {
				t.Errorf("parts do not add up to the line: %q", joined)
			}
		})
	}
}

// unfold writes parts back as the line they came from.
func unfold(parts []logPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strings.Repeat(p.Text, p.Repeat))
	}
	return b.String()
}

// A line of a million spaces costs a bounded search, and loses nothing.
func TestFoldRepeatsBudget(t *testing.T) {
	in := strings.Repeat(" ", 1<<20)
	budget := repeatBudget
	start := time.Now()
	got := foldRepeats(in, &budget)
	if d := time.Since(start); d > race.Budget(5*time.Second) {
		t.Errorf("folding took %v", d)
	}
	if unfold(got) != in {
		t.Error("parts do not add up to the line")
	}
}

func TestLayoutLine(t *testing.T) {
	msg := `ERROR Worker failed with error 'boom', traceback:\nTraceback (most recent call last):\n  File "a.py", line 1, in f\n    g()\n  File "a.py", line 1, in f\n    g()\n  File "a.py", line 1, in f\n    g()\nConstraints violated (x)! more`
	rows, decisive := layoutLine(msg, `Constraints violated (x)!`)
	if !decisive {
		t.Fatal("the match was not found")
	}
	var got []string
	for _, r := range rows {
		var b strings.Builder
		for _, p := range r.Parts {
			if p.Mark {
				b.WriteString("[" + p.Text + "]")
			} else {
				b.WriteString(p.Text)
			}
		}
		got = append(got, fmt.Sprintf("%s ×%d", b.String(), r.Repeat))
	}
	want := []string{
		"ERROR Worker failed with error 'boom', traceback: ×1",
		"Traceback (most recent call last): ×1",
		`  File "a.py", line 1, in f ×1`,
		"    g() ×1",
		`  File "a.py", line 1, in f ×1`,
		"    g() ×1",
		`  File "a.py", line 1, in f ×1`,
		"    g() ×1",
		"[Constraints violated (x)!] more ×1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rows, _ = layoutLine("a line\na line\na line\nlast", "")
	if len(rows) != 2 || rows[0].Repeat != 3 || rows[1].Repeat != 1 {
		t.Errorf("identical rows not counted: %+v", rows)
	}
}

// Evidence and context become one list in journal order, each line once;
// the verdict's match marks its line, error lines link to the next.
func TestBuildLogView(t *testing.T) {
	t0 := time.Date(2026, 10, 2, 0, 47, 0, 0, time.UTC)
	ev := func(s int, c, m string) domain.Evidence {
		return domain.Evidence{Time: t0.Add(time.Duration(s) * time.Second), Cursor: c, Message: m}
	}
	intro := ev(1, "c1", "ERROR worker failed; see below")
	cause := ev(5, "c5", "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB")
	a := &domain.Attempt{Verdict: "oom_runtime",
		Findings: []domain.Finding{{ID: "oom_runtime", Match: "CUDA out of memory", Evidence: []domain.Evidence{cause}}},
		Evidence: []domain.Evidence{intro, cause},
		Context:  []domain.Evidence{ev(4, "c4", "INFO capturing"), cause, ev(6, "c6", "INFO shutting down")},
	}
	log := buildLogView(a)
	var order []string
	for _, l := range log {
		order = append(order, l.Rows[0].Parts[0].Text)
	}
	want := []string{"ERROR worker failed; see below", "INFO capturing", "RuntimeError: ", "INFO shutting down"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("order %q, want %q", order, want)
	}
	if !log[2].Decisive || log[2].Anchor != "decisive" || !log[2].Evidence || log[1].Evidence {
		t.Errorf("decisive/evidence flags: %+v", log)
	}
	if n := numberErrors(log); n != 2 || log[0].NextErr != "decisive" || log[0].Anchor != "err-1" {
		t.Errorf("errors %d, first %+v", n, log[0])
	}
	if r := decisiveRow(log); r == nil || r.Parts[1].Text != "CUDA out of memory" || !r.Parts[1].Mark {
		t.Errorf("decisive row %+v", r)
	}
}

// The attempt's whole log, one click from its page: every line of the
// dynamo attempt numbered, the cited ones highlighted, the decisive words
// marked once, error lines chained, and unknown ids a 404.
func TestAttemptLogPage(t *testing.T) {
	srv, db := newLadderServer(t)
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{Verdict: "dynamo_constraint_violation", Host: "dankserver"})
	if err != nil || len(as) == 0 {
		t.Fatalf("dynamo attempts: %v", err)
	}
	a := as[0]
	_, page, _ := get(t, srv, attemptURL(a.ID))
	mustContain(t, "attempt page", page, `href="`+attemptURL(a.ID)+`/log#decisive">the attempt's whole log (43 lines)</a>`)

	code, body, _ := get(t, srv, attemptURL(a.ID)+"/log")
	if code != http.StatusOK {
		t.Fatalf("log page = %d", code)
	}
	mustContain(t, "log page", body, "43 of 43 lines kept", `<span class="n">1</span>`, `<span class="n">43</span>`,
		"serve-frank-primary: shape MAXLEN=262144", `id="decisive"`, "<mark>Constraints violated (L[&#39;query_start_loc&#39;].size()[0])!",
		`error 1 · <a href="#decisive">next ↓</a>`)
	if n := strings.Count(body, "<mark>"); n != 1 {
		t.Errorf("%d marks, want 1", n)
	}
	if n := strings.Count(body, `<div class="entry`); n != 43 {
		t.Errorf("%d lines shown, want 43", n)
	}
	if code, _, _ := get(t, srv, "/attempts/nope/log"); code != http.StatusNotFound {
		t.Errorf("unknown attempt's log = %d, want 404", code)
	}
}
