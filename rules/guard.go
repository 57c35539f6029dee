package rules

import (
	"github.com/expr-lang/expr/ast"
)

// A line rule's `when` runs in expr's VM, about a quarter of a microsecond
// even when its first term is false, and rules without a literal to
// prefilter on run it on every line. The terms of its top-level `and` that
// read one flag or compare one text of the line (error_line,
// !reached_ready, phase == "weights") are checked in Go first: `when` holds
// only where each of them does, so a false one skips the VM (and the
// rule's regex).

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

// textGuard is the guard of field == want (eq) or field != want, or nil
// when field is no text of the line or want no string constant.
func textGuard(field, want ast.Node, eq bool) guard {
	id, ok := field.(*ast.IdentifierNode)
	if !ok {
		return nil
	}
	get, ok := lineTexts[id.Value]
	if !ok {
		return nil
	}
	s, ok := want.(*ast.StringNode)
	if !ok {
		return nil
	}
	v := s.Value
	return func(e *LineEnv) bool { return (get(e) == v) == eq }
}
