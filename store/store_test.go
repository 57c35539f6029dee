package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/migrations"
	"github.com/llmfleet/analyzer/store/storetest"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "analyzer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func count(t *testing.T, db *DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

type counts struct{ attempts, findings, evidence, context, positions int }

func countRows(t *testing.T, db *DB) counts {
	return counts{
		attempts:  count(t, db, `SELECT count(*) FROM attempts`),
		findings:  count(t, db, `SELECT count(*) FROM findings`),
		evidence:  countLines(t, db, "", func(l lineRec) bool { return l.evSeq.Valid }),
		context:   countLines(t, db, "", func(l lineRec) bool { return l.ctxSeq.Valid }),
		positions: count(t, db, `SELECT count(*) FROM ingest_positions`),
	}
}

// dump renders every row of the attempt tables and their logs, so a
// re-save can be shown to change nothing at all, not only the counts.
// updated_at is left out: it records when, not what
// (TestVersionChangesOnSave checks it).
func dump(t *testing.T, db *DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT * FROM attempts ORDER BY id`,
		`SELECT * FROM findings ORDER BY attempt_id, seq`,
		`SELECT * FROM evidence ORDER BY attempt_id, seq`,
		`SELECT * FROM attempt_lines ORDER BY attempt_id`,
		`SELECT * FROM attempt_log ORDER BY attempt_id, first_seq`,
	} {
		rows, err := db.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if cols[i] == "updated_at" {
					continue
				}
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%T:%q ", cols[i], v, fmt.Sprint(v))
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

func TestSaveTwiceIsIdempotent(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	pos := &Position{Source: "/var/log/fleet.journal.json", Cursor: "s=1a2b;i=600", Offset: 123456}
	if err := db.SaveAttempts(ctx, storetest.Attempts(), pos); err != nil {
		t.Fatal(err)
	}
	first := countRows(t, db)
	want := counts{attempts: 3, findings: 3, evidence: 4, context: 7, positions: 1}
	if first != want {
		t.Fatalf("after first save: %+v, want %+v", first, want)
	}
	before := dump(t, db)

	// Replaying the same input: fresh values, same content.
	if err := db.SaveAttempts(ctx, storetest.Attempts(), pos); err != nil {
		t.Fatal(err)
	}
	if second := countRows(t, db); second != first {
		t.Fatalf("re-save changed row counts: %+v -> %+v", first, second)
	}
	if after := dump(t, db); after != before {
		t.Fatalf("re-save changed rows:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestResaveReplacesChildren(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	as := storetest.Attempts()
	if err := db.SaveAttempts(ctx, as, nil); err != nil {
		t.Fatal(err)
	}
	// The analyzer's later view of the attempt drops a finding and its lines.
	a := as[0]
	a.Findings = a.Findings[:1]
	a.Evidence = a.Evidence[:1]
	a.Context = nil
	if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM findings WHERE attempt_id = ?`, a.ID); n != 1 {
		t.Errorf("findings of %s = %d, want 1", a.ID, n)
	}
	if n := len(storedLines(t, db, a.ID)); n != 1 {
		t.Errorf("evidence+context of %s = %d, want 1", a.ID, n)
	}
	if n := count(t, db, `SELECT count(*) FROM findings`); n != 2 {
		t.Errorf("findings of all attempts = %d, want 2 (others untouched)", n)
	}
}

