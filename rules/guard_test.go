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
