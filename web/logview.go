package web

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// The attempt page shows its evidence and context as a log viewer would
// (lnav, less): one list of lines in journal order, each shown once; a line
// that holds a whole traceback as Python's repr ("...\n  File ...") laid out
// on its own rows with its indentation; runs of identical rows, and a phrase
// repeated back to back inside a row, collapsed to one with a count; the
// rule's match marked, its row anchored as #decisive.

// logLine is one journal line of the viewer.
type logLine struct {
	Time     time.Time
	Rows     []logRow
	Evidence bool // cited by a finding
	Error    bool // looks like an error (for "next error")
	Decisive bool // holds the verdict's match
	Anchor   string
	// ErrN numbers the error lines from 1 (0: not an error); NextErr is
	// the anchor of the next one, "" for the last.
	ErrN    int
	NextErr string
	// N is the line's number in the attempt's log (from 1; 0: unknown)
	// and Skipped how many lines before it were not kept.
	N, Skipped int
}

// logRow is one display row of a line.
type logRow struct {
	Parts  []logPart
	Repeat int // > 1: the row stood Repeat times in a row
}

// logPart is a run of a row's text. Repeat > 1: Text stood Repeat times back
// to back. Mark: the rule matched here.
type logPart struct {
	Text   string
	Repeat int
	Mark   bool
}

const (
	// minUnit and maxUnit bound the phrase a row repeats: shorter ones
	// ("== == ==") are left alone, longer ones are rows of their own.
	minUnit = 12
	maxUnit = 2048
	// minRepeats is how many back-to-back copies a phrase needs to fold.
	minRepeats = 3
	// repeatBudget caps the bytes searched for repeats per line (a
	// hostile line of spaces must not cost a page seconds).
	repeatBudget = 4 << 20
	// maxViewRows caps the rows one line expands to.
	maxViewRows = 2000
)

// buildLogView merges the attempt's context and evidence into one list in
// journal order; match is the verdict finding's Match, marked where found.
func buildLogView(a *domain.Attempt) []logLine {
	match, decisiveMsg := decisiveMatch(a)
	type src struct {
		e        domain.Evidence
		evidence bool
		order    int
	}
	var lines []src
	seen := map[string]int{}
	key := func(e domain.Evidence) string { return e.Cursor + "\x00" + e.Message }
	for _, e := range a.Context {
		if _, ok := seen[key(e)]; ok {
			continue
		}
		seen[key(e)] = len(lines)
		lines = append(lines, src{e: e, order: len(lines)})
	}
	for _, e := range a.Evidence {
		if i, ok := seen[key(e)]; ok {
			lines[i].evidence = true
			continue
		}
		seen[key(e)] = len(lines)
		lines = append(lines, src{e: e, evidence: true, order: len(lines)})
	}
	// Context is in journal order; evidence outside it goes by time.
	sort.SliceStable(lines, func(i, j int) bool {
		ti, tj := lines[i].e.Time, lines[j].e.Time
		if ti.IsZero() || tj.IsZero() || ti.Equal(tj) {
			return lines[i].order < lines[j].order
		}
		return ti.Before(tj)
	})
	out := make([]logLine, 0, len(lines))
	marked := false
	for _, l := range lines {
		ll := logLine{Time: l.e.Time, Evidence: l.evidence, Error: rules.IsErrorText(l.e.Message)}
		m := ""
		if !marked && match != "" && l.e.Message == decisiveMsg {
			m = match
		}
		ll.Rows, ll.Decisive = layoutLine(l.e.Message, m)
		if ll.Decisive {
			marked = true
			ll.Anchor = "decisive"
		}
		out = append(out, ll)
	}
	return out
}

// decisiveMatch is the verdict finding's match and the line it was found in.
func decisiveMatch(a *domain.Attempt) (match, line string) {
	for _, f := range a.Findings {
		if f.ID == string(a.Verdict) && f.Match != "" && len(f.Evidence) > 0 {
			// The first evidence line is the one the rule matched, or
			// the line that announced its traceback: try both.
			for _, e := range f.Evidence {
				if strings.Contains(e.Message, firstRow(f.Match)) {
					return f.Match, e.Message
				}
			}
		}
	}
	return "", ""
}

// firstRow is s up to its first newline, real or escaped.
func firstRow(s string) string {
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, `\n`); i >= 0 {
		s = s[:i]
	}
	return s
}

