package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/migrations"
	"github.com/llmfleet/analyzer/store/storetest"
)

// TestLinesByReferenceMigration opens a database at schema version 10
// holding a sample attempt as that version stored it (a row per line, one
// of them a reference into the log; the timeline as an S2 blob; the log as
// an S2 chunk in a WITHOUT ROWID table): after 0011 it loads the same, log
// included; its next save moves its lines and timeline into attempt_lines,
// leaves no evidence row, adds new log lines as zstd chunks after the S2
// one, and it still loads the same.
func TestLinesByReferenceMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v10.db")
	if ms, err := migrations.List(); err != nil || len(ms) < 11 || ms[10].Name != "0011_lines_by_reference.sql" {
		t.Fatalf("migration 11 is not 0011_lines_by_reference.sql (%v)", err)
	}
	raw := openAtVersion(t, path, 10)
	a := storetest.Attempts()[0]
	a.Evidence[0].Role = domain.RoleFinding
	logLines := []domain.LogLine{
		{Seq: 0, Time: a.StartedAt, Message: "first line"},
		{Seq: 1, Time: a.Evidence[0].Time, Message: a.Evidence[0].Message},
	}
	a.Log = &domain.AttemptLog{Lines: logLines, Total: 2}

	timeline, err := json.Marshal(a.Timeline)
	if err != nil {
		t.Fatal(err)
	}
	var chunk []byte
	for _, l := range logLines {
		chunk = binary.AppendUvarint(chunk, uint64(l.Seq))
		chunk = binary.AppendVarint(chunk, l.Time.UnixMicro())
		chunk = binary.AppendUvarint(chunk, uint64(len(l.Message)))
		chunk = append(chunk, l.Message...)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO attempts (id, host, unit, invocation_id, engine, started_at, started_at_text, ended_at, ended_at_text,
		phase, verdict, rule, note, timeline_json, log_lines, log_last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, 1)`,
		a.ID, a.Host, a.Unit, a.InvocationID, a.Engine, timeMicros(a.StartedAt), timeText(a.StartedAt), timeMicros(a.EndedAt),
		timeText(a.EndedAt), string(a.Phase), string(a.Verdict), a.Rule, a.Note, s2.Encode(nil, timeline))
	exec(`INSERT INTO attempt_log (attempt_id, first_seq, lines, data) VALUES (?, 0, 2, ?)`, a.ID, s2.Encode(nil, chunk))
	insertOldFindings(t, raw, a)
	row := 0
	for i, e := range a.Evidence {
		var message, logSeq, role any = e.Message, nil, nil
		if i == 0 {
			message, logSeq = nil, 1 // the text is log line 1's
		}
		if e.Role != 0 {
			role = e.Role.String()
		}
		exec(`INSERT INTO evidence (attempt_id, seq, evidence_seq, role, time, time_us, cursor, message, log_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, row, i, role, timeText(e.Time), timeMicros(e.Time), e.Cursor, message, logSeq)
		row++
	}
	for i, e := range a.Context {
		exec(`INSERT INTO evidence (attempt_id, seq, context_seq, time, time_us, cursor, message)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, a.ID, row, i, timeText(e.Time), timeMicros(e.Time), e.Cursor, e.Message)
		row++
	}
	raw.Close()

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	type view struct {
		Evidence, Context []domain.Evidence
		Roles             []domain.EvidenceRole
		Findings          []domain.Finding
		Timeline          []domain.PhaseMark
		Note              string
		Log               []domain.LogLine
	}
	render := func(g *domain.Attempt, log []domain.LogLine) string {
		v := view{g.Evidence, g.Context, nil, g.Findings, g.Timeline, g.Note, log}
		for _, e := range g.Evidence {
			v.Roles = append(v.Roles, e.Role)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(when string, log []domain.LogLine) {
		t.Helper()
		got, err := db.GetAttempt(ctx, a.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		l, err := db.AttemptLog(ctx, a.ID, a.StartedAt.Location())
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if g, w := render(got, l.Lines), render(a, log); g != w {
			t.Errorf("%s:\ngot  %s\nwant %s", when, g, w)
		}
	}
	check("migrated", logLines)
	if n := count(t, db, `SELECT count(*) FROM attempt_log WHERE codec = 0`); n != 1 {
		t.Errorf("%d S2 chunks after the migration, want 1", n)
	}

	// Its next save: one more log line, which the last evidence line cites.
	last := a.Evidence[len(a.Evidence)-1]
	a.Log = &domain.AttemptLog{Lines: append(logLines, domain.LogLine{Seq: 2, Time: last.Time, Message: last.Message}), Total: 3}
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	check("saved again", a.Log.Lines)
	if n := count(t, db, `SELECT count(*) FROM evidence`); n != 0 {
		t.Errorf("%d evidence rows after a save, want 0", n)
	}
	if n := count(t, db, `SELECT count(*) FROM attempts WHERE timeline_json != '[]'`); n != 0 {
		t.Errorf("%d attempts keep a timeline_json after a save, want 0", n)
	}
	if n := count(t, db, `SELECT count(*) FROM attempt_log WHERE codec = 2 AND first_seq = 2`); n != 1 {
		t.Errorf("%d zstd chunks from line 2, want 1", n)
	}
	refs := map[int64]bool{}
	for _, l := range storedLines(t, db, a.ID) {
		if l.logSeq.Valid {
			refs[l.logSeq.Int64] = true
		}
	}
	if !refs[1] || !refs[2] {
		t.Errorf("lines refer to log lines %v, want 1 (in the S2 chunk) and 2 (in the new one)", refs)
	}
}

// TestNoteStoredOnce: an attempt's note that is a finding's note is stored
// with the finding only, and loads back in full and in brief lists; a note
// no finding has is stored with the attempt; a finding missing under its
// note_finding is an error, not an attempt without its note.
func TestNoteStoredOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	as := storetest.Attempts()
	shared, own := as[0], as[1]
	shared.Note = shared.Findings[1].Note // not the first finding's
	if err := db.SaveAttempts(ctx, []*domain.Attempt{shared, own}, nil); err != nil {
		t.Fatal(err)
	}
	var note string
	var nf sql.NullInt64
	if err := db.db.QueryRow(`SELECT note, note_finding FROM attempts WHERE id = ?`, shared.ID).Scan(&note, &nf); err != nil {
		t.Fatal(err)
	}
	if note != "" || !nf.Valid || nf.Int64 != 1 {
		t.Errorf("shared note stored as %q, finding %+v; want '' and finding 1", note, nf)
	}
	if err := db.db.QueryRow(`SELECT note, note_finding FROM attempts WHERE id = ?`, own.ID).Scan(&note, &nf); err != nil {
		t.Fatal(err)
	}
	if note != own.Note || nf.Valid {
		t.Errorf("own note stored as %q, finding %+v; want %q and NULL", note, nf, own.Note)
	}
	got, err := db.GetAttempt(ctx, shared.ID)
	if err != nil || got.Note != shared.Note {
		t.Fatalf("GetAttempt note = %q (%v), want %q", got.Note, err, shared.Note)
	}
	page, err := db.PageAttempts(ctx, Filter{Brief: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range page.Attempts {
		for _, w := range []*domain.Attempt{shared, own} {
			if g.ID == w.ID && g.Note != w.Note {
				t.Errorf("brief %s note = %q, want %q", g.ID, g.Note, w.Note)
			}
		}
	}
	if _, err := db.db.Exec(`DELETE FROM findings WHERE attempt_id = ? AND seq = 1`, shared.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetAttempt(ctx, shared.ID); err == nil {
		t.Error("GetAttempt with the note's finding gone: no error")
	}
}

// TestNewDatabasePageSize: a database Open creates has pageSize pages; one
// that exists keeps its own.
func TestNewDatabasePageSize(t *testing.T) {
	db, _ := openTemp(t)
	if n := count(t, db, `PRAGMA page_size`); n != pageSize {
		t.Errorf("new database: page size %d, want %d", n, pageSize)
	}
	if mode := ""; db.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode) != nil || mode != "wal" {
		t.Errorf("new database: journal mode %q, want wal", mode)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	raw := openAtVersion(t, path, 1)
	raw.Close()
	old, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if n := count(t, old, `PRAGMA page_size`); n != 4096 {
		t.Errorf("existing database: page size %d, want its 4096", n)
	}
}
