package judge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/rules"
)

// restoreCase is an attempt's output as records (lines the journal hands
// over together, which a cut never splits) and whether its unit then
// failed (exit status 1) or it is still running.
type restoreCase struct {
	records [][]string
	failed  bool
	running bool // the records stop before readiness
}

var sglangStart = [][]string{
	{"[2026-10-02 03:00:02] server_args=ServerArgs(model_path='/models/tiny', context_length=262144, max_running_requests=2, kv_cache_dtype='fp8_e4m3', tp_size=1, served_model_name='tiny')"},
	{"[2026-10-02 03:00:03] Init torch distributed begin."},
	{"[2026-10-02 03:00:04] Init torch distributed ends. elapsed=0.84 s, mem usage=0.09 GB"},
	{"[2026-10-02 03:00:05] Load weight begin. avail mem=23.30 GB"},
}

func records(parts ...[][]string) [][]string {
	var out [][]string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var restoreCases = map[string]restoreCase{
	// unknown_failure on an exception no rule names, with the error
	// lines after it: the decisive line and the last errors.
	"unnamed exception": {records(sglangStart, [][]string{
		{"Traceback (most recent call last):", `  File "/opt/frob/pool.py", line 2311, in align_pool`, "    frob.align(pool)",
			"frobnicate.MisalignedWidgetError: widget 0x1f is not aligned to 4096"},
		{"[2026-10-02 03:00:08] ERROR detokenizer: could not reach the scheduler, giving up"},
		{"[2026-10-02 03:00:09] ERROR tokenizer manager failed: scheduler is gone"},
		{"[2026-10-02 03:00:10] ERROR http server failed to drain requests"},
		{"[2026-10-02 03:00:11] ERROR watchdog failed to reach rank 0"},
		{"[2026-10-02 03:00:12] ERROR metrics exporter failed to flush"},
	}), true, false},
	// unknown_failure on a death line no rule names.
	"death line": {records(sglangStart, [][]string{{"launch: python3 exited with code 3"}}), true, false},
	// A boot that gets ready: its readiness and boot-shape lines, and the
	// lines that moved it into warmup and ready.
	"ready": {records(sglangStart, [][]string{
		{"[2026-10-02 03:00:06] Load weight end. elapsed=20.77 s, type=Tiny, quant=none, avail mem=11.92 GB, mem usage=11.38 GB."},
		{"[2026-10-02 03:00:07] KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 606208, K size: 4.62 GB, V size: 4.62 GB"},
		{"[2026-10-02 03:00:08] Memory pool end. avail mem=0.81 GB"},
		{"[2026-10-02 03:00:09] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=0.81 GB"},
		{"[2026-10-02 03:00:10] Capture target decode CUDA graph end. elapsed=4.83 s, mem usage=0.24 GB, avail mem=0.57 GB."},
		{"[2026-10-02 03:00:11] max_total_num_tokens=606208, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2, context_len=262144, available_gpu_mem=0.57 GB"},
		{"[2026-10-02 03:00:12] INFO:     Started server process [5816]"},
		{"[2026-10-02 03:00:12] INFO:     Waiting for application startup."},
		{"[2026-10-02 03:00:12] INFO:     Application startup complete."},
		{"[2026-10-02 03:00:12] INFO:     Uvicorn running on http://0.0.0.0:7771 (Press CTRL+C to quit)"},
		{"[2026-10-02 03:00:13] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0,"},
		{"[2026-10-02 03:00:14] The server is fired up and ready to roll!"},
	}), false, false},
	// A boot that stops in warmup: running, quoting the last phase line
	// (where it got to), which must come back from its role.
	"running": {records(sglangStart, [][]string{
		{"[2026-10-02 03:00:06] Load weight end. elapsed=20.77 s, type=Tiny, quant=none, avail mem=11.92 GB, mem usage=11.38 GB."},
		{"[2026-10-02 03:00:07] KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 606208, K size: 4.62 GB, V size: 4.62 GB"},
		{"[2026-10-02 03:00:09] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=0.81 GB"},
		{"[2026-10-02 03:00:10] Capture target decode CUDA graph end. elapsed=4.83 s, mem usage=0.24 GB, avail mem=0.57 GB."},
		{"[2026-10-02 03:00:12] INFO:     Started server process [5816]"},
		{"[2026-10-02 03:00:12] Using default chat sampling params from model generation config"},
		{"[2026-10-02 03:00:13] a line of no phase"},
	}), false, true},
}

var restoreT0 = time.Date(2026, 10, 2, 3, 0, 0, 0, time.UTC)

// feedRecords gives the judge records[from:to]; every line's time and cursor
// are its record's.
func feedRecords(j *judge.Judge, recs [][]string, from, to int) {
	for i := from; i < to; i++ {
		for _, l := range recs[i] {
			j.Line(l, domain.Evidence{Time: restoreT0.Add(time.Duration(i+2) * time.Second), Cursor: fmt.Sprintf("c%d", i),
				Message: strings.TrimSpace(l)})
		}
	}
}

// ending is the attempt base and End the tracker gives when the case's
// records are all read.
func ending(c restoreCase, n int) (*domain.Attempt, judge.End) {
	base := &domain.Attempt{ID: "a", Host: "h", Unit: "tiny.service", InvocationID: "i", StartedAt: restoreT0}
	if !c.failed {
		return base, judge.End{}
	}
	at := restoreT0.Add(time.Duration(n+2) * time.Second)
	exit := domain.Evidence{Time: at, Cursor: "exit", Message: "tiny.service: Main process exited, code=exited, status=1/FAILURE"}
	failed := domain.Evidence{Time: at, Cursor: "failed", Message: "tiny.service: Failed with result 'exit-code'."}
	status := 1
	base.ExitCode, base.ExitStatus, base.EndedAt, base.EndedBy = "exited", &status, at, domain.EndedByExit
	return base, judge.End{Ended: true, Failed: true, Result: "exit-code", Line: &failed, Exit: &exit}
}

// described is an attempt as the explain contract shows it, with its
// findings in full and the role of each evidence line.
func described(t *testing.T, a *domain.Attempt) string {
	t.Helper()
	roles := make([]string, len(a.Evidence))
	for i, e := range a.Evidence {
		roles[i] = e.Role.String()
	}
	b, err := json.Marshal(struct {
		domain.AttemptJSON
		Lines    int
		Findings []domain.Finding
		Roles    []string
	}{a.JSON(), a.Lines, a.Findings, roles})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestoreAtEveryRecord judges each case whole, and cut after every
// record: the attempt as judged at the cut (open) is restored into a new
// judge, which reads the rest. Both must give the same attempt, down to
// the findings and the evidence lines' roles: the verdicts the judge names
// itself (unknown_failure on its decisive line, with the last errors in
// their order) and the readiness lines come back from the roles.
func TestRestoreAtEveryRecord(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range restoreCases {
		t.Run(name, func(t *testing.T) {
			n := len(c.records)
			j := judge.New(set, "", judge.Options{})
			j.Start(restoreT0)
			feedRecords(j, c.records, 0, n)
			base, end := ending(c, n)
			whole := j.Judge(base, end)
			want := map[bool]domain.Verdict{true: domain.VerdictUnknownFailure, false: domain.VerdictReady}[c.failed]
			if c.running {
				want = domain.VerdictRunning
			}
			if whole.Verdict != want {
				t.Fatalf("whole: verdict %s, want %s", whole.Verdict, want)
			}
			for cut := 1; cut < n; cut++ {
				j1 := judge.New(set, "", judge.Options{})
				j1.Start(restoreT0)
				feedRecords(j1, c.records, 0, cut)
				open, _ := ending(restoreCase{}, cut)
				stored := j1.Judge(open, judge.End{})
				j2 := judge.New(set, "", judge.Options{})
				j2.Restore(stored)
				feedRecords(j2, c.records, cut, n)
				got := j2.Judge(base, end)
				if g, w := described(t, got), described(t, whole); g != w {
					t.Errorf("cut after record %d (stored %s):\n got %s\nwant %s", cut, stored.Verdict, g, w)
				}
			}
		})
	}
}

// TestRestoreWithoutRoles: lines stored before they had roles (an older
// database) are still placed by the stored verdict: those of an unknown
// failure become its last error lines, shown again when it ends.
func TestRestoreWithoutRoles(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	c := restoreCases["unnamed exception"]
	cut := len(sglangStart) + 3 // after the exception and two error lines
	j1 := judge.New(set, "", judge.Options{})
	j1.Start(restoreT0)
	feedRecords(j1, c.records, 0, cut)
	open, _ := ending(restoreCase{}, cut)
	stored := j1.Judge(open, judge.End{})
	if stored.Verdict != domain.VerdictUnknownFailure || len(stored.Evidence) != 4 {
		t.Fatalf("stored: verdict %s with %d lines, want unknown_failure with 4 (the exception, the traceback header, 2 errors)",
			stored.Verdict, len(stored.Evidence))
	}
	for i := range stored.Evidence {
		stored.Evidence[i].Role = 0
	}
	j2 := judge.New(set, "", judge.Options{})
	j2.Restore(stored)
	feedRecords(j2, c.records, cut, len(c.records))
	base, end := ending(c, len(c.records))
	got := j2.Judge(base, end)
	if got.Verdict != domain.VerdictUnknownFailure || got.Rule != "analyzer.unknown_failure" {
		t.Fatalf("verdict %s by %s, want unknown_failure by analyzer.unknown_failure", got.Verdict, got.Rule)
	}
	// The 4 lines restored as last errors, 3 more read: the last 5, then
	// the exit record and the failure. (The exception no longer stands as
	// the decisive line: that took its role.)
	var msgs []string
	for _, e := range got.Evidence {
		msgs = append(msgs, e.Message)
	}
	wantMsgs := []string{
		"[2026-10-02 03:00:08] ERROR detokenizer: could not reach the scheduler, giving up",
		"[2026-10-02 03:00:09] ERROR tokenizer manager failed: scheduler is gone",
		"[2026-10-02 03:00:10] ERROR http server failed to drain requests",
		"[2026-10-02 03:00:11] ERROR watchdog failed to reach rank 0",
		"[2026-10-02 03:00:12] ERROR metrics exporter failed to flush",
		"tiny.service: Main process exited, code=exited, status=1/FAILURE",
		"tiny.service: Failed with result 'exit-code'.",
	}
	if strings.Join(msgs, "\n") != strings.Join(wantMsgs, "\n") {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(wantMsgs, "\n"))
	}
}
