package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/store"
)

// saveWatchedBoots stores four ready boots of gpu1/vllm.service whose graph
// capture took 2-4 min, and three boots in progress: one 1 min into graph
// capture, one 20 min into it, and one of a unit with no history.
func saveWatchedBoots(t *testing.T, db string) {
	t.Helper()
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	as := fixturetest.ReadyBoots("gpu1", "vllm.service", now, 2*time.Minute, 3*time.Minute, 4*time.Minute, 3*time.Minute)
	for _, b := range []struct {
		id, unit  string
		inCapture time.Duration
	}{{"healthy", "vllm.service", time.Minute}, {"wedged", "vllm.service", 20 * time.Minute}, {"fresh", "new.service", 20 * time.Minute}} {
		st := now.Add(-3*time.Minute - b.inCapture)
		as = append(as, &domain.Attempt{ID: b.id, Host: "gpu1", Unit: b.unit, InvocationID: b.id, Engine: "vllm", StartedAt: st,
			Phase: domain.PhaseGraphCapture, Verdict: domain.VerdictRunning, Shape: domain.Shape{},
			Timeline: []domain.PhaseMark{{Phase: domain.PhaseGraphCapture, Time: st.Add(3 * time.Minute)}}})
	}
	if err := s.SaveAttempts(t.Context(), as, nil); err != nil {
		t.Fatal(err)
	}
}

// TestWatch: `analyzer watch` against a real serve shows each boot in
// progress: through a pipe as plain lines, once each; under a
// pseudo-terminal redrawn in place (cursor up, clear) at every interval.
func TestWatch(t *testing.T) {
	bin := analyzerBinary(t)
	db := filepath.Join(t.TempDir(), "w.db")
	saveWatchedBoots(t, db)
	addr := freeAddr(t)
	base := "http://" + addr
	srv := exec.CommandContext(t.Context(), bin, "serve", "--db", db, "--no-journal", "--listen", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	waitServing(t, base)

	out, err := exec.CommandContext(t.Context(), bin, "watch", "--url", base, "--once").Output()
	if err != nil {
		t.Fatalf("watch --once: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := map[string]string{
		"gpu1 vllm.service  graph_capture 1m":  "ready in ~",
		"gpu1 vllm.service  graph_capture 20m": "STALLED: graph_capture for 20m",
		"gpu1 new.service  graph_capture 20m":  "STALLED: nothing printed for 15m00s or more",
	}
	if len(lines) != 3 || bytes.Contains(out, []byte("\x1b[")) {
		t.Fatalf("piped watch: %d lines, want 3 plain ones:\n%q", len(lines), out)
	}
	for head, tail := range want {
		found := false
		for _, l := range lines {
			if strings.Contains(l, head) && strings.Contains(l, tail) {
				found = true
			}
		}
		if !found {
			t.Errorf("piped watch: no line with %q and %q:\n%s", head, tail, out)
		}
	}
	// 3 min to ready, less the seconds the serve took to start since the
	// boots were saved (a loaded machine takes more than half of one).
	if !regexp.MustCompile(`ready in ~(3m00s|2m5\ds) \(<=(4m00s|3m5\ds), 4 boots\)`).MatchString(string(out)) {
		t.Errorf("piped watch: the healthy boot is not 3 min from ready:\n%s", out)
	}
	if !strings.Contains(string(out), "[#") || !strings.Contains(string(out), "4 boots)") {
		t.Errorf("piped watch: no bar or basis for the healthy boot:\n%s", out)
	}

	// Under a pseudo-terminal: the header and three lines, redrawn.
	cmd := exec.CommandContext(t.Context(), bin, "watch", "--url", base, "--interval", "200ms")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); tty.Close() }()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			screen.Write(buf[:n])
			if err != nil || bytes.Count(screen.Bytes(), []byte("\x1b[4A\x1b[J")) >= 2 {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	got := screen.String()
	if strings.Count(got, "\x1b[4A\x1b[J") < 2 || strings.Count(got, "3 boot(s) in progress") < 3 || !strings.Contains(got, "STALLED: graph_capture for 20m") {
		t.Errorf("watch on a terminal: want the 4 lines redrawn in place at least twice:\n%q", got)
	}
}

// lineWaiter reads a command's output lines as they come.
type lineWaiter struct {
	t     *testing.T
	lines chan string
	seen  []string
}

// startWatch runs `analyzer watch ARGS...` through a pipe until the test
// ends, and waits on its lines.
func startWatch(t *testing.T, bin string, args ...string) *lineWaiter {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"watch"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return newLineWaiter(t, stdout)
}

func newLineWaiter(t *testing.T, r io.Reader) *lineWaiter {
	w := &lineWaiter{t: t, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	return w
}

// next waits (up to 15 s) for a line containing every one of want.
func (w *lineWaiter) next(want ...string) string {
	w.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("output ended; no line with %q after:\n%s", want, strings.Join(w.seen, "\n"))
			}
			w.seen = append(w.seen, l)
			all := true
			for _, s := range want {
				all = all && strings.Contains(l, s)
			}
			if all {
				return l
			}
		case <-deadline:
			w.t.Fatalf("no line with %q in 15 s:\n%s", want, strings.Join(w.seen, "\n"))
		}
	}
}

