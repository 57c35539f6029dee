package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/llmfleet/analyzer/report"
)

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// outputStyle is how text goes to stdout: fitted to the width $COLUMNS
// says (as ls and other coreutils take it, also when piped) or else to the
// terminal's, and coloured when stdout is a terminal; --color always or
// never decides the colour instead, and NO_COLOR (https://no-color.org)
// turns auto off. Piped without $COLUMNS, nothing is cut.
func outputStyle(color string) (report.Style, error) {
	tty, width := false, 0
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	st, err := styleFor(color, tty, width, os.Getenv("NO_COLOR"))
	if n := columns(os.Getenv("COLUMNS")); n > 0 {
		st.Width = n
	}
	return st, err
}

// columns is the width $COLUMNS says, 0 when it is unset or not a
// number of columns a terminal could have (20 to 10000).
func columns(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 20 || n > 10000 {
		return 0
	}
	return n
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
