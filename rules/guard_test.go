package rules

import (
	"testing"

	"github.com/expr-lang/expr"
)

// TestGuards: the terms of a when's top-level `and` that read one flag or
// compare one text of the line become guards, never false where the whole
// when is true; other terms (a regex, an `or`) are left to the VM.
func TestGuards(t *testing.T) {
	for _, tc := range []struct {
		when string
		n    int
	}{
		{`error_line && !reached_ready && phase == "weights"`, 3},
		{`usage_text and not reached_ready`, 2},
		{`"vllm" != engine && frames matches "x"`, 1},
		{`error_line || phase == "weights"`, 0},
		{`len(line) > 3`, 0},
	} {
		prog := compileWhen(t, tc.when, false)
		gs := guards(prog.Node())
		if len(gs) != tc.n {
			t.Fatalf("%s: %d guards, want %d", tc.when, len(gs), tc.n)
		}
		// On every combination of the fields the guards read, a false
		// guard means a false when.
		for _, env := range []LineEnv{
			{}, {Error: true}, {Error: true, Phase: "weights"}, {Usage: true}, {Usage: true, ReachedReady: true},
			{Engine: "vllm", Frames: "x"}, {Engine: "sglang", Frames: "x"}, {Error: true, Phase: "weights", ReachedReady: true},
		} {
			out, err := expr.Run(prog, &env)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range gs {
				if !g(&env) && out == true {
					t.Errorf("%s on %+v: guard %d false, when true", tc.when, env, i)
				}
			}
		}
	}
}

// TestMatchGuards: a `matches` term whose pattern holds literals becomes a
// guard (on last_line(frames) too, as lastLinePatch writes it), never
// false where the when is true: on texts holding the literals in other
// cases, Unicode folds of them (the Kelvin sign, the long s), literals
// outside ASCII, and none.
func TestMatchGuards(t *testing.T) {
	texts := []string{
		"", "worker.py:run", "vllm/v1/engine/core.py:run_engine_core", "ENGINE/Core.PY:Run", "x/ſerver_args.py:f",
		"x/\u212aV_cache.py:alloc", "kv_cache.py:alloc", "a:b\nkv_cache.py:alloc", "kv_cache.py:alloc\na:b",
		"transformers/tokenization_utils.py:from_pretrained", "AutoConfig", "x/autoconfig.py:y", "plain text",
		"CAFÉ au lait", "cafe", "xABCx",
	}
	for _, tc := range []struct {
		when string
		n    int
	}{
		{`error_line && frames matches "(?i)(?:engine|executor|worker)[^:\\n]*:[^:\\n]*$"`, 2},
		{`frames matches "(?i)(?:server_args|kv_cache)[^:\\n]*:[^:\\n]*$"`, 1},
		{`frames matches "(?i)tokeniz|configuration_\\w+\\.py|AutoConfig"`, 1},
		{`line matches "(?:^|/)(?:distributed|kv_cache)/[^\\n]*$"`, 1},
		{`frames matches "a|bc"`, 0},         // no literal of three bytes
		{`frames matches "(?i)café|abc"`, 1}, // "café" holds a byte outside ASCII: only "abc" is searched
		{`error_line || frames matches "kv_cache"`, 0},
	} {
		for _, patched := range []bool{false, true} {
			prog := compileWhen(t, tc.when, patched)
			gs := guards(prog.Node())
			if len(gs) != tc.n {
				t.Fatalf("%s (patched %v): %d guards, want %d", tc.when, patched, len(gs), tc.n)
			}
			falses := 0
			for _, text := range texts {
				env := LineEnv{Error: true, Frames: text, Line: text}
				out, err := expr.Run(prog, &env)
				if err != nil {
					t.Fatal(err)
				}
				for i, g := range gs {
					if !g(&env) {
						falses++
						if out == true {
							t.Errorf("%s on %q: guard %d false, when true", tc.when, text, i)
						}
					}
				}
			}
			if tc.n > 0 && falses == 0 {
				t.Errorf("%s: no guard was ever false: the test does not exercise it", tc.when)
			}
		}
	}
}