// full renders every field of an attempt, times with their offsets, so two
// attempts compare equal only if the store lost nothing.
func full(a *domain.Attempt) string {
	type fullAttempt struct {
		domain.AttemptJSON
		ContainerID string
		ExitCode    string
		Lines       int
		LastLineAt  time.Time
		Findings    []domain.Finding
		Timeline    []domain.PhaseMark
		Context     []domain.Evidence
		Evidence    []domain.Evidence
	}
	b, err := json.MarshalIndent(fullAttempt{a.JSON(), a.ContainerID, a.ExitCode, a.Lines, a.LastLineAt, a.Findings, a.Timeline, a.Context, a.Evidence}, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	orig := storetest.Attempts()
	if err := db.SaveAttempts(ctx, orig, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range orig {
		got, err := db.GetAttempt(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := full(got), full(want); g != w {
			t.Errorf("%s round trip differs:\ngot  %s\nwant %s", want.ID, g, w)
		}
		// Times: same instant and same UTC offset as the source.
		for _, p := range [][2]time.Time{{got.StartedAt, want.StartedAt}, {got.EndedAt, want.EndedAt}, {got.ReadyAt, want.ReadyAt}, {got.LastLineAt, want.LastLineAt}} {
			if !p[0].Equal(p[1]) || p[0].IsZero() != p[1].IsZero() {
				t.Errorf("%s: time %v, want %v", want.ID, p[0], p[1])
			}
			_, go_ := p[0].Zone()
			_, wo := p[1].Zone()
			if !p[1].IsZero() && go_ != wo {
				t.Errorf("%s: offset %d, want %d", want.ID, go_, wo)
			}
		}
		// Shape: same keys, same Go types and values.
		if !reflect.DeepEqual(got.Shape, want.Shape) {
			t.Errorf("%s shape: got %#v, want %#v", want.ID, got.Shape, want.Shape)
		}
	}

	oom, _ := db.GetAttempt(ctx, storetest.IDOOM)
	for key, wantType := range map[string]string{
		domain.ShapeMaxModelLen: "int64", domain.ShapeKVCacheMemoryBytes: "int64", domain.ShapeMaxConcurrency: "float64",
		"swap_space_gib": "float64", domain.ShapeEnforceEager: "bool", domain.ShapeKVCacheDtype: "string",
	} {
		t.Run(key, func(t *testing.T) {
			if got := reflect.TypeOf(oom.Shape[key]).String(); got != wantType {
				t.Errorf("shape %s is %s, want %s", key, got, wantType)
			}
		})
	}
	if oom.ExitStatus == nil || *oom.ExitStatus != 0 {
		t.Errorf("exit_status of %s = %v, want 0 (known success, not unknown)", oom.ID, oom.ExitStatus)
	}
	if _, off := oom.StartedAt.Zone(); off != -7*3600 {
		t.Errorf("started_at offset = %d", off)
	}
	if got := oom.StartedAt.Format(domain.TimeFormat); got != "2026-10-01T21:40:00.000000-07:00" {
		t.Errorf("started_at = %s", got)
	}
	ready, _ := db.GetAttempt(ctx, storetest.IDReady)
	if ready.ExitStatus != nil || ready.RestartCounterAfter != nil || !ready.EndedAt.IsZero() {
		t.Errorf("running attempt: exit_status %v, restart_after %v, ended %v; want nil, nil, zero",
			ready.ExitStatus, ready.RestartCounterAfter, ready.EndedAt)
	}
	if ready.RestartCounter == nil || *ready.RestartCounter != 1 {
		t.Errorf("restart_counter = %v", ready.RestartCounter)
	}
	extra, ok := ready.Shape["extra"].(map[string]any)
	if !ok || reflect.TypeOf(extra["chunked_prefill_size"]).String() != "int64" || reflect.TypeOf(extra["mem_fraction_static"]).String() != "float64" {
		t.Errorf("nested shape values lost their types: %#v", ready.Shape["extra"])
	}

	// The indexed columns hold the shape's main keys.
	var mml, seqs, kvBytes int64
	var dtype string
	var conc float64
	var exit sql.NullInt64
	if err := db.db.QueryRow(`SELECT max_model_len, max_num_seqs, kv_cache_dtype, kv_cache_memory_bytes, max_concurrency, exit_status
		FROM attempts WHERE id = ?`, storetest.IDOOM).Scan(&mml, &seqs, &dtype, &kvBytes, &conc, &exit); err != nil {
		t.Fatal(err)
	}
	if mml != 262144 || seqs != 3 || dtype != "auto" || kvBytes != 11047010304 || conc != 2.01 || !exit.Valid || exit.Int64 != 0 {
		t.Errorf("indexed columns: %d %d %s %d %v %v", mml, seqs, dtype, kvBytes, conc, exit)
	}
	var readyExit sql.NullInt64
	if err := db.db.QueryRow(`SELECT exit_status FROM attempts WHERE id = ?`, storetest.IDReady).Scan(&readyExit); err != nil {
		t.Fatal(err)
	}
	if readyExit.Valid {
		t.Errorf("unknown exit status stored as %d, want NULL", readyExit.Int64)
	}
}

func TestGetAttemptNotFound(t *testing.T) {
	db, _ := openTemp(t)
	_, err := db.GetAttempt(context.Background(), "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func ids(as []*domain.Attempt) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func TestListAttemptsFilters(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	if err := db.SaveAttempts(ctx, storetest.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	// Starts in UTC: unknown 05:00Z, oom 04:40Z (both 2026-10-02), ready 06:00Z.
	utc := func(h, m int) time.Time { return time.Date(2026, 10, 2, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"all newest first", Filter{}, []string{storetest.IDReady, storetest.IDUnknown, storetest.IDOOM}},
		{"host", Filter{Host: "dankserver"}, []string{storetest.IDUnknown, storetest.IDOOM}},
		{"unit", Filter{Unit: "frank-primary.service"}, []string{storetest.IDOOM}},
		{"engine", Filter{Engine: "sglang"}, []string{storetest.IDReady}},
		{"verdict", Filter{Verdict: "oom_graph_capture"}, []string{storetest.IDOOM}},
		{"host and verdict", Filter{Host: "rackbox", Verdict: "oom_graph_capture"}, []string{}},
		{"since inclusive", Filter{Since: utc(5, 0)}, []string{storetest.IDReady, storetest.IDUnknown}},
		{"until exclusive", Filter{Until: utc(5, 0)}, []string{storetest.IDOOM}},
		{"window", Filter{Since: utc(4, 0), Until: utc(5, 30)}, []string{storetest.IDUnknown, storetest.IDOOM}},
		{"limit", Filter{Limit: 1}, []string{storetest.IDReady}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.ListAttempts(ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, ids(got), tc.want)
			}
		})
	}
	// Listed attempts carry their findings and evidence too.
	got, _ := db.ListAttempts(ctx, Filter{Unit: "frank-primary.service"})
	if len(got) != 1 || !reflect.DeepEqual(got[0].FindingIDs(), []string{"oom_graph_capture", "clean_exit_worker_death"}) ||
		len(got[0].Evidence) != 3 || len(got[0].Context) != 5 || len(got[0].Timeline) != 9 {
		t.Errorf("listed attempt incomplete: %s", full(got[0]))
	}
}

func TestFacets(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	if err := db.SaveAttempts(ctx, storetest.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	hosts, units, engines, verdicts, err := db.Facets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][2][]string{
		"hosts":    {hosts, {"dankserver", "rackbox"}},
		"units":    {units, {"bob-sglang.service", "frank-draft.service", "frank-primary.service"}},
		"engines":  {engines, {"llamacpp", "sglang", "vllm"}},
		"verdicts": {verdicts, {"oom_graph_capture", "ready", "unknown_failure"}},
	} {
		t.Run(name, func(t *testing.T) {
			if !reflect.DeepEqual(p[0], p[1]) {
				t.Errorf("%s = %v, want %v", name, p[0], p[1])
			}
		})
	}
}

func TestPositionCommittedWithAttempts(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	src := "/var/log/fleet.journal.json"
	if _, ok, err := db.Position(ctx, src); err != nil || ok {
		t.Fatalf("fresh db: ok=%v err=%v", ok, err)
	}
	as := storetest.Attempts()
	p1 := Position{Source: src, Cursor: "s=1a2b;i=600", Offset: 1000}
	if err := db.SaveAttempts(ctx, as[:2], &p1); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.Position(ctx, src)
	if err != nil || !ok || got != p1 {
		t.Fatalf("position = %+v ok=%v err=%v, want %+v", got, ok, err, p1)
	}
	before := countRows(t, db)
	beforeDump := dump(t, db)

	// A batch that fails half way: a new attempt, a changed attempt, then
	// one without an ID. Neither the attempts nor the position may stick.
	changed := storetest.Attempts()[0]
	changed.Verdict = domain.VerdictEngineDied
	bad := storetest.Attempts()[2]
	bad.ID = ""
	p2 := Position{Source: src, Cursor: "s=1a2b;i=700", Offset: 2000}
	err = db.SaveAttempts(ctx, []*domain.Attempt{as[2], changed, bad}, &p2)
	if err == nil || !strings.Contains(err.Error(), "has no ID") {
		t.Fatalf("err = %v, want a missing-ID error", err)
	}
	if got, _, _ := db.Position(ctx, src); got != p1 {
		t.Errorf("position after failed batch = %+v, want %+v (rolled back)", got, p1)
	}
	if after := countRows(t, db); after != before {
		t.Errorf("counts after failed batch %+v, want %+v", after, before)
	}
	if dump(t, db) != beforeDump {
		t.Errorf("failed batch changed rows")
	}
	if _, err := db.GetAttempt(ctx, storetest.IDUnknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("attempt of the failed batch is visible: %v", err)
	}

	// A cancelled context rolls back too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.SaveAttempts(cctx, as[2:], &p2); err == nil {
		t.Errorf("save with cancelled context succeeded")
	}
	if got, _, _ := db.Position(ctx, src); got != p1 {
		t.Errorf("position after cancelled batch = %+v", got)
	}

	// The good batch commits both.
	if err := db.SaveAttempts(ctx, as[2:], &p2); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := db.Position(ctx, src); got != p2 {
		t.Errorf("position = %+v, want %+v", got, p2)
	}
	if _, err := db.GetAttempt(ctx, storetest.IDUnknown); err != nil {
		t.Errorf("attempt of the committed batch: %v", err)
	}
	// Positions are per source.
	if _, ok, _ := db.Position(ctx, "journal"); ok {
		t.Errorf("position of another source found")
	}
}

func TestMigrationsAppliedOnce(t *testing.T) {
	ms, err := migrations.List()
	if err != nil {
		t.Fatal(err)
	}
	db, path := openTemp(t)
	if err := db.SaveAttempts(context.Background(), storetest.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	var appliedAt int64
	if err := db.db.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = 1`).Scan(&appliedAt); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db2.Close()
	if n := count(t, db2, `SELECT count(*) FROM schema_migrations`); n != len(ms) {
		t.Errorf("schema_migrations rows = %d, want %d", n, len(ms))
	}
	var again int64
	if err := db2.db.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = 1`).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != appliedAt {
		t.Errorf("migration 1 re-applied (applied_at %d -> %d)", appliedAt, again)
	}
	if n := count(t, db2, `SELECT count(*) FROM attempts`); n != 3 {
		t.Errorf("attempts after reopen = %d, want 3", n)
	}
	var mode string
	if err := db2.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
	var fk int
	if err := db2.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d (%v), want 1", fk, err)
	}
}

