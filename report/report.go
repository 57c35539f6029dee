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
	rows := make([][]string, len(attempts))
	for i, a := range attempts {
		rows[i] = Row(a)
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	for i, a := range attempts {
		if a.Verdict.IsFailure() {
			fmt.Fprintf(w, "\n#%d%s", i+1, Section(a))
		}
	}
	return nil
}

// Row is an attempt's row of the table: start, unit, engine, shape, phase,
// verdict, findings.
func Row(a *domain.Attempt) []string {
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
	return []string{started, Safe(unit), Safe(or(a.Engine, "unknown")), Safe(or(a.Shape.Summary(), "-")),
		string(a.Phase), string(a.Verdict), or(strings.Join(a.FindingIDs(), ","), "-")}
}

// Table writes rows (Row) numbered from 1, aligned in columns.
func Table(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTARTED\tUNIT\tENGINE\tSHAPE\tPHASE\tVERDICT\tFINDINGS")
	for i, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\n", i+1, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// Section is a failed attempt's paragraph after its number ("#3"): unit,
// invocation, verdict and phase, the note, other findings' notes and up to
// three evidence lines.
func Section(a *domain.Attempt) string {
	var w strings.Builder
	fmt.Fprintf(&w, " %s %s: %s in %s\n", Safe(or(a.Unit, a.Container)), Safe(a.InvocationID), a.Verdict, a.Phase)
	if a.Note != "" {
		fmt.Fprintf(&w, "  %s\n", wrap(Safe(a.Note), 100, "  "))
	}
	for _, f := range a.Findings {
		if string(a.Verdict) != f.ID && f.Note != "" {
			fmt.Fprintf(&w, "  [%s] %s\n", f.ID, wrap(Safe(f.Note), 100, "  "))
		}
	}
	for j, e := range a.Evidence {
		if j == 3 {
			fmt.Fprintf(&w, "  … %d more evidence lines\n", len(a.Evidence)-3)
			break
		}
		fmt.Fprintf(&w, "  > %s\n", Safe(clip(e.Message, 220)))
	}
	return w.String()
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
