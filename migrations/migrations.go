// Package migrations holds the SQLite schema of the analyzer as numbered SQL
// files (0001_init.sql, 0002_..., applied in order by store.Open). A file is
// never edited once released: schema changes go into a new file.
//
// schema.snapshot is the schema all the files together leave on an empty
// database, written by cmd/schema-snapshot (make schema): store.Open
// creates a new database from it in one step instead of replaying every
// file, table rebuilds included (1.4 ms against 5.3 ms).
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	// Version is the file's leading number (1 for 0001_init.sql).
	Version int
	// Name is the file name, used in error messages and bookkeeping.
	Name string
	// SQL is the file's text; it may hold several statements.
	SQL string
}

// List returns the migrations of FS in version order. It fails when a file
// name has no leading number or two files share a version, so a misnamed
// file is caught by the tests instead of being skipped silently.
func List() ([]Migration, error) {
	names, err := fs.Glob(FS, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, name := range names {
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migrations: %s: name must be NNNN_description.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s: name must start with a positive number", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", prev, name, v)
		}
		seen[v] = name
		b, err := FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("migrations: %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

//go:embed schema.snapshot
var snapshot string

// snapshotHeader starts schema.snapshot; the version of the last migration
// it covers follows it.
const snapshotHeader = "-- schema after migration "

// Snapshot returns the SQL of schema.snapshot and the version of the last
// migration it covers. A snapshot older than the newest file is not to be
// used (TestSnapshotIsTheMigratedSchema fails on it until make schema).
func Snapshot() (version int, sql string, err error) {
	first, _, _ := strings.Cut(snapshot, "\n")
	rest, ok := strings.CutPrefix(first, snapshotHeader)
	if ok {
		num, _, _ := strings.Cut(rest, " ")
		version, err = strconv.Atoi(num)
	}
	if !ok || err != nil || version <= 0 {
		return 0, "", errors.New("migrations: schema.snapshot: first line must be " + snapshotHeader + "N")
	}
	return version, snapshot, nil
}

// WriteSnapshot applies the migrations ms to db, an empty database, and
// returns the text of schema.snapshot for them: a header line naming the
// last, then Schema's statements.
func WriteSnapshot(ctx context.Context, db *sql.DB, ms []Migration) (string, error) {
	for _, m := range ms {
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			return "", fmt.Errorf("migrations: %s: %w", m.Name, err)
		}
	}
	stmts, err := Schema(ctx, db)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d (%s); written by make schema, not by hand.\n", snapshotHeader, ms[len(ms)-1].Version, ms[len(ms)-1].Name)
	for _, s := range stmts {
		b.WriteString(s)
		b.WriteString(";\n")
	}
	return b.String(), nil
}

// Schema returns the CREATE statements of db's tables, indexes, views
// and triggers in the order they were created (SQLite's own objects, and
// schema_migrations, which store.Open keeps, left out), as SQLite stores
// them: the text as written, columns added by ALTER TABLE appended.
func Schema(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name != 'schema_migrations'
		ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("migrations: reading the schema: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("migrations: reading the schema: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
