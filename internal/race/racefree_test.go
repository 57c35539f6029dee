package race_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRaceFreePackagesStartNoGoroutine: the packages `make test` runs
// without -race (the Makefile's RACE_FREE) start no goroutine and share no
// state through sync or sync/atomic; a package that does must move to the
// -race run, or its data races would go unseen, unless the Makefile runs
// the tests of its shared state under -race apart (rules' reload Manager
// and the DFAs built as lines need their states:
// `-race -count=1 -run 'Manager|Reload|Concurrent' ./rules/`).
func TestRaceFreePackagesStartNoGoroutine(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, l := range strings.Split(string(mk), "\n") {
		if rest, ok := strings.CutPrefix(l, "RACE_FREE :="); ok {
			pkgs = strings.Fields(rest)
		}
	}
	if len(pkgs) < 5 {
		t.Fatalf("the Makefile's RACE_FREE lists %v", pkgs)
	}
	for _, pkg := range pkgs {
		apart := false
		for _, l := range strings.Split(string(mk), "\n") {
			if strings.Contains(l, " -race ") && strings.Contains(l, " -run ") && strings.HasSuffix(l, " ./"+pkg+"/") {
				apart = true
			}
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if len(files) == 0 {
			t.Errorf("RACE_FREE package %s has no Go files", pkg)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); (p == "sync" || p == "sync/atomic") && !apart {
					t.Errorf("%s imports %s: move %s out of RACE_FREE", f, p, pkg)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if _, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s starts a goroutine: move %s out of RACE_FREE", f, pkg)
					return false
				}
				return true
			})
		}
	}
}
