// Package migrations holds the SQLite schema of the analyzer as numbered SQL
// files (0001_init.sql, 0002_..., applied in order by store.Open). A file is
// never edited once released: schema changes go into a new file.
package migrations

import (
	"embed"
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