// TestNewDatabaseAsMigrated: a new database, made from schema.snapshot,
// has the schema a database migrated file by file through Open has (one
// holding only 0001 and its schema_migrations row), and lists every file.
func TestNewDatabaseAsMigrated(t *testing.T) {
	ctx := context.Background()
	ms, err := migrations.List()
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := openTemp(t)

	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
		INSERT INTO schema_migrations VALUES (1, '` + ms[0].Name + `', 0);` + ms[0].SQL); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	old, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	want, err := migrations.Schema(ctx, old.db)
	if err != nil {
		t.Fatal(err)
	}
	got, err := migrations.Schema(ctx, fresh.db)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("new database's schema:\n%q\nmigrated file by file:\n%q", got, want)
	}
	for _, db := range []*DB{fresh, old} {
		if n := count(t, db, `SELECT count(*) FROM schema_migrations`); n != len(ms) {
			t.Errorf("schema_migrations rows = %d, want %d", n, len(ms))
		}
	}
}

// TestNewDatabaseOpenedAtOnce: analyzers opening one new database at the
// same moment all open it (the switch to WAL of one failed another's
// before), and every file is listed once.
func TestNewDatabaseOpenedAtOnce(t *testing.T) {
	ms, err := migrations.List()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "new.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := Open(path)
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := count(t, db, `SELECT count(*) FROM schema_migrations`); n != len(ms) {
		t.Errorf("schema_migrations rows = %d, want %d", n, len(ms))
	}
}

// TestStatementJournalInMemory: every connection of the pool, not only
// the first, keeps temporary storage (the statement journals of a save's
// upserts and deletes) in memory: temp_store 2 (driverName), and has a
// page cache of cacheKiB.
func TestStatementJournalInMemory(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	var conns []*sql.Conn
	for range 3 { // held at once, so the pool opens three
		c, err := db.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var mode int
		if err := c.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&mode); err != nil || mode != 2 {
			t.Errorf("connection %d: temp_store = %d (%v), want 2 (MEMORY)", i, mode, err)
		}
		var cache int
		if err := c.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil || cache != -8192 {
			t.Errorf("connection %d: cache_size = %d (%v), want -8192 (8 MiB)", i, cache, err)
		}
	}
}

// TestMigrationErrorNamesFile: a migration that fails names its file, and
// the pending files, applied in one transaction, leave nothing behind:
// neither the failing one nor those before it.
func TestMigrationErrorNamesFile(t *testing.T) {
	for _, c := range []struct {
		clash, file string // a table the file also creates makes it fail
	}{
		{`CREATE TABLE attempts (x)`, "0001_init.sql"},
		{`CREATE TABLE attempt_lines (x)`, "0011_lines_by_reference.sql"}, // after 0001 to 0010 ran
	} {
		path := filepath.Join(t.TempDir(), "clash.db")
		raw, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(c.clash); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		if _, err = Open(path); err == nil || !strings.Contains(err.Error(), c.file) {
			t.Fatalf("err = %v, want it to name %s", err, c.file)
		}
		raw, _ = sql.Open("sqlite3", path)
		defer raw.Close()
		var tables, rows int
		if err := raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('findings', 'evidence', 'ingest_positions', 'notes', 'attempt_log')`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if tables != 0 || rows != 0 {
			t.Errorf("%s failing: %d tables and %d schema_migrations rows of the failed run remain", c.file, tables, rows)
		}
	}
}

// TestOpenMigratedTakesNoWriteLock: opening a database with no migration
// pending only reads it, so it opens while a replay holds the write lock
// (before, each file's check took the lock and waited out busy_timeout).
func TestOpenMigratedTakesNoWriteLock(t *testing.T) {
	db, path := openTemp(t)
	db.Close()
	raw, err := sql.Open("sqlite3", path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	writer, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = writer.ExecContext(ctx, "ROLLBACK") }()
	db2, err := Open(path)
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer db2.Close()
	if n := count(t, db2, `SELECT count(*) FROM attempts`); n != 0 {
		t.Errorf("attempts = %d, want 0", n)
	}
}

func TestShapeCodec(t *testing.T) {
	in := domain.Shape{
		"i": int64(-5), "n": 7, "f": 1.0, "g": 0.9, "e": 1e21, "b": true, "s": "auto",
		"nan": nanValue(), "nested": map[string]any{"x": 2.0, "y": int64(3), "l": []any{1.5, int64(2)}},
	}
	text, err := encodeShape(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeShape(text)
	if err != nil {
		t.Fatal(err)
	}
	want := domain.Shape{
		"i": int64(-5), "n": int64(7), "f": 1.0, "g": 0.9, "e": 1e21, "b": true, "s": "auto",
		"nested": map[string]any{"x": 2.0, "y": int64(3), "l": []any{1.5, int64(2)}},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("shape codec:\n in  %#v\n text %s\n out %#v", in, text, out)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

// TestReadWhileWriting: the UI reads while ingest writes batches; WAL and
// the busy timeout must keep both free of "database is locked" errors.
func TestReadWhileWriting(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 50; i++ {
			as := storetest.Attempts()
			for _, a := range as {
				a.Lines = i
			}
			if err := db.SaveAttempts(ctx, as, &Position{Source: "journal", Cursor: fmt.Sprint(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if n := count(t, db, `SELECT count(*) FROM attempts`); n != 3 {
				t.Fatalf("attempts = %d", n)
			}
			return
		default:
		}
		as, err := db.ListAttempts(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		// A reader sees whole batches: all attempts of one save or none.
		for _, a := range as {
			if a.Lines != as[0].Lines {
				t.Fatalf("torn read: lines %d and %d", a.Lines, as[0].Lines)
			}
		}
		if _, _, _, _, err := db.Facets(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteStringIsJSON: the shape encoder's string fast path writes what
// encoding/json writes, escapes included.
func TestWriteStringIsJSON(t *testing.T) {
	for _, s := range []string{"", "max_model_len", "auto", "fp8_e4m3", `a"b`, `a\b`, "<x>&", "tab\there", "nl\n", "\x7f", "é", "\xff", "\u2028"} {
		var b bytes.Buffer
		writeString(&b, s)
		want, _ := json.Marshal(s)
		if b.String() != string(want) {
			t.Errorf("writeString(%q) = %s, want %s", s, b.String(), want)
		}
	}
}

// TestWriteStringMapIsJSON: a finding's captures are written as
// encoding/json writes them: keys sorted, the same escaping, "{}" for none,
// and json.Marshal's own output when a key needs escaping.
func TestWriteStringMapIsJSON(t *testing.T) {
	words := []string{"", "max_model_len", "auto", "b", "B", "a_1", `a"b`, "<x>&", "nl\n", "\x7f", "é", "\xff", "\u2028", "10", "9"}
	maps := []map[string]string{nil, {}}
	for i := range words {
		m := map[string]string{}
		for j := range words {
			if (i+j)%3 != 0 || j == i {
				m[words[j]] = words[(i*7+j)%len(words)]
			}
		}
		maps = append(maps, m, map[string]string{words[i]: words[len(words)-1-i]})
	}
	// Regexp group names as keys, any text as values: the common case.
	for i := range words {
		m := map[string]string{}
		for j, k := range []string{"max_model_len", "b", "B", "a_1", "10", "9", "auto", ""} {
			if (i+j)%4 != 0 {
				m[k] = words[(i+j)%len(words)]
			}
		}
		maps = append(maps, m)
	}
	for _, m := range maps {
		var b bytes.Buffer
		writeStringMap(&b, m)
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			want = []byte("{}") // stored as an empty object, never null
		}
		if b.String() != string(want) {
			t.Errorf("writeStringMap(%q) = %s, want %s", m, b.String(), want)
		}
	}
}

// TestCheckpointWhileSaving: Checkpoint copies saved pages from the
// write-ahead log into the database file, also while another goroutine
// saves (what replay does once the input is read), and the database then
// holds every attempt.
func TestCheckpointWhileSaving(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	size := func() int64 {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	all := storetest.Attempts()
	var long []domain.LogLine
	for i := range 3000 {
		long = append(long, domain.LogLine{Seq: i, Message: fmt.Sprintf("INFO loading shard %d of the model weights", i)})
	}
	all[0].Log = &domain.AttemptLog{Lines: long, Total: len(long)}
	if err := db.SaveAttempts(ctx, all[:1], nil); err != nil {
		t.Fatal(err)
	}
	before := size() // the saved pages are in the log, not the file
	saved := make(chan error, 1)
	go func() { saved <- db.SaveAttempts(ctx, all[1:], nil) }()
	if err := db.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint while saving: %v", err)
	}
	if err := <-saved; err != nil {
		t.Fatalf("save while checkpointing: %v", err)
	}
	if after := size(); after <= before {
		t.Errorf("database file %d bytes after the checkpoint, %d before: no page copied", after, before)
	}
	if n := count(t, db, `SELECT count(*) FROM attempts`); n != len(all) {
		t.Errorf("%d attempts stored, want %d", n, len(all))
	}
}
