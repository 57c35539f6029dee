package report

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// Style is how text output is laid out for its reader: the zero Style is
// for a pipe or a file (no width limit, no colour).
type Style struct {
	// Width is the terminal's width in columns; 0 means no limit, and
	// nothing is cut.
	Width int
	// Color marks verdicts with ANSI colours.
	Color bool
}

// Cut is the marker that ends a cell or line cut to fit the width.
const Cut = "…"

// ANSI colours of verdicts: a failure red, ready green, the rest (running,
// stopped) yellow.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// Verdict is v as text, coloured when st.Color is set.
func (st Style) Verdict(v domain.Verdict) string {
	return st.paint(string(v), verdictColor(v))
}

func verdictColor(v domain.Verdict) string {
	switch {
	case v == "":
		return ""
	case v.IsFailure():
		return ansiRed
	case v == domain.VerdictReady:
		return ansiGreen
	}
	return ansiYellow
}

func (st Style) paint(s, color string) string {
	if !st.Color || color == "" || s == "" {
		return s
	}
	return color + s + ansiReset
}

// Columns writes header and rows aligned in columns two spaces apart, as
// text/tabwriter does. With st.Width set, the widest of the shrink columns
// is narrowed (down to 3 columns, header included) until a line fits, and
// the cells cut end in Cut; the other columns (times, verdicts) stay whole,
// so a terminal narrower than them still wraps. verdictCol
// is the index of the column holding verdicts, coloured with st.Color (-1:
// none).
func (st Style) Columns(w io.Writer, header []string, rows [][]string, verdictCol int, shrink ...int) error {
	widths := make([]int, len(header))
	minimum := make([]int, len(header))
	for i, h := range header {
		widths[i] = width(h)
		minimum[i] = -1 // kept whole
	}
	for _, i := range shrink {
		minimum[i] = 3
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], width(c))
			}
		}
	}
	if st.Width > 0 {
		total := 2 * (len(widths) - 1)
		for _, n := range widths {
			total += n
		}
		for total > st.Width {
			widest := -1
			for i, n := range widths {
				if minimum[i] >= 0 && n > minimum[i] && (widest < 0 || n > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break // as narrow as it gets: the terminal wraps the rest
			}
			widths[widest]--
			total--
		}
	}
	var b strings.Builder
	line := func(cells []string, paint bool) {
		b.Reset()
		for i, c := range cells {
			if i >= len(widths) {
				break
			}
			c = fit(c, widths[i])
			pad := widths[i] - width(c)
			if paint && i == verdictCol {
				c = st.Verdict(domain.Verdict(c))
			}
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", pad+2))
			}
		}
		b.WriteByte('\n')
	}
	line(header, false) // a header is cut like a cell
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for _, r := range rows {
		line(r, true)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// Line is s cut to the width (with Cut), s itself without a width.
func (st Style) Line(s string) string {
	if st.Width <= 0 {
		return s
	}
	return fit(s, st.Width)
}

// wrapWidth is the width paragraphs are folded at: 100 columns, less on a
// narrower terminal.
func (st Style) wrapWidth(indent int) int {
	if st.Width > 0 && st.Width-indent < 100 {
		return max(st.Width-indent, 20)
	}
	return 100
}

// width is the number of columns s takes (one per rune: the log text shown
// is ASCII but for a few symbols).
func width(s string) int { return utf8.RuneCountInString(s) }

// fit cuts s to n columns, the last one the Cut marker.
func fit(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	runes := []rune(s)
	return string(runes[:n-1]) + Cut
}

// Offset is the layout of times shown to operators: with the UTC offset of
// the host that logged them, as the web UI shows them.
const Offset = "2006-01-02 15:04:05 -07:00"
