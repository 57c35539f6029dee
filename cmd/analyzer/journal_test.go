package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
)

func exportRecords(t *testing.T, path, host string) [][]byte {
	return journaldtest.ExportRecords(t, path, host)
}

func appendJournal(t *testing.T, file string, recs [][]byte) {
	journaldtest.AppendJournal(t, file, recs)
}

// want returns the attempts explain finds in a fixture whose hostname is
// replaced by host, keyed by unit and invocation.
func wantAttempts(t *testing.T, path, host string) map[string]*domain.Attempt {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "in.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		m["_HOSTNAME"] = host
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := rules.LoadSource("")
	if err != nil {
		t.Fatal(err)
	}
	as, err := analyzeFiles(context.Background(), "explain", loaded(set), []string{tmp}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*domain.Attempt{}
	for _, a := range as {
		out[a.Unit+" "+a.InvocationID] = a
	}
	return out
}

// compareStored checks the database against the attempts explain finds:
// same attempts, verdicts, phases, findings, shape, end, and evidence lines
// (by text: the journal files assign their own cursors).
func compareStored(t *testing.T, dbPath string, want map[string]*domain.Attempt) {
	t.Helper()
	got := listStored(t, dbPath)
	if len(got) != len(want) {
		t.Errorf("database holds %d attempts, want %d", len(got), len(want))
	}
	for _, g := range got {
		w := want[g.Unit+" "+g.InvocationID]
		if w == nil {
			t.Errorf("unexpected attempt %s %s", g.Unit, g.InvocationID)
			continue
		}
		gs, ws := fingerprintAttempt(g), fingerprintAttempt(w)
		if gs != ws {
			t.Errorf("attempt %s %s:\n got %s\nwant %s", g.Unit, g.InvocationID, gs, ws)
		}
	}
}

// loaded is analyzeFiles' load for a set the test compiled already.
func loaded(set *rules.Set) func() (*rules.Set, error) {
	return func() (*rules.Set, error) { return set, nil }
}

func fingerprintAttempt(a *domain.Attempt) string {
	f := a.FindingIDs()
	sort.Strings(f)
	var ev []string
	for _, e := range a.Evidence {
		ev = append(ev, e.Message)
	}
	sort.Strings(ev)
	sh, _ := json.Marshal(a.Shape)
	exit := "-"
	if a.ExitStatus != nil {
		exit = fmt.Sprint(*a.ExitStatus)
	}
	return fmt.Sprintf("%s %s %s exit=%s findings=%v shape=%s evidence=%d:%x", a.Verdict, a.Phase, a.EndedBy, exit, f, sh,
		len(ev), strings.Join(ev, "\x00"))
}

// serveInProcess runs `analyzer serve` on a journal directory until stop is called.
func serveInProcess(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)) }()
	return func() {
		// A connection the client dialed for a request that then went out
		// on one that had just come back idle is never used: the server
		// waits 5 s for it before Shutdown counts it idle (net/http).
		http.DefaultClient.CloseIdleConnections()
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		// The shutdown includes the final flush of what was pushed: CPU-bound.
		if d := time.Since(start); d > race.Budget(3*time.Second) {
			t.Errorf("serve took %v to shut down", d)
		}
	}
}

func countAttempts(dbPath string) (attempts, ended int) {
	db, err := sql.Open("sqlite3", dbPath+"?mode=ro")
	if err != nil {
		return 0, 0
	}
	defer db.Close()
	_ = db.QueryRow(`SELECT COUNT(*), COUNT(NULLIF(ended_by, '')) FROM attempts`).Scan(&attempts, &ended)
	return
}

