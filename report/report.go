// Package report renders attempts for people: the runbook-style table and
// one paragraph per failed attempt that `analyzer explain` prints.
package report

import (
	"fmt"
	"io"
	"sort"
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
	verdicts := make([]domain.Verdict, len(attempts))
	for i, a := range attempts {
		verdicts[i] = a.Verdict
		if a.Verdict.IsFailure() {
			fmt.Fprintf(w, "\n#%d%s", i+1, Section(a))
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", Summary(verdicts))
	return err
}

// Summary is the one-line fleet summary that ends the text report: "20
// attempts: 6 ready, 12 failed (8 oom_graph_capture, 4 config_error), 2
// running"; failures by count, then name.
func Summary(verdicts []domain.Verdict) string {
	counts := map[domain.Verdict]int{}
	failed := 0
	for _, v := range verdicts {
		counts[v]++
		if v.IsFailure() {
			failed++
		}
	}
	var parts []string
	if n := counts[domain.VerdictReady]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d ready", n))
	}
	if failed > 0 {
		var kinds []domain.Verdict
		for v := range counts {
			if v.IsFailure() {
				kinds = append(kinds, v)
			}
		}
		sort.Slice(kinds, func(i, j int) bool {
			if counts[kinds[i]] != counts[kinds[j]] {
				return counts[kinds[i]] > counts[kinds[j]]
			}
			return kinds[i] < kinds[j]
		})
		var ks []string
		for _, k := range kinds {
			ks = append(ks, fmt.Sprintf("%d %s", counts[k], k))
		}
		parts = append(parts, fmt.Sprintf("%d failed (%s)", failed, strings.Join(ks, ", ")))
	}
	for _, v := range []domain.Verdict{domain.VerdictRunning, domain.VerdictStopped} {
		if n := counts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	noun := "attempts"
	if len(verdicts) == 1 {
		noun = "attempt"
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d %s", len(verdicts), noun)
	}
	return fmt.Sprintf("%d %s: %s", len(verdicts), noun, strings.Join(parts, ", "))
}

// Row is an attempt's row of the table: start, host, unit, engine, shape,
// phase, verdict, findings.
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
	return []string{started, Safe(or(a.Host, "-")), Safe(unit), Safe(or(a.Engine, "unknown")), Safe(or(a.Shape.Summary(), "-")),
		string(a.Phase), string(a.Verdict), or(strings.Join(a.FindingIDs(), ","), "-")}
}

// Table writes rows (Row) numbered from 1, aligned in columns.
func Table(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTARTED\tHOST\tUNIT\tENGINE\tSHAPE\tPHASE\tVERDICT\tFINDINGS")
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
