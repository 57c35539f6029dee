// Package report renders attempts for people: the runbook-style table and
// one paragraph per failed attempt that `analyzer explain` prints.
package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// Text writes a table of attempts (start, unit, engine, shape, phase,
// verdict, findings) and, for each failed attempt, its note and decisive
// line.
func Text(w io.Writer, attempts []*domain.Attempt) error {
	return Style{}.Text(w, attempts)
}

// Text is Text laid out in st.
func (st Style) Text(w io.Writer, attempts []*domain.Attempt) error {
	rows := make([][]string, len(attempts))
	for i, a := range attempts {
		rows[i] = Row(a)
	}
	if err := st.Table(w, rows); err != nil {
		return err
	}
	verdicts := make([]domain.Verdict, len(attempts))
	paras := make([]paragraph, len(attempts))
	for i, a := range attempts {
		verdicts[i] = a.Verdict
		if a.Verdict.IsFailure() {
			body := st.SectionBody(a)
			paras[i] = paragraphOf(a)
			paras[i].body = body
		}
	}
	if err := st.paragraphs(w, paras, func(w io.Writer, i int) error {
		_, err := io.WriteString(w, paras[i].body)
		return err
	}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", st.Fold(Summary(verdicts), "  "))
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

// Row is an attempt's row of the table: start (with its host's UTC
// offset), host, unit, engine, shape, phase, verdict, findings.
func Row(a *domain.Attempt) []string {
	started := "-"
	if !a.StartedAt.IsZero() {
		started = a.StartedAt.Format(Offset)
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

// tableHeader is the header of the attempts table; VERDICT is column 7.
var tableHeader = []string{"#", "STARTED", "HOST", "UNIT", "ENGINE", "SHAPE", "PHASE", "VERDICT", "FINDINGS"}

// Table writes rows (Row) numbered from 1, aligned in columns, fitted to
// st.Width. A table wider than that first loses what repeats: finding ids
// that repeat the verdict, a host or engine that is the same on every row,
// a date and UTC offset every start shares (said once in a line above the
// table); then findings fold and phase, host and engine are cut; unit and
// shape, which identify a row, are cut last.
func (st Style) Table(w io.Writer, rows [][]string) error {
	header := tableHeader
	numbered := make([][]string, len(rows))
	for i, r := range rows {
		numbered[i] = append([]string{strconv.Itoa(i + 1)}, r...)
	}
	// Column numbers of numbered rows.
	const started, host, unit, engine, shape, phase, verdict, findings = 1, 2, 3, 4, 5, 6, 7, 8
	drop := map[int]bool{}
	var above []string
	// fits says whether the table fits with the findings folded to
	// findingsFloor columns, phase, host and engine cut to cut columns and
	// unit and shape to keep columns.
	fits := func(findingsFloor, cut, keep int) bool {
		total := 0
		for i := range header {
			if drop[i] {
				continue
			}
			n := width(header[i])
			for _, r := range numbered {
				n = max(n, width(r[i]))
			}
			floor := 1 << 30
			switch i {
			case findings:
				floor = findingsFloor
			case phase, host, engine:
				floor = cut
			case unit, shape:
				floor = keep
			}
			n = min(n, max(width(header[i]), floor))
			if total > 0 {
				total += 2
			}
			total += n
		}
		return total <= st.Width
	}
	if st.Width > 0 && len(numbered) > 0 && !fits(1<<30, 1<<30, 1<<30) {
		// Findings that only repeat the verdict.
		extra := false
		for _, r := range numbered {
			var ids []string
			for _, id := range strings.Split(r[findings], ",") {
				if id != r[verdict] && id != "-" {
					ids = append(ids, id)
				}
			}
			r[findings] = or(strings.Join(ids, ","), "-")
			extra = extra || len(ids) > 0
		}
		drop[findings] = !extra
		// Columns with one value on every row.
		for _, c := range []struct {
			col  int
			name string
		}{{host, "host"}, {engine, "engine"}} {
			if fits(12, 1<<30, 1<<30) {
				break
			}
			if v, same := common(numbered, c.col); same {
				drop[c.col] = true
				above = append(above, c.name+" "+v)
			}
		}
		// The start's date and offset, when every row shares them.
		if !fits(12, 1<<30, 1<<30) {
			st.shortenStarts(numbered, started, &above)
		}
		// Extra findings give way before a unit or shape is cut.
		if !fits(12, 1<<30, 1<<30) {
			drop[findings] = true
		}
		// A column cut to a few letters says nothing: phase (a failed
		// attempt's paragraph says it), host and engine give way whole
		// before a unit or shape is cut below 24 columns.
		for _, col := range []int{phase, host, engine} {
			if fits(0, 8, 24) {
				break
			}
			drop[col] = true
		}
	}
	if len(drop) > 0 {
		var h []string
		for i, c := range header {
			if !drop[i] {
				h = append(h, c)
			}
		}
		header = h
		for j, r := range numbered {
			var k []string
			for i, c := range r {
				if !drop[i] {
					k = append(k, c)
				}
			}
			numbered[j] = k
		}
	}
	if len(above) > 0 {
		if _, err := fmt.Fprintln(w, st.Line("all rows: "+strings.Join(above, ", "))); err != nil {
			return err
		}
	}
	// at is a column's index once the dropped ones are gone, -1 if dropped.
	at := func(col int) int {
		if drop[col] {
			return -1
		}
		n := 0
		for i := 0; i < col; i++ {
			if !drop[i] {
				n++
			}
		}
		return n
	}
	idx := func(cols ...int) []int {
		var out []int
		for _, c := range cols {
			if i := at(c); i >= 0 {
				out = append(out, i)
			}
		}
		return out
	}
	return st.Columns(w, header, numbered, Layout{Verdict: at(verdict), Wrap: idx(findings),
		Shrink: idx(phase, host, engine), Keep: idx(unit, shape)})
}

// common is the value of column col when every row has the same one.
func common(rows [][]string, col int) (string, bool) {
	for _, r := range rows[1:] {
		if r[col] != rows[0][col] {
			return "", false
		}
	}
	return rows[0][col], true
}

// shortenStarts drops from the start column (times in Offset's layout)
// the UTC offset and then the date when every row shares them, and says
// them in above.
func (st Style) shortenStarts(rows [][]string, col int, above *[]string) {
	offset, date := "", ""
	for i, r := range rows {
		s := r[col]
		if len(s) != len(Offset) {
			return // "-": no start
		}
		o, d := s[len(s)-6:], s[:10]
		if i == 0 {
			offset, date = o, d
		}
		if o != offset {
			return
		}
		if d != date {
			date = ""
		}
	}
	for _, r := range rows {
		r[col] = r[col][:19]
		if date != "" {
			r[col] = r[col][11:]
		}
	}
	if date != "" {
		*above = append(*above, "started "+date)
	}
	*above = append(*above, "times UTC"+offset)
}

// Section is a failed attempt's paragraph after its number ("#3"): unit,
// invocation, verdict and phase; the attempt id the web UI and API take;
// the note, other findings' notes and up to three evidence lines, folded
// or cut to st.Width.
func (st Style) Section(a *domain.Attempt) string {
	var w strings.Builder
	st.sectionHead(&w, "", a.Unit, a.Container, a.Verdict, a.Phase, []string{a.ID}, nil)
	if a.InvocationID != "" {
		fmt.Fprintf(&w, "  invocation %s\n", Safe(a.InvocationID))
	}
	return w.String() + st.SectionBody(a)
}

// sectionHead writes a paragraph's first lines after prefix ("#3"): unit,
// verdict and phase, "×N (#rows)" for a run of rows, and the attempt ids.
func (st Style) sectionHead(w io.Writer, prefix, unit, container string, v domain.Verdict, phase domain.Phase, ids []string, rows []int) {
	u := Safe(or(unit, container))
	rest := fmt.Sprintf(" in %s", phase)
	if len(rows) > 1 {
		var rs []string
		for _, r := range rows {
			rs = append(rs, "#"+strconv.Itoa(r))
		}
		rest += fmt.Sprintf(" ×%d (%s)", len(rows), strings.Join(rs, ", "))
	}
	if st.Width > 0 {
		u = fit(u, max(st.Width-width(prefix)-4-width(string(v))-width(rest), 12))
	}
	line := st.Fold(fmt.Sprintf("%s %s: %s%s", prefix, u, v, rest), "  ")
	if st.Color { // coloured after folding: escapes take no columns
		if at := len(prefix) + 1 + len(u) + 2; at+len(v) <= len(line) && line[at:at+len(v)] == string(v) {
			line = line[:at] + st.Verdict(v) + line[at+len(v):]
		}
	}
	fmt.Fprintln(w, line)
	// The ids are never cut: they are what one copies.
	switch {
	case len(ids) == 1 && ids[0] != "":
		line := fmt.Sprintf("  attempt %s (analyzer serve: /attempts/%s)", ids[0], ids[0])
		if st.Width > 0 && width(line) > st.Width {
			line = fmt.Sprintf("  attempt %s\n  (analyzer serve: /attempts/%s)", ids[0], ids[0])
		}
		fmt.Fprintln(w, line)
	case len(ids) > 1:
		line := wrap("attempts "+strings.Join(ids, " "), st.wrapWidth(2), "  ")
		const hint = " (analyzer serve: /attempts/ID)"
		last := line[strings.LastIndexByte(line, '\n')+1:]
		if width(last)+width(hint) <= st.wrapWidth(2) {
			line += hint
		} else {
			line += "\n " + hint
		}
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// SectionBody is the part of a's paragraph that explains it: the note,
// other findings' notes and up to three evidence lines.
func (st Style) SectionBody(a *domain.Attempt) string {
	var w strings.Builder
	if a.Note != "" {
		fmt.Fprintf(&w, "  %s\n", wrap(Safe(a.Note), st.wrapWidth(2), "  "))
	}
	for _, f := range a.Findings {
		if string(a.Verdict) != f.ID && f.Note != "" {
			fmt.Fprintf(&w, "  [%s] %s\n", f.ID, wrap(Safe(f.Note), st.wrapWidth(2), "  "))
		}
	}
	for j, e := range a.Evidence {
		if j == 3 {
			fmt.Fprintf(&w, "  … %d more evidence lines\n", len(a.Evidence)-3)
			break
		}
		fmt.Fprintf(&w, "%s\n", st.Line("  > "+Safe(clip(e.Message, 220))))
	}
	return w.String()
}

// paragraph is what the text report needs of a failed attempt to print
// its paragraph and to tell a crash loop: the same unit failing again the
// same way (verdict, phase, deciding rule and fingerprint) at the same
// shape (a changed shape is a ladder's next rung, not a loop). The zero
// paragraph is an attempt that gets none (not failed).
type paragraph struct {
	Failed                   bool
	ID, Invocation           string
	Host, Unit, Container    string
	Verdict                  domain.Verdict
	Phase                    domain.Phase
	Rule, Fingerprint, Shape string
	body                     string
}

// paragraphOf is a's paragraph.
func paragraphOf(a *domain.Attempt) paragraph {
	return paragraph{Failed: a.Verdict.IsFailure(), ID: a.ID, Invocation: a.InvocationID, Host: a.Host, Unit: a.Unit,
		Container: a.Container, Verdict: a.Verdict, Phase: a.Phase, Rule: a.Rule, Fingerprint: a.Fingerprint, Shape: a.Shape.Summary()}
}

func (p paragraph) unitKey() string { return p.Host + "\x00" + p.Unit + "\x00" + p.Container }
func (p paragraph) causeKey() string {
	return string(p.Verdict) + "\x00" + string(p.Phase) + "\x00" + p.Rule + "\x00" + p.Fingerprint + "\x00" + p.Shape
}

// paragraphs writes the paragraphs of the failed rows of a table (paras
// in row order, row i+1): a crash loop — a unit's attempts failing one
// after another with the same verdict, phase and cause — is one paragraph
// "×N (#rows)" naming every attempt, explained by its first; body writes
// row i's explanation (SectionBody).
func (st Style) paragraphs(w io.Writer, paras []paragraph, body func(io.Writer, int) error) error {
	done := make([]bool, len(paras))
	for i, p := range paras {
		if !p.Failed || done[i] {
			continue
		}
		run := []int{i}
		for j := i + 1; j < len(paras); j++ {
			q := paras[j]
			if q.unitKey() != p.unitKey() || (p.Unit == "" && p.Container == "") {
				continue
			}
			if !q.Failed || q.causeKey() != p.causeKey() {
				break
			}
			run = append(run, j)
			done[j] = true
		}
		var ids []string
		var rows []int
		for _, k := range run {
			ids = append(ids, paras[k].ID)
			rows = append(rows, k+1)
		}
		if ids[0] == "" {
			ids = nil
		}
		var b strings.Builder
		b.WriteString("\n")
		st.sectionHead(&b, "#"+strconv.Itoa(i+1), p.Unit, p.Container, p.Verdict, p.Phase, ids, rows)
		if len(run) == 1 && p.Invocation != "" {
			fmt.Fprintf(&b, "  invocation %s\n", Safe(p.Invocation))
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		if err := body(w, i); err != nil {
			return err
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

// clip shortens s to n runes and the Cut marker.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + Cut
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
