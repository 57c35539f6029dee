// Package storetest builds realistic boot attempts for tests of the store,
// the web UI and their callers. The attempts look like what the analyzer
// produces for a two-host fleet: a vLLM graph-capture OOM on ROCm that exits
// 0, an SGLang attempt that reached ready, and a llama.cpp failure no rule
// explains whose log line carries HTML.
package storetest

import (
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// IDs of the attempts returned by Attempts, in the order returned.
const (
	IDOOM     = "dankserver/frank-primary.service/3f2a9c1d0b7e4e51a6c2d8f90e1b2a3c"
	IDReady   = "rackbox/bob-sglang.service/77c0ffee0b7e4e51a6c2d8f90e1b2a3c"
	IDUnknown = "dankserver/frank-draft.service/c0ffee00aa554e51a6c2d8f90e1b2a3c"
)

// OOMLine is the decisive evidence line of the IDOOM attempt.
const OOMLine = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 76.00 MiB. GPU 0 has a total capacity of 191.98 GiB of which 58.00 MiB is free."

// ScriptLine is an evidence line of the IDUnknown attempt that a UI must
// show as text, never as markup.
const ScriptLine = `error: unexpected token <script>alert(1)</script> in chat template "qwen3.jinja"`

func intp(n int) *int { return &n }

// Attempts returns three fresh attempts (a new slice and new values on each
// call, so callers may modify them).
func Attempts() []*domain.Attempt {
	pdt := time.FixedZone("", -7*3600)
	cest := time.FixedZone("", 2*3600)
	t0 := time.Date(2026, 10, 1, 21, 40, 0, 0, pdt)
	at := func(base time.Time, sec float64) time.Time {
		return base.Add(time.Duration(sec * float64(time.Second)))
	}

	oomEv := domain.Evidence{Time: at(t0, 301.123456), Cursor: "s=1a2b;i=4f1;b=9c;m=11d2;t=5f1;x=aa", Message: OOMLine}
	diedEv := domain.Evidence{Time: at(t0, 302.5), Cursor: "s=1a2b;i=4f9;b=9c;m=11d9;t=5f9;x=ab",
		Message: "ERROR 10-01 21:45:02 [core.py:1021] EngineCore failed to start."}
	deact := domain.Evidence{Time: at(t0, 312.5), Cursor: "s=1a2b;i=503;b=9c;m=11e0;t=600;x=ac",
		Message: "frank-primary.service: Deactivated successfully."}
	oom := &domain.Attempt{
		ID: IDOOM, Host: "dankserver", Unit: "frank-primary.service",
		InvocationID: "3f2a9c1d0b7e4e51a6c2d8f90e1b2a3c", Container: "frank-primary-qwen",
		ContainerID:   "9d3c4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c",
		Engine:        "vllm",
		EngineVersion: "0.19.2+rocm7.0",
		StartedAt:     t0,
		EndedAt:       at(t0, 312.5),
		Phase:         domain.PhaseGraphCapture,
		Verdict:       domain.VerdictOOMGraphCapture,
		Rule:          "vllm.oom_graph_capture",
		Note: "vLLM ran out of device memory while capturing HIP graphs for 3 sequences of 262144 tokens " +
			"(KV cache 11.05 GB): lower max_num_seqs or cudagraph_capture_sizes, or raise gpu_memory_utilization headroom.",
		Findings: []domain.Finding{
			{
				ID: string(domain.VerdictOOMGraphCapture), Rule: "vllm.oom_graph_capture", Severity: domain.SeverityCritical,
				MessageID: "5b0e7c3a9d8f4e21b6a1c2d3e4f5a6b7", Phase: domain.PhaseGraphCapture, Time: oomEv.Time,
				Note:     "HIP out of memory during graph capture (tried to allocate 76.00 MiB)",
				Captures: map[string]string{"alloc": "76.00 MiB", "device": "HIP"},
				Match:    "HIP out of memory. Tried to allocate 76.00 MiB",
				Evidence: []domain.Evidence{oomEv},
			},
			{
				ID: domain.FindingCleanExitWorkerDeath, Rule: "systemd.clean_exit_worker_death", Severity: domain.SeverityWarning,
				MessageID: "8e2d1c0b9a8f4e7d6c5b4a3f2e1d0c9b", Phase: domain.PhaseGraphCapture, Time: deact.Time,
				Note:     "EngineCore died but the unit exited 0, so Restart=on-failure never fires",
				Evidence: []domain.Evidence{diedEv, deact},
			},
		},
		ExitStatus:          intp(0),
		ExitCode:            "exited",
		EndedBy:             domain.EndedByExit,
		RestartCounterAfter: intp(3),
		Shape: domain.Shape{
			domain.ShapeModel:                "/models/Qwen3-Coder-30B-A3B-Instruct",
			domain.ShapeServedModelName:      "qwen3-coder",
			domain.ShapeMaxModelLen:          int64(262144),
			domain.ShapeMaxNumSeqs:           int64(3),
			domain.ShapeKVCacheDtype:         "auto",
			domain.ShapeKVCacheMemoryBytes:   int64(11047010304),
			domain.ShapeKVCacheTokens:        int64(527489),
			domain.ShapeMaxConcurrency:       2.01,
			domain.ShapeGPUMemoryUtilization: 0.92,
			domain.ShapeTensorParallelSize:   int64(1),
			domain.ShapeEnforceEager:         false,
			// An integral float must stay a float64 across a round trip.
			"swap_space_gib": 4.0,
		},
		Timeline: []domain.PhaseMark{
			{Phase: domain.PhaseStart, Time: t0},
			{Phase: domain.PhaseArgs, Time: at(t0, 2.25)},
			{Phase: domain.PhaseInit, Time: at(t0, 9.5)},
			{Phase: domain.PhaseWeights, Time: at(t0, 14)},
			{Phase: domain.PhaseProfile, Time: at(t0, 211)},
			{Phase: domain.PhaseKVAlloc, Time: at(t0, 288.75), Cursor: "s=1a2b;i=4a0",
				Message: "INFO 10-01 21:44:48 [gpu_worker.py:298] Available KV cache memory: 10.29 GiB"},
			{Phase: domain.PhaseGraphCapture, Time: at(t0, 290), Cursor: "s=1a2b;i=4b0",
				Message: "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 0%|          | 0/67"},
			{Phase: domain.PhaseShutdown, Time: at(t0, 303)},
			{Phase: domain.PhaseExited, Time: at(t0, 312.5)},
		},
		Evidence: []domain.Evidence{oomEv, diedEv, deact},
		Context: []domain.Evidence{
			{Time: at(t0, 300.9), Cursor: "s=1a2b;i=4ee", Message: "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 67%|██████▋   | 45/67"},
			{Time: at(t0, 301.0), Cursor: "s=1a2b;i=4ef", Message: "Traceback (most recent call last):"},
			{Time: at(t0, 301.1), Cursor: "s=1a2b;i=4f0", Message: `  File "/usr/lib/python3/dist-packages/torch/cuda/graphs.py", line 88, in capture_begin`},
			oomEv,
			diedEv,
		},
		Fingerprint: "",
		Lines:       1834,
		LastLineAt:  at(t0, 312.25),
	}

	t1 := time.Date(2026, 10, 2, 8, 0, 0, 0, cest)
	ready := &domain.Attempt{
		ID: IDReady, Host: "rackbox", Unit: "bob-sglang.service",
		InvocationID: "77c0ffee0b7e4e51a6c2d8f90e1b2a3c",
		Engine:       "sglang", EngineVersion: "0.5.4",
		StartedAt:      t1,
		ReadyAt:        at(t1, 95.5),
		Phase:          domain.PhaseReady,
		Verdict:        domain.VerdictReady,
		RestartCounter: intp(1),
		Shape: domain.Shape{
			domain.ShapeMaxModelLen:        int64(131072),
			domain.ShapeMaxNumSeqs:         int64(8),
			domain.ShapeKVCacheDtype:       "fp8_e4m3",
			domain.ShapeKVCacheTokens:      int64(1048576),
			domain.ShapeTensorParallelSize: int64(2),
			domain.ShapeEnforceEager:       true,
			"extra":                        map[string]any{"schedule_policy": "lpm", "chunked_prefill_size": int64(8192), "mem_fraction_static": 0.85},
		},
		Timeline: []domain.PhaseMark{
			{Phase: domain.PhaseStart, Time: t1},
			{Phase: domain.PhaseWeights, Time: at(t1, 12)},
			{Phase: domain.PhaseReady, Time: at(t1, 95.5)},
		},
		Lines:      212,
		LastLineAt: at(t1, 3600.125),
	}

	t2 := time.Date(2026, 10, 1, 22, 0, 0, 0, pdt)
	scriptEv := domain.Evidence{Time: at(t2, 4.5), Cursor: "/var/log/draft.log:4096", Message: ScriptLine}
	unknown := &domain.Attempt{
		ID: IDUnknown, Host: "dankserver", Unit: "frank-draft.service",
		InvocationID: "c0ffee00aa554e51a6c2d8f90e1b2a3c",
		Engine:       "llamacpp", EngineVersion: "b6500",
		StartedAt: t2, EndedAt: at(t2, 5),
		Phase: domain.PhaseArgs, Verdict: domain.VerdictUnknownFailure, Rule: "generic.unknown_failure",
		Note: "The engine exited with status 1 and no rule explains why; last error-looking line shown.",
		Findings: []domain.Finding{{
			ID: string(domain.VerdictUnknownFailure), Rule: "generic.unknown_failure", Severity: domain.SeverityError,
			Phase: domain.PhaseArgs, Time: at(t2, 5), Evidence: []domain.Evidence{scriptEv},
		}},
		ExitStatus: intp(1), ExitCode: "exited", EndedBy: domain.EndedByExit,
		Shape: domain.Shape{domain.ShapeMaxModelLen: int64(32768), domain.ShapeMaxNumSeqs: int64(4), domain.ShapeKVCacheDtype: "q8_0"},
		Timeline: []domain.PhaseMark{
			{Phase: domain.PhaseStart, Time: t2},
			{Phase: domain.PhaseArgs, Time: at(t2, 0.5), Cursor: "/var/log/draft.log:0", Message: "main: build = 6500 <b>(b6500)</b>"},
			{Phase: domain.PhaseExited, Time: at(t2, 5)},
		},
		Evidence:    []domain.Evidence{scriptEv},
		Context:     []domain.Evidence{{Time: at(t2, 4), Cursor: "/var/log/draft.log:4000", Message: "main: loading chat template"}, scriptEv},
		Fingerprint: "error: unexpected token <*> in chat template <*>",
		Lines:       37,
	}
	return []*domain.Attempt{oom, ready, unknown}
}