// appendFile appends b to path, as a journalctl -o json > path would.
func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestWatchFollowsAFile: `analyzer watch --file` reads a journal capture
// being appended to (journalctl -o json), through a pipe: three earlier
// boots of the unit (graph capture 20-40 s, ready a minute later) give
// the new boot its estimate; the new boot shows in weights, then a line
// when it enters graph capture with the time to ready those boots give,
// then one when it is ready (no longer booting). Each state is printed
// once, as plain lines.
func TestWatchFollowsAFile(t *testing.T) {
	bin := analyzerBinary(t)
	file := filepath.Join(t.TempDir(), "journal.json")
	now := time.Now()
	var recs []map[string]string
	for i, c := range []time.Duration{20 * time.Second, 30 * time.Second, 40 * time.Second} {
		recs = append(recs, journalBoot{host: "gpu7", unit: "vllm-file.service", inv: fmt.Sprintf("earlier%d", i),
			start: now.Add(time.Duration(i-10) * time.Hour), capture: c, stopAt: 30 * time.Minute}.records(-1)...)
	}
	// The new boot started 3m5s ago: its capture line is 5 s old.
	boot := journalBoot{host: "gpu7", unit: "vllm-file.service", inv: "new", start: now.Add(-3*time.Minute - 5*time.Second), capture: 30 * time.Second}
	all := boot.records(-1)
	recs = append(recs, boot.records(150*time.Second)...)
	appendFile(t, file, jsonLines(t, recs))
	out := startWatch(t, bin, "--file", file, "--interval", "200ms")
	out.next("gpu7 vllm-file.service  weights ", "3 boots)")
	// Graph capture: the earlier boots had their capture (20, 30, 40 s)
	// and a minute of warmup left on entering it, less the 5 s it has
	// been in it: p50 85 s, p90 95 s.
	appendFile(t, file, jsonLines(t, all[4:5]))
	l := out.next("gpu7 vllm-file.service  graph_capture ")
	m := regexp.MustCompile(`ready in ~1m(\d\d)s \(<=1m(\d\d)s, 3 boots\)`).FindStringSubmatch(l)
	if m == nil {
		t.Fatalf("graph capture line %q: no ETA from 3 boots", l)
	}
	p50, _ := strconv.Atoi(m[1])
	p90, _ := strconv.Atoi(m[2])
	if p50 < 22 || p50 > 25 || p90-p50 != 10 {
		t.Errorf("graph capture line %q: want ready in ~1m25s (<=1m35s), less the seconds since", l)
	}
	appendFile(t, file, jsonLines(t, all[5:]))
	out.next("no longer booting")
	for _, l := range out.seen {
		if strings.Contains(l, "\x1b[") {
			t.Errorf("piped watch drew on a terminal: %q", l)
		}
	}
	if n := len(out.seen); n != 3 {
		t.Errorf("%d lines, want 3 (weights, graph capture, ready):\n%s", n, strings.Join(out.seen, "\n"))
	}
}

// TestWatchSourcesExclude: one source at a time.
func TestWatchSourcesExclude(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--file", "x.json", "--journal"}, "give one of --journal, --directory and --file"},
		{[]string{"--directory", "d", "--url", "http://127.0.0.1:1"}, "--url watches a serve"},
	} {
		err := run(t.Context(), append([]string{"watch"}, c.args...))
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(ue.msg, c.want) {
			t.Errorf("watch %v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

// TestWatchFollowsAJournalDirectory: `analyzer watch --directory` reads
// journal files (written by systemd-journal-remote) through the journal
// follower serve uses: the earlier boots in them give the new boot, silent
// in graph capture, its estimate and, past max(3 × p90, p90 +
// --stall-floor), its stall; printed as plain lines through a pipe.
func TestWatchFollowsAJournalDirectory(t *testing.T) {
	journaldtest.NeedJournalRemote(t)
	bin := analyzerBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "remote.journal")
	host := fmt.Sprintf("watchdir-%d", time.Now().UnixNano())
	now := time.Now()
	var recs []map[string]string
	for i := range 3 { // graph capture 2 s, ready 10 s later
		recs = append(recs, journalBoot{host: host, unit: "vllm-dir.service", inv: fmt.Sprintf("%s-%d", host, i), start: now.Add(time.Duration(i-10) * time.Hour),
			pre: 30 * time.Second, capture: 2 * time.Second, stopAt: 10 * time.Minute}.records(-1)...)
	}
	appendJournal(t, file, exportOf(t, recs))
	out := startWatch(t, bin, "--directory", dir, "--interval", "200ms", "--stall-floor", "1s")
	boot := journalBoot{host: host, unit: "vllm-dir.service", inv: host + "-new", start: time.Now(), pre: 300 * time.Millisecond}
	time.Sleep(boot.pre)
	appendJournal(t, file, exportOf(t, boot.records(-1)))
	// On entering capture, the earlier boots had 2 s of it and 10 s of
	// warmup left: 12 s, the same for all three.
	l := out.next(host+" vllm-dir.service  graph_capture ", "3 boots)")
	if !regexp.MustCompile(`ready in ~1[12]s \(<=1[12]s, 3 boots\)`).MatchString(l) {
		t.Errorf("graph capture line %q: want ready in ~12s less the time since", l)
	}
	// The limit is max(3 × 2 s, 2 s + 1 s) = 6 s.
	l = out.next(host+" vllm-dir.service  graph_capture ", "STALLED: graph_capture for ", "usually 2s-2s")
	t.Logf("%s\n%s", strings.Join(out.seen[:len(out.seen)-1], "\n"), l)
}
