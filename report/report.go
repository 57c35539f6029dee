// Package report renders attempts for people: the runbook-style table and
// one paragraph per failed attempt that `analyzer explain` prints.
package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// Text writes a table of attempts (start, unit, engine, shape, phase,
// verdict, findings) and, for each failed attempt, its note and decisive
// line.
func Text(w io.Writer, attempts []*domain.Attempt) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTARTED\tUNIT\tENGINE\tSHAPE\tPHASE\tVERDICT\tFINDINGS")
	for i, a := range attempts {
		started := "-"
		if !a.StartedAt.IsZero() {
			started = a.StartedAt.Format("2006-01-02 15:04:05")
		}
		unit := a.Unit
		if unit == "" {
			unit = a.Container
		}
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, started, Safe(unit), Safe(or(a.Engine, "unknown")),
			Safe(or(a.Shape.Summary(), "-")), a.Phase, a.Verdict, or(strings.Join(a.FindingIDs(), ","), "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, a := range attempts {
		if !a.Verdict.IsFailure() {
			continue
		}
		fmt.Fprintf(w, "\n#%d %s %s: %s in %s\n", i+1, Safe(or(a.Unit, a.Container)), Safe(a.InvocationID), a.Verdict, a.Phase)
		if a.Note != "" {
			fmt.Fprintf(w, "  %s\n", wrap(Safe(a.Note), 100, "  "))
		}
		for _, f := range a.Findings {
			if string(a.Verdict) != f.ID && f.Note != "" {
				fmt.Fprintf(w, "  [%s] %s\n", f.ID, wrap(Safe(f.Note), 100, "  "))
			}
		}
		for j, e := range a.Evidence {
			if j == 3 {
				fmt.Fprintf(w, "  … %d more evidence lines\n", len(a.Evidence)-3)
				break
			}
			fmt.Fprintf(w, "  > %s\n", Safe(clip(e.Message, 220)))
		}
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// wrap folds text at width columns, indenting continuation lines.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for _, word := range strings.Fields(s) {
		if col > 0 && col+1+len(word) > width {
			b.WriteString("\n" + indent)
			col = 0
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// Safe escapes what a terminal would act on in text that came from a log
// (unit, host and container names, lines): control characters, ESC among
// them, DEL, C1 controls and invalid UTF-8 become \xNN or \u00NN, so a
// crafted name cannot move the cursor, retitle the window or hide lines.
func Safe(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
