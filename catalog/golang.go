package catalog

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// GoExtract lists slog.Error, log.Fatal*/Panic* and fmt.Errorf calls (fatal)
// and slog.Info calls (readiness and milestones) of one Go file, parsed with
// the standard library's go/parser.
func GoExtract(path string, src []byte) []Raw {
	if len(src) > MaxFileBytes || strings.HasSuffix(path, "_test.go") {
		return nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var out []Raw
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			name := x.Name + "." + sel.Sel.Name
			info := false
			switch name {
			case "slog.Error", "log.Fatal", "log.Fatalf", "log.Fatalln", "log.Panic", "log.Panicf", "fmt.Errorf":
			case "slog.Info", "slog.Warn":
				info = true
			default:
				return true
			}
			if len(call.Args) == 0 {
				return true
			}
			first := call.Args[0]
			// slog.Info(fmt.Sprintf("Listening on %s", ...)): the Sprintf format is the message
			if c, ok := first.(*ast.CallExpr); ok && len(c.Args) > 0 {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Sprintf" {
					first = c.Args[0]
				}
			}
			lit, ok := first.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			r := Raw{File: path, Line: fset.Position(call.Pos()).Line, Func: fd.Name.Name, Call: name, Format: capStr(s), Lang: "go", Info: info}
			r.Holes = strings.Contains(s, "%")
			if strings.HasPrefix(name, "slog.") {
				// slog's attributes: key/value pairs after the message
				for k := 1; k+1 < len(call.Args) && len(r.Attrs) < 8; k += 2 {
					if kl, ok := call.Args[k].(*ast.BasicLit); ok && kl.Kind == token.STRING {
						key, _ := strconv.Unquote(kl.Value)
						r.Attrs = append(r.Attrs, key)
					}
				}
			}
			out = append(out, r)
			return true
		})
	}
	return out
}
