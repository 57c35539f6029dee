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
// every e.Field("NAME") call and every field fieldsOf reads names a field
// in Fields: a missing one would
// be dropped by a reader that keeps only Fields, silently.
func TestFieldsListsEveryRead(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	consts := map[string]string{"GapField": GapField, "LogLossField": LogLossField, "PastedField": PastedField}
	read := 0
	check := func(arg ast.Expr) {
		var field string
		switch a := arg.(type) {
		case *ast.BasicLit:
			field, _ = strconv.Unquote(a.Value)
		case *ast.Ident:
			var ok bool
			if field, ok = consts[a.Name]; !ok {
				t.Errorf("%s: Field(%s): add the constant to this test", fset.Position(a.Pos()), a.Name)
				return
			}
		default:
			t.Errorf("%s: Field called with a computed name", fset.Position(arg.Pos()))
			return
		}
		read++
		if !slices.Contains(Fields, field) {
			t.Errorf("%s: reads field %s, which tracker.Fields does not list", fset.Position(arg.Pos()), field)
		}
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var arg ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr: // e.Field("NAME")
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Field" || len(n.Args) != 1 {
					return true
				}
				arg = n.Args[0]
			case *ast.FuncDecl: // fieldsOf's m["NAME"]
				if n.Name.Name != "fieldsOf" {
					return true
				}
				ast.Inspect(n.Body, func(n ast.Node) bool {
					if ix, ok := n.(*ast.IndexExpr); ok {
						if id, ok := ix.X.(*ast.Ident); ok && id.Name == "m" {
							check(ix.Index)
						}
					}
					return true
				})
				return false
			default:
				return true
			}
			check(arg)
			return true
		})
	}
	if read < 20 {
		t.Fatalf("found %d Field reads; the parser walk is broken", read)
	}
}
