package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Filter selects attempts for ListAttempts (see domain.AttemptFilter).
type Filter = domain.AttemptFilter

// querier is what filterWhere reads through: the database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// notFailures are the verdicts domain.Verdict.IsFailure calls no failure.
var notFailures = []any{"", string(domain.VerdictRunning), string(domain.VerdictReady), string(domain.VerdictStopped)}

// filterWhere returns the WHERE clause (with a leading space; "" for no
// condition) and arguments selecting the attempts f matches, Limit and
// Cursor aside. A Group is looked up through q (its id is a hash of the
// verdict, rule and fingerprint it stands for).
func filterWhere(ctx context.Context, q querier, f Filter) (string, []any, error) {
	var where []string
	var args []any
	in := func(col string, vals []string) {
		where = append(where, col+" IN (?"+strings.Repeat(",?", len(vals)-1)+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	for _, c := range []struct {
		col  string
		val  string
		vals []string
	}{
		{"host", f.Host, f.Hosts}, {"unit", f.Unit, f.Units}, {"engine", f.Engine, f.Engines}, {"verdict", f.Verdict, f.Verdicts},
	} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
		if len(c.vals) > 0 {
			in(c.col, c.vals)
		}
	}
	if len(f.Findings) > 0 {
		in("id IN (SELECT attempt_id FROM findings WHERE finding_id", f.Findings)
		where[len(where)-1] += ")"
	}
	if f.Failed {
		where = append(where, "verdict NOT IN (?"+strings.Repeat(",?", len(notFailures)-1)+")")
		args = append(args, notFailures...)
	}
	// On the wall clock, offsets span -12:00 to +14:00: the instant bound
	// (indexed) is widened by that, the text of the start (stored with its
	// host's offset) decides.
	const wallSlack = 14 * time.Hour
	if !f.Since.IsZero() {
		since := f.Since
		if f.WallClock {
			since = since.Add(-wallSlack)
			where = append(where, "substr(started_at_text, 1, 19) >= ?")
			args = append(args, f.Since.Format(wallLayout))
		}
		where = append(where, "started_at >= ?")
		args = append(args, since.UnixMicro())
	}
	if !f.Until.IsZero() {
		until := f.Until
		if f.WallClock {
			until = until.Add(wallSlack)
			where = append(where, "substr(started_at_text, 1, 19) < ?")
			args = append(args, f.Until.Format(wallLayout))
		}
		where = append(where, "started_at < ?")
		args = append(args, until.UnixMicro())
	}
	if len(f.IDs) > 0 {
		in("id", f.IDs)
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search)
		where = append(where, w)
		args = append(args, a...)
	}
	if f.Group != "" {
		v, rule, fp, ok, err := resolveGroup(ctx, q, f.Group)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			where = append(where, "0")
		} else {
			where = append(where, "verdict = ? AND rule = ? AND fingerprint = ?")
			args = append(args, v, rule, fp)
		}
	}
	if len(where) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(where, " AND "), args, nil
}

// searchWhere matches an attempt id, invocation id, container id or
// container name equal to s, and, for s of domain.SearchMinLength
// characters or more, an id, invocation id or container id starting with s
// (the short ids `analyzer explain` and `podman ps` print). Prefixes are
// matched as ranges so the indexes serve them.
func searchWhere(s string) (string, []any) {
	var or []string
	var args []any
	for _, col := range []string{"id", "invocation_id", "container_id", "container"} {
		or = append(or, col+" = ?")
		args = append(args, s)
	}
	if len(s) >= domain.SearchMinLength {
		for _, col := range []string{"id", "invocation_id", "container_id"} {
			or = append(or, "("+col+" >= ? AND "+col+" < ?)")
			args = append(args, s, s+"\xff")
		}
	}
	return "(" + strings.Join(or, " OR ") + ")", args
}

