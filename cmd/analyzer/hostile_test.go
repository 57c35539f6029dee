package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

// hostileLogs are inputs that once took the analyzer down; each must be
// analyzed in under a second with the rest of its lines processed.
var hostileLogs = map[string]string{
	// A stray closer inside a list made the Python-repr parser append
	// forever (23 GB in 3 s).
	"repr stray closer": "vLLM API server version 1\nnon-default args: {'a':[)]}\nnon-default args: {'max_model_len': 4096}\n",
	// FuzzJSONRecord: a key of invalid UTF-8 made the fast JSON path and
	// encoding/json disagree.
	"json key not utf-8": `{"` + "\xca" + `":"","__CURSOR":"c0","__REALTIME_TIMESTAMP":"1790916000000000","_SYSTEMD_UNIT":"vllm.service","MESSAGE":"vLLM API server version 1"}` + "\n" +
		`{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1790916001000000","_SYSTEMD_UNIT":"vllm.service","MESSAGE":"non-default args: {'max_model_len': 4096}"}` + "\n",
}

func TestHostileLinesEndQuickly(t *testing.T) {
	for name, text := range hostileLogs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.txt")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out := runCmd(t, "explain", "--format", "json", path)
			runCmd(t, "replay", "--db", filepath.Join(t.TempDir(), "a.db"), path)
			if d := time.Since(start); d > race.Budget(time.Second) {
				t.Fatalf("explain and replay took %v", d)
			}
			var doc struct {
				Attempts []struct {
					Engine string         `json:"engine"`
					Shape  map[string]any `json:"shape"`
				} `json:"attempts"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Attempts) != 1 || doc.Attempts[0].Engine != "vllm" || doc.Attempts[0].Shape["max_model_len"] != 4096.0 {
				t.Fatalf("the lines after the hostile one were not processed: %s", out)
			}
		})
	}
}

// TestHostileNamesAndRecords: a unit name with terminal escapes is printed
// escaped; a journal record that names no unit or container makes no
// attempt (it used to make a phantom text attempt).
func TestHostileNamesAndRecords(t *testing.T) {
	unit := "evil\x1b]0;pwned\x07\x1b[2J.service"
	recs := []map[string]any{
		{"__CURSOR": "c1", "__REALTIME_TIMESTAMP": "1790916000000000", "_HOSTNAME": "h", "_SYSTEMD_UNIT": unit,
			"_SYSTEMD_INVOCATION_ID": "0123456789abcdef0123456789abcdef", "_TRANSPORT": "stdout",
			"MESSAGE": "INFO 10-01 21:40:00 [api_server.py:1] vLLM API server version 0.19.2"},
		{"__CURSOR": "c2", "__REALTIME_TIMESTAMP": "1790916001000000", "_HOSTNAME": "h",
			"MESSAGE": "vLLM API server version 0.19.2 from a record of no unit"},
	}
	var b strings.Builder
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "evil.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runCmd(t, "explain", path)
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `evil\x1b]0;pwned\x07\x1b[2J.service`) {
		t.Errorf("the unit name reached the terminal unescaped:\n%q", out)
	}
	var doc struct {
		Attempts []map[string]any `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(runCmd(t, "explain", "--format", "json", path)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Attempts) != 1 {
		t.Errorf("%d attempts, want 1 (the record of no unit makes none)", len(doc.Attempts))
	}
}

// TestReplayWithBadRulesLeavesNoDatabase: the rules compile while the
// database opens, so a rule file that does not load fails the run with its
// own error and removes the database the run made, but not one that was
// there before.
func TestReplayWithBadRulesLeavesNoDatabase(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "rules")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x.yaml"), []byte("not: [valid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	input := "../../examples/dankserver-night-ladder.journal.json"
	db := filepath.Join(dir, "new.db")
	err := run(context.Background(), []string{"replay", "--rules", bad, "--db", db, input})
	if err == nil || !strings.Contains(err.Error(), "x.yaml:1") {
		t.Fatalf("err = %v, want the rule file's", err)
	}
	if left, _ := filepath.Glob(db + "*"); len(left) > 0 {
		t.Errorf("the run left %v", left)
	}
	old := filepath.Join(dir, "old.db")
	if err := run(context.Background(), []string{"replay", "--db", old, input}); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"replay", "--rules", bad, "--db", old, input}); err == nil {
		t.Fatal("no error")
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("the database that was there: %v", err)
	}
}

