package main

import (
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dumpColumns leaves out what records when a save happened, not what it
// saved.
var dumpSkip = map[string]bool{"attempts.updated_at": true, "ingest_positions.updated_at": true, "notes.written_at": true}

// dumpDB returns every row of the tables a replay writes, as text, in
// one order: two databases with the same dump hold the same
// attempts, findings, evidence and context lines (references or text),
// logs and positions, byte for byte.
func dumpDB(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, table := range []string{"attempts", "findings", "evidence", "attempt_lines", "attempt_log", "log_dicts", "ingest_positions", "notes"} {
		var cols []string
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			if !dumpSkip[table+"."+c] {
				cols = append(cols, `quote("`+c+`")`)
			}
		}
		rows.Close()
		q := fmt.Sprintf(`SELECT %s FROM %s ORDER BY 1`, strings.Join(cols, " || '|' || "), table)
		rows, err = db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(table + ": " + line + "\n")
		}
		rows.Close()
	}
	return b.String()
}

// firstDiff names the first line where two dumps differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %.300s\n want %.300s", i, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// TestReplayChangesNothing: a second replay of the same files leaves the
// database as the first left it, row for row (the evidence rows once went
// from references into the attempt's log to inline text), and so does a
// replay killed with SIGKILL at random points and run again until it ends.
func TestReplayChangesNothing(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.db")
	runCmd(t, append([]string{"replay", "--db", clean}, fixtures...)...)
	want := dumpDB(t, clean)
	if !strings.Contains(want, "attempt_lines: ") || !strings.Contains(want, "attempt_log: ") {
		t.Fatalf("the dump lacks evidence or log rows:\n%.500s", want)
	}
	runCmd(t, append([]string{"replay", "--db", clean}, fixtures...)...)
	if got := dumpDB(t, clean); got != want {
		t.Fatalf("a second replay changed the database: %s", firstDiff(got, want))
	}

	if testing.Short() {
		return
	}
	bin := analyzerBinary(t)
	// How long an uninterrupted replay takes, to kill within it.
	start := time.Now()
	if out, err := exec.Command(bin, append([]string{"replay", "--db", filepath.Join(dir, "timing.db")}, fixtures...)...).CombinedOutput(); err != nil {
		t.Fatalf("replay: %v: %s", err, out)
	}
	span := time.Since(start)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d, a replay takes %v", seed, span)
	for run := 0; run < 4; run++ {
		killed := filepath.Join(dir, fmt.Sprintf("killed-%d.db", run))
		var points []string
		for k := 0; k < 3; k++ {
			at := time.Duration(rng.Int63n(int64(span)))
			points = append(points, at.String())
			cmd := exec.Command(bin, append([]string{"replay", "--db", killed}, fixtures...)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(at)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		}
		if out, err := exec.Command(bin, append([]string{"replay", "--db", killed}, fixtures...)...).CombinedOutput(); err != nil {
			t.Fatalf("replay after kills at %v: %v: %s", points, err, out)
		}
		if got := dumpDB(t, killed); got != want {
			t.Errorf("killed at %v, then replayed: %s", points, firstDiff(got, want))
		}
		_ = os.Remove(killed)
	}
}
