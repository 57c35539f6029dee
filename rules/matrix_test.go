package rules_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
)

// requiredVerdicts is, per engine, every root-cause verdict the engine can
// produce; each pair needs at least one passing rule test on a realistic
// line of that engine. running, ready, stopped, timeout and unknown_failure
// are left out: they come from the attempt's lifecycle, not from a line.
// Pairs that cannot happen are left out, with the reason.
var requiredVerdicts = map[string][]domain.Verdict{
	// vLLM: torch, torch.compile with dims marked dynamic, CUDA/HIP
	// graphs, NCCL; it can fail every way.
	"vllm": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMGraphCapture,
		domain.VerdictOOMRuntime, domain.VerdictKVCacheInsufficient, domain.VerdictDynamoConstraint,
		domain.VerdictCompileError, domain.VerdictConfigError, domain.VerdictMissingPayload,
		domain.VerdictDistributedError, domain.VerdictEngineDied,
	},
	// SGLang. Not kv_cache_insufficient: it shrinks the pool to the
	// profiled budget instead of refusing the shape (a budget below zero
	// is oom_profile). Not dynamo_constraint_violation: it does not mark
	// dims dynamic (--enable-torch-compile failures are compile_error).
	"sglang": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMGraphCapture,
		domain.VerdictOOMRuntime, domain.VerdictCompileError, domain.VerdictConfigError, domain.VerdictMissingPayload,
		domain.VerdictDistributedError, domain.VerdictEngineDied,
	},
	// llama.cpp's llama-server. Not oom_graph_capture: CUDA graphs are
	// captured lazily while decoding, there is no capture phase. Not
	// kv_cache_insufficient: it caps the slot context instead of refusing.
	// Not dynamo/compile: no torch. Not distributed_error: no NCCL (the
	// RPC backend fails as a connection error). Not engine_died: one
	// process, whose death is the unit's exit (unknown_failure with the
	// exit status unless a line names the cause).
	"llamacpp": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMRuntime,
		domain.VerdictConfigError, domain.VerdictMissingPayload,
	},
	// TGI. Not oom_kv_alloc / oom_graph_capture: its shards size the KV
	// blocks and capture CUDA graphs inside the warm-up, whose OOM is the
	// prefill warm-up's (oom_profile). Not kv_cache_insufficient: token
	// limits are checked as arguments (config_error). Not dynamo/compile:
	// no torch.compile on the serving path.
	"tgi": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMRuntime, domain.VerdictConfigError,
		domain.VerdictMissingPayload, domain.VerdictDistributedError, domain.VerdictEngineDied,
	},
	// TensorRT-LLM (PyTorch backend; torch_compile_config is opt-in). Not
	// kv_cache_insufficient: it clamps max_seq_len to the KV pool. Not
	// dynamo_constraint_violation: no dims marked dynamic.
	"trtllm": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMGraphCapture,
		domain.VerdictOOMRuntime, domain.VerdictCompileError, domain.VerdictConfigError, domain.VerdictMissingPayload,
		domain.VerdictDistributedError, domain.VerdictEngineDied,
	},
	// Ollama runs llama.cpp's runner: what llama.cpp cannot do, it cannot
	// either; its runner dying is engine_died (the server stays up).
	"ollama": {
		domain.VerdictOOMWeights, domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMRuntime,
		domain.VerdictConfigError, domain.VerdictMissingPayload, domain.VerdictEngineDied,
	},
	// LMDeploy (TurboMind and PyTorch engines): loads weights, sizes its KV
	// blocks from a memory fraction and serves; ranks talk over NCCL. Not
	// oom_graph_capture nor compile: TurboMind captures no graphs and
	// compiles nothing at boot.
	"lmdeploy": {
		domain.VerdictOOMWeights, domain.VerdictOOMKVAlloc, domain.VerdictConfigError, domain.VerdictMissingPayload,
		domain.VerdictDistributedError, domain.VerdictEngineDied,
	},
	// ExLlamaV2 / TabbyAPI: one process, no torch.compile, no NCCL, no graph
	// capture, no profiling run.
	"exllama": {
		domain.VerdictOOMWeights, domain.VerdictConfigError, domain.VerdictMissingPayload, domain.VerdictEngineDied,
	},
	// Output no profile claims (plain PyTorch/transformers scripts): the
	// engine-independent rules.
	"unknown": {
		domain.VerdictOOMWeights, domain.VerdictConfigError, domain.VerdictMissingPayload,
		domain.VerdictDistributedError, domain.VerdictCompileError, domain.VerdictEngineDied,
	},
	// halogen. Not oom_profile / oom_graph_capture: no profiling run and no
	// graph capture phase. Not kv_cache_insufficient: it lowers the pool
	// and tries anyway, failing in dmalloc (oom_kv_alloc). Not
	// dynamo/compile (no torch) nor distributed_error (one host, no NCCL).
	"halogen": {
		domain.VerdictOOMWeights, domain.VerdictOOMKVAlloc, domain.VerdictOOMRuntime, domain.VerdictConfigError,
		domain.VerdictMissingPayload, domain.VerdictEngineDied,
	},
}