// waitServing waits until serve at base answers /healthz with 200.
func waitServing(t *testing.T, base string) {
	t.Helper()
	waitFor(t, "serve to answer", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeFollowsJournalFiles turns both fixtures into journal files with
// systemd-journal-remote, appending them in chunks while serve follows the
// directory, and checks the attempts in SQLite against explain's.
func TestServeFollowsJournalFiles(t *testing.T) {
	host := fmt.Sprintf("follow-%d", time.Now().UnixNano())
	night := exportRecords(t, "../../examples/dankserver-night-ladder.journal.json", host)
	day := exportRecords(t, "../../examples/dankclaw-day.journal.json", host+"-day")
	dir, dbPath := t.TempDir(), filepath.Join(t.TempDir(), "a.db")
	// The day host's entries are older than the night's: a journal reader
	// merges files by time, so they are appended first, as they happened.
	appendJournal(t, filepath.Join(dir, "day.journal"), day[:10])
	stop := serveInProcess(t, "--db", dbPath, "--journal-dir", dir, "--since", "2000-01-01T00:00:00Z", "--no-notes")
	chunks := func(recs [][]byte, n int) [][][]byte {
		var out [][][]byte
		for i := 0; i < n; i++ {
			out = append(out, recs[i*len(recs)/n:(i+1)*len(recs)/n])
		}
		return out
	}
	for _, c := range chunks(day[10:], 3) {
		appendJournal(t, filepath.Join(dir, "day.journal"), c)
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range chunks(night, 5) {
		appendJournal(t, filepath.Join(dir, "night.journal"), c)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "20 attempts, 18 ended", func() bool { n, e := countAttempts(dbPath); return n == 20 && e == 18 })
	stop()
	want := wantAttempts(t, "../../examples/dankserver-night-ladder.journal.json", host)
	for k, v := range wantAttempts(t, "../../examples/dankclaw-day.journal.json", host+"-day") {
		want[k] = v
	}
	compareStored(t, dbPath, want)
}

// TestServeSurvivesSIGKILL appends the night fixture in 20 chunks and kills
// the analyzer with SIGKILL at a random point after each, restarting it
// every time; the database and the notes in the journal must end exactly as
// an uninterrupted run leaves them: no attempt, finding, evidence line or
// note lost or repeated.
func TestServeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: the SIGKILL test builds the binary and restarts it 20 times")
	}
	journaldtest.Ensure(t)
	host := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	recs := exportRecords(t, "../../examples/dankserver-night-ladder.journal.json", host)
	bin := analyzerBinary(t)
	dir, dbPath := t.TempDir(), filepath.Join(t.TempDir(), "a.db")
	args := []string{"serve", "--db", dbPath, "--journal-dir", dir, "--since", "2000-01-01T00:00:00Z", "--listen", "127.0.0.1:0"}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	t.Logf("seed host %s", host)
	const kills = 20
	for i := 0; i < kills; i++ {
		appendJournal(t, filepath.Join(dir, "night.journal"), recs[i*len(recs)/kills:(i+1)*len(recs)/kills])
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.Intn(400)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
	// The last run is left to finish, then stopped with SIGTERM.
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := wantAttempts(t, "../../examples/dankserver-night-ladder.journal.json", host)
	findings := 0
	for _, a := range want {
		findings += len(a.Findings)
	}
	waitFor(t, "16 attempts ended", func() bool { n, e := countAttempts(dbPath); return n == 16 && e == 16 })
	waitFor(t, "every note recorded", func() bool {
		db, err := store.Open(dbPath)
		if err != nil {
			return false
		}
		defer db.Close()
		n, _ := db.CountNotes(context.Background())
		return n == findings
	})
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("analyzer exited with %v: %s", err, stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	compareStored(t, dbPath, want)

	// Every finding has exactly one note in the journal.
	_ = exec.Command("journalctl", "--sync").Run()
	out, err := exec.Command("journalctl", "SYSLOG_IDENTIFIER=analyzer", "-o", "json", "--no-pager").Output()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, a := range want {
		ids[a.ID] = true
	}
	notes := map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if a, _ := m["ANALYZER_ATTEMPT"].(string); ids[a] {
			notes[a+" "+fmt.Sprint(m["ANALYZER_FINDING"])]++
		}
	}
	for _, a := range want {
		for _, f := range a.Findings {
			if n := notes[a.ID+" "+f.ID]; n != 1 {
				t.Errorf("%s %s: %d notes in the journal, want 1", a.Unit, f.ID, n)
			}
		}
	}
	if len(notes) != findings {
		t.Errorf("%d distinct notes, want %d", len(notes), findings)
	}
}

// TestServeStoppedWhileStarting: a stop (SIGTERM) that arrives while serve
// is still reading its saved journal position ends it cleanly, as a stop
// after start-up does (the SIGKILL test once caught exit status 1 here).
func TestServeStoppedWhileStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, []string{"serve", "--db", filepath.Join(t.TempDir(), "s.db"), "--journal-dir", t.TempDir(),
		"--listen", "127.0.0.1:0", "--no-notes"})
	if err != nil {
		t.Fatalf("serve stopped during start-up returned %v, want a clean stop", err)
	}
}

