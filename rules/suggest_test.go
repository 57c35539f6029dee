package rules_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// TestGeneralizeMessage: a suggested match keeps a statement's words and
// matches the same statement with other numbers, sizes, paths, ids and
// times, and not another statement. The lines are real engine output.
func TestGeneralizeMessage(t *testing.T) {
	for _, c := range []struct {
		msg, same, other string
	}{
		{"HIP error: invalid argument", "HIP error: invalid argument", "HIP error: out of memory"},
		{`src/llama.cpp:16813: GGML_ASSERT(strcmp(res->name, "result_output") == 0 && "missing result_output tensor") failed`,
			`/build/llama.cpp/src/llama.cpp:17102: GGML_ASSERT(strcmp(res->name, "result_output") == 0 && "missing result_output tensor") failed`,
			`src/llama.cpp:16813: GGML_ASSERT(n_tokens_all <= cparams.n_batch) failed`},
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.17 GiB. GPU 0 has a total capacity of 79.15 GiB",
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 3 has a total capacity of 23.64 GiB",
			"torch.OutOfMemoryError: CUDA out of memory. Tried to free 1.17 GiB."},
		{"failed to load model /models/Qwen3-8B-Q4_K_M.gguf: unknown model architecture: 'qwen3moe'",
			"failed to load model /srv/other.gguf: unknown model architecture: 'qwen3moe'",
			"failed to load model /models/x.gguf: tensor 'blk.0.attn_q.weight' not found"},
		{"Request 3f2a9c1e-7b4d-4e0a-9c3b-2d1e0f9a8b7c aborted at 2026-08-01T12:00:00Z after 0x7f3a",
			"Request 00000000-1111-2222-3333-444444444444 aborted at 2025-01-02T03:04:05Z after 0xdead",
			"Request 3f2a9c1e-7b4d-4e0a-9c3b-2d1e0f9a8b7c finished"},
		// Names with digits stay names: fp8 is not fp16.
		{"ValueError: kv_cache_dtype fp8 is not supported on sm_75", "ValueError: kv_cache_dtype fp8 is not supported on sm_75",
			"ValueError: kv_cache_dtype fp16 is not supported on sm_75"},
	} {
		pat := rules.GeneralizeMessage(c.msg)
		re, err := regexp.Compile(pat)
		if err != nil {
			t.Fatalf("%q: pattern %q: %v", c.msg, pat, err)
		}
		if !re.MatchString(c.msg) || !re.MatchString(c.same) || re.MatchString(c.other) {
			t.Errorf("%q → %q: matches itself %v, the same statement %v (want both), another %v (want not)",
				c.msg, pat, re.MatchString(c.msg), re.MatchString(c.same), re.MatchString(c.other))
		}
	}
	if p := rules.GeneralizeMessage("12 34.5 /a/b 0xff"); p != "" {
		t.Errorf("a message of numbers and paths only: %q, want none", p)
	}
	long := "RuntimeError: " + strings.Repeat("something went wrong in the scheduler loop ", 10)
	if p := rules.GeneralizeMessage(long); !regexp.MustCompile(p).MatchString(long) || strings.Count(p, "something") > 3 {
		t.Errorf("a long message is quoted only up to %d bytes: %q", rules.MaxSuggestBytes, p)
	}
}

// TestSuggestionRenders: the rendered entry loads next to the built-in
// rules, with the engine, phase and verdict chosen, one test per distinct
// line, and a match that ignores the log prefix.
func TestSuggestionRenders(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"ERROR 11-29 09:36:15 engine.py:366] HIP error: invalid argument",
		"(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:700] HIP error: invalid argument",
		"ERROR 11-29 09:36:15 engine.py:366] HIP error: invalid argument"}
	s := rules.Suggestion{Engine: "vllm", Phase: domain.PhaseInit, Verdict: domain.VerdictEngineDied, Lines: lines}
	text, err := s.Render(set)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"local.yaml": {Data: text}}
	names, _ := fs.Glob(rules.Builtin, "*.yaml")
	for _, n := range names {
		b, _ := fs.ReadFile(rules.Builtin, n)
		fsys[n] = &fstest.MapFile{Data: b}
	}
	with, err := rules.Load(fsys)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var r *rules.Rule
	for _, x := range with.Rules() {
		if x.File == "local.yaml" {
			r = x
		}
	}
	if r == nil || r.ID != "local.vllm_hip_error_invalid_argument" || r.Verdict != domain.VerdictEngineDied || r.Phase != domain.PhaseInit ||
		len(r.Engines) != 1 || r.Engines[0] != "vllm" || len(r.Tests) != 2 || r.MatchAt("HIP error: invalid argument") < 0 {
		t.Fatalf("rendered rule: %+v\n%s", r, text)
	}
	for _, bad := range []domain.Verdict{"ready", "unknown_failure", "no_such_verdict"} {
		s.Verdict = bad
		if _, err := s.Render(set); err == nil {
			t.Errorf("verdict %q rendered", bad)
		}
	}
}

// FuzzGeneralizeMessage: whatever line an engine (or a local user) wrote,
// the suggested match compiles and matches that line.
func FuzzGeneralizeMessage(f *testing.F) {
	for _, s := range []string{"HIP error: invalid argument", "src/llama.cpp:1: GGML_ASSERT(x) failed",
		"2026-08-01 12:00:00 Tried to allocate 1.17 GiB at 0xdead", "\xff\xfe error \x80", "a\tb  c/d/e 12,345.6 MiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if len(msg) > 4096 {
			msg = msg[:4096] // matching a megabyte costs the fuzzer, not the property
		}
		p := rules.GeneralizeMessage(msg)
		if p == "" {
			return
		}
		re, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("%q → %q: %v", msg, p, err)
		}
		if !re.MatchString(strings.ToValidUTF8(msg, "\uFFFD")) {
			t.Fatalf("%q → %q does not match it", msg, p)
		}
	})
}
