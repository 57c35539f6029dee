package ladder_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
)

func nightLadder(t *testing.T) *ladder.Ladder {
	t.Helper()
	ls := buildNight(t)
	if len(ls) != 1 {
		t.Fatalf("want 1 night ladder, got %d", len(ls))
	}
	return &ls[0]
}

func dayLadders(t *testing.T) map[string]*ladder.Ladder {
	t.Helper()
	ls := ladder.Build(analyzeFile(t, filepath.Join(fixtureDir, "dankclaw-day.journal.json")), ladder.Options{})
	out := map[string]*ladder.Ladder{}
	for i := range ls {
		out[ls[i].Target] = &ls[i]
	}
	if out["frank-small"] == nil || out["frank-large"] == nil {
		t.Fatalf("want frank-small and frank-large, got %v", out)
	}
	return out
}

func truth(c ladder.Class) string {
	switch c {
	case ladder.ClassPass:
		return ladder.OutcomeBoots
	case ladder.ClassCapacityFail:
		return ladder.OutcomeFails
	}
	return ladder.OutcomeUnknown
}

// For each capacity rung of the night ladder, the model built from the
// other rungs predicts its boot outcome.
func TestPredictLeaveOneOut(t *testing.T) {
	l := nightLadder(t)
	others := map[int]bool{}
	for _, r := range l.Rungs {
		if r.Boot == ladder.ClassOther {
			others[r.N] = true
		}
	}
	var rows []string
	rungs, decided, right := 0, 0, 0
	for _, r := range l.Rungs {
		if r.Boot == ladder.ClassOther {
			continue
		}
		rungs++
		p := ladder.NewModel(l, r.N).Predict(r.Shape)
		want := truth(r.Boot)
		mark := ""
		if p.Boot.Outcome != ladder.OutcomeUnknown {
			decided++
			if p.Boot.Outcome == want {
				right++
			} else {
				mark = "  WRONG"
			}
		}
		if want == ladder.OutcomeFails && p.Boot.Outcome == ladder.OutcomeBoots {
			t.Errorf("rung %d failed (%s) but the model says it boots: %s", r.N, r.Verdict, p.Boot.Reason)
		}
		if p.Boot.Rung == r.N || others[p.Boot.Rung] {
			t.Errorf("rung %d decided by rung %d (left out or not a capacity rung)", r.N, p.Boot.Rung)
		}
		for _, n := range p.Boot.Also {
			if n == r.N || others[n] {
				t.Errorf("rung %d: supporting rung %d is left out or not a capacity rung", r.N, n)
			}
		}
		rows = append(rows, fmt.Sprintf("%4d  %-26s %-6s %-8s %s%s", r.N, r.Summary[:min(len(r.Summary), 26)], want, p.Boot.Outcome, p.Boot.Reason, mark))
	}
	t.Logf("leave-one-out, night ladder (rung, shape, truth, prediction, reason):\n%s", strings.Join(rows, "\n"))
	t.Logf("%d capacity rungs, %d decided, %d right", rungs, decided, right)
	if rungs != 14 {
		t.Errorf("capacity rungs %d, want 14 (16 rungs, 14 and 15 are dynamo_constraint_violation)", rungs)
	}
	if decided == 0 || right*10 < decided*9 {
		t.Errorf("%d of %d decided rungs right, want at least 90 %%", right, decided)
	}
	// What the model decides today: every capacity rung, all right.
	if decided != 14 || right != 14 {
		t.Errorf("decided %d, right %d; want 14 and 14", decided, right)
	}
}

// A stricter leave-out: every rung of the same shape (restarts) leaves
// with the rung, so no rung is predicted by its own repeat.
func TestPredictLeaveShapeOut(t *testing.T) {
	l := nightLadder(t)
	var rows []string
	decided, right := 0, 0
	for _, r := range l.Rungs {
		if r.Boot == ladder.ClassOther {
			continue
		}
		var out []int
		for _, o := range l.Rungs {
			if o.Summary == r.Summary {
				out = append(out, o.N)
			}
		}
		p := ladder.NewModel(l, out...).Predict(r.Shape)
		want := truth(r.Boot)
		if p.Boot.Outcome != ladder.OutcomeUnknown {
			decided++
			if p.Boot.Outcome == want {
				right++
			}
		}
		if want == ladder.OutcomeFails && p.Boot.Outcome == ladder.OutcomeBoots {
			t.Errorf("rung %d failed but the model says it boots: %s", r.N, p.Boot.Reason)
		}
		rows = append(rows, fmt.Sprintf("%4d  without %-18s %-6s %-8s %s", r.N, fmt.Sprint(out), want, p.Boot.Outcome, p.Boot.Reason))
	}
	t.Logf("leave-shape-out, night ladder:\n%s", strings.Join(rows, "\n"))
	t.Logf("%d decided, %d right", decided, right)
	// Rungs 1–5 and 8 are decided from other shapes (capture headroom,
	// smaller than a pass); the restarts (6/7, 9/16, 10–13) are not.
	if decided != 6 || right != 6 {
		t.Errorf("decided %d, right %d; want 6 and 6", decided, right)
	}
}