// resolveGroup finds the verdict, rule and fingerprint whose
// domain.GroupID is id among the stored failed attempts.
func resolveGroup(ctx context.Context, q querier, id string) (verdict, rule, fp string, ok bool, err error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT verdict, rule, fingerprint FROM attempts
		WHERE verdict NOT IN (?`+strings.Repeat(",?", len(notFailures)-1)+`)`, notFailures...)
	if err != nil {
		return "", "", "", false, fmt.Errorf("failure group %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&verdict, &rule, &fp); err != nil {
			return "", "", "", false, fmt.Errorf("failure group %s: %w", id, err)
		}
		if domain.GroupID(domain.Verdict(verdict), rule, fp) == id {
			return verdict, rule, fp, true, nil
		}
	}
	return "", "", "", false, rows.Err()
}

// orderDesc is the order of every attempts list: newest start first,
// unknown starts (NULL, which SQLite sorts lowest) last, ties by id.
const orderDesc = " ORDER BY started_at DESC, id DESC"

// orderAsc is orderDesc reversed, for the page before a cursor.
const orderAsc = " ORDER BY started_at ASC, id ASC"

// afterKey returns the condition selecting the attempts that come after c
// in orderDesc; beforeKey those that come before it.
func afterKey(c *domain.PageCursor) (string, []any) {
	if c.StartedAt == nil {
		return "(started_at IS NULL AND id < ?)", []any{c.ID}
	}
	return "(started_at < ? OR (started_at = ? AND id < ?) OR started_at IS NULL)", []any{*c.StartedAt, *c.StartedAt, c.ID}
}

func beforeKey(c *domain.PageCursor) (string, []any) {
	if c.StartedAt == nil {
		return "(started_at IS NOT NULL OR id > ?)", []any{c.ID}
	}
	return "(started_at > ? OR (started_at = ? AND id > ?))", []any{*c.StartedAt, *c.StartedAt, c.ID}
}

// and appends cond to a WHERE clause made by filterWhere.
func and(where, cond string) string {
	if where == "" {
		return " WHERE " + cond
	}
	return where + " AND " + cond
}

const attemptColumns = `id, host, unit, invocation_id, container, container_id, engine, engine_version,
	started_at_text, ended_at_text, ready_at_text, phase, verdict, rule, note,
	exit_status, exit_code, ended_by, stop_requested, restart_counter, restart_counter_after,
	fingerprint, lines, last_line_at_text, shape_json, timeline_json, note_finding`

// briefColumns are attemptColumns without the timeline (Filter.Brief):
// decoding it was half of an attempts page's time.
var briefColumns = strings.Replace(attemptColumns, "timeline_json", "'[]'", 1)

// ListAttempts returns the attempts matching f, newest start first (ties
// broken by id, attempts with an unknown start last), each with its
// findings, evidence, context and timeline. f.Cursor starts the list after
// (or, Backward, ends it before) the attempt it names; f.Limit caps it.
func (d *DB) ListAttempts(ctx context.Context, f Filter) ([]*domain.Attempt, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: list attempts: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	where, args, err := filterWhere(ctx, tx, f)
	if err != nil {
		return nil, fmt.Errorf("store: list attempts: %w", err)
	}
	out, err := d.listPage(ctx, tx, f, where, args)
	if err != nil {
		return nil, fmt.Errorf("store: list attempts: %w", err)
	}
	return out, nil
}

// listPage reads the attempts of where (from filterWhere) in orderDesc,
// from f.Cursor on, at most f.Limit, with their child rows.
func (d *DB) listPage(ctx context.Context, tx *sql.Tx, f Filter, where string, args []any) ([]*domain.Attempt, error) {
	order := orderDesc
	if c := f.Cursor; c != nil {
		cond, cargs := afterKey(c)
		if c.Backward {
			cond, cargs = beforeKey(c)
			order = orderAsc
		}
		where = and(where, cond)
		args = append(append([]any(nil), args...), cargs...)
	}
	cols := attemptColumns
	if f.Brief {
		cols = briefColumns
	}
	q := "SELECT " + cols + " FROM attempts" + where + order
	if f.Limit > 0 {
		// The page's ids first, then their rows: when the filter's index
		// is not in page order (verdict, unit, ...), SQLite sorts only
		// the keys of the matching attempts instead of their whole rows
		// (6,150 matches: 65 ms -> 12 ms).
		q = "SELECT " + cols + " FROM attempts WHERE id IN (SELECT id FROM attempts" + where + order + " LIMIT ?)" + order
		args = append(args, f.Limit)
	}
	out, notes, err := queryAttempts(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	if order == orderAsc {
		slices.Reverse(out)
	}
	if err := loadChildren(ctx, tx, d.chunkReader(ctx, tx), out, notes, f.Brief); err != nil {
		return nil, err
	}
	return out, nil
}

// PageAttempts returns one page of the attempts matching f, in
// ListAttempts' order: at most f.Limit attempts (0: all) after f.Cursor
// (before it when Backward), the total that match on all pages, how many
// come before the page, and the cursors of the next and previous pages.
// Everything is read from one snapshot.
func (d *DB) PageAttempts(ctx context.Context, f Filter) (domain.AttemptPage, error) {
	var p domain.AttemptPage
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return p, fmt.Errorf("store: page attempts: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	where, args, err := filterWhere(ctx, tx, f)
	if err != nil {
		return p, fmt.Errorf("store: page attempts: %w", err)
	}
	count := func(cond string, cargs []any) (int, error) {
		w, a := where, args
		if cond != "" {
			w, a = and(where, cond), append(append([]any(nil), args...), cargs...)
		}
		var n int
		err := tx.QueryRowContext(ctx, "SELECT count(*) FROM attempts"+w, a...).Scan(&n)
		return n, err
	}
	if p.Total, err = count("", nil); err != nil {
		return p, fmt.Errorf("store: page attempts: count: %w", err)
	}
	if p.Attempts, err = d.listPage(ctx, tx, f, where, args); err != nil {
		return p, fmt.Errorf("store: page attempts: %w", err)
	}
	// Before: the attempts ahead of the page's first; for an empty page,
	// those ahead of where it would start.
	switch {
	case len(p.Attempts) > 0:
		cond, cargs := beforeKey(domain.CursorOf(p.Attempts[0]))
		p.Before, err = count(cond, cargs)
	case f.Cursor != nil && !f.Cursor.Backward:
		cond, cargs := afterKey(f.Cursor)
		var after int
		after, err = count(cond, cargs)
		p.Before = p.Total - after
	}
	if err != nil {
		return p, fmt.Errorf("store: page attempts: count: %w", err)
	}
	if n := len(p.Attempts); n > 0 {
		if p.Before > 0 {
			p.Prev = domain.CursorOf(p.Attempts[0])
			p.Prev.Backward = true
		}
		if p.Before+n < p.Total {
			p.Next = domain.CursorOf(p.Attempts[n-1])
		}
	} else if f.Cursor != nil && p.Total > 0 {
		// Past either end: offer the way back.
		c := *f.Cursor
		c.Backward = !c.Backward
		if c.Backward {
			p.Prev = &c
		} else {
			p.Next = &c
		}
	}
	return p, nil
}

// OpenAttempts returns the journal attempts (those with a unit invocation)
// that have not ended, oldest start first, in full: what a replay of the
// next part of a journal continues (tracker.Resume).
func (d *DB) OpenAttempts(ctx context.Context) ([]*domain.Attempt, error) {
	out, err := d.listFull(ctx, false, "SELECT "+attemptColumns+` FROM attempts
		WHERE ended_at IS NULL AND invocation_id != '' AND unit != '' ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: open attempts: %w", err)
	}
	return out, nil
}

