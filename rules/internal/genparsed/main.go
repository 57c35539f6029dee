// Command genparsed writes the files of rules.GeneratedFiles: the built-in
// rule files in parsed form (builtin_parsed.go), their patterns' parse
// trees and literal facts (builtin_trees.go), and the Aho-Corasick tables
// of their literals (builtin_ac.go). Run it with go generate ./rules.
package main

import (
	"fmt"
	"os"

	"github.com/llmfleet/analyzer/rules"
)

func main() {
	for _, g := range rules.GeneratedFiles {
		src, err := g.Source(rules.Builtin)
		if err == nil {
			err = os.WriteFile(g.Name, src, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "genparsed:", err)
			os.Exit(1)
		}
	}
}
