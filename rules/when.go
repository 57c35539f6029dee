package rules

import (
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// whenExpr is a rule's `when` condition, compiled by expr-lang with the
// line or end environment. A Load compiles it at once, so a rule file's
// error is reported with the rest; LoadBuiltin, when it takes the rule
// files' parsed form (the files the tests compiled, TestBuiltinWhens),
// leaves it until a line first reaches the rule: a command reaches few of
// them, and compiling all 45 built-in conditions at every start took 14
// of the 89 ms of CPU of a one-entry explain. Safe for concurrent use.
type whenExpr struct {
	src  string
	end  bool // an end rule's: EndEnv, and no guards
	once sync.Once
	prog *vm.Program
	// guards are the terms of the condition checked before it (guard.go).
	guards []guard
	err    error
}

// compiled returns w, compiled.
func (w *whenExpr) compiled() *whenExpr {
	w.once.Do(func() {
		var env any = LineEnv{}
		if w.end {
			env = EndEnv{}
		}
		opts := append([]expr.Option{expr.Env(env), expr.AsBool(), expr.Patch(lastLinePatch{})}, exprFuncs()...)
		if w.prog, w.err = expr.Compile(w.src, opts...); w.err == nil && !w.end {
			w.guards = guards(w.prog.Node())
		}
	})
	return w
}

// holds evaluates the condition on env: false when it does not compile
// or errs.
func (w *whenExpr) holds(env any) bool {
	w = w.compiled()
	if w.err != nil {
		return false
	}
	out, err := expr.Run(w.prog, env)
	return err == nil && out == true
}