// DropPartial returns the attempts of a replay less those it saw only the
// end of, which the database holds from an earlier start: an input that
// overlaps an earlier one (daily exports with some hours in common) must
// not overwrite an attempt with its tail. A container attempt without a
// unit whose container the database knows under another attempt is such a
// tail too (the podman events that named its unit came before the input).
// dropped counts them.
func (d *DB) DropPartial(ctx context.Context, attempts []*domain.Attempt) (kept []*domain.Attempt, dropped int, err error) {
	starts := map[string]time.Time{}
	owner := map[string]string{} // container id → stored attempt id
	const chunk = 400
	for i := 0; i < len(attempts); i += chunk {
		part := attempts[i:min(i+chunk, len(attempts))]
		var ids, cids []any
		for _, a := range part {
			ids = append(ids, a.ID)
			if a.ContainerID != "" {
				cids = append(cids, a.ContainerID)
			}
		}
		q := `SELECT id, started_at_text, container_id FROM attempts WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		if len(cids) > 0 {
			q += ` OR container_id IN (?` + strings.Repeat(", ?", len(cids)-1) + `)`
		}
		rows, err := d.db.QueryContext(ctx, q, append(ids, cids...)...)
		if err != nil {
			return nil, 0, fmt.Errorf("store: stored attempts: %w", err)
		}
		for rows.Next() {
			var id, started, cid string
			if err := rows.Scan(&id, &started, &cid); err != nil {
				rows.Close()
				return nil, 0, fmt.Errorf("store: stored attempts: %w", err)
			}
			if t, err := parseTimeText(started); err == nil {
				starts[id] = t
			}
			if cid != "" {
				owner[cid] = id
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("store: stored attempts: %w", err)
		}
	}
	for _, a := range attempts {
		s, ok := starts[a.ID]
		tail := ok && !s.IsZero() && (a.StartedAt.IsZero() || s.Before(a.StartedAt))
		if o := owner[a.ContainerID]; a.InvocationID == "" && a.ContainerID != "" && o != "" && o != a.ID {
			tail = true
		}
		if tail {
			dropped++
			continue
		}
		kept = append(kept, a)
	}
	return kept, dropped, nil
}

// HostZones returns each host's UTC offset as its latest stored attempt's
// start shows it (the tracker's learned offset; UTC when it learned none).
func (d *DB) HostZones(ctx context.Context) (map[string]*time.Location, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT host, started_at_text FROM attempts
		WHERE started_at IS NOT NULL AND host != '' ORDER BY started_at`)
	if err != nil {
		return nil, fmt.Errorf("store: host zones: %w", err)
	}
	defer rows.Close()
	out := map[string]*time.Location{}
	for rows.Next() {
		var host, text string
		if err := rows.Scan(&host, &text); err != nil {
			return nil, fmt.Errorf("store: host zones: %w", err)
		}
		if t, err := parseTimeText(text); err == nil && !t.IsZero() {
			out[host] = t.Location()
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: host zones: %w", err)
	}
	return out, nil
}

// listFull runs q (a SELECT of attemptColumns) and loads the child rows of
// its attempts (brief: without evidence and context lines), all in one read
// transaction: the attempts and their child rows come from the same
// snapshot even while ingest commits a batch.
func (d *DB) listFull(ctx context.Context, brief bool, q string, args ...any) ([]*domain.Attempt, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	out, notes, err := queryAttempts(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	if err := loadChildren(ctx, tx, d.chunkReader(ctx, tx), out, notes, brief); err != nil {
		return nil, err
	}
	return out, nil
}

// GetAttempt returns one attempt with its findings, evidence, context and
// timeline, or ErrNotFound.
func (d *DB) GetAttempt(ctx context.Context, id string) (*domain.Attempt, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: get attempt %s: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	out, notes, err := queryAttempts(ctx, tx, "SELECT "+attemptColumns+" FROM attempts WHERE id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("store: get attempt %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	if err := loadChildren(ctx, tx, d.chunkReader(ctx, tx), out, notes, false); err != nil {
		return nil, fmt.Errorf("store: get attempt %s: %w", id, err)
	}
	return out[0], nil
}

// queryAttempts runs q, a SELECT of attemptColumns. notes maps the id of
// each attempt whose note is stored with one of its findings to that
// finding's seq (loadChildren puts the note back).
func queryAttempts(ctx context.Context, tx *sql.Tx, q string, args ...any) (out []*domain.Attempt, notes map[string]int, err error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out = []*domain.Attempt{}
	notes = map[string]int{}
	for rows.Next() {
		var (
			a                                       domain.Attempt
			started, ended, ready, phase, verdict   string
			lastLine                                string
			exitStatus, restartBefore, restartAfter sql.NullInt64
			shapeJSON                               string
			timelineJSON                            any
			noteFinding                             sql.NullInt64
		)
		if err := rows.Scan(&a.ID, &a.Host, &a.Unit, &a.InvocationID, &a.Container, &a.ContainerID,
			&a.Engine, &a.EngineVersion, &started, &ended, &ready, &phase, &verdict, &a.Rule, &a.Note,
			&exitStatus, &a.ExitCode, &a.EndedBy, &a.StopRequested, &restartBefore, &restartAfter,
			&a.Fingerprint, &a.Lines, &lastLine, &shapeJSON, &timelineJSON, &noteFinding); err != nil {
			return nil, nil, err
		}
		if noteFinding.Valid {
			notes[a.ID] = int(noteFinding.Int64)
		}
		a.Phase, a.Verdict = domain.Phase(phase), domain.Verdict(verdict)
		a.ExitStatus, a.RestartCounter, a.RestartCounterAfter = intPtr(exitStatus), intPtr(restartBefore), intPtr(restartAfter)
		if a.StartedAt, err = parseTimeText(started); err != nil {
			return nil, nil, fmt.Errorf("attempt %s started_at: %w", a.ID, err)
		}
		if a.EndedAt, err = parseTimeText(ended); err != nil {
			return nil, nil, fmt.Errorf("attempt %s ended_at: %w", a.ID, err)
		}
		if a.ReadyAt, err = parseTimeText(ready); err != nil {
			return nil, nil, fmt.Errorf("attempt %s ready_at: %w", a.ID, err)
		}
		if a.LastLineAt, err = parseTimeText(lastLine); err != nil {
			return nil, nil, fmt.Errorf("attempt %s last_line_at: %w", a.ID, err)
		}
		if a.Shape, err = decodeShape(shapeJSON); err != nil {
			return nil, nil, fmt.Errorf("attempt %s shape_json: %w", a.ID, err)
		}
		if a.Timeline, err = decodeTimeline(timelineJSON); err != nil {
			return nil, nil, fmt.Errorf("attempt %s timeline_json: %w", a.ID, err)
		}
		out = append(out, &a)
	}
	return out, notes, rows.Err()
}

// idChunk bounds the ids bound in one IN (...) list, well below SQLite's
// limit on host parameters.
const idChunk = 500

// loadChildren fills the findings, evidence, context and (unless brief)
// timeline of the attempts, and the notes stored with a finding (notes,
// from queryAttempts).
func loadChildren(ctx context.Context, tx *sql.Tx, cr *chunkReader, attempts []*domain.Attempt, notes map[string]int, brief bool) error {
	byID := make(map[string]*domain.Attempt, len(attempts))
	ids := make([]any, 0, len(attempts))
	for _, a := range attempts {
		byID[a.ID] = a
		ids = append(ids, a.ID)
	}
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(start+idChunk, len(ids))]
		in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + ")"
		refs, err := loadFindings(ctx, tx, byID, notes, in, chunk, brief)
		if err != nil {
			return err
		}
		if brief {
			continue
		}
		rows, err := loadLines(ctx, tx, cr, byID, in, chunk)
		if err != nil {
			return err
		}
		for _, r := range refs {
			e, ok := rows[r.row]
			if !ok {
				return fmt.Errorf("finding %s of %s: evidence row %d is missing", r.a.Findings[r.fi].ID, r.row.attemptID, r.row.seq)
			}
			r.a.Findings[r.fi].Evidence[r.i] = e
		}
	}
	return nil
}

// wallLayout is the wall-clock prefix of a stored RFC 3339 time.
const wallLayout = "2006-01-02T15:04:05"

// evidenceRow names an evidence row: a finding's evidence_json refers to
// the lines it cites by it (see evidenceRefs).
type evidenceRow struct {
	attemptID string
	seq       int
}

// evidenceRef is evidence line i of finding fi of a, still to be read from
// row.
type evidenceRef struct {
	a     *domain.Attempt
	fi, i int
	row   evidenceRow
}

// loadFindings reads the findings of the attempts in ids; the evidence
// lines they cite by row come back as refs, to be filled from the rows.
// An attempt in notes gets the note of its finding of that seq; one
// whose finding is missing is an error (it would come back without its
// note).
func loadFindings(ctx context.Context, tx *sql.Tx, byID map[string]*domain.Attempt, notes map[string]int, in string, ids []any, brief bool) ([]evidenceRef, error) {
	evidence := "evidence_json"
	if brief {
		evidence = "'[]'"
	}
	var refs []evidenceRef
	noted := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT attempt_id, seq, finding_id, rule, severity, message_id, phase, time,
		note, captures_json, `+evidence+`, matched FROM findings WHERE attempt_id IN `+in+` ORDER BY attempt_id, seq`, ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			attemptID, severity, phase, when, capJSON, evJSON string
			fseq                                              int
			f                                                 domain.Finding
		)
		if err := rows.Scan(&attemptID, &fseq, &f.ID, &f.Rule, &severity, &f.MessageID, &phase, &when,
			&f.Note, &capJSON, &evJSON, &f.Match); err != nil {
			return nil, err
		}
		f.Severity, f.Phase = domain.Severity(severity), domain.Phase(phase)
		if f.Time, err = parseTimeText(when); err != nil {
			return nil, fmt.Errorf("finding %s of %s: time: %w", f.ID, attemptID, err)
		}
		if err := json.Unmarshal([]byte(capJSON), &f.Captures); err != nil {
			return nil, fmt.Errorf("finding %s of %s: captures: %w", f.ID, attemptID, err)
		}
		if len(f.Captures) == 0 {
			f.Captures = nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(evJSON), &items); err != nil {
			return nil, fmt.Errorf("finding %s of %s: evidence: %w", f.ID, attemptID, err)
		}
		var seqs []int // per line: its row, -1 when stored in full
		for _, it := range items {
			var e domain.Evidence
			seq := -1
			if len(it) > 0 && it[0] == '{' {
				if err := json.Unmarshal(it, &e); err != nil {
					return nil, fmt.Errorf("finding %s of %s: evidence: %w", f.ID, attemptID, err)
				}
			} else if err := json.Unmarshal(it, &seq); err != nil || seq < 0 {
				return nil, fmt.Errorf("finding %s of %s: evidence: bad row %s", f.ID, attemptID, it)
			}
			f.Evidence = append(f.Evidence, e)
			seqs = append(seqs, seq)
		}
		a := byID[attemptID]
		if a == nil {
			continue
		}
		if k, ok := notes[attemptID]; ok && k == fseq {
			a.Note = f.Note
			noted[attemptID] = true
		}
		a.Findings = append(a.Findings, f)
		for k, seq := range seqs {
			if seq >= 0 {
				refs = append(refs, evidenceRef{a: a, fi: len(a.Findings) - 1, i: k, row: evidenceRow{attemptID, seq}})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		id, _ := id.(string)
		if k, ok := notes[id]; ok && !noted[id] {
			return nil, fmt.Errorf("attempt %s: finding %d, which holds its note, is missing", id, k)
		}
	}
	return refs, nil
}

// loadLines reads the evidence and context lines of the attempts in ids,
// and their timelines: from attempt_lines (lineblob.go), or, for attempts
// stored before migration 0011, from evidence rows (a row per line, in
// either list or both) and timeline_json. Evidence lines come with their
// roles (none for lines stored without); it returns the evidence lines by
// attempt and evidence seq, without roles, for the findings' refs. The text
// of a line or mark stored as a reference to its attempt's log is read
// from there.
func loadLines(ctx context.Context, tx *sql.Tx, cr *chunkReader, byID map[string]*domain.Attempt, in string, ids []any) (map[evidenceRow]domain.Evidence, error) {
	type line struct {
		a             *domain.Attempt
		evSeq, ctxSeq sql.NullInt64
		logSeq        sql.NullInt64
		e             domain.Evidence
		role          sql.NullString
	}
	var lines []line
	fromLog := map[string][]int{} // attempt id → indexes in lines of lines whose text is in its log
	type markRef struct{ i, seq int }
	marksFromLog := map[string][]markRef{} // attempt id → its marks whose text is in its log
	rows, err := tx.QueryContext(ctx, `SELECT attempt_id, evidence_seq, context_seq, time, cursor, message, log_seq, role FROM evidence
		WHERE attempt_id IN `+in+` ORDER BY attempt_id, seq`, ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			attemptID, when string
			l               line
			message         sql.NullString
		)
		if err := rows.Scan(&attemptID, &l.evSeq, &l.ctxSeq, &when, &l.e.Cursor, &message, &l.logSeq, &l.role); err != nil {
			return nil, err
		}
		if l.e.Time, err = parseTimeText(when); err != nil {
			return nil, fmt.Errorf("line of %s: time: %w", attemptID, err)
		}
		if l.a = byID[attemptID]; l.a == nil {
			continue
		}
		l.e.Message = message.String
		if l.logSeq.Valid {
			fromLog[attemptID] = append(fromLog[attemptID], len(lines))
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()

	blobs, err := tx.QueryContext(ctx, `SELECT attempt_id, data FROM attempt_lines WHERE attempt_id IN `+in, ids...)
	if err != nil {
		return nil, err
	}
	defer blobs.Close()
	for blobs.Next() {
		var (
			attemptID string
			data      []byte
		)
		if err := blobs.Scan(&attemptID, &data); err != nil {
			return nil, err
		}
		a := byID[attemptID]
		if a == nil {
			continue
		}
		recs, marks, err := decodeLines(data)
		if err != nil {
			return nil, fmt.Errorf("lines of %s: %w", attemptID, err)
		}
		for _, r := range recs {
			l := line{a: a, evSeq: r.evSeq, ctxSeq: r.ctxSeq, logSeq: r.logSeq, role: r.role,
				e: domain.Evidence{Cursor: r.cursor, Message: r.message}}
			if l.e.Time, err = parseTimeText(r.time); err != nil {
				return nil, fmt.Errorf("line of %s: time: %w", attemptID, err)
			}
			if l.logSeq.Valid {
				fromLog[attemptID] = append(fromLog[attemptID], len(lines))
			}
			lines = append(lines, l)
		}
		a.Timeline = make([]domain.PhaseMark, len(marks))
		for i, m := range marks {
			pm := domain.PhaseMark{Phase: domain.Phase(m.phase), Cursor: m.cursor, Message: m.message}
			if pm.Time, err = parseTimeText(m.time); err != nil {
				return nil, fmt.Errorf("timeline of %s: time: %w", attemptID, err)
			}
			if m.logSeq.Valid {
				marksFromLog[attemptID] = append(marksFromLog[attemptID], markRef{i, int(m.logSeq.Int64)})
			}
			a.Timeline[i] = pm
		}
	}
	if err := blobs.Err(); err != nil {
		return nil, err
	}
	blobs.Close()

	withRefs := make(map[string]bool, len(fromLog)+len(marksFromLog))
	for id := range fromLog {
		withRefs[id] = true
	}
	for id := range marksFromLog {
		withRefs[id] = true
	}
	for id := range withRefs {
		a, idx, marks := byID[id], fromLog[id], marksFromLog[id]
		want := make(map[int]string, len(idx)+len(marks))
		for _, i := range idx {
			want[int(lines[i].logSeq.Int64)] = ""
		}
		for _, m := range marks {
			want[m.seq] = ""
		}
		if err := logMessages(ctx, tx, cr, id, want); err != nil {
			return nil, fmt.Errorf("lines of %s: %w", id, err)
		}
		for _, i := range idx {
			lines[i].e.Message = want[int(lines[i].logSeq.Int64)]
		}
		for _, m := range marks {
			a.Timeline[m.i].Message = want[m.seq]
		}
	}

	type placed struct {
		seq int64
		e   domain.Evidence
	}
	type lists struct{ evidence, context []placed }
	byAttempt := map[*domain.Attempt]*lists{}
	byRow := map[evidenceRow]domain.Evidence{}
	for _, l := range lines {
		ls := byAttempt[l.a]
		if ls == nil {
			ls = &lists{}
			byAttempt[l.a] = ls
		}
		e := l.e
		if l.ctxSeq.Valid {
			ls.context = append(ls.context, placed{l.ctxSeq.Int64, e})
		}
		if l.evSeq.Valid {
			byRow[evidenceRow{l.a.ID, int(l.evSeq.Int64)}] = e
			if r, err := domain.ParseEvidenceRole(l.role.String); err == nil {
				e.Role = r // a name this version does not know: placed as without a role
			}
			ls.evidence = append(ls.evidence, placed{l.evSeq.Int64, e})
		}
	}
	bySeq := func(x, y placed) int { return cmp.Compare(x.seq, y.seq) }
	for a, l := range byAttempt {
		slices.SortFunc(l.evidence, bySeq)
		slices.SortFunc(l.context, bySeq)
		for _, p := range l.evidence {
			a.Evidence = append(a.Evidence, p.e)
		}
		for _, p := range l.context {
			a.Context = append(a.Context, p.e)
		}
	}
	return byRow, nil
}

// logMessages fills want (log seq → text) from attempt id's log, reading
// only the chunks that hold a wanted line. A wanted line the log does not
// hold is an error: the row would come back without its text.
func logMessages(ctx context.Context, tx *sql.Tx, cr *chunkReader, id string, want map[int]string) error {
	lo, hi := -1, -1
	for seq := range want {
		if lo < 0 || seq < lo {
			lo = seq
		}
		hi = max(hi, seq)
	}
	rows, err := tx.QueryContext(ctx, `SELECT data, codec FROM attempt_log WHERE attempt_id = ? AND first_seq <= ? AND first_seq + lines > ?
		ORDER BY first_seq`, id, hi, lo)
	if err != nil {
		return err
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var data []byte
		var codec int
		if err := rows.Scan(&data, &codec); err != nil {
			return err
		}
		n, err := chunkMessages(cr, data, codec, want)
		if err != nil {
			return err
		}
		found += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if found < len(want) {
		return fmt.Errorf("%d of %d log lines its evidence refers to are missing", len(want)-found, len(want))
	}
	return nil
}

// Facets returns the distinct non-empty hosts, units, engines and verdicts
// of the stored attempts, each sorted, for the UI's filter boxes.
func (d *DB) Facets(ctx context.Context) (hosts, units, engines, verdicts []string, err error) {
	lists := []*[]string{&hosts, &units, &engines, &verdicts}
	for i, col := range []string{"host", "unit", "engine", "verdict"} {
		// col comes from the fixed list above, never from user input.
		vals, err := d.distinct(ctx, col)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("store: facets: %s: %w", col, err)
		}
		*lists[i] = vals
	}
	return hosts, units, engines, verdicts, nil
}

// distinct returns col's non-empty values in order. It walks col's index
// from value to next value (a loose index scan: one seek per distinct
// value), so a list page's facets cost the same with 10k or 10M attempts.
func (d *DB) distinct(ctx context.Context, col string) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, "WITH RECURSIVE v(x) AS (SELECT min("+col+") FROM attempts WHERE "+col+" > ''"+
		" UNION ALL SELECT (SELECT min("+col+") FROM attempts WHERE "+col+" > v.x) FROM v WHERE v.x IS NOT NULL)"+
		" SELECT x FROM v WHERE x IS NOT NULL")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// AttemptLog returns the lines kept of attempt id's own log, in order, with
// the number of lines it had; times are in loc (the attempt's zone; nil:
// UTC). An attempt stored without its log has none (Total 0); an unknown
// id is ErrNotFound.
func (d *DB) AttemptLog(ctx context.Context, id string, loc *time.Location) (*domain.AttemptLog, error) {
	if loc == nil {
		loc = time.UTC
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: log of %s: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	out := &domain.AttemptLog{}
	if err := tx.QueryRowContext(ctx, `SELECT log_lines FROM attempts WHERE id = ?`, id).Scan(&out.Total); errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("store: log of %s: %w", id, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT data, codec FROM attempt_log WHERE attempt_id = ? ORDER BY first_seq`, id)
	if err != nil {
		return nil, fmt.Errorf("store: log of %s: %w", id, err)
	}
	defer rows.Close()
	cr := d.chunkReader(ctx, tx)
	for rows.Next() {
		var data []byte
		var codec int
		if err := rows.Scan(&data, &codec); err != nil {
			return nil, fmt.Errorf("store: log of %s: %w", id, err)
		}
		if out.Lines, err = decodeLogChunk(cr, data, codec, loc, out.Lines); err != nil {
			return nil, fmt.Errorf("store: log of %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: log of %s: %w", id, err)
	}
	return out, nil
}
