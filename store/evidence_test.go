package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/migrations"
	"github.com/llmfleet/analyzer/store/storetest"
)

// TestRepeatedLinesStoredOnce: a line repeated in an attempt's evidence (two
// findings citing it) or context is stored once, in first-seen position.
func TestRepeatedLinesStoredOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0]
	if len(a.Evidence) < 2 || len(a.Context) < 2 {
		t.Fatalf("sample attempt has %d evidence and %d context lines, want >= 2", len(a.Evidence), len(a.Context))
	}
	a.Evidence = append(a.Evidence, a.Evidence[0], a.Evidence[1])
	a.Context = append(a.Context, a.Context[1])
	// Same cursor, other text: a different line (a reassembled piece).
	other := a.Context[0]
	other.Message += " (continued)"
	a.Context = append(a.Context, other)
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetAttempt(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n, want := len(got.Evidence), len(a.Evidence)-2; n != want {
		t.Errorf("evidence lines = %d, want %d", n, want)
	}
	if n, want := len(got.Context), len(a.Context)-1; n != want {
		t.Errorf("context lines = %d, want %d", n, want)
	}
	if last := got.Context[len(got.Context)-1]; last.Message != other.Message {
		t.Errorf("last context line = %q, want %q", last.Message, other.Message)
	}
}

