package main

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPGOProfileMatchesTheCode: default.pgo (scripts/pgo-profile.sh) is
// the profile every `go build` of the analyzer is optimized with. Go
// applies a stale profile silently, optimizing less; this fails once less
// than 90 % of the profile's own samples (those in this module's
// functions) fall in functions the source still declares: the hot path
// was renamed or rewritten, and `make pgo` should run again.
func TestPGOProfileMatchesTheCode(t *testing.T) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0", "default.pgo").Output()
	if err != nil {
		t.Fatalf("go tool pprof default.pgo: %v", err)
	}
	flat := ourFlatSamples(t, out)
	if len(flat) < 20 {
		t.Fatalf("default.pgo holds %d functions of this module: not a profile of the analyzer", len(flat))
	}
	declared := map[string]map[string]bool{} // package dir → declared function keys
	var total, known float64
	var missing []string
	for name, f := range flat {
		pkg, fn := splitFuncName(name)
		dir := strings.TrimPrefix(pkg, module+"/")
		if pkg == "main" {
			dir = "cmd/analyzer"
		}
		if declared[dir] == nil {
			declared[dir] = declaredFuncs(t, filepath.Join("..", "..", dir))
		}
		total += f
		if declared[dir][fn] {
			known += f
		} else {
			missing = append(missing, name)
		}
	}
	t.Logf("%d functions of this module in default.pgo, %.2f s of samples, %.1f %% in functions the source declares; not found: %v", len(flat), total, 100*known/total, missing)
	if known < 0.9*total {
		t.Errorf("%.0f %% of default.pgo's samples in this module are in functions the source no longer declares (%v): run make pgo", 100*(total-known)/total, missing)
	}
}

const module = "github.com/llmfleet/analyzer"

// topLine is a row of `go tool pprof -top`: flat, flat%, sum%, cum, cum%,
// the function (with " (inline)" when it was inlined everywhere).
var topLine = regexp.MustCompile(`^\s*([0-9.]+)(ms|s|us|µs)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)`)

// ourFlatSamples is the flat time (seconds) of each function of this
// module in pprof's -top output.
func ourFlatSamples(t *testing.T, top []byte) map[string]float64 {
	scale := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
	flat := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(top))
	for sc.Scan() {
		m := topLine.FindStringSubmatch(sc.Text())
		if m == nil || !(strings.HasPrefix(m[3], module+"/") || strings.HasPrefix(m[3], "main.")) {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("pprof row %q: %v", sc.Text(), err)
		}
		flat[m[3]] += v * scale[m[2]]
	}
	return flat
}

// splitFuncName splits a profile's function name into its package path
// and the key declaredFuncs gives its declaration: "Name" or "Recv.Name".
// A closure (Analyze.func4, engineOutput-range1) counts as the function
// it is declared in; a generic's type arguments are dropped.
func splitFuncName(name string) (pkg, fn string) {
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".") + slash + 1
	pkg, fn = name[:dot], name[dot+1:]
	if i := strings.Index(fn, "["); i >= 0 {
		fn = fn[:i] + fn[strings.LastIndex(fn, "]")+1:]
	}
	if i := strings.Index(fn, "-range"); i >= 0 {
		fn = fn[:i]
	}
	parts := strings.Split(fn, ".")
	recv := ""
	switch {
	case strings.HasPrefix(parts[0], "("): // (*T).M
		recv, parts = strings.Trim(parts[0], "(*)"), parts[1:]
	case len(parts) > 1 && !closure.MatchString(parts[1]): // T.M
		recv, parts = parts[0], parts[1:]
	}
	fn = parts[0]
	if recv != "" {
		fn = recv + "." + fn
	}
	return pkg, fn
}

// closure is the name Go gives a function literal or a go or defer
// statement's wrapper inside the function before it (F.func2, F.gowrap1).
var closure = regexp.MustCompile(`^(?:func|gowrap|deferwrap)[0-9]+$`)

// declaredFuncs is the functions and methods the non-test files of dir
// declare, as splitFuncName keys them.
func declaredFuncs(t *testing.T, dir string) map[string]bool {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("package of a profiled function: %v", err)
	}
	funcs := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				key = recvName(fd.Recv.List[0].Type) + "." + key
			}
			funcs[key] = true
		}
	}
	return funcs
}

// recvName is a receiver's type name without pointer or type parameters.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}
