// Command genparsed writes rules/builtin_parsed.go, the built-in rule files
// in parsed form (rules.PreparsedSource). Run it with go generate ./rules.
package main

import (
	"fmt"
	"os"

	"github.com/llmfleet/analyzer/rules"
)

func main() {
	src, err := rules.PreparsedSource(rules.Builtin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genparsed:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("builtin_parsed.go", src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genparsed:", err)
		os.Exit(1)
	}
}
