package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// styleAttempts are two attempts whose rows are wider than 80 columns.
func styleAttempts() []*domain.Attempt {
	at := time.Date(2026, 10, 1, 9, 12, 0, 0, time.FixedZone("", -7*3600))
	failed := &domain.Attempt{ID: "86d14e9dbda76327", Host: "dankclaw", Unit: "frank-small-with-a-very-long-unit-name.service",
		InvocationID: "38e751def21b9209c886df2ea0f71d0e", Engine: "sglang", StartedAt: at, Phase: domain.PhaseGraphCapture,
		Verdict: domain.VerdictOOMGraphCapture, Note: strings.Repeat("lower the memory fraction ", 12),
		Shape:    domain.Shape{domain.ShapeMaxNumSeqs: int64(2), domain.ShapeMaxModelLen: int64(262144), domain.ShapeKVCacheDtype: "fp8_e4m3"},
		Findings: []domain.Finding{{ID: "oom_graph_capture"}, {ID: "clean_exit_worker_death"}},
		Evidence: []domain.Evidence{{Message: "torch.OutOfMemoryError: CUDA out of memory. " + strings.Repeat("x", 150)}}}
	ready := &domain.Attempt{ID: "0123456789abcdef", Host: "dankclaw", Unit: "frank-small.service", Engine: "sglang",
		StartedAt: at.Add(time.Minute), Phase: domain.PhaseReady, Verdict: domain.VerdictReady}
	return []*domain.Attempt{failed, ready}
}