// TestServeOutlivesJournalFileChanges follows a directory whose journal
// file is truncated under the reader, then deleted and made again, then
// rotated away (renamed) with a new file in its place; then the directory
// itself is replaced, and finally a file of another host arrives whose
// entries are older than the read position. serve must keep answering, go
// on reading what is appended after each change, report no gap where
// nothing unread was lost, and record the last two losses as journal_gap
// ingest errors and a log_loss finding.
func TestServeOutlivesJournalFileChanges(t *testing.T) {
	host := fmt.Sprintf("churn-%d", time.Now().UnixNano())
	recs := exportRecords(t, "../../examples/dankserver-night-ladder.journal.json", host)
	dir, dbPath := t.TempDir(), filepath.Join(t.TempDir(), "a.db")
	file := filepath.Join(dir, "night.journal")
	third := len(recs) / 3
	appendJournal(t, file, recs[:third-20])
	addr := freeAddr(t)
	stop := serveInProcess(t, "--db", dbPath, "--journal-dir", dir, "--since", "2000-01-01T00:00:00Z", "--no-notes", "--listen", addr)
	defer stop()
	base := "http://" + addr
	healthy := func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	waitFor(t, "the first part read", func() bool { n, _ := countAttempts(dbPath); return n > 0 })
	time.Sleep(500 * time.Millisecond)
	first, _ := countAttempts(dbPath)

	// Truncated under the reader, mid-read: the open file shrinks while
	// entries just appended are being read.
	for i := 0; i < 20; i++ {
		appendJournal(t, file, recs[third-20+i:third-19+i])
		if err := os.Truncate(file, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the child dies or errs; the supervisor restarts it
	if !healthy() {
		t.Fatal("serve stopped answering /healthz after the journal file was truncated")
	}

	// Deleted and made again with the second third.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	appendJournal(t, file, recs[third:2*third])
	waitFor(t, "the second third read", func() bool { n, _ := countAttempts(dbPath); return n > first })

	// Rotated: renamed like an archived file, a new one takes its place.
	if err := os.Rename(file, filepath.Join(dir, "night@0000000000000000000000000000000-0000000000000001-0000000000000001.journal")); err != nil {
		t.Fatal(err)
	}
	appendJournal(t, file, recs[2*third:])
	want := wantAttempts(t, "../../examples/dankserver-night-ladder.journal.json", host)
	waitFor(t, "every attempt, all ended", func() bool {
		n, e := countAttempts(dbPath)
		return n == len(want) && e == len(want)
	})
	if !healthy() {
		t.Fatal("serve stopped answering /healthz")
	}
	if n := gapErrors(t, base); n != 0 {
		t.Fatalf("%d journal gaps reported where nothing unread was lost", n)
	}

	// The directory deleted and made again: the child would go on
	// watching the deleted one. The saved cursor is gone with it, so what
	// followed it cannot be known read: a gap.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	again := exportRecords(t, "../../examples/dankserver-night-ladder.journal.json", host+"-again")
	appendJournal(t, file, shiftRecords(t, again[:third], 12*time.Hour))
	waitFor(t, "the recreated directory read", func() bool { n, _ := countAttempts(dbPath); return n > len(want) })
	gaps := gapErrors(t, base)

	// A late host: its entries predate the read position (a merged,
	// time-ordered read skips them). Then a third host logs a day later.
	day := exportRecords(t, "../../examples/dankclaw-day.journal.json", host+"-late")
	appendJournal(t, filepath.Join(dir, "late.journal"), day)
	waitFor(t, "the late file's gap", func() bool { return gapErrors(t, base) > gaps })
	after := exportRecords(t, "../../examples/dankserver-night-ladder.journal.json", host+"-after")
	appendJournal(t, filepath.Join(dir, "after.journal"), shiftRecords(t, after[:third], 24*time.Hour))
	waitFor(t, "a log_loss finding", func() bool {
		for _, a := range listStored(t, dbPath) {
			for _, f := range a.Findings {
				if f.ID == domain.FindingLogLoss {
					return true
				}
			}
		}
		return false
	})
	waitFor(t, "the attempts after the late file", func() bool {
		code, body := httpDo(t, http.MethodGet, base+"/api/v1/attempts?host="+host+"-after")
		return code == 200 && strings.Contains(body, `"invocation_id"`)
	})
}

// shiftRecords moves export records by d into a new boot (a reader orders
// entries of one boot by their monotonic time, not by d).
func shiftRecords(t *testing.T, recs [][]byte, d time.Duration) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range recs {
		lines := strings.Split(string(r), "\n")
		for i, l := range lines {
			if v, ok := strings.CutPrefix(l, "__REALTIME_TIMESTAMP="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				lines[i] = "__REALTIME_TIMESTAMP=" + strconv.FormatInt(us+d.Microseconds(), 10)
			}
			if strings.HasPrefix(l, "_BOOT_ID=") {
				lines[i] = fmt.Sprintf("_BOOT_ID=%032x", d.Microseconds())
			}
		}
		out = append(out, []byte(strings.Join(lines, "\n")))
	}
	return out
}

// gapErrors is the journal_gap ingest error count on /metrics.
func gapErrors(t *testing.T, base string) int {
	_, metrics := httpDo(t, http.MethodGet, base+"/metrics")
	n := 0
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "analyzer_ingest_errors_total{") && strings.Contains(l, `reason="journal_gap"`) {
			f := strings.Fields(l)
			v, _ := strconv.Atoi(f[len(f)-1])
			n += v
		}
	}
	return n
}
