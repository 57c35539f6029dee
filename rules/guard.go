package rules

import (
	"slices"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
)

// A line rule's `when` runs in expr's VM, about a quarter of a microsecond
// even when its first term is false, and rules without a literal to
// prefilter on run it on every line. The terms of its top-level `and` that
// read one flag or compare one text of the line (error_line,
// !reached_ready, phase == "weights") are checked in Go first: `when` holds
// only where each of them does, so a false one skips the VM (and the
// rule's regex). So is `frames matches "P"` when every match of P holds one
// of a few literals: a search for them, ASCII case folded, costs a tenth of
// the regex ((?i) alternations run in Go's NFA, ~2 µs on a 30-byte frame).

// guard is one such term.
type guard func(env *LineEnv) bool

// lineFlags and lineTexts are the LineEnv fields a guard can read, by
// their names in `when`.
var (
	lineFlags = map[string]func(*LineEnv) bool{
		"reached_ready": func(e *LineEnv) bool { return e.ReachedReady },
		"error_line":    func(e *LineEnv) bool { return e.Error },
		"usage_text":    func(e *LineEnv) bool { return e.Usage },
	}
	lineTexts = map[string]func(*LineEnv) string{
		"phase":  func(e *LineEnv) string { return e.Phase },
		"engine": func(e *LineEnv) string { return e.Engine },
		"unit":   func(e *LineEnv) string { return e.Unit },
		"line":   func(e *LineEnv) string { return e.Line },
		"frames": func(e *LineEnv) string { return e.Frames },
	}
)

// guards returns the guards of a compiled `when` whose tree is n.
func guards(n ast.Node) []guard {
	var out []guard
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch n := n.(type) {
		case *ast.BinaryNode:
			switch n.Operator {
			case "&&", "and":
				walk(n.Left)
				walk(n.Right)
			case "matches":
				if g := matchGuard(n.Left, n.Right); g != nil {
					out = append(out, g)
				}
			case "==", "!=":
				if g := textGuard(n.Left, n.Right, n.Operator == "=="); g != nil {
					out = append(out, g)
				} else if g := textGuard(n.Right, n.Left, n.Operator == "=="); g != nil {
					out = append(out, g)
				}
			}
		case *ast.IdentifierNode:
			if get, ok := lineFlags[n.Value]; ok {
				out = append(out, get)
			}
		case *ast.UnaryNode:
			if id, ok := n.Node.(*ast.IdentifierNode); ok && (n.Operator == "!" || n.Operator == "not") {
				if get, ok := lineFlags[id.Value]; ok {
					out = append(out, func(e *LineEnv) bool { return !get(e) })
				}
			}
		}
	}
	walk(n)
	return out
}

// lineText returns the getter of n when n names a text of the line
// (lineTexts), else nil.
func lineText(n ast.Node) func(*LineEnv) string {
	if id, ok := n.(*ast.IdentifierNode); ok {
		return lineTexts[id.Value]
	}
	return nil
}

// textGuard is the guard of field == want (eq) or field != want, or nil
// when field is no text of the line or want no string constant.
func textGuard(field, want ast.Node, eq bool) guard {
	get := lineText(field)
	if get == nil {
		return nil
	}
	s, ok := want.(*ast.StringNode)
	if !ok {
		return nil
	}
	v := s.Value
	return func(e *LineEnv) bool { return (get(e) == v) == eq }
}

// matchGuard is the guard of `text matches "P"`, text a text of the line
// or last_line of one (lastLinePatch writes it), or nil when text is
// neither, P no string constant, or P has no literals (foldedLiterals).
func matchGuard(text, pat ast.Node) guard {
	p, ok := pat.(*ast.StringNode)
	if !ok {
		return nil
	}
	last := false
	if call, ok := text.(*ast.CallNode); ok {
		if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != "last_line" || len(call.Arguments) != 1 {
			return nil
		}
		text, last = call.Arguments[0], true
	}
	get := lineText(text)
	if get == nil {
		return nil
	}
	lits := foldedLiterals(p.Value)
	if lits == nil {
		return nil
	}
	return func(e *LineEnv) bool {
		t := get(e)
		if last {
			t = lastLine(t)
		}
		return mayHoldFold(t, lits)
	}
}

// foldedLiterals returns requiredLiterals(src) in ASCII lower case, less
// those holding a byte outside ASCII (a text holding one of those holds
// such a byte, and mayHoldFold lets it through): every match of src holds
// one of them once text and literal are lower-cased. nil when none is
// left.
func foldedLiterals(src string) []string {
	var out []string
	for _, l := range requiredLiterals(src) {
		b := []byte(l)
		ascii := true
		for i := range b {
			ascii = ascii && b[i] < utf8.RuneSelf
			b[i] = foldByte(b[i])
		}
		if ascii && !slices.Contains(out, string(b)) {
			out = append(out, string(b))
		}
	}
	return out
}

// mayHoldFold reports whether t, ASCII lower-cased, holds one of lits; t
// with a byte outside ASCII always may ((?i)k also matches the Kelvin
// sign, and ſ is an s).
func mayHoldFold(t string, lits []string) bool {
	for i := range len(t) {
		if t[i] >= utf8.RuneSelf {
			return true
		}
	}
	for _, l := range lits {
		for i := 0; i+len(l) <= len(t); i++ {
			j := 0
			for j < len(l) && foldByte(t[i+j]) == l[j] {
				j++
			}
			if j == len(l) {
				return true
			}
		}
	}
	return false
}
