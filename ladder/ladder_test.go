package ladder_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/ladder"
)

const fixtureDir = "../examples" // the shared fixtures' journals, as the repository holds them

// analyzeFile runs one file through the real ingest and a fresh tracker.
func analyzeFile(t *testing.T, path string) []*domain.Attempt { return fixturetest.Attempts(t, path) }

func buildNight(t *testing.T) []ladder.Ladder {
	t.Helper()
	return ladder.Build(analyzeFile(t, filepath.Join(fixtureDir, "dankserver-night-ladder.journal.json")), ladder.Options{})
}

func i64(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// checkBoundary asserts a boundary's pass/fail values and status.
func checkBoundary(t *testing.T, l *ladder.Ladder, dim, kind string, at map[string]string, pass, fail int64, status string) *ladder.Boundary {
	t.Helper()
	b := l.Boundary(dim, kind, at)
	if b == nil {
		t.Errorf("no %s boundary of %s at %v", kind, dim, at)
		return nil
	}
	if b.Pass == nil || *b.Pass != pass || b.Fail == nil || *b.Fail != fail || b.Status != status {
		t.Errorf("%s %s at %s: pass %s fail %s status %s, want %d / %d %s (%s)", kind, dim, b.AtText, i64(b.Pass), i64(b.Fail), b.Status, pass, fail, status, b.Note)
	}
	return b
}

func TestNightLadder(t *testing.T) {
	ls := buildNight(t)
	if len(ls) != 1 {
		for _, l := range ls {
			t.Logf("ladder %s %s/%s: %d rungs", l.ID, l.Host, l.Target, len(l.Rungs))
		}
		t.Fatalf("want 1 ladder, got %d", len(ls))
	}
	l := &ls[0]
	if l.Target != "frank-primary" || l.TargetFrom != "served_model_name" || l.Host != "dankserver" || l.Engine != "vllm" {
		t.Errorf("ladder %s/%s (from %s, engine %s), want dankserver/frank-primary from served_model_name, vllm", l.Host, l.Target, l.TargetFrom, l.Engine)
	}
	if len(l.Rungs) != 16 {
		t.Fatalf("want 16 rungs, got %d", len(l.Rungs))
	}
	if want := []string{"frank-primary-probe.service", "frank-primary.service"}; strings.Join(l.Units, ",") != strings.Join(want, ",") {
		t.Errorf("units %v, want %v", l.Units, want)
	}
	for i, r := range l.Rungs {
		if r.N != i+1 {
			t.Errorf("rung %d has N %d", i+1, r.N)
		}
		if i > 0 && !r.StartedAt.After(l.Rungs[i-1].StartedAt) {
			t.Errorf("rung %d starts %s, not after rung %d (%s)", r.N, r.StartedAt, i, l.Rungs[i-1].StartedAt)
		}
	}
	if l.Granularity != 4096 || l.Passes != 6 || l.CapacityFails != 8 || l.Others != 2 {
		t.Errorf("granularity %d, passes %d, capacity fails %d, others %d; want 4096, 6, 8, 2", l.Granularity, l.Passes, l.CapacityFails, l.Others)
	}

	// The operators' ladder: 262144 and 245760 OOM at graph capture,
	// 237568 passes, +4096 → 241664 passes.
	wantMML := []int64{262144, 245760, 237568, 241664}
	for i, w := range wantMML {
		if v, _ := l.Rungs[i].Shape.Int(domain.ShapeMaxModelLen); v != w {
			t.Errorf("rung %d max_model_len %d, want %d", i+1, v, w)
		}
	}
	r2 := l.Rung(2)
	if len(r2.Diff) != 1 || r2.Diff[0].String() != "max_model_len 262144 → 245760" {
		t.Errorf("rung 2 diff %v, want [max_model_len 262144 → 245760]", r2.Diff)
	}
	if len(l.Rung(1).Diff) != 0 {
		t.Errorf("rung 1 diff %v, want none", l.Rung(1).Diff)
	}
	var d7 []string
	for _, c := range l.Rung(7).Diff {
		d7 = append(d7, c.String())
	}
	if strings.Join(d7, "; ") != "unit frank-primary-probe.service → frank-primary.service" {
		t.Errorf("rung 7 diff %q: the production unit took the probe's shape", d7)
	}
	var d10 []string
	for _, c := range l.Rung(10).Diff {
		d10 = append(d10, c.String())
	}
	if want := "max_num_seqs 3 → 2; kv_cache_dtype fp8 → auto; kv_cache_memory_bytes 6100000000 → 7300000000; expert_precise_memory — → true"; strings.Join(d10, "; ") != want {
		t.Errorf("rung 10 diff %q, want %q", strings.Join(d10, "; "), want)
	}

	// Classes, per rung.
	wantClass := "cf cf p p cf p cf p p cf cf cf cf o o p"
	abbrev := map[ladder.Class]string{ladder.ClassPass: "p", ladder.ClassCapacityFail: "cf", ladder.ClassOther: "o"}
	var got []string
	for _, r := range l.Rungs {
		got = append(got, abbrev[r.Class])
	}
	if strings.Join(got, " ") != wantClass {
		t.Errorf("classes %q, want %q", strings.Join(got, " "), wantClass)
	}
	r7 := l.Rung(7)
	if r7.Verdict != domain.VerdictOOMRuntime || r7.Boot != ladder.ClassPass || r7.Survive != ladder.ClassCapacityFail || !r7.ReachedReady {
		t.Errorf("rung 7 (%s): boot %s survive %s, want pass / capacity_fail", r7.Verdict, r7.Boot, r7.Survive)
	}
	for _, n := range []int{14, 15} {
		r := l.Rung(n)
		if r.Verdict != domain.VerdictDynamoConstraint || r.Class != ladder.ClassOther || !strings.Contains(r.ClassNote, "not a capacity failure") {
			t.Errorf("rung %d: %s class %s note %q, want dynamo_constraint_violation / other / not a capacity failure", n, r.Verdict, r.Class, r.ClassNote)
		}
	}

	// Derived figures.
	r1 := l.Rung(1)
	if r1.KVBytesPerToken == nil || math.Abs(*r1.KVBytesPerToken-11047010304.0/798280) > 1e-6 || r1.KVDtype != "auto" {
		t.Errorf("rung 1 KV bytes/token %v (%s), want %f (auto)", r1.KVBytesPerToken, r1.KVDtype, 11047010304.0/798280)
	}
	if r6 := l.Rung(6); r6.KVBytesPerToken == nil || math.Abs(*r6.KVBytesPerToken-10388766720.0/1350182) > 1e-6 || r6.KVDtype != "fp8" {
		t.Errorf("rung 6 KV bytes/token %v, want %f (fp8)", r6.KVBytesPerToken, 10388766720.0/1350182)
	}
	if m := l.KVBytesPerToken["fp8"]; m < 7690 || m > 7702 {
		t.Errorf("median fp8 KV bytes/token %f, want about 7698", m)
	}
	if r1.FreeAtFailure != "0 bytes" || r1.FreeAtFailureBytes == nil || *r1.FreeAtFailureBytes != 0 || r1.AllocAtFailure != "76.00 MiB" {
		t.Errorf("rung 1 free %q (%v) alloc %q, want 0 bytes / 76.00 MiB", r1.FreeAtFailure, r1.FreeAtFailureBytes, r1.AllocAtFailure)
	}
	if r10 := l.Rung(10); r10.FreeAtFailure != "96.00 MiB" || r10.FreeAtFailureBytes == nil || *r10.FreeAtFailureBytes != 96<<20 || r10.AllocAtFailure != "162.00 MiB" {
		t.Errorf("rung 10 free %q alloc %q, want 96.00 MiB / 162.00 MiB", r10.FreeAtFailure, r10.AllocAtFailure)
	}
	if r5 := l.Rung(5); r5.FreeAtFailure != "9.18 GiB" || r5.KVTokens != nil {
		t.Errorf("rung 5 free %q, KV tokens %v; want 9.18 GiB and no KV tokens (it died allocating them)", r5.FreeAtFailure, r5.KVTokens)
	}
	r4 := l.Rung(4)
	if r4.KVTokens == nil || *r4.KVTokens != 732359 || r4.Concurrency == nil || *r4.Concurrency != 3.03 {
		t.Errorf("rung 4 KV tokens %v concurrency %v, want 732359 / 3.03", r4.KVTokens, r4.Concurrency)
	}
	if r4.SecondsToReady == nil || math.Abs(*r4.SecondsToReady-324.4) > 0.01 || r4.SecondsToFailure != nil {
		t.Errorf("rung 4 seconds to ready %v, to failure %v; want 324.4 / none", r4.SecondsToReady, r4.SecondsToFailure)
	}
	if r1.SecondsToFailure == nil || *r1.SecondsToFailure < 300 || *r1.SecondsToFailure > 318 || r1.SecondsToReady != nil {
		t.Errorf("rung 1 seconds to failure %v, want about 314 (ended 317.5 s after start)", r1.SecondsToFailure)
	}

	// Boundaries.
	auto3 := map[string]string{"max_num_seqs": "3", "kv_cache_dtype": "auto"}
	for _, kind := range []string{ladder.KindBoot, ladder.KindSurvive} {
		t.Run(kind, func(t *testing.T) {
			b := checkBoundary(t, l, "max_model_len", kind, auto3, 241664, 245760, ladder.StatusFound)
			if b != nil && (b.PassRung != 4 || b.FailRung != 2 || b.FailVerdict != domain.VerdictOOMGraphCapture || b.AtText != "max_num_seqs=3, kv_cache_dtype=auto") {
				t.Errorf("%s max_model_len: pass rung %d fail rung %d (%s) at %q", kind, b.PassRung, b.FailRung, b.FailVerdict, b.AtText)
			}
		})
	}
	fp8 := map[string]string{"kv_cache_dtype": "fp8"}
	boot := checkBoundary(t, l, ladder.DimContract, ladder.KindBoot, fp8, 1310720, 1449984, ladder.StatusOpen)
	if boot != nil && (boot.PassRung != 6 || boot.FailRung != 5 || boot.Next == nil || *boot.Next != 1376256 || boot.NextShape != "6 × 229376 fp8") {
		t.Errorf("boot contract fp8: rungs %d/%d, next %s %q; want 6/5, 1376256 6 × 229376 fp8", boot.PassRung, boot.FailRung, i64(boot.Next), boot.NextShape)
	}
	surv := checkBoundary(t, l, ladder.DimContract, ladder.KindSurvive, fp8, 1048576, 1310720, ladder.StatusOpen)
	if surv != nil && (surv.PassRung != 8 || surv.FailRung != 7 || surv.FailVerdict != domain.VerdictOOMRuntime ||
		surv.Next == nil || *surv.Next != 1167360 || surv.NextShape != "5 × 233472 fp8" || fmt.Sprint(surv.Overridden) != "[6]") {
		t.Errorf("survive contract fp8: rungs %d/%d (%s), next %s %q, overridden %v", surv.PassRung, surv.FailRung, surv.FailVerdict, i64(surv.Next), surv.NextShape, surv.Overridden)
	}
	checkBoundary(t, l, "max_num_seqs", ladder.KindSurvive, map[string]string{"max_model_len": "262144", "kv_cache_dtype": "fp8"}, 4, 5, ladder.StatusFound)
	// The bf16 × 2 rungs that failed with dynamo_constraint_violation are
	// no capacity boundary: never a fail rung, listed as not counted.
	excluded := false
	for _, b := range l.Boundaries {
		if b.FailRung == 14 || b.FailRung == 15 {
			t.Errorf("boundary %s %s at %s fails at dynamo rung %d", b.Kind, b.Dimension, b.AtText, b.FailRung)
		}
		if fmt.Sprint(b.Excluded) == "[14 15]" {
			excluded = true
		}
	}
	if !excluded {
		t.Error("no boundary lists rungs 14 and 15 as not counted")
	}
	if b := l.Boundary("max_num_seqs", ladder.KindBoot, map[string]string{"max_model_len": "262144", "kv_cache_dtype": "auto"}); b == nil || b.Pass != nil || b.Status != ladder.StatusNoPass || *b.Fail != 2 {
		t.Errorf("max_num_seqs at 262144 auto: %+v, want no pass, fails down to 2", b)
	}
	if b := l.Boundary(ladder.DimContract, ladder.KindBoot, map[string]string{"kv_cache_dtype": "auto"}); b == nil || b.Status != ladder.StatusInconsistent ||
		!strings.Contains(b.Note, "max_num_batched_tokens 1024 → 2048") {
		t.Errorf("contract at auto should be inconsistent (2 × 262144 fails below 3 × 241664) and name the other differences: %+v", b)
	}
	notes := strings.Join(l.Notes, "\n")
	for _, w := range []string{
		"rungs 14–15 (2 × 262144 bf16) failed with dynamo_constraint_violation, which is not a capacity failure: not taken as a capacity boundary.",
		"frank-primary-probe.service (rungs 1–6), frank-primary.service (rungs 7–16)",
		"rungs 10–13 boot one shape (2 × 262144 bf16) and fail the same way (oom_graph_capture)",
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}

	// The next rung bisects the survivable contract boundary at fp8, the
	// context of the latest rung.
	if n := l.Next; n == nil || n.Found || n.Shape != "5 × 233472 fp8" || n.Value == nil || *n.Value != 1167360 || n.Kind != ladder.KindSurvive {
		t.Errorf("next %+v, want 5 × 233472 fp8 (1167360) for surviving", n)
	}
	if n := l.Next; n == nil || n.Flags != "--max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype fp8" {
		t.Errorf("next rung as vLLM flags: %+v", n)
	}

	// Per-rung notes.
	for n, want := range map[int]string{
		1:  "rung 1 of ladder frank-primary: OOM at graph capture at 3 × 262144 bf16 KV 11.05 GB 798280 KV tokens (0 bytes free, asked for 76.00 MiB).",
		2:  "rung 2 of ladder frank-primary: same OOM at graph capture as rung 1, at a smaller max_model_len (245760 vs 262144) (0 bytes free, asked for 76.00 MiB); lowest failing max_model_len at max_num_seqs=3, kv_cache_dtype=auto.",
		4:  "rung 4 of ladder frank-primary: passes (ready after 324 s) like rung 3, at a larger max_model_len (241664 vs 237568); highest passing max_model_len at max_num_seqs=3, kv_cache_dtype=auto (boundary found).",
		7:  "rung 7 of ladder frank-primary: boots (ready after 324 s) but dies of OOM while serving: fails the survivable boundary; rung 6 booted the same shape.",
		11: "rung 11 of ladder frank-primary: same OOM at graph capture as rung 10, with the same shape: a restart, not a new rung (96.00 MiB free, asked for 162.00 MiB).",
		14: "rung 14 of ladder frank-primary: dynamo_constraint_violation is not a capacity failure",
	} {
		t.Run(fmt.Sprint("rung ", n), func(t *testing.T) {
			if got := l.Rung(n).Note; !strings.HasPrefix(got, want) {
				t.Errorf("rung %d note\n got %q\nwant %q", n, got, want)
			}
			if got := ladder.RungNote(l, n); got != l.Rung(n).Note {
				t.Errorf("RungNote(%d) = %q, differs from the stored note", n, got)
			}
		})
	}

	// JSON: rungs carry their note, times and diff.
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"n":2`, `"diff":[{"key":"max_model_len","from":262144,"to":245760}]`, `"note":"rung 2 of ladder frank-primary: same OOM`,
		`"free_at_failure":"96.00 MiB"`, `"started_at":"2026-10-01T21:40:00-07:00"`, `"status":"found"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("ladder JSON lacks %s", w)
		}
	}
}

// TestBuildIsStable: the id and the ladder do not depend on the order the
// attempts come in (the store gives them newest first).
func TestBuildIsStable(t *testing.T) {
	as := analyzeFile(t, filepath.Join(fixtureDir, "dankserver-night-ladder.journal.json"))
	a := ladder.Build(as, ladder.Options{})
	rev := append([]*domain.Attempt{}, as...)
	slices.Reverse(rev)
	b := ladder.Build(rev, ladder.Options{})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Error("Build on reversed input gives another result")
	}
	if a[0].ID == "" || len(a[0].ID) != 16 {
		t.Errorf("id %q", a[0].ID)
	}
	if l, r := ladder.ForAttempt(a, as[4].ID); l == nil || r == nil || r.N != 5 || ladder.Find(a, l.ID) != l {
		t.Errorf("ForAttempt(%s) = %v, %v", as[4].ID, l, r)
	}
}

func TestDayFixture(t *testing.T) {
	ls := ladder.Build(analyzeFile(t, filepath.Join(fixtureDir, "dankclaw-day.journal.json")), ladder.Options{})
	got := map[string]*ladder.Ladder{}
	for i := range ls {
		got[ls[i].Target] = &ls[i]
	}
	if len(ls) != 2 || got["frank-small"] == nil || got["frank-large"] == nil {
		t.Fatalf("want ladders frank-small and frank-large, got %d: %v", len(ls), got)
	}
	large := got["frank-large"]
	if large.Engine != "halogen" || len(large.Rungs) != 2 {
		t.Fatalf("frank-large: %s, %d rungs", large.Engine, len(large.Rungs))
	}
	b := checkBoundary(t, large, "max_model_len", ladder.KindBoot, map[string]string{"max_num_seqs": "2"}, 200192, 262144, ladder.StatusOpen)
	if b != nil && (b.Next == nil || *b.Next != 229376) {
		t.Errorf("frank-large next %s, want 229376 (midpoint 231168 rounded down to 4096)", i64(b.Next))
	}
	small := got["frank-small"]
	if len(small.Boundaries) != 0 || small.Next == nil || small.Next.Found || small.Next.Value != nil {
		t.Errorf("frank-small: the same shape failed then passed: no boundary, got %v / %+v", small.Boundaries, small.Next)
	}
	if n := small.Rung(2).Note; !strings.Contains(n, "with the same shape as rung 1, which failed with oom_graph_capture; the KV cache is 606208 tokens (rung 1: 687388)") {
		t.Errorf("frank-small rung 2 note %q", n)
	}
	// Granularity is per engine.
	ls = ladder.Build(analyzeFile(t, filepath.Join(fixtureDir, "dankclaw-day.journal.json")), ladder.Options{Granularity: map[string]int64{"halogen": 65536}})
	for _, l := range ls {
		if l.Target == "frank-large" {
			if l.Granularity != 65536 {
				t.Errorf("granularity %d", l.Granularity)
			}
			if b := l.Boundary("max_model_len", ladder.KindBoot, nil); b == nil || b.Status != ladder.StatusFound {
				t.Errorf("with 65536-token blocks, 200192..262144 has no rung left between: %+v", b)
			}
		}
	}
}

// attempt makes a synthetic attempt.
func attempt(id, unit string, start time.Time, mins int, v domain.Verdict, shape domain.Shape) *domain.Attempt {
	a := &domain.Attempt{ID: id, Host: "h1", Unit: unit, Engine: "vllm", StartedAt: start, EndedAt: start.Add(time.Duration(mins) * time.Minute),
		Verdict: v, Phase: domain.PhaseGraphCapture, Shape: shape}
	if v == domain.VerdictReady {
		a.ReadyAt, a.Phase = start.Add(time.Minute), domain.PhaseReady
	}
	return a
}

func TestGroupingGapsAndTargets(t *testing.T) {
	t0 := time.Date(2026, 10, 2, 4, 0, 0, 0, time.UTC)
	s := func(mns, mml int64) domain.Shape {
		return domain.Shape{"max_num_seqs": mns, "max_model_len": mml, "kv_cache_dtype": "auto"}
	}
	as := []*domain.Attempt{
		// No served_model_name: the unit family names the target; probe
		// and production units share it.
		attempt("a1", "qwen-probe.service", t0, 5, domain.VerdictOOMKVAlloc, s(2, 131072)),
		attempt("a2", "qwen.service", t0.Add(10*time.Minute), 5, domain.VerdictReady, s(2, 65536)),
		// 6 h 50 min after a2 ended: a gap of more than 6 h starts a new ladder.
		attempt("a3", "qwen.service", t0.Add(7*time.Hour), 5, domain.VerdictReady, s(2, 65536)),
		// Another target on the same host.
		attempt("b1", "other.service", t0.Add(20*time.Minute), 5, domain.VerdictStopped, s(1, 4096)),
	}
	ls := ladder.Build(as, ladder.Options{})
	var desc []string
	for _, l := range ls {
		var ids []string
		for _, r := range l.Rungs {
			ids = append(ids, r.AttemptID)
		}
		desc = append(desc, l.Target+"("+l.TargetFrom+"):"+strings.Join(ids, ","))
	}
	if want := "qwen(unit):a3 | other(unit):b1 | qwen(unit):a1,a2"; strings.Join(desc, " | ") != want {
		t.Errorf("ladders %q, want %q (newest first)", strings.Join(desc, " | "), want)
	}
	// A longer gap option keeps them together.
	if ls := ladder.Build(as, ladder.Options{Gap: 8 * time.Hour}); len(ls) != 2 {
		t.Errorf("with an 8 h gap: %d ladders, want 2", len(ls))
	}
	// A rung of the first ladder: 131072 fails, 65536 passes → next 98304.
	var first *ladder.Ladder
	for i := range ls {
		if ls[i].Rungs[0].AttemptID == "a1" {
			first = &ls[i]
		}
	}
	b := checkBoundary(t, first, "max_model_len", ladder.KindBoot, map[string]string{"max_num_seqs": "2"}, 65536, 131072, ladder.StatusOpen)
	if b != nil && (b.Next == nil || *b.Next != 98304 || b.NextShape != "2 × 98304 bf16") {
		t.Errorf("next %s %q, want 98304 2 × 98304 bf16", i64(b.Next), b.NextShape)
	}
	if first.Next == nil || first.Next.Value == nil || *first.Next.Value != 98304 {
		t.Errorf("ladder next %+v", first.Next)
	}
	// The stopped rung is neither pass nor failure.
	for _, l := range ls {
		if l.Target == "other" && (l.Rungs[0].Class != ladder.ClassOther || !strings.Contains(strings.Join(l.Notes, " "), "rung 1 stopped before ready")) {
			t.Errorf("stopped rung: class %s, notes %v", l.Rungs[0].Class, l.Notes)
		}
	}

	// An attempt that died before printing its served_model_name joins the
	// ladder its unit's other attempts name.
	named := s(2, 65536)
	named["served_model_name"] = "qwen-coder"
	early := attempt("c0", "coder.service", t0, 1, domain.VerdictConfigError, domain.Shape{})
	ls = ladder.Build([]*domain.Attempt{early, attempt("c1", "coder.service", t0.Add(5*time.Minute), 5, domain.VerdictReady, named)}, ladder.Options{})
	if len(ls) != 1 || ls[0].Target != "qwen-coder" || len(ls[0].Rungs) != 2 || ls[0].Rungs[0].Class != ladder.ClassOther {
		t.Errorf("early death: %d ladders %+v", len(ls), ls)
	}
	if !strings.Contains(ls[0].Rungs[0].ClassNote, "config_error is not a capacity failure") {
		t.Errorf("config_error class note %q", ls[0].Rungs[0].ClassNote)
	}
}

func TestFamilyAndBytes(t *testing.T) {
	for in, want := range map[string]string{
		"frank-primary-probe.service": "frank-primary", "frank-primary.service": "frank-primary",
		"vllm@gpu0.service": "vllm", "qwen-probe-2.service": "qwen", "llama.service": "llama",
	} {
		t.Run(in, func(t *testing.T) {
			if got := ladder.Family(in); got != want {
				t.Errorf("Family(%q) = %q, want %q", in, got, want)
			}
		})
	}
	if got := ladder.ContainerFamily("frank-primary-probe-2"); got != "frank-primary" {
		t.Errorf("ContainerFamily = %q", got)
	}
}

// TestNextRungOnTheGrid: the midpoint is rounded down to the granularity,
// up when rounding down lands on the pass, and "found" when no multiple
// lies between.
func TestNextRungOnTheGrid(t *testing.T) {
	t0 := time.Date(2026, 10, 2, 4, 0, 0, 0, time.UTC)
	two := func(pass, fail int64, g int64) *ladder.Boundary {
		as := []*domain.Attempt{
			attempt("p", "x.service", t0, 5, domain.VerdictReady, domain.Shape{"max_num_seqs": int64(1), "max_model_len": pass}),
			attempt("f", "x.service", t0.Add(10*time.Minute), 5, domain.VerdictOOMProfile, domain.Shape{"max_num_seqs": int64(1), "max_model_len": fail}),
		}
		ls := ladder.Build(as, ladder.Options{DefaultGranularity: g})
		return ls[0].Boundary("max_model_len", ladder.KindBoot, nil)
	}
	for _, c := range []struct {
		pass, fail, g int64
		next          string
		status        string
	}{
		{237568, 245760, 4096, "241664", ladder.StatusOpen},      // the operators' +4096
		{241664, 245760, 4096, "nil", ladder.StatusFound},        // step = granularity
		{200000, 300000, 65536, "262144", ladder.StatusOpen},     // 250000 rounds down to 196608 < pass: up
		{200192, 262144, 65536, "nil", ladder.StatusFound},       // no multiple of 65536 strictly between
		{131072, 262144, 4096, "196608", ladder.StatusOpen},      // plain midpoint
		{100, 103, 1, "101", ladder.StatusOpen},                  // granularity 1
		{262144, 131072, 4096, "nil", ladder.StatusInconsistent}, // fails below a pass
	} {
		t.Run(fmt.Sprintf("pass=%d,fail=%d,g=%d", c.pass, c.fail, c.g), func(t *testing.T) {
			b := two(c.pass, c.fail, c.g)
			if b == nil {
				t.Errorf("%+v: no boundary", c)
				return
			}
			if i64(b.Next) != c.next || b.Status != c.status {
				t.Errorf("pass %d fail %d g %d: next %s %s, want %s %s (%s)", c.pass, c.fail, c.g, i64(b.Next), b.Status, c.next, c.status, b.Note)
			}
			if b.Status == ladder.StatusFound && !strings.Contains(b.Note, "boundary found (step") {
				t.Errorf("found note %q", b.Note)
			}
		})
	}
}

// TestBuildMemoRebuildsOnlyWhatChanged: after one attempt changes (a new
// *Attempt) and a later boot is added, BuildMemo gives exactly Build's
// ladders while building only the ladders holding a changed attempt.
func TestBuildMemoRebuildsOnlyWhatChanged(t *testing.T) {
	var as []*domain.Attempt
	for _, f := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		as = append(as, analyzeFile(t, filepath.Join(fixtureDir, f+".journal.json"))...)
	}
	var memo ladder.Memo
	same := func(what string) {
		t.Helper()
		got, _ := json.Marshal(ladder.BuildMemo(as, ladder.Options{}, &memo))
		want, _ := json.Marshal(ladder.Build(as, ladder.Options{}))
		if string(got) != string(want) {
			t.Fatalf("%s: BuildMemo differs from Build", what)
		}
	}
	same("first build")
	total := memo.Built
	if total < 3 || memo.Reused != 0 {
		t.Fatalf("first build: built %d, reused %d", memo.Built, memo.Reused)
	}
	same("nothing changed")
	if memo.Built != 0 || memo.Reused != total {
		t.Fatalf("unchanged: built %d, reused %d of %d", memo.Built, memo.Reused, total)
	}
	// The day host's first attempt is judged again with another verdict.
	i := len(as) - 1
	changed := *as[i]
	changed.Verdict = domain.VerdictUnknownFailure
	as[i] = &changed
	// The night host boots again an hour after its last attempt.
	later := *as[15]
	later.ID, later.InvocationID = "later", "later"
	later.StartedAt, later.EndedAt = later.StartedAt.Add(time.Hour), later.EndedAt.Add(time.Hour)
	as = append(as, &later)
	same("two changes")
	if memo.Built != 2 || memo.Reused != total-2 {
		t.Errorf("after two changes in two ladders: built %d, reused %d of %d", memo.Built, memo.Reused, total)
	}
}