// layoutLine splits msg into rows, marks the first occurrence of match (its
// first row) and folds repeats; decisive tells whether match was found.
func layoutLine(msg, match string) (rows []logRow, decisive bool) {
	texts := splitRows(msg)
	needle := firstRow(match)
	budget := repeatBudget
	for _, t := range texts {
		var parts []logPart
		if needle != "" && !decisive {
			if i := strings.Index(t, needle); i >= 0 {
				decisive = true
				parts = append(parts, foldRepeats(t[:i], &budget)...)
				parts = append(parts, logPart{Text: needle, Mark: true})
				parts = append(parts, foldRepeats(t[i+len(needle):], &budget)...)
			}
		}
		if parts == nil {
			parts = foldRepeats(t, &budget)
		}
		if n := len(rows); n > 0 && sameParts(rows[n-1].Parts, parts) {
			rows[n-1].Repeat++
			continue
		}
		rows = append(rows, logRow{Parts: parts, Repeat: 1})
	}
	return rows, decisive
}

// splitRows cuts a line at its newlines; a line that carries a traceback as
// Python's repr (two or more literal "\n") is cut at those too.
func splitRows(msg string) []string {
	msg = strings.TrimRight(msg, "\n")
	if strings.Count(msg, `\n`) >= 2 {
		msg = strings.ReplaceAll(msg, `\n`, "\n")
	}
	rows := strings.Split(msg, "\n")
	if len(rows) > maxViewRows {
		rest := strings.Join(rows[maxViewRows-1:], " ")
		rows = append(rows[:maxViewRows-1], rest)
	}
	return rows
}

// foldRepeats splits s into parts where a phrase of minUnit..maxUnit bytes
// starting at a word boundary repeats back to back at least minRepeats
// times. It costs at most *budget bytes of searching in all.
func foldRepeats(s string, budget *int) []logPart {
	var parts []logPart
	lit := 0
	for i := 0; i+minUnit <= len(s); i++ {
		if i > 0 && s[i-1] != ' ' {
			continue
		}
		if *budget <= 0 {
			break
		}
		window := s[i+1 : min(len(s), i+1+maxUnit+minUnit)]
		*budget -= len(window)
		j := strings.Index(window, s[i:i+minUnit])
		if j < 0 {
			continue
		}
		p := j + 1
		if p < minUnit {
			continue
		}
		unit := s[i : i+p]
		n := 1
		for i+(n+1)*p <= len(s) && s[i+n*p:i+(n+1)*p] == unit {
			n++
		}
		if n < minRepeats {
			continue
		}
		if lit < i {
			parts = append(parts, logPart{Text: s[lit:i], Repeat: 1})
		}
		parts = append(parts, logPart{Text: unit, Repeat: n})
		i += n*p - 1
		lit = i + 1
	}
	if lit < len(s) || parts == nil {
		parts = append(parts, logPart{Text: s[lit:], Repeat: 1})
	}
	return parts
}

func sameParts(a, b []logPart) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// numberErrors numbers the error lines and links each to the next, the
// viewer's "jump to next error"; it returns how many there are.
func numberErrors(log []logLine) int {
	n := 0
	last := -1
	for i := range log {
		if !log[i].Error {
			continue
		}
		n++
		log[i].ErrN = n
		if log[i].Anchor == "" {
			log[i].Anchor = fmt.Sprintf("err-%d", n)
		}
		if last >= 0 {
			log[last].NextErr = log[i].Anchor
		}
		last = i
	}
	return n
}

// excerptAround is how much of the decisive row is shown on either side of
// the match at the top of the page.
const excerptAround = 240

// decisiveRow is the row of the decisive line that holds the match, with
// the text around the match cut to excerptAround bytes; nil when no line
// holds it.
func decisiveRow(log []logLine) *logRow {
	for _, l := range log {
		if !l.Decisive {
			continue
		}
		for _, r := range l.Rows {
			at := -1
			for i, p := range r.Parts {
				if p.Mark {
					at = i
				}
			}
			if at < 0 {
				continue
			}
			before := joinParts(r.Parts[:at])
			after := joinParts(r.Parts[at+1:])
			if len(before) > excerptAround {
				before = "…" + strings.ToValidUTF8(before[len(before)-excerptAround:], "")
			}
			if len(after) > excerptAround {
				after = strings.ToValidUTF8(after[:excerptAround], "") + "…"
			}
			return &logRow{Repeat: 1, Parts: []logPart{{Text: before, Repeat: 1}, r.Parts[at], {Text: after, Repeat: 1}}}
		}
	}
	return nil
}

// joinParts is the text of parts with folded repeats written once with
// their count, as the log shows them.
func joinParts(parts []logPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		if p.Repeat > 1 {
			fmt.Fprintf(&b, "[×%d] ", p.Repeat)
		}
	}
	return b.String()
}
