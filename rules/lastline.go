package rules

import (
	"regexp/syntax"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// `frames matches "...[^:\n]*$"` runs a regex over a whole traceback (a
// kilobyte or more, case-folded, no literal to skip to) to read its
// innermost frame. A pattern whose matches end at the text's end and hold
// no newline can only match the text's last line, so lastLinePatch has it
// run there: same answer (an assertion at the line's start sees a newline
// before it, or the text's start: both non-word, both a line start to
// (?m)^), a fraction of the work.

// lastLinePatch is an expr visitor that rewrites `x matches "P"` into
// `last_line(x) matches "P"` when every match of P ends at the end of the
// text, holds no newline, and P has no \A or non-multiline ^.
type lastLinePatch struct{}

// Visit implements ast.Visitor.
func (lastLinePatch) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || n.Operator != "matches" {
		return
	}
	pat, ok := n.Right.(*ast.StringNode)
	if !ok || !endsOnLastLine(pat.Value) {
		return
	}
	if call, ok := n.Left.(*ast.CallNode); ok {
		if id, ok := call.Callee.(*ast.IdentifierNode); ok && id.Value == "last_line" {
			return // patched already
		}
	}
	n.Left = &ast.CallNode{Callee: &ast.IdentifierNode{Value: "last_line"}, Arguments: []ast.Node{n.Left}}
}

// endsOnLastLine reports whether every match of the regex src lies on the
// last line of the text it runs on (see lastLinePatch).
func endsOnLastLine(src string) bool {
	re, err := parsePattern(src)
	if err != nil {
		return false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) == 0 || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return false
	}
	var begins func(*syntax.Regexp) bool
	begins = func(r *syntax.Regexp) bool {
		if r.Op == syntax.OpBeginText {
			return true
		}
		for _, sub := range r.Sub {
			if begins(sub) {
				return true
			}
		}
		return false
	}
	if begins(re) {
		return false
	}
	var can byteSet
	canMatch(re, &can)
	return !can.has('\n')
}

// lastLine returns the text after s's last newline (s when it has none).
func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }
