package migrations

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

func TestListOrderedAndContiguous(t *testing.T) {
	ms, err := List()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d is %s (version %d): versions must be 1, 2, 3, ...", i, m.Name, m.Version)
		}
		if m.SQL == "" {
			t.Errorf("%s is empty", m.Name)
		}
	}
	if ms[0].Name != "0001_init.sql" {
		t.Errorf("first migration = %s", ms[0].Name)
	}
}

// TestApplyOnSQLite runs every file on a real SQLite database and checks the
// tables and indexes the store relies on exist.
func TestApplyOnSQLite(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "m.db")+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	for _, want := range []string{
		"table:attempts", "table:findings", "table:evidence", "table:ingest_positions", "table:attempt_lines", "table:attempt_log", "table:log_dicts",
		"index:attempts_host", "index:attempts_unit", "index:attempts_engine",
		"index:attempts_started_id", "index:attempts_group", "index:attempts_updated_at",
	} {
		var n int
		typ, name, _ := strings.Cut(want, ":")
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = ? AND name = ?`, typ, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s missing", want)
		}
	}
	// 0009 dropped the indexes no query used; each cost every save an entry.
	for _, gone := range []string{"attempts_started_at", "attempts_verdict", "attempts_phase", "attempts_shape", "attempts_model"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, gone).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("index %s still exists", gone)
		}
	}
	// The columns the store writes must exist with these names.
	cols := columns(t, db, "attempts")
	for _, c := range []string{"started_at", "started_at_text", "exit_status", "max_model_len", "max_num_seqs",
		"kv_cache_dtype", "kv_cache_memory_bytes", "kv_cache_tokens", "max_concurrency",
		"tensor_parallel_size", "served_model_name", "shape_json", "timeline_json", "note_finding"} {
		if !cols[c] {
			t.Errorf("attempts.%s missing", c)
		}
	}
	cols = columns(t, db, "attempt_log")
	for _, c := range []string{"attempt_id", "first_seq", "lines", "data", "codec"} {
		if !cols[c] {
			t.Errorf("attempt_log.%s missing", c)
		}
	}
	cols = columns(t, db, "evidence")
	for _, c := range []string{"attempt_id", "seq", "evidence_seq", "context_seq", "finding_id", "time", "time_us", "cursor", "message", "role"} {
		if !cols[c] {
			t.Errorf("evidence.%s missing", c)
		}
	}
}

// columns returns the names of table's columns.
func columns(t *testing.T, db *sql.DB, table string) map[string]bool {
	t.Helper()
	cols := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols[c] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols
}

// TestSnapshotIsTheMigratedSchema: schema.snapshot is what make schema
// writes for the files as they are, and running it on an empty database
// leaves the schema and rows the files leave.
func TestSnapshotIsTheMigratedSchema(t *testing.T) {
	ctx := context.Background()
	ms, err := List()
	if err != nil {
		t.Fatal(err)
	}
	version, text, err := Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if last := ms[len(ms)-1]; version != last.Version {
		t.Fatalf("schema.snapshot covers migrations up to %d, the files go to %s: run make schema", version, last.Name)
	}
	migrated := memoryDB(t)
	want, err := WriteSnapshot(ctx, migrated, ms)
	if err != nil {
		t.Fatal(err)
	}
	if text != want {
		t.Errorf("schema.snapshot is not what the files leave: run make schema\n got:\n%s\nwant:\n%s", text, want)
	}
	fromSnapshot := memoryDB(t)
	if _, err := fromSnapshot.Exec(text); err != nil {
		t.Fatal(err)
	}
	a, err := Schema(ctx, migrated)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Schema(ctx, fromSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Errorf("the snapshot's schema differs from the files':\n%q\n%q", b, a)
	}
	for _, table := range tables(t, migrated) {
		var n, m int
		q := `SELECT count(*) FROM "` + table + `"`
		if err := migrated.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := fromSnapshot.QueryRow(q).Scan(&m); err != nil {
			t.Fatal(err)
		}
		if n != m {
			t.Errorf("table %s: %d rows from the snapshot, %d from the files", table, m, n)
		}
	}
}

// memoryDB is an empty in-memory database on one connection.
func memoryDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// tables lists db's tables.
func tables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
