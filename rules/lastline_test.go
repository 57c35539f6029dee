package rules

import (
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
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
		when := `frames matches "` + strings.ReplaceAll(strings.ReplaceAll(tc.pat, `\`, `\\`), "\n", `\n`) + `"`
		prog, plain := compileWhen(t, when, true), compileWhen(t, when, false)
		if got := strings.Contains(prog.Node().String(), "last_line("); got != tc.patched {
			t.Errorf("%s: patched %v, want %v (%s)", tc.pat, got, tc.patched, prog.Node())
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
	prog, plain := compileWhen(t, `shape.n matches "x*$"`, true), compileWhen(t, `shape.n matches "x*$"`, false)
	env := LineEnv{Shape: map[string]any{"n": 4096}}
	a, errA := expr.Run(prog, &env)
	b, errB := expr.Run(plain, &env)
	if a != b || (errA == nil) != (errB == nil) {
		t.Fatalf("patched %v (%v), whole %v (%v)", a, errA, b, errB)
	}
}

// compileWhen compiles a line rule's when as the rules do, with the
// last-line patch or without it.
func compileWhen(t *testing.T, when string, patched bool) *vm.Program {
	t.Helper()
	opts := append([]expr.Option{expr.Env(LineEnv{}), expr.AsBool()}, exprFuncs()...)
	if patched {
		opts = append(opts, expr.Patch(lastLinePatch{}))
	}
	prog, err := expr.Compile(when, opts...)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	return prog
}