// lineVerdicts are the verdicts a line rule decides; the others come from
// the attempt's lifecycle.
func lineVerdicts() []domain.Verdict {
	var out []domain.Verdict
	for _, v := range domain.Verdicts {
		switch v {
		case domain.VerdictRunning, domain.VerdictReady, domain.VerdictStopped, domain.VerdictUnknownFailure, domain.VerdictTimeout:
			continue
		}
		out = append(out, v)
	}
	return out
}

// TestVerdictEngineMatrix: every (verdict, engine) pair of requiredVerdicts
// has at least one passing rule test that expects a match, and every such
// test of a rule without engines names its engine.
func TestVerdictEngineMatrix(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatalf("builtin rules do not load:\n%v", err)
	}
	// ruletest.Run reports each rule's tests in order: zip them by rule.
	byRule := map[string][]ruletest.Result{}
	for _, r := range ruletest.Run(context.Background(), set) {
		byRule[r.Rule] = append(byRule[r.Rule], r)
	}
	covered := map[string]map[domain.Verdict][]string{} // engine → verdict → tests
	for _, r := range set.Rules() {
		if !r.IsRootCause() || r.End {
			continue
		}
		results := byRule[r.ID]
		if len(results) != len(r.Tests) {
			t.Fatalf("rule %s: %d tests, %d results", r.ID, len(r.Tests), len(results))
		}
		for i, tc := range r.Tests {
			res := results[i]
			if tc.Expect.NoMatch || !res.Passed {
				continue
			}
			engine := tc.Engine
			if engine == "" && len(r.Engines) > 0 {
				engine = r.Engines[0]
			}
			where := fmt.Sprintf("%s:%d %s %q", res.File, res.Line, r.ID, res.Test)
			if engine == "" {
				t.Errorf("%s: the rule has no engines, so the test must name one (engine:)", where)
				continue
			}
			if e := set.Engine(engine); e == nil {
				t.Errorf("%s: unknown engine %q", where, engine)
				continue
			} else if len(r.Engines) > 0 && !slices.Contains(r.Engines, engine) && !slices.Contains(r.Engines, e.Extends) {
				t.Errorf("%s: engine %q is not one of the rule's %v", where, engine, r.Engines)
				continue
			}
			if covered[engine] == nil {
				covered[engine] = map[domain.Verdict][]string{}
			}
			covered[engine][r.Verdict] = append(covered[engine][r.Verdict], where)
		}
	}
	engines := make([]string, 0, len(requiredVerdicts))
	for e := range requiredVerdicts {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	var table strings.Builder
	for _, e := range engines {
		if set.Engine(e) == nil {
			t.Errorf("the matrix names engine %q, which no rule file defines", e)
		}
		var row []string
		for _, v := range lineVerdicts() {
			n := len(covered[e][v])
			required := slices.Contains(requiredVerdicts[e], v)
			switch {
			case required && n == 0:
				t.Errorf("%s × %s: no passing rule test on a line of this engine", v, e)
				row = append(row, string(v)+"=MISSING")
			case required:
				row = append(row, fmt.Sprintf("%s=%d", v, n))
			case n > 0:
				row = append(row, fmt.Sprintf("%s=%d(not required)", v, n))
			}
		}
		fmt.Fprintf(&table, "%-8s %s\n", e, strings.Join(row, " "))
	}
	t.Logf("passing rule tests per verdict × engine:\n%s", table.String())
}
