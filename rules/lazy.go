package rules

// The parts of a rule that a Load may leave for their first use.

import (
	"sync"
	"text/template"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// whenExpr is a rule's `when` condition, compiled by expr-lang with the
// line or end environment. A Load compiles it at once, so a rule file's
// error is reported with the rest; LoadBuiltin, when it takes the rule
// files' parsed form (the files the tests compiled, TestBuiltinLazy),
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

// noteTemplate is a rule's note, parsed by text/template: at Load, or
// for LoadBuiltin on the first note rendered, as whenExpr (92 built-in
// notes; a command renders those of the attempts' verdicts and findings).
// Safe for concurrent use.
type noteTemplate struct {
	name, src string
	once      sync.Once
	t         *template.Template
	err       error
}

// parsed returns the template, or its parse error.
func (n *noteTemplate) parsed() (*template.Template, error) {
	n.once.Do(func() {
		n.t, n.err = template.New(n.name).Option("missingkey=zero").Funcs(noteFuncs).Parse(n.src)
	})
	return n.t, n.err
}
