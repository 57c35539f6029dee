package rules

import (
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// TestLastLinePatch: a `matches` whose pattern can only match the last line
// runs on it, and answers as on the whole text; any other pattern is left
// alone.
func TestLastLinePatch(t *testing.T) {
	frames := "vllm/entrypoints/cli/serve.py:main\nvllm/engine/arg_utils.py:create\nvllm/distributed/parallel_state.py:init_world_group"
	for _, tc := range []struct {
		pat     string
		patched bool
	}{
		{`(?i)(?:distributed|nccl)[^:\n]*:[^:\n]*$`, true},
		{`(?i)(?:arg_utils)[^:\n]*:[^:\n]*$`, true},
		{`\binit_world_group$`, true},
		{`(?m)^vllm/distributed\S*\z`, true},
		{`arg_utils.*$`, true},      // . holds no newline
		{`(?s)arg_utils.*$`, false}, // it does here
		{`arg_utils[^:]*:\w+`, false},
		{`(?m)arg_utils\S*$`, false}, // ends at any line's end
		{`^vllm/distributed\S*$`, false},
	} {
		prog, err := expr.Compile(`frames matches "`+strings.ReplaceAll(strings.ReplaceAll(tc.pat, `\`, `\\`), "\n", `\n`)+`"`,
			append([]expr.Option{expr.Env(LineEnv{}), expr.AsBool(), expr.Patch(lastLinePatch{})}, exprFuncs()...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.pat, err)
		}
		if got := strings.Contains(prog.Node().String(), "last_line("); got != tc.patched {
			t.Errorf("%s: patched %v, want %v (%s)", tc.pat, got, tc.patched, prog.Node())
		}
		plain, err := expr.Compile(`frames matches "`+strings.ReplaceAll(strings.ReplaceAll(tc.pat, `\`, `\\`), "\n", `\n`)+`"`,
			append([]expr.Option{expr.Env(LineEnv{}), expr.AsBool()}, exprFuncs()...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{frames, frames + "\n", "", "x:y", strings.ReplaceAll(frames, "distributed", "dist")} {
			env := LineEnv{Frames: f}
			a, _ := expr.Run(prog, &env)
			b, _ := expr.Run(plain, &env)
			if a != b {
				t.Errorf("%s on %q: %v patched, %v whole", tc.pat, f, a, b)
			}
		}
	}
}

// TestLastLineKeepsOtherTypes: a value that is no text reaches matches as
// it was (expr's answer for it does not change).
func TestLastLineKeepsOtherTypes(t *testing.T) {
	opts := append([]expr.Option{expr.Env(LineEnv{}), expr.AsBool(), expr.Patch(lastLinePatch{})}, exprFuncs()...)
	prog, err := expr.Compile(`shape.n matches "x*$"`, opts...)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := expr.Compile(`shape.n matches "x*$"`, append([]expr.Option{expr.Env(LineEnv{}), expr.AsBool()}, exprFuncs()...)...)
	if err != nil {
		t.Fatal(err)
	}
	env := LineEnv{Shape: map[string]any{"n": 4096}}
	a, errA := expr.Run(prog, &env)
	b, errB := expr.Run(plain, &env)
	if a != b || (errA == nil) != (errB == nil) {
		t.Fatalf("patched %v (%v), whole %v (%v)", a, errA, b, errB)
	}
}
