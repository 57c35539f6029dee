package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCommandIsWiring: the command's own code (not its tests) holds no SQL,
// no HTTP handler, no rule or pipeline logic: it parses flags and plugs the
// packages together. The imports that would bring those in, handler
// signatures and SQL text are refused.
func TestCommandIsWiring(t *testing.T) {
	forbidden := map[string]string{
		"database/sql":                         "SQL belongs to store",
		"github.com/mattn/go-sqlite3":          "SQL belongs to store",
		"regexp":                               "matching lines is rules' work",
		"github.com/expr-lang/expr":            "rule conditions are rules' work",
		"github.com/gin-gonic/gin":             "HTTP handlers belong to web",
		"github.com/llmfleet/analyzer/tracker": "attempt tracking is pipeline's work",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, ok := forbidden[path]; ok {
				t.Errorf("%s imports %s: %s", name, path, why)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncType:
				for _, p := range n.Params.List {
					if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "ResponseWriter" {
						t.Errorf("%s: an HTTP handler (%s): handlers belong to web", name, fset.Position(n.Pos()))
					}
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					s := strings.ToUpper(n.Value)
					for _, kw := range []string{"SELECT ", "INSERT INTO", "CREATE TABLE", "UPDATE ATTEMPTS"} {
						if strings.Contains(s, kw) {
							t.Errorf("%s: SQL text %s at %s: SQL belongs to store", name, n.Value, fset.Position(n.Pos()))
						}
					}
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files: the test is not looking at the command", checked)
	}
}
