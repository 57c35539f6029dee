package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// TestServeFlagsAStalledBootLive: a real serve follows a real journal
// directory whose file systemd-journal-remote appends to. The unit's three
// earlier boots (hours ago) spent 2 s in CUDA graph capture; with
// --stall-floor 1s its stall limit is max(3 × 2 s, 2 s + 1 s) = 6 s.
//   - a boot inside its usual times (2 s of capture, then ready) never
//     carries boot_stalled;
//   - a boot that enters graph capture and prints nothing is boot_stalled
//     within 5 s after ten times its usual capture time (20 s): in the
//     attempt API (finding and progress), on its page, in the gauge
//     analyzer_boot_stalled{host,unit} = 1, and with exactly one note in
//     the local journal;
//   - a boot of a unit with no history is stalled only once it printed
//     nothing for --stall-quiet (10 s), and by then 5 s later.
func TestServeFlagsAStalledBootLive(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: a live stall takes half a minute")
	}
	journaldtest.Ensure(t)
	journaldtest.NeedJournalRemote(t)
	bin := analyzerBinary(t)
	host := fmt.Sprintf("stall-%d", time.Now().UnixNano())
	const unit, freshUnit = "vllm-stall.service", "vllm-fresh.service"
	const usual, quiet = 2 * time.Second, 10 * time.Second
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	file := filepath.Join(dir, "remote.journal")
	appendRecs := func(recs []map[string]string) { appendJournal(t, file, exportOf(t, recs)) }

	now := time.Now()
	var past []map[string]string
	for i := range 3 {
		past = append(past, journalBoot{host: host, unit: unit, inv: fmt.Sprintf("%s-past%d", host, i), start: now.Add(time.Duration(i-10) * time.Hour),
			pre: 30 * time.Second, capture: usual, stopAt: 10 * time.Minute}.records(-1)...)
	}
	appendRecs(past)
	addr := freeAddr(t)
	base := "http://" + addr
	cmd := exec.Command(bin, "serve", "--db", db, "--journal-dir", dir, "--since", "2000-01-01T00:00:00Z", "--listen", addr,
		"--stall-floor", "1s", "--stall-quiet", quiet.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	waitServing(t, base)
	waitFor(t, "the three earlier boots stored, ended", func() bool { n, e := countAttempts(db); return n == 3 && e == 3 })

	// attempt is GET /api/v1/attempts/ID of the invocation inv (nil when
	// not stored yet).
	type attemptDoc struct {
		ID       string   `json:"id"`
		Verdict  string   `json:"verdict"`
		Phase    string   `json:"phase"`
		Findings []string `json:"findings"`
		Progress *struct {
			Stalled    bool    `json:"stalled"`
			StallLimit float64 `json:"stall_limit_s"`
			PhaseP90   float64 `json:"phase_p90_s"`
		} `json:"progress"`
	}
	getJSON := func(path string, v any) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	attempt := func(inv string) *attemptDoc {
		var list struct {
			Attempts []attemptDoc `json:"attempts"`
		}
		getJSON("/api/v1/attempts?q="+inv, &list)
		if len(list.Attempts) != 1 {
			return nil
		}
		var a attemptDoc
		if getJSON("/api/v1/attempts/"+list.Attempts[0].ID, &a) != 200 {
			return nil
		}
		return &a
	}
	stalled := func(a *attemptDoc) bool { return a != nil && contains(a.Findings, "boot_stalled") }
	metric := func(re string) string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^` + re + ` (\S+)$`).FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
	gauge := func(u string) string {
		return metric(`analyzer_boot_stalled\{host="` + regexp.QuoteMeta(host) + `",unit="` + regexp.QuoteMeta(u) + `"\}`)
	}
	// notesSent is analyzer_notes_written_total: the notes serve handed to
	// journald.
	notesSent := func() int {
		n, _ := strconv.Atoi(metric(`analyzer_notes_written_total`))
		return n
	}

	// 1. A boot inside its usual times: 2 s of capture, then ready.
	healthy := journalBoot{host: host, unit: unit, inv: host + "-healthy", start: time.Now(), pre: 600 * time.Millisecond, capture: usual, stopAt: 5 * time.Second}
	appendRecs(healthy.records(healthy.pre))
	waitFor(t, "the healthy boot in graph capture", func() bool { a := attempt(healthy.inv); return a != nil && a.Phase == "graph_capture" })
	if a := attempt(healthy.inv); a.Progress == nil || a.Progress.PhaseP90 != usual.Seconds() || a.Progress.StallLimit != 6 || a.Progress.Stalled {
		t.Fatalf("healthy boot in graph capture: %+v", a.Progress)
	}
	time.Sleep(time.Until(healthy.start.Add(healthy.pre + usual)))
	appendRecs(healthy.span(healthy.pre, -1))
	waitFor(t, "the healthy boot ready and stopped", func() bool { a := attempt(healthy.inv); return a != nil && a.Verdict == "ready" })

	// 2 and 3 at once: the wedged boot of the unit, and a boot of a unit
	// with no history, both entering graph capture and going silent.
	sentBefore := notesSent()
	start := time.Now()
	wedged := journalBoot{host: host, unit: unit, inv: host + "-wedged", start: start, pre: 600 * time.Millisecond}
	fresh := journalBoot{host: host, unit: freshUnit, inv: host + "-fresh", start: start, pre: 600 * time.Millisecond}
	time.Sleep(wedged.pre)
	appendRecs(append(wedged.records(-1), fresh.records(-1)...))
	entered := start.Add(wedged.pre) // the last line of both
	deadline := entered.Add(10*usual + 5*time.Second)
	var wedgedAt, freshAt time.Time
	for time.Now().Before(entered.Add(quiet + 5*time.Second + time.Second)) {
		if wedgedAt.IsZero() && stalled(attempt(wedged.inv)) {
			wedgedAt = time.Now()
		}
		if freshAt.IsZero() && stalled(attempt(fresh.inv)) {
			freshAt = time.Now()
		}
		if !wedgedAt.IsZero() && !freshAt.IsZero() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case wedgedAt.IsZero() || wedgedAt.After(deadline):
		t.Errorf("the wedged boot: boot_stalled at %v after entering graph capture, want by %v (10 × %v + 5 s)", wedgedAt.Sub(entered), deadline.Sub(entered), usual)
	case freshAt.IsZero() || freshAt.After(entered.Add(quiet+5*time.Second)):
		t.Errorf("the boot with no history: boot_stalled at %v after its last line, want by %v", freshAt.Sub(entered), quiet+5*time.Second)
	case freshAt.Before(entered.Add(quiet)):
		t.Errorf("the boot with no history stalled %v after its last line, before the quiet limit %v", freshAt.Sub(entered), quiet)
	}
	t.Logf("stalled after entering graph capture: wedged %v (limit 6s), fresh %v (quiet %v)", wedgedAt.Sub(entered).Round(time.Millisecond), freshAt.Sub(entered).Round(time.Millisecond), quiet)

	a := attempt(wedged.inv)
	if a == nil || a.Verdict != "running" || a.Phase != "graph_capture" || a.Progress == nil || !a.Progress.Stalled {
		t.Fatalf("the wedged boot's attempt: %+v", a)
	}
	resp, err := http.Get(base + "/attempts/" + a.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<b>Stalled</b>: graph_capture for ") || !strings.Contains(string(page), "it usually takes 2s-2s") {
		t.Errorf("the wedged boot's page does not say it stalled")
	}
	if g := gauge(unit); g != "1" {
		t.Errorf("analyzer_boot_stalled{host=%q,unit=%q} = %q, want 1", host, unit, g)
	}
	if g := gauge(freshUnit); g != "1" {
		t.Errorf("analyzer_boot_stalled{host=%q,unit=%q} = %q, want 1", host, freshUnit, g)
	}
	if a := attempt(healthy.inv); stalled(a) {
		t.Errorf("the healthy boot carries boot_stalled: %v", a.Findings)
	}

	// One note per stalled boot in the local journal, written once: a few
	// more flushes (2 s apart) write no second one.
	notes := func(id string) int {
		_ = exec.Command("journalctl", "--sync").Run()
		out, err := exec.Command("journalctl", "ANALYZER_ATTEMPT="+id, "ANALYZER_FINDING=boot_stalled", "-o", "json", "--no-pager").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(out), `"ANALYZER_FINDING":"boot_stalled"`)
	}
	// The note goes with the finding, not a FindingGrace (1 min) later:
	// serve has sent both stalled boots' notes within 5 s of the later
	// finding. How soon journald makes a sent entry readable is its own
	// (seconds on a machine busy with -race tests): it gets 30 s.
	last := wedgedAt
	if freshAt.After(last) {
		last = freshAt
	}
	for notesSent() < sentBefore+2 && time.Since(last) < 5*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if n := notesSent() - sentBefore; n != 2 {
		t.Fatalf("serve sent %d notes within 5 s of the two stalled boots' findings, want 2 (analyzer_notes_written_total)", n)
	}
	sent := time.Now()
	for notes(a.ID) == 0 && time.Since(sent) < 30*time.Second {
		time.Sleep(200 * time.Millisecond)
	}
	if notes(a.ID) == 0 {
		t.Fatalf("no boot_stalled note of the wedged boot in the journal 30 s after serve sent it")
	}
	time.Sleep(5 * time.Second)
	if n := notes(a.ID); n != 1 {
		t.Errorf("%d boot_stalled notes of the wedged boot in the journal, want 1", n)
	}
	if a := attempt(healthy.inv); a == nil || notes(a.ID) != 0 {
		t.Errorf("the healthy boot has a boot_stalled note")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