// TestStyleWidth: at a fixed width every line fits, cut cells end in the
// marker and keep the verdict whole; without a width nothing is cut.
func TestStyleWidth(t *testing.T) {
	var wide, narrow bytes.Buffer
	if err := (Style{}).Text(&wide, styleAttempts()); err != nil {
		t.Fatal(err)
	}
	if err := (Style{Width: 80}).Text(&narrow, styleAttempts()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(wide.String(), Cut+"  ") || !strings.Contains(wide.String(), "frank-small-with-a-very-long-unit-name.service") {
		t.Errorf("without a width a cell was cut:\n%s", wide.String())
	}
	longest := 0
	for _, l := range strings.Split(wide.String(), "\n") {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	if longest <= 120 {
		t.Fatalf("the unconstrained report is only %d columns wide: the test proves nothing", longest)
	}
	lines := strings.Split(narrow.String(), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d columns at width 80: %q", n, l)
		}
	}
	// What every row shares is said once above the table.
	if lines[0] != "all rows: host dankclaw, engine sglang, started 2026-10-01, times UTC-07:00" {
		t.Errorf("line above the table: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "#  STARTED") || !strings.Contains(lines[1], "VERDICT") || strings.Contains(lines[1], "HOST") {
		t.Errorf("header: %q", lines[1])
	}
	row := lines[2]
	for _, want := range []string{"1  09:12:00  ", " oom_graph_capture", "frank-small-with-a-very-" /* cut, not dropped */, "2 × 262144"} {
		if !strings.Contains(row, want) {
			t.Errorf("first row lacks %q: %q", want, row)
		}
	}
	if !strings.Contains(narrow.String(), "  > torch.OutOfMemoryError: CUDA out of memory. xxx") {
		t.Errorf("evidence line missing:\n%s", narrow.String())
	}
	if !strings.Contains(narrow.String(), "attempt 86d14e9dbda76327 (analyzer serve: /attempts/86d14e9dbda76327)") {
		t.Errorf("the attempt id is not printed whole:\n%s", narrow.String())
	}
}

// TestTableDropsRepeats: a table too wide for the terminal loses what
// repeats before a unit or shape is cut: finding ids equal to the verdict,
// the host and engine every row shares, the shared date and offset.
func TestTableDropsRepeats(t *testing.T) {
	as := styleAttempts()
	as[0].Unit = "frank-small.service"
	as[0].Findings = []domain.Finding{{ID: "oom_graph_capture"}}
	for _, tc := range []struct {
		width int
		lines []string
	}{
		{80, []string{ // phase cut to 8 would not fit: it goes whole
			"all rows: host dankclaw, engine sglang, started 2026-10-01, times UTC-07:00",
			"#  STARTED   UNIT                 SHAPE                VERDICT",
			"1  09:12:00  frank-small.service  2 × 262144 fp8_e4m3  oom_graph_capture",
			"2  09:13:00  frank-small.service  -                    ready",
		}},
		{120, []string{
			"all rows: host dankclaw",
			"#  STARTED                     UNIT                 ENGINE  SHAPE                PHASE          VERDICT",
			"1  2026-10-01 09:12:00 -07:00  frank-small.service  sglang  2 × 262144 fp8_e4m3  graph_capture  oom_graph_capture",
			"2  2026-10-01 09:13:00 -07:00  frank-small.service  sglang  -                    ready          ready",
		}},
		{130, []string{ // findings that only repeat the verdict go first
			"#  STARTED                     HOST      UNIT                 ENGINE  SHAPE                PHASE          VERDICT",
			"1  2026-10-01 09:12:00 -07:00  dankclaw  frank-small.service  sglang  2 × 262144 fp8_e4m3  graph_capture  oom_graph_capture",
			"2  2026-10-01 09:13:00 -07:00  dankclaw  frank-small.service  sglang  -                    ready          ready",
		}},
		{150, []string{ // fits: nothing dropped
			"#  STARTED                     HOST      UNIT                 ENGINE  SHAPE                PHASE          VERDICT            FINDINGS",
			"1  2026-10-01 09:12:00 -07:00  dankclaw  frank-small.service  sglang  2 × 262144 fp8_e4m3  graph_capture  oom_graph_capture  oom_graph_capture",
			"2  2026-10-01 09:13:00 -07:00  dankclaw  frank-small.service  sglang  -                    ready          ready              -",
		}},
	} {
		var b bytes.Buffer
		if err := (Style{Width: tc.width}).Table(&b, [][]string{Row(as[0]), Row(as[1])}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tc.lines, "\n") {
			t.Errorf("width %d:\n%s\nwant\n%s", tc.width, b.String(), strings.Join(tc.lines, "\n"))
		}
	}
}

// TestStyleColor: verdicts are red (failure), green (ready), yellow
// (running) with Color, and the bytes are plain without.
func TestStyleColor(t *testing.T) {
	c := Style{Color: true}
	for v, want := range map[domain.Verdict]string{
		domain.VerdictOOMGraphCapture: "\x1b[31moom_graph_capture\x1b[0m",
		domain.VerdictReady:           "\x1b[32mready\x1b[0m",
		domain.VerdictRunning:         "\x1b[33mrunning\x1b[0m",
	} {
		t.Run(string(v), func(t *testing.T) {
			if got := c.Verdict(v); got != want {
				t.Errorf("%s: %q, want %q", v, got, want)
			}
		})
	}
	var plain, colored bytes.Buffer
	_ = Style{}.Text(&plain, styleAttempts())
	_ = c.Text(&colored, styleAttempts())
	if strings.Contains(plain.String(), "\x1b") {
		t.Error("escape sequences without Color")
	}
	// Colour changes bytes, not the layout: the columns still line up.
	stripped := strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[0m", "").Replace(colored.String())
	if stripped != plain.String() || colored.String() == plain.String() {
		t.Errorf("coloured report differs from the plain one beyond the colours:\n%s", colored.String())
	}
}

// TestCrashLoopOneParagraph: a unit failing four times in a row the same
// way is one paragraph "×4" naming the four attempts, even with another
// unit's attempt between them; a different cause or shape starts a new one.
func TestCrashLoopOneParagraph(t *testing.T) {
	at := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	shape := domain.Shape{domain.ShapeMaxModelLen: int64(32768)}
	loop := func(i int, unit string, v domain.Verdict, s domain.Shape) *domain.Attempt {
		return &domain.Attempt{ID: fmt.Sprintf("%016x", i+1), Host: "h", Unit: unit, Engine: "vllm", StartedAt: at.Add(time.Duration(i) * time.Minute),
			Phase: domain.PhaseKVAlloc, Verdict: v, Rule: "vllm.kv", Shape: s, InvocationID: fmt.Sprintf("inv%d", i),
			Note: "the KV cache does not fit", Evidence: []domain.Evidence{{Message: "ValueError: no memory for the cache blocks"}}}
	}
	as := []*domain.Attempt{
		loop(0, "a.service", domain.VerdictOOMKVAlloc, shape),
		loop(1, "b.service", domain.VerdictReady, nil),
		loop(2, "a.service", domain.VerdictOOMKVAlloc, shape),
		loop(3, "a.service", domain.VerdictOOMKVAlloc, shape),
		loop(4, "a.service", domain.VerdictOOMKVAlloc, shape),
		loop(5, "a.service", domain.VerdictOOMKVAlloc, domain.Shape{domain.ShapeMaxModelLen: int64(16384)}),
	}
	as[1].Phase = domain.PhaseReady
	var b bytes.Buffer
	if err := (Style{}).Text(&b, as); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "\n#1 a.service: oom_kv_alloc in kv_alloc ×4 (#1, #3, #4, #5)\n" +
		"  attempts 0000000000000001 0000000000000003 0000000000000004 0000000000000005\n  (analyzer serve: /attempts/ID)\n" +
		"  the KV cache does not fit\n  > ValueError: no memory for the cache blocks\n" +
		"\n#6 a.service: oom_kv_alloc in kv_alloc\n  attempt 0000000000000006 (analyzer serve: /attempts/0000000000000006)\n  invocation inv5\n"
	if !strings.Contains(out, want) {
		t.Errorf("crash loop:\n%s\nwant within it:\n%s", out, want)
	}
	if n := strings.Count(out, "the KV cache does not fit"); n != 2 {
		t.Errorf("the note is printed %d times, want 2 (the loop, the new shape):\n%s", n, out)
	}
	// The spool writes the same.
	s, err := NewSpool("text", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := len(as) - 1; i >= 0; i-- {
		if err := s.Add(as[i], i); err != nil {
			t.Fatal(err)
		}
	}
	var sp bytes.Buffer
	if err := s.WriteSorted(&sp); err != nil {
		t.Fatal(err)
	}
	if sp.String() != out {
		t.Errorf("spool:\n%s\nText:\n%s", sp.String(), out)
	}
}