// TestEvidenceMigrationKeepsRows opens a database at schema version 2 that
// holds evidence rows and checks that 0003 carries every row over.
func TestEvidenceMigrationKeepsRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db := migratedFrom(t, path, 2,
		`INSERT INTO attempts (id, host) VALUES ('a1', 'h')`,
		`INSERT INTO evidence VALUES ('a1', 0, 'evidence', 'oom_graph_capture', '2026-10-01T21:40:00-07:00', 1, 's=1', 'CUDA out of memory')`,
		`INSERT INTO evidence VALUES ('a1', 0, 'context', NULL, '', NULL, 's=0', 'Capturing CUDA graphs')`,
		`INSERT INTO evidence VALUES ('a1', 1, 'context', NULL, '', NULL, 's=1', 'CUDA out of memory')`)
	a, err := db.GetAttempt(context.Background(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Evidence) != 1 || a.Evidence[0].Message != "CUDA out of memory" || a.Evidence[0].Cursor != "s=1" {
		t.Errorf("evidence after migration = %+v", a.Evidence)
	}
	if len(a.Context) != 2 || a.Context[0].Message != "Capturing CUDA graphs" || a.Context[1].Message != "CUDA out of memory" {
		t.Errorf("context after migration = %+v", a.Context)
	}
	if n := count(t, db, `SELECT count(*) FROM evidence WHERE finding_id = 'oom_graph_capture'`); n != 1 {
		t.Errorf("evidence rows linked to their finding = %d, want 1", n)
	}
	// Deleting the attempt still takes its lines along (the foreign key survived).
	if _, err := db.db.Exec(`DELETE FROM attempts WHERE id = 'a1'`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM evidence`); n != 0 {
		t.Errorf("%d evidence rows outlived their attempt", n)
	}
}

// TestReplayContinuation covers what a replay reads before and after it
// analyzes: the open journal attempts (with stop_requested), each host's
// offset, and the attempts of which the new input holds only the end.
func TestReplayContinuation(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	as := storetest.Attempts()
	var open *domain.Attempt
	for _, a := range as {
		if a.ID == storetest.IDReady {
			a.EndedAt, a.EndedBy, a.StopRequested = time.Time{}, "", true
			open = a
		}
	}
	if err := db.SaveAttempts(ctx, as, nil); err != nil {
		t.Fatal(err)
	}
	got, err := db.OpenAttempts(ctx)
	if err != nil || len(got) != 1 || got[0].ID != open.ID || !got[0].StopRequested || len(got[0].Timeline) == 0 {
		t.Fatalf("open attempts: %+v, %v", got, err)
	}
	zones, err := db.HostZones(ctx)
	if err != nil || len(zones) == 0 {
		t.Fatalf("host zones: %v, %v", zones, err)
	}
	for _, a := range as {
		if _, off := a.StartedAt.Zone(); zones[a.Host] == nil || a.StartedAt.In(zones[a.Host]).Format(time.RFC3339) != a.StartedAt.Format(time.RFC3339) {
			t.Errorf("host %s: zone %v, attempt offset %d", a.Host, zones[a.Host], off)
		}
	}

	stored := as[0]
	tail := *stored
	tail.StartedAt = stored.StartedAt.Add(time.Minute) // the input began after the attempt did
	same := *stored                                    // the input holds it from its start
	orphan := &domain.Attempt{ID: "h/container/x", Host: stored.Host, ContainerID: "c0ffee"}
	fresh := &domain.Attempt{ID: "new", Host: "h", StartedAt: stored.StartedAt}
	withContainer := *as[1]
	withContainer.ContainerID = "c0ffee"
	if err := db.SaveAttempts(ctx, []*domain.Attempt{&withContainer}, nil); err != nil {
		t.Fatal(err)
	}
	kept, dropped, err := db.DropPartial(ctx, []*domain.Attempt{&tail, orphan, fresh})
	if err != nil || dropped != 2 || len(kept) != 1 || kept[0].ID != "new" {
		t.Errorf("tail and orphan container: kept %d (dropped %d), %v", len(kept), dropped, err)
	}
	if kept, dropped, err := db.DropPartial(ctx, []*domain.Attempt{&same}); err != nil || dropped != 0 || len(kept) != 1 {
		t.Errorf("same start: kept %d, dropped %d, %v", len(kept), dropped, err)
	}
}

// TestBriefListLeavesOutLines: a brief list has the attempts' findings
// (ids, captures) but none of the evidence and context lines.
func TestBriefListLeavesOutLines(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	if err := db.SaveAttempts(ctx, storetest.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	full, err := db.ListAttempts(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	brief, err := db.ListAttempts(ctx, Filter{Brief: true})
	if err != nil || len(brief) != len(full) {
		t.Fatalf("brief list: %d attempts (%v), full %d", len(brief), err, len(full))
	}
	lines := 0
	for i, b := range brief {
		f := full[i]
		lines += len(f.Evidence) + len(f.Context)
		if len(b.Evidence)+len(b.Context) != 0 {
			t.Errorf("%s: brief has %d evidence and %d context lines", b.ID, len(b.Evidence), len(b.Context))
		}
		if len(b.Findings) != len(f.Findings) {
			t.Fatalf("%s: brief has %d findings, full %d", b.ID, len(b.Findings), len(f.Findings))
		}
		for j, bf := range b.Findings {
			if bf.ID != f.Findings[j].ID || len(bf.Captures) != len(f.Findings[j].Captures) || bf.Evidence != nil {
				t.Errorf("%s finding %d: brief %+v, full %+v", b.ID, j, bf, f.Findings[j])
			}
		}
		if b.Verdict != f.Verdict || b.Shape.Summary() != f.Shape.Summary() || len(b.Timeline) != 0 || len(f.Timeline) == 0 {
			t.Errorf("%s: brief differs beyond its lines and timeline (timeline %d, full %d)", b.ID, len(b.Timeline), len(f.Timeline))
		}
	}
	if lines == 0 {
		t.Fatal("the sample attempts have no lines; the test checks nothing")
	}
}

// TestVersionChangesOnSave: every save changes Version, even one that
// saves the same attempts again; reading does not.
func TestVersionChangesOnSave(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	version := func() string { t.Helper(); return versionOf(t, db) }
	empty := version()
	as := storetest.Attempts()
	if err := db.SaveAttempts(ctx, as, nil); err != nil {
		t.Fatal(err)
	}
	first := version()
	if _, err := db.ListAttempts(ctx, Filter{}); err != nil {
		t.Fatal(err)
	}
	if first == empty || version() != first {
		t.Fatalf("versions: empty %q, after save %q, after a read %q", empty, first, version())
	}
	if err := db.SaveAttempts(ctx, as[:1], nil); err != nil {
		t.Fatal(err)
	}
	if again := version(); again == first {
		t.Errorf("re-saving an attempt left the version at %q", again)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer analyzer (a schema
// version this one does not know) is refused with ErrNewerSchema, and left
// as it was.
func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(path); !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "9999") {
		t.Fatalf("Open of a newer database: %v, want ErrNewerSchema naming version 9999", err)
	}
}

// A finding's evidence line is stored once, in the evidence rows, and the
// finding refers to it by row; a line the attempt's evidence lacks is kept
// in full; rows written in full by earlier versions still load.
func TestFindingEvidenceStoredOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0]
	if len(a.Findings) < 2 || len(a.Findings[0].Evidence) == 0 {
		t.Fatalf("sample attempt: %d findings", len(a.Findings))
	}
	stray := domain.Evidence{Time: a.StartedAt, Cursor: "s=stray", Message: "a line only the finding cites"}
	a.Findings[1].Evidence = append(a.Findings[1].Evidence, stray)
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := db.db.QueryRowContext(ctx, `SELECT evidence_json FROM findings WHERE attempt_id = ? AND seq = 0`, a.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, a.Findings[0].Evidence[0].Message) || !strings.HasPrefix(raw, "[0") {
		t.Errorf("finding 0 evidence_json %s: want row numbers, not text", raw)
	}
	if err := db.db.QueryRowContext(ctx, `SELECT evidence_json FROM findings WHERE attempt_id = ? AND seq = 1`, a.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, stray.Message) {
		t.Errorf("finding 1 evidence_json %s lacks the line the evidence rows do not hold", raw)
	}
	got, err := db.GetAttempt(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range a.Findings {
		if len(got.Findings[i].Evidence) != len(f.Evidence) {
			t.Fatalf("finding %d: %d evidence lines, want %d", i, len(got.Findings[i].Evidence), len(f.Evidence))
		}
		for k, e := range f.Evidence {
			if g := got.Findings[i].Evidence[k]; g.Message != e.Message || g.Cursor != e.Cursor || !g.Time.Equal(e.Time) {
				t.Errorf("finding %d line %d = %+v, want %+v", i, k, g, e)
			}
		}
	}
	// Written in full, as before this version.
	full, _ := json.Marshal(a.Findings[0].Evidence)
	if _, err := db.db.ExecContext(ctx, `UPDATE findings SET evidence_json = ? WHERE attempt_id = ? AND seq = 0`, string(full), a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err = db.GetAttempt(ctx, a.ID); err != nil || got.Findings[0].Evidence[0].Message != a.Findings[0].Evidence[0].Message {
		t.Errorf("old-format evidence: %v", err)
	}
}

// TestEvidenceRolesRoundTrip: each evidence line keeps its role through a
// save and a load (the text form in evidence.role), a line without a role
// is stored as NULL and comes back without one, context lines and the
// findings' lines never carry one.
func TestEvidenceRolesRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0]
	if len(a.Evidence) < 2 || len(a.Findings) == 0 || len(a.Findings[0].Evidence) == 0 {
		t.Fatalf("sample attempt has %d evidence lines and %d findings, want >= 2 and a finding with lines", len(a.Evidence), len(a.Findings))
	}
	want := []domain.EvidenceRole{domain.RoleFinding | domain.RoleCandidate, domain.RoleExit | domain.RoleEnd}
	for i := range a.Evidence {
		a.Evidence[i].Role = 0
		if i < len(want) {
			a.Evidence[i].Role = want[i]
		}
	}
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	stored := map[int]sql.NullString{}
	for _, l := range storedLines(t, db, a.ID) {
		if l.evSeq.Valid {
			stored[int(l.evSeq.Int64)] = l.role
		}
	}
	if r := stored[0]; r.String != "finding,candidate" || !r.Valid {
		t.Errorf("role of line 0 stored as %+v, want finding,candidate", r)
	}
	if r := stored[1]; r.String != "exit,end" || !r.Valid {
		t.Errorf("role of line 1 stored as %+v, want exit,end", r)
	}
	for seq := 2; seq < len(a.Evidence); seq++ {
		if r := stored[seq]; r.Valid {
			t.Errorf("line %d has no role but is stored with %q, want NULL", seq, r.String)
		}
	}
	if n := countLines(t, db, "", func(l lineRec) bool { return !l.evSeq.Valid && l.role.Valid }); n != 0 {
		t.Errorf("%d context lines stored with a role", n)
	}
	got, err := db.GetAttempt(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Evidence) != len(a.Evidence) {
		t.Fatalf("%d evidence lines loaded, want %d", len(got.Evidence), len(a.Evidence))
	}
	for i, e := range got.Evidence {
		if e.Role != a.Evidence[i].Role || e.Message != a.Evidence[i].Message {
			t.Errorf("line %d loaded as %q with role %q, want %q with %q", i, e.Message, e.Role, a.Evidence[i].Message, a.Evidence[i].Role)
		}
	}
	for _, f := range got.Findings {
		for _, e := range f.Evidence {
			if e.Role != 0 {
				t.Errorf("finding %s's line %q loaded with role %q, want none", f.ID, e.Message, e.Role)
			}
		}
	}
	for _, e := range got.Context {
		if e.Role != 0 {
			t.Errorf("context line %q loaded with role %q, want none", e.Message, e.Role)
		}
	}
}

// TestEvidenceRoleMigration opens a database at schema version 7, written
// before lines had roles: 0008 adds the column, its rows load without a
// role (a resume then places them by the verdict), and rows saved after it
// get theirs. A role name this version does not know loads as none.
func TestEvidenceRoleMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v7.db")
	if ms, err := migrations.List(); err != nil || len(ms) < 8 || ms[7].Name != "0008_evidence_role.sql" {
		t.Fatalf("migration 8 is not 0008_evidence_role.sql (%v)", err)
	}
	db := migratedFrom(t, path, 7,
		`INSERT INTO attempts (id, host) VALUES ('a1', 'h')`,
		`INSERT INTO evidence (attempt_id, seq, kind, finding_id, time, time_us, cursor, message)
			VALUES ('a1', 0, 'evidence', NULL, '2026-10-01T21:40:00-07:00', 1, 's=1', 'KV cache size: 4096 tokens')`)
	ctx := context.Background()
	a, err := db.GetAttempt(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Evidence) != 1 || a.Evidence[0].Message != "KV cache size: 4096 tokens" || a.Evidence[0].Role != 0 {
		t.Fatalf("evidence of a row from before 0008 = %+v, want the line without a role", a.Evidence)
	}
	a.Evidence[0].Role = domain.RoleReady
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	if a, err = db.GetAttempt(ctx, "a1"); err != nil || a.Evidence[0].Role != domain.RoleReady {
		t.Fatalf("after a save: %+v (%v), want the line with role ready", a.Evidence, err)
	}
	lines := storedLines(t, db, "a1")
	if len(lines) != 1 {
		t.Fatalf("after a save: %d stored lines, want 1", len(lines))
	}
	lines[0].role = sql.NullString{String: "ready,from_the_future", Valid: true}
	if _, err := db.db.Exec(`UPDATE attempt_lines SET data = ? WHERE attempt_id = 'a1'`, encodeLines(lines, nil)); err != nil {
		t.Fatal(err)
	}
	if a, err = db.GetAttempt(ctx, "a1"); err != nil || a.Evidence[0].Role != 0 {
		t.Fatalf("with an unknown role name: %+v (%v), want the line without a role", a.Evidence, err)
	}
}

// TestVersionSeesOtherWriters: Version skips counting while SQLite's
// data_version stays the same; a save by another process (another pool
// on the same file), a delete, and a failed call must still give a new or
// correct version.
func TestVersionSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	version := func() string { t.Helper(); return versionOf(t, db) }
	as := storetest.Many(4)
	if err := db.SaveAttempts(ctx, as[:2], nil); err != nil {
		t.Fatal(err)
	}
	first := version()
	if again := version(); again != first || !strings.HasPrefix(first, "2/") {
		t.Fatalf("versions %q then %q, want the same, of 2 attempts", first, again)
	}
	if err := other.SaveAttempts(ctx, as[2:3], nil); err != nil {
		t.Fatal(err)
	}
	second := version()
	if second == first || !strings.HasPrefix(second, "3/") {
		t.Fatalf("after another process saved: %q (before %q), want 3 attempts", second, first)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if v, err := db.Version(canceled); err == nil {
		t.Errorf("canceled: %q, want an error", v)
	}
	if err := other.SaveAttempts(ctx, as[3:4], nil); err != nil {
		t.Fatal(err)
	}
	if third := version(); !strings.HasPrefix(third, "4/") {
		t.Fatalf("after a failed call and a save: %q, want 4 attempts", third)
	}
	// A delete lowers the count though no updated_at moves.
	if _, err := other.db.ExecContext(ctx, `DELETE FROM attempts WHERE id = ?`, as[0].ID); err != nil {
		t.Fatal(err)
	}
	if fourth := version(); !strings.HasPrefix(fourth, "3/") {
		t.Errorf("after a delete: %q, want 3 attempts", fourth)
	}
}

// migratedFrom creates a database at path with the first n migrations,
// runs rows (statements of that schema) in it, and opens it with Open,
// which applies the rest; it is closed when t ends.
func migratedFrom(t *testing.T, path string, n int, rows ...string) *DB {
	t.Helper()
	raw := openAtVersion(t, path, n)
	for _, q := range rows {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openAtVersion creates a database at path with only the first n
// migrations applied, as an older analyzer left it, and returns it open
// for rows of that schema (the caller closes it).
func openAtVersion(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations.List()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:n] {
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := raw.Exec(`INSERT INTO schema_migrations VALUES (?, ?, ?)`, m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// TestLineInBothListsStoredOnce: a line that is both evidence and context
// is one row holding both positions, and loads back into both lists in
// their orders; a context line with the same text and cursor but another
// time is a line of its own.
func TestLineInBothListsStoredOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0] // its context ends with two of its evidence lines
	shifted := a.Evidence[2]
	shifted.Time = shifted.Time.Add(time.Millisecond)
	a.Context = append(a.Context, shifted)
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	if n, want := len(storedLines(t, db, a.ID)), len(a.Evidence)+len(a.Context)-2; n != want {
		t.Errorf("%d rows for %d evidence and %d context lines, 2 of them in both lists; want %d", n, len(a.Evidence), len(a.Context), want)
	}
	if n := countLines(t, db, a.ID, func(l lineRec) bool { return l.evSeq.Valid && l.ctxSeq.Valid }); n != 2 {
		t.Errorf("%d rows in both lists, want 2", n)
	}
	got, err := db.GetAttempt(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := full(got), full(a); g != w {
		t.Errorf("round trip differs:\ngot  %s\nwant %s", g, w)
	}
}

// insertOldFindings writes a's findings into raw as schema versions 8 to
// 10 stored them (evidence as references into the attempt's evidence
// list).
func insertOldFindings(t *testing.T, raw *sql.DB, a *domain.Attempt) {
	t.Helper()
	seqs := evidenceSeqs(a.Evidence)
	for i, f := range a.Findings {
		refs, err := evidenceRefs(f.Evidence, seqs)
		if err != nil {
			t.Fatal(err)
		}
		captures, err := json.Marshal(f.Captures)
		if err != nil || f.Captures == nil {
			captures = []byte("{}")
		}
		if _, err := raw.Exec(`INSERT INTO findings (attempt_id, seq, finding_id, rule, severity, message_id, phase, time, note, captures_json, evidence_json, matched)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, i, f.ID, f.Rule, string(f.Severity), f.MessageID, string(f.Phase), timeText(f.Time),
			f.Note, string(captures), refs, f.Match); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLinesOnceMigration opens a database at schema version 8 holding the
// sample attempts' lines as that version stored them (a row per list a
// line is in, the timeline as JSON text): after 0009 each attempt loads
// with the same evidence (roles included), context, findings and timeline,
// a line in both lists is one row, and the foreign key still holds.
func TestLinesOnceMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v8.db")
	if ms, err := migrations.List(); err != nil || len(ms) < 9 || ms[8].Name != "0009_lines_once.sql" {
		t.Fatalf("migration 9 is not 0009_lines_once.sql (%v)", err)
	}
	raw := openAtVersion(t, path, 8)
	want := storetest.Attempts()
	want[0].Evidence[0].Role = domain.RoleFinding | domain.RoleCandidate
	rows, both := 0, 0
	for _, a := range want {
		timeline, err := json.Marshal(a.Timeline)
		if err != nil {
			t.Fatal(err)
		}
		if a.Timeline == nil {
			timeline = []byte("[]")
		}
		if _, err := raw.Exec(`INSERT INTO attempts (id, timeline_json) VALUES (?, ?)`, a.ID, string(timeline)); err != nil {
			t.Fatal(err)
		}
		insertOldFindings(t, raw, a)
		type key struct{ cursor, message string }
		evidence := map[key]bool{}
		for _, l := range []struct {
			kind  string
			lines []domain.Evidence
		}{{"evidence", a.Evidence}, {"context", a.Context}} {
			seen := map[key]bool{}
			for i, e := range l.lines {
				k := key{e.Cursor, e.Message}
				if seen[k] {
					continue
				}
				seen[k] = true
				rows++
				if l.kind == "evidence" {
					evidence[k] = true
				} else if evidence[k] {
					both++
				}
				var role any
				if l.kind == "evidence" && e.Role != 0 {
					role = e.Role.String()
				}
				if _, err := raw.Exec(`INSERT INTO evidence (attempt_id, seq, kind, time, time_us, cursor, message, role)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, i, l.kind, timeText(e.Time), timeMicros(e.Time), e.Cursor, e.Message, role); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	raw.Close()
	if both == 0 {
		t.Fatal("no sample line is in both lists")
	}

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, w := range want {
		got, err := db.GetAttempt(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		type lines struct {
			Evidence, Context []domain.Evidence
			Roles             []domain.EvidenceRole
			Findings          []domain.Finding
			Timeline          []domain.PhaseMark
		}
		render := func(a *domain.Attempt) string {
			l := lines{a.Evidence, a.Context, nil, a.Findings, a.Timeline}
			for _, e := range a.Evidence {
				l.Roles = append(l.Roles, e.Role)
			}
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if g, w := render(got), render(w); g != w {
			t.Errorf("%s after 0009:\ngot  %s\nwant %s", got.ID, g, w)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM evidence`); n != rows-both {
		t.Errorf("%d line rows after 0009, want %d (%d rows before, %d lines in both lists)", n, rows-both, rows, both)
	}
	if _, err := db.db.Exec(`DELETE FROM attempts`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM evidence`); n != 0 {
		t.Errorf("%d line rows outlived their attempt", n)
	}
}

// versionOf is db.Version, failing t on an error.
func versionOf(t *testing.T, db *DB) string {
	t.Helper()
	v, err := db.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
