package store

import (
	"testing"
)

// storedLines decodes attempt id's attempt_lines row ("": every row's
// lines), nil when there is none.
func storedLines(t *testing.T, db *DB, id string) []lineRec {
	t.Helper()
	rows, err := db.db.Query(`SELECT data FROM attempt_lines WHERE ? = '' OR attempt_id = ? ORDER BY attempt_id`, id, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []lineRec
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		lines, _, err := decodeLines(data)
		if err != nil {
			t.Fatalf("attempt_lines of %q: %v", id, err)
		}
		out = append(out, lines...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countLines counts the stored lines of attempt id ("": all) that match.
func countLines(t *testing.T, db *DB, id string, match func(lineRec) bool) int {
	t.Helper()
	n := 0
	for _, l := range storedLines(t, db, id) {
		if match(l) {
			n++
		}
	}
	return n
}