// TestReplayOfADirectoryCreatesNothing: a wrong argument fails before the
// database file is made.
func TestReplayOfADirectoryCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	err := run(context.Background(), []string{"replay", "--db", db, dir})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}

// TestHostileLinesThroughServe sends each hostile log through the push
// endpoint and through a followed journal file: serve stays up, and both
// attempts are judged and stored within seconds.
func TestHostileLinesThroughServe(t *testing.T) {
	journaldtest.Ensure(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	stop := serveInProcess(t, "--db", filepath.Join(t.TempDir(), "s.db"), "--journal-dir", dir,
		"--since", "2000-01-01T00:00:00Z", "--no-notes", "--listen", addr)
	defer stop()
	base := "http://" + addr
	waitServing(t, base)
	at := time.Now().Add(-time.Hour)
	i := 0
	for name, text := range hostileLogs {
		i++
		lines := strings.Split(strings.TrimSpace(text), "\n")
		// Push: the version line is pushAttempt's own, then each line.
		inv := fmt.Sprintf("0123456789abcdef0123456789abcd%02d", i)
		for _, l := range lines[1:] {
			pushAttempt(t, base, inv, at, l)
		}
		if v := verdictOf(t, base, inv); v == "" {
			t.Errorf("%s: pushed attempt stored without a verdict", name)
		}
		// Journal: one record per line, written by systemd-journal-remote.
		var recs [][]byte
		for k, l := range lines {
			recs = append(recs, []byte(fmt.Sprintf("__REALTIME_TIMESTAMP=%d\n_HOSTNAME=hostile-journal\n_SYSTEMD_UNIT=vllm.service\n"+
				"_SYSTEMD_INVOCATION_ID=fedcba9876543210fedcba98765432%02d\n_TRANSPORT=stdout\nMESSAGE=%s\n\n",
				at.Add(time.Duration(k)*time.Second).UnixMicro(), i, l)))
		}
		journaldtest.AppendJournal(t, filepath.Join(dir, fmt.Sprintf("hostile-%d.journal", i)), recs)
		want := fmt.Sprintf("fedcba9876543210fedcba98765432%02d", i)
		waitFor(t, name+" through the journal", func() bool {
			code, body := httpDo(t, http.MethodGet, base+"/api/v1/attempts?host=hostile-journal")
			return code == 200 && strings.Contains(body, want)
		})
		at = at.Add(time.Minute)
	}
	if code, body := httpDo(t, http.MethodGet, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz after the hostile logs: %d %s", code, body)
	}
}

// TestReadyFailsOnGarbagePages: a database file with 8 pages of garbage
// (the reviewer's case) is not ready: the quick_check serve runs at start
// fails, and so does the read of the newest attempts that /-/ready makes,
// while the same checks pass on the intact file.
func TestReadyFailsOnGarbagePages(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "a.db")
	runCmd(t, append([]string{"replay", "--db", dbPath}, fixtures...)...)
	ready := func() (int, string) {
		t.Helper()
		db, err := store.Open(dbPath)
		if err != nil {
			return 0, "open: " + err.Error()
		}
		defer db.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		health := healthChecks(ctx, db, dbPath, nil)
		srv := httptest.NewServer(web.New(db, web.Options{Health: health}))
		defer srv.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get(srv.URL + "/-/ready")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), "database-integrity ok: checking") || time.Now().After(deadline) {
				return resp.StatusCode, string(b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if code, body := ready(); code != http.StatusOK || !strings.Contains(body, "database-integrity ok\n") {
		t.Fatalf("intact database: %d %q", code, body)
	}
	f, err := os.OpenFile(dbPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	const page = 4096
	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 8*page)
	rng.Read(garbage)
	at := st.Size() / page / 2 * page
	if _, err := f.WriteAt(garbage, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, body := ready()
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "fail\n") || !strings.Contains(body, "database-integrity FAIL") {
		t.Errorf("8 garbage pages at byte %d of %d: %d %q", at, st.Size(), code, body)
	}
}
