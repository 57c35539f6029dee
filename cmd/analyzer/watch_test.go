package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
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
		"gpu1 vllm.service  graph_capture 1m":  "ready in ~3m",
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
