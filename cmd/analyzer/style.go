package main

import (
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/llmfleet/analyzer/report"
)

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// outputStyle is how text goes to stdout: fitted to the terminal's width
// and coloured when stdout is a terminal; --color always or never decides
// the colour instead, and NO_COLOR (https://no-color.org) turns auto off.
func outputStyle(color string) (report.Style, error) {
	tty, width := false, 0
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	return styleFor(color, tty, width, os.Getenv("NO_COLOR"))
}

// styleFor is outputStyle's decision for a stdout that is a terminal (tty)
// of width columns, and the value of $NO_COLOR.
func styleFor(color string, tty bool, width int, noColor string) (report.Style, error) {
	st := report.Style{}
	if tty {
		st.Width = width
	}
	switch color {
	case "auto":
		st.Color = tty && noColor == ""
	case "always":
		st.Color = true // an explicit flag outranks the environment
	case "never":
	default:
		return st, usageError{msg: fmt.Sprintf("--color %q: want auto, always or never", color)}
	}
	return st, nil
}
