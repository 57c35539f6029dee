package report

import (
	"io"
	"slices"
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

// Layout says how Columns treats columns, by index.
type Layout struct {
	// Verdict is the column of verdicts, coloured with Style.Color; -1
	// for none.
	Verdict int
	// Wrap columns are folded onto continuation lines (at spaces and
	// commas) to fit the width; Shrink columns are cut, the cut cells
	// ending in Cut. Widest first, wrap columns give way down to 24
	// columns, shrink columns to 8, wrap columns to 12, shrink columns to
	// 3, wrap columns to 3. The other columns stay whole, so a terminal narrower than them
	// still wraps the lines.
	Wrap   []int
	Shrink []int
	// Keep columns identify a row (a unit, a shape): they are cut to 24
	// columns once the Shrink columns are down to 8, to 12 once the Shrink
	// columns are down to 3 and the Wrap ones to 12, and below that last.
	Keep []int
	// Drop columns, in this order, leave the table whole when it cannot
	// fit with the Wrap and Keep columns at 12 and the Shrink ones at 8
	// (a column cut to three letters says nothing).
	Drop []int
}

// minWidth is the narrowest the table gets before anything is dropped:
// Wrap and Keep columns at 12, Shrink at 8, the others whole.
func (lay Layout) minWidth(header []string, rows [][]string) int {
	total := 2 * (len(header) - 1)
	for i, h := range header {
		n := width(h)
		for _, r := range rows {
			if i < len(r) {
				n = max(n, width(r[i]))
			}
		}
		switch {
		case slices.Contains(lay.Wrap, i), slices.Contains(lay.Keep, i):
			n = min(n, max(width(h), 12))
		case slices.Contains(lay.Shrink, i):
			n = min(n, max(width(h), 8))
		}
		total += n
	}
	return total
}

// without is the table and layout without column col.
func (lay Layout) without(header []string, rows [][]string, col int) ([]string, [][]string, Layout) {
	cut := func(r []string) []string {
		if col >= len(r) {
			return r
		}
		return append(append([]string{}, r[:col]...), r[col+1:]...)
	}
	shift := func(cols []int) []int {
		var out []int
		for _, c := range cols {
			switch {
			case c < col:
				out = append(out, c)
			case c > col:
				out = append(out, c-1)
			}
		}
		return out
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = cut(r)
	}
	v := lay.Verdict
	switch {
	case v == col:
		v = -1
	case v > col:
		v--
	}
	return cut(header), out, Layout{Verdict: v, Wrap: shift(lay.Wrap), Shrink: shift(lay.Shrink), Keep: shift(lay.Keep), Drop: shift(lay.Drop)}
}

// Columns writes header and rows aligned in columns two spaces apart, as
// text/tabwriter does, fitted to st.Width as lay says.
func (st Style) Columns(w io.Writer, header []string, rows [][]string, lay Layout) error {
	for st.Width > 0 && len(lay.Drop) > 0 && lay.minWidth(header, rows) > st.Width {
		header, rows, lay = lay.without(header, rows, lay.Drop[0])
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = width(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], width(c))
			}
		}
	}
	wraps := map[int]bool{}
	if st.Width > 0 {
		total := 2 * (len(widths) - 1)
		for _, n := range widths {
			total += n
		}
		narrow := func(cols []int, floor func(int) int) {
			for total > st.Width {
				widest := -1
				for _, i := range cols {
					if widths[i] > floor(i) && (widest < 0 || widths[i] > widths[widest]) {
						widest = i
					}
				}
				if widest < 0 {
					return
				}
				widths[widest]--
				total--
			}
		}
		for _, i := range lay.Wrap {
			wraps[i] = true
		}
		// Each kind gives way a little before either gives way a lot.
		narrow(lay.Wrap, func(i int) int { return max(width(header[i]), 24) })
		narrow(lay.Shrink, func(i int) int { return max(width(header[i]), 8) })
		narrow(lay.Keep, func(i int) int { return max(width(header[i]), 24) })
		narrow(lay.Wrap, func(i int) int { return max(width(header[i]), 12) })
		narrow(lay.Shrink, func(int) int { return 3 })
		narrow(lay.Keep, func(i int) int { return max(width(header[i]), 12) })
		narrow(lay.Wrap, func(int) int { return 3 })
		narrow(lay.Keep, func(int) int { return 3 })
	}
	var b strings.Builder
	write := func(cells []string, paint bool) error {
		// A row is as many lines as its most folded cell.
		lines := make([][]string, len(widths))
		height := 1
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			if wraps[i] {
				lines[i] = fold(c, widths[i])
			} else {
				lines[i] = []string{fit(c, widths[i])}
			}
			height = max(height, len(lines[i]))
		}
		for l := 0; l < height; l++ {
			b.Reset()
			for i := range widths {
				c := ""
				if l < len(lines[i]) {
					c = lines[i][l]
				}
				pad := widths[i] - width(c)
				if paint && i == lay.Verdict && l == 0 {
					c = st.Verdict(domain.Verdict(c))
				}
				b.WriteString(c)
				if i < len(widths)-1 {
					b.WriteString(strings.Repeat(" ", pad+2))
				}
			}
			if _, err := io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(header, false); err != nil { // a header is cut like a cell
		return err
	}
	for _, r := range rows {
		if err := write(r, true); err != nil {
			return err
		}
	}
	return nil
}

// fold breaks s into lines of at most n columns after spaces and commas;
// a word longer than n is cut.
func fold(s string, n int) []string {
	if width(s) <= n {
		return []string{s}
	}
	var words []string
	start := 0
	for i, r := range s {
		if r == ' ' || r == ',' {
			words = append(words, s[start:i+1])
			start = i + 1
		}
	}
	words = append(words, s[start:])
	var out []string
	cur := ""
	for _, wd := range words {
		if cur != "" && width(strings.TrimRight(cur+wd, " ")) > n {
			out = append(out, strings.TrimRight(cur, " "))
			cur = ""
		}
		cur += wd
	}
	if cur = strings.TrimRight(cur, " "); cur != "" || len(out) == 0 {
		out = append(out, cur)
	}
	for i := range out {
		out[i] = fit(out[i], n)
	}
	return out
}

// Fold folds a paragraph at the width, continuation lines starting with
// indent; without a width it is left as it is.
func (st Style) Fold(s, indent string) string {
	if st.Width <= 0 || width(s) <= st.Width {
		return s
	}
	return wrap(s, max(st.Width-width(indent), 20), indent)
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
