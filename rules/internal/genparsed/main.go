// Command genparsed writes rules/builtin_parsed.go, the built-in rule files
// in parsed form (rules.PreparsedSource), and rules/builtin_trees.go, their
// patterns' parse trees (rules.TreesSource). Run it with go generate ./rules.
package main

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/llmfleet/analyzer/rules"
)

func main() {
	for _, out := range []struct {
		name   string
		source func(fs.FS) ([]byte, error)
	}{
		{"builtin_parsed.go", rules.PreparsedSource},
		{"builtin_trees.go", rules.TreesSource},
	} {
		src, err := out.source(rules.Builtin)
		if err == nil {
			err = os.WriteFile(out.name, src, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "genparsed:", err)
			os.Exit(1)
		}
	}
}
