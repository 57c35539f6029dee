package tracker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFieldsListsEveryRead parses the package's sources and checks that
// every e.Field("NAME") call names a field in Fields: a missing one would
// be dropped by a reader that keeps only Fields, silently.
func TestFieldsListsEveryRead(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	consts := map[string]string{"GapField": GapField, "LogLossField": LogLossField, "PastedField": PastedField}
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Field" {
				return true
			}
			var field string
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				field, _ = strconv.Unquote(a.Value)
			case *ast.Ident:
				field, ok = consts[a.Name]
				if !ok {
					t.Errorf("%s: Field(%s): add the constant to this test", fset.Position(a.Pos()), a.Name)
					return true
				}
			default:
				t.Errorf("%s: Field called with a computed name", fset.Position(call.Pos()))
				return true
			}
			read++
			if !slices.Contains(Fields, field) {
				t.Errorf("%s: reads field %s, which tracker.Fields does not list", fset.Position(call.Pos()), field)
			}
			return true
		})
	}
	if read < 20 {
		t.Fatalf("found %d Field reads; the parser walk is broken", read)
	}
}
