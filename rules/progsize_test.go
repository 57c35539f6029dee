package rules

import (
	"regexp/syntax"
	"testing"
)

// TestProgSize: progSize counts what regexp/syntax compiles, for every
// pattern the built-in rules hold and for each operator.
func TestProgSize(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	srcs := []string{`a`, `abc`, `(?i)abc`, `a*`, `a+?`, `(a|b|cd)?`, `x{2,5}`, `(?:ab){3}`, `^$\b\B`, `.`, `(?s).`, `[a-z]`, ``, `a{0}`, `(?:)`}
	for _, m := range matchers(set) {
		srcs = append(srcs, m.re.String())
	}
	for _, src := range srcs {
		re, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		re = re.Simplify()
		prog, err := syntax.Compile(re)
		if err != nil {
			t.Fatal(err)
		}
		if got := progSize(re); got != len(prog.Inst) {
			t.Errorf("%s: progSize %d, compiled %d", src, got, len(prog.Inst))
		}
	}
}
