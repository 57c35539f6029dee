package judge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/rules"
)

// gufo's lines, as its source prints them: ModelLoadLog's load_started
// (serve.cpp), HttpServer::run's listening (http_server.cpp), the terminate
// handler's event=terminated (serve.cpp's ReportTerminationReason), then
// std::terminate's own two lines, then ReportFatalSignal's line.
const (
	gufoBanner    = "2026-08-01 12:00:00 [INFO] [gpu] event=queue_budget kind=llm observed=0 budget=8 expected_max=3 cap=2"
	gufoLoad      = "2026-08-01 12:00:00 [INFO] [loader] event=load_started kind=text artifact=/models/Qwen3.8-35B-A3B-Q4_K_M.gguf rss_mib=118 host_available_mib=120544"
	gufoListening = "2026-08-01 12:00:00 [INFO] [server] event=listening address=http://127.0.0.1:8080 auth=off max_connections=16 max_body_bytes=8388608"
	gufoReceived  = "2026-08-01 12:00:00 [INFO] [http] request=r1 event=received method=POST path=/v1/chat/completions body_bytes=512"
	gufoAbort     = "[ERROR] [server] event=fatal_signal signal=6"
)

// terminated is gufo's crash sequence for an exception of type typ with
// message what; handler: the terminate handler names it first.
func terminated(typ, what string, handler bool) []string {
	var out []string
	if handler {
		out = append(out, "2026-08-01 12:00:01 [ERROR] [server] event=terminated reason="+what)
	}
	return append(out, "terminate called after throwing an instance of '"+typ+"'", "  what():  "+what, gufoAbort)
}

// TestUncaughtCppException: an exception that escapes a thread of a C++
// engine and aborts it is named from its type (and message), in the phase
// the engine was in, never unknown_failure: the terminate line's rule names
// it even when an earlier line of the same finding (gufo's event=terminated)
// holds the root.
func TestUncaughtCppException(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		lines        []string
		verdict      domain.Verdict
		phase        domain.Phase
		decisiveLine string
	}{
		// tp_executor.cpp: TpExecutor's constructor creates rank 1's states
		// while the model loads.
		{"runtime_error while loading, named by the handler first",
			append([]string{gufoBanner, gufoLoad}, terminated("std::runtime_error", "TP executor state creation failed", true)...),
			domain.VerdictEngineDied, domain.PhaseWeights, "event=terminated reason=TP executor state creation failed"},
		{"runtime_error while loading, no handler",
			append([]string{gufoBanner, gufoLoad}, terminated("std::runtime_error", "TP executor state creation failed", false)...),
			domain.VerdictEngineDied, domain.PhaseWeights, "terminate called after throwing"},
		// src/cache/ledger.cpp throws std::bad_alloc when the host budget is spent.
		{"bad_alloc while loading",
			append([]string{gufoBanner, gufoLoad}, terminated("std::bad_alloc", "std::bad_alloc", true)...),
			domain.VerdictOOMWeights, domain.PhaseWeights, "std::bad_alloc"},
		// inference_backend.cpp: a runner invariant while serving a request.
		{"logic_error while serving",
			append([]string{gufoBanner, gufoLoad, gufoListening, gufoReceived}, terminated("std::logic_error", "Qwen prefill offset does not match retained state", true)...),
			domain.VerdictEngineDied, domain.PhaseServing, "Qwen prefill offset does not match retained state"},
	}
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			feed := func(j *judge.Judge, from, to int) {
				for i := from; i < to; i++ {
					l := c.lines[i]
					j.Line(l, domain.Evidence{Time: t0.Add(time.Duration(i) * time.Second), Cursor: fmt.Sprintf("c%d", i), Message: l})
				}
			}
			j := judge.New(set, "", judge.Options{})
			j.Start(t0)
			feed(j, 0, len(c.lines))
			at := t0.Add(time.Minute)
			exit := domain.Evidence{Time: at, Cursor: "exit", Message: "gufo.service: Main process exited, code=dumped, status=6/ABRT"}
			failed := domain.Evidence{Time: at, Cursor: "failed", Message: "gufo.service: Failed with result 'core-dump'."}
			status := 6
			base := &domain.Attempt{ID: "a", Host: "h", Unit: "gufo.service", InvocationID: "i", StartedAt: t0,
				ExitCode: "dumped", ExitStatus: &status, EndedAt: at, EndedBy: domain.EndedByExit}
			end := judge.End{Ended: true, Failed: true, Result: "core-dump", Line: &failed, Exit: &exit}
			a := j.Judge(base, end)
			// Stored while open after any line and restored, the judge names
			// it the same (a root restored from the store takes the later
			// hits too).
			for cut := 1; cut < len(c.lines); cut++ {
				j1 := judge.New(set, "", judge.Options{})
				j1.Start(t0)
				feed(j1, 0, cut)
				stored := j1.Judge(&domain.Attempt{ID: "a", Host: "h", Unit: "gufo.service", InvocationID: "i", StartedAt: t0}, judge.End{})
				j2 := judge.New(set, "", judge.Options{})
				j2.Restore(stored)
				feed(j2, cut, len(c.lines))
				if r := j2.Judge(base, end); r.Verdict != a.Verdict || r.Phase != a.Phase || r.Rule != a.Rule {
					t.Errorf("restored after line %d: %s in %s (%s), whole: %s in %s (%s)", cut, r.Verdict, r.Phase, r.Rule, a.Verdict, a.Phase, a.Rule)
				}
			}
			if a.Verdict != c.verdict || a.Phase != c.phase {
				t.Fatalf("got %s in %s (rule %s, note %q), want %s in %s", a.Verdict, a.Phase, a.Rule, a.Note, c.verdict, c.phase)
			}
			found := false
			for _, e := range a.Evidence {
				found = found || strings.Contains(e.Message, c.decisiveLine)
			}
			if !found {
				t.Errorf("no evidence line holds %q: %+v", c.decisiveLine, a.Evidence)
			}
		})
	}
}