// The runbook's "six never fit": 6 × 241664 fp8 fails for the asked-vs-free
// arithmetic of rung 5's KV allocation.
func TestPredictSixFp8Fails(t *testing.T) {
	l := nightLadder(t)
	m := ladder.NewModel(l)
	if bpt := m.BytesPerToken["fp8"]; bpt < 7698 || bpt > 7699 {
		t.Errorf("fp8 bytes per token %.1f, want 7698.x", bpt)
	}
	if bpt := m.BytesPerToken["auto"]; bpt < 13839 || bpt > 13840 {
		t.Errorf("auto bytes per token %.1f, want 13839.x", bpt)
	}
	p := m.WhatIf(6, 241664, "fp8", ladder.Memory{})
	t.Logf("boot: %s", p.Boot.Reason)
	if p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rule != ladder.RuleKVAllocFree || p.Boot.Rung != 5 {
		t.Fatalf("boot %+v, want fails by kv_alloc_free at rung 5", p.Boot)
	}
	asked, _ := domain.ParseByteCount("10.70 GiB")
	free, _ := domain.ParseByteCount("9.18 GiB")
	need := int64(float64(6*241664) * m.BytesPerToken["fp8"])
	if p.TokensNeeded != 1449984 || p.PoolTokens == nil || *p.PoolTokens != 1449984 {
		t.Errorf("tokens needed %d, pool %v; want 1449984 both", p.TokensNeeded, p.PoolTokens)
	}
	if p.Boot.AskedBytes == nil || *p.Boot.AskedBytes != asked || p.Boot.FreeBytes == nil || *p.Boot.FreeBytes != free ||
		p.Boot.NeedBytes == nil || *p.Boot.NeedBytes < need-1 || *p.Boot.NeedBytes > need+1 {
		t.Errorf("numbers asked %v free %v need %v, want %d / %d / %d", p.Boot.AskedBytes, p.Boot.FreeBytes, p.Boot.NeedBytes, asked, free, need)
	}
	for _, w := range []string{"10.40 GiB", "1449984 tokens × 7698 B/token fp8", "9.18 GiB", "rung 5 (6 × 241664 fp8) asked 10.70 GiB"} {
		if !strings.Contains(p.Boot.Reason, w) {
			t.Errorf("reason %q lacks %q", p.Boot.Reason, w)
		}
	}
	if p.Survive.Outcome != ladder.OutcomeFails || p.Survive.Rule != ladder.RuleDoesNotBoot {
		t.Errorf("survive %+v", p.Survive)
	}
	if p.Flags != "--max-num-seqs 6 --max-model-len 241664 --kv-cache-dtype fp8" {
		t.Errorf("flags %q", p.Flags)
	}
	// Rung 1's capture headroom alone decides it too: without rung 5 it
	// still fails, by graph-capture arithmetic.
	p = ladder.NewModel(l, 5).WhatIf(6, 241664, "fp8", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rule != ladder.RuleCaptureHeadroom {
		t.Errorf("without rung 5: %+v", p.Boot)
	}
}

// The largest fp8 contract predicted to survive lies inside the surviving
// boundary of the ladder (passes at 1048576, dies at 1310720).
func TestLargestFp8(t *testing.T) {
	l := nightLadder(t)
	b := l.Boundary(ladder.DimContract, ladder.KindSurvive, map[string]string{"kv_cache_dtype": "fp8"})
	if b == nil || b.Pass == nil || b.Fail == nil || *b.Pass != 1048576 || *b.Fail != 1310720 {
		t.Fatalf("surviving contract boundary at fp8: %+v", b)
	}
	lg := ladder.NewModel(l).Largest("fp8", ladder.Memory{})
	t.Logf("largest: %s", lg.Reason)
	if lg.Survive == nil || lg.Boot == nil {
		t.Fatalf("largest %+v", lg)
	}
	t.Logf("survive: %s (%s)", lg.Survive.Flags, lg.Survive.Prediction.Survive.Reason)
	t.Logf("boot: %s (%s)", lg.Boot.Flags, lg.Boot.Prediction.Boot.Reason)
	if c := lg.Survive.ContractTokens; c < *b.Pass || c >= *b.Fail {
		t.Errorf("largest surviving contract %d outside [%d, %d)", c, *b.Pass, *b.Fail)
	}
	if lg.Survive.ContractTokens != 1048576 || lg.Survive.Flags != "--max-num-seqs 4 --max-model-len 262144 --kv-cache-dtype fp8 --max-num-batched-tokens 1024" {
		t.Errorf("largest surviving %d %q", lg.Survive.ContractTokens, lg.Survive.Flags)
	}
	if lg.Boot.ContractTokens != 1310720 || lg.Boot.MaxNumSeqs != 5 || lg.Boot.MaxModelLen != 262144 {
		t.Errorf("largest booting %d = %d × %d, want 5 × 262144", lg.Boot.ContractTokens, lg.Boot.MaxNumSeqs, lg.Boot.MaxModelLen)
	}
	for _, f := range []*ladder.Fit{lg.Boot, lg.Survive} {
		if f.MaxModelLen%l.Granularity != 0 {
			t.Errorf("max_model_len %d off the grid of %d", f.MaxModelLen, l.Granularity)
		}
	}
	// With a pinned pool the contract must fit in it: 8311013376 bytes hold
	// 1079582 fp8 tokens (rung 8), so 4 × 262144 is the largest surviving.
	lg = ladder.NewModel(l).Largest("fp8", ladder.Memory{KVCacheMemoryBytes: 8311013376})
	if lg.Survive == nil || lg.Survive.ContractTokens != 1048576 || !strings.Contains(lg.Survive.Flags, "--kv-cache-memory-bytes 8311013376") {
		t.Errorf("largest surviving at a pinned pool: %+v", lg.Survive)
	}
}

func TestPredictArithmeticAndUnknowns(t *testing.T) {
	m := ladder.NewModel(nightLadder(t))
	// A pinned pool that holds fewer tokens than one request.
	p := m.WhatIf(1, 262144, "auto", ladder.Memory{KVCacheMemoryBytes: 2000000000})
	if p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rule != ladder.RulePoolTooSmall || p.PoolTokens == nil || *p.PoolTokens != 144517 {
		t.Errorf("2 GB bf16 pool: %+v pool %v", p.Boot, p.PoolTokens)
	}
	// Every rung pinned its pool: a utilization alone says nothing.
	p = m.WhatIf(4, 262144, "fp8", ladder.Memory{GPUMemoryUtilization: 0.98})
	if p.Boot.Outcome != ladder.OutcomeUnknown || !strings.Contains(p.Boot.Reason, "does not capture") {
		t.Errorf("utilization: %+v", p.Boot)
	}
	// An unknown dtype has no bytes per token: the pool is known in tokens
	// only and no rung compares.
	p = m.WhatIf(2, 131072, "fp8_e5m2", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeUnknown || p.KVBytesPerToken != nil {
		t.Errorf("unknown dtype: %+v", p.Boot)
	}
	// Rungs 14 and 15 (dynamo_constraint_violation) never count: their shape
	// is decided by no rung.
	l := nightLadder(t)
	p = m.Predict(l.Rung(14).Shape)
	if p.Boot.Rung == 14 || p.Boot.Rung == 15 || p.Boot.Outcome != ladder.OutcomeUnknown {
		t.Errorf("rung 14's shape: %+v", p.Boot)
	}
	// The rung that died under traffic decides survival of its own shape,
	// over the probe that was stopped early.
	p = m.WhatIf(5, 262144, "fp8", ladder.Memory{KVCacheMemoryBytes: 10388766720})
	if p.Boot.Outcome != ladder.OutcomeBoots || p.Survive.Outcome != ladder.OutcomeFails || p.Survive.Rung != 7 {
		t.Errorf("5 × 262144 fp8: boot %+v survive %+v", p.Boot, p.Survive)
	}
}

// The day fixture's SGLang and halogen ladders are predicted from their own
// engines' pool lines (SGLang #tokens / max_total_num_tokens, halogen
// kv pool positions) and OOM lines.
func TestPredictDayEngines(t *testing.T) {
	ls := dayLadders(t)
	small := ladder.NewModel(ls["frank-small"])
	p := small.WhatIf(3, 262144, "", ladder.Memory{})
	if p.KVDtype != "fp8_e4m3" || p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rung != 1 || !strings.Contains(p.Boot.Reason, "oom_graph_capture") {
		t.Errorf("frank-small 3 × 262144: %+v", p.Boot)
	}
	if p.Flags != "--max-running-requests 3 --context-length 262144 --kv-cache-dtype fp8_e4m3" {
		t.Errorf("flags %q", p.Flags)
	}
	p = small.WhatIf(2, 262144, "", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeBoots || p.Boot.Rung != 2 || !strings.Contains(p.Boot.Reason, "606208 tokens") && !strings.Contains(p.Boot.Reason, "524288 tokens") {
		t.Errorf("frank-small 2 × 262144: %+v", p.Boot)
	}
	// mem_fraction_static 0.98 gave pools of 606208 and 687388 tokens (a
	// pinned max_total_tokens the shape does not carry): undecided.
	p = small.WhatIf(2, 262144, "", ladder.Memory{GPUMemoryUtilization: 0.98})
	if p.Boot.Outcome != ladder.OutcomeUnknown || !strings.Contains(p.Boot.Reason, "boots with 606208 tokens; fails with 687388 tokens") {
		t.Errorf("frank-small at 0.98: %+v", p.Boot)
	}
	large := ladder.NewModel(ls["frank-large"])
	p = large.WhatIf(2, 262144, "", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rung != 1 || !strings.Contains(p.Boot.Reason, "oom_kv_alloc") {
		t.Errorf("frank-large 2 × 262144: %+v", p.Boot)
	}
	p = large.WhatIf(2, 200192, "", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeBoots || p.Boot.Rung != 2 || p.Flags != "HALOGEN_KV_SLOTS=2 HALOGEN_CTX=200192" {
		t.Errorf("frank-large 2 × 200192: %+v %q", p.Boot, p.Flags)
	}
	// Between its pass (400384 positions) and its failure (524288): unknown.
	p = large.WhatIf(2, 229376, "", ladder.Memory{})
	if p.Boot.Outcome != ladder.OutcomeUnknown {
		t.Errorf("frank-large 2 × 229376: %+v", p.Boot)
	}
	lg := large.Largest("", ladder.Memory{})
	if lg.Survive == nil || lg.Survive.ContractTokens != 393216 || lg.Survive.Flags != "HALOGEN_KV_SLOTS=2 HALOGEN_CTX=196608 HALOGEN_MAX_TOK=24576" {
		t.Errorf("frank-large largest surviving: %+v", lg.Survive)
	}
}

func TestSizingFlags(t *testing.T) {
	s := domain.Shape{"max_num_seqs": int64(4), "max_model_len": int64(131072), "kv_cache_dtype": "q8_0", "max_num_batched_tokens": int64(2048)}
	for engine, want := range map[string]string{
		"vllm":     "--max-num-seqs 4 --max-model-len 131072 --kv-cache-dtype q8_0 --max-num-batched-tokens 2048",
		"sglang":   "--max-running-requests 4 --context-length 131072 --kv-cache-dtype q8_0 --chunked-prefill-size 2048",
		"llamacpp": "--parallel 4 --ctx-size 524288 --cache-type-k q8_0 --cache-type-v q8_0",
		"halogen":  "HALOGEN_KV_SLOTS=4 HALOGEN_CTX=131072 HALOGEN_MAX_TOK=2048",
		"tgi":      "max_num_seqs=4 max_model_len=131072 kv_cache_dtype=q8_0 max_num_batched_tokens=2048",
	} {
		t.Run(engine, func(t *testing.T) {
			if got := ladder.SizingFlags(engine, s); got != want {
				t.Errorf("%s: %q, want %q", engine, got, want)
			}
		})
	}
	s = domain.Shape{"max_num_seqs": int64(2), "max_model_len": int64(8192), "gpu_memory_utilization": 0.9}
	if got := ladder.SizingFlags("sglang", s); got != "--max-running-requests 2 --context-length 8192 --mem-fraction-static 0.9" {
		t.Errorf("sglang utilization: %q", got)
	}
	if got := ladder.SizingFlags("vllm", s); got != "--max-num-seqs 2 --max-model-len 8192 --gpu-memory-utilization 0.9" {
		t.Errorf("vllm utilization: %q", got)
	}
	// A rung's whole shape: the pinned pool wins over the utilization, the
	// other settings stay out.
	s = domain.Shape{"max_num_seqs": int64(5), "max_model_len": int64(262144), "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.98,
		"kv_cache_memory_bytes": int64(10388766720), "tensor_parallel_size": int64(2), "enforce_eager": false, "kv_cache_tokens": int64(1350182)}
	if got := ladder.SizingFlags("vllm", s); got != "--max-num-seqs 5 --max-model-len 262144 --kv-cache-dtype fp8 --kv-cache-memory-bytes 10388766720" {
		t.Errorf("vllm rung shape: %q", got)
	}
}
