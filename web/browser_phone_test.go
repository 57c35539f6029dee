package web

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
)

// TestBrowserPhone: at 390 × 844 px (a phone) no page of the list, the
// ladders or the failures scrolls sideways, the first row's verdict is in
// view, the filters are folded so the table starts on the first screen,
// and the log view puts each line's time above its message, which keeps
// at least 30 characters of width.
func TestBrowserPhone(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	db := replayFixtures(t, t.TempDir())
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	oom, err := db.ListAttempts(context.Background(), domain.AttemptFilter{Verdict: "oom_graph_capture", Host: "dankserver"})
	if err != nil || len(oom) == 0 {
		t.Fatalf("oom attempts: %d, %v", len(oom), err)
	}
	const width, height = 390, 844
	ctx, _ := startChromium(t, width, height)
	b := &browser{t: t, ctx: ctx, out: artifactsDir(t)}
	// Headless Chromium's window is at least 500 px wide: the viewport is
	// emulated, as a phone's.
	b.do("phone viewport", chromedp.EmulateViewport(width, height))
	for _, p := range []struct{ name, path, table, verdict string }{
		{"list", "/", "table.attempts", "table.attempts tbody tr:first-child .badge"},
		{"ladders", "/ladders", "table.ladders", "table.ladders tbody tr:first-child .chip"},
		{"failures", "/failures", "table.failures", "table.failures tbody tr:first-child .badge"},
	} {
		b.do(p.name, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.table)))
		b.fits(width, p.name)
		b.verdictInView(p.verdict)
		if open := b.eval(`String(document.querySelector("details.filters-fold").open)`); open != "false" {
			t.Errorf("%s: the filters are not folded (open = %s)", p.name, open)
		}
		if y := b.evalInt(`Math.round(document.querySelector("` + p.table + ` tbody tr:first-child").getBoundingClientRect().top)`); y > height/2 {
			t.Errorf("%s: the first row starts at y = %d px", p.name, y)
		}
		b.shot("phone-" + p.name + ".png")
	}
	b.do("log", chromedp.Navigate(srv.URL+attemptURL(oom[0].ID)+"/log"), chromedp.WaitVisible(chromedp.CSS(".log.full .entry")))
	b.fits(width, "log")
	// Width of the message column in characters of the log's font.
	chars := b.evalInt(`(() => { const m = document.querySelector(".log.full .entry .msg");
		const probe = document.createElement("span"); probe.textContent = "0".repeat(100); m.appendChild(probe);
		const w = probe.getBoundingClientRect().width / 100; probe.remove();
		return Math.floor(m.getBoundingClientRect().width / w); })()`)
	if chars < 30 {
		t.Errorf("the log's message column holds %d characters, want 30 or more", chars)
	}
	if above := b.eval(`(() => { const e = document.querySelector(".log.full .entry");
		return String(e.querySelector(".ts").getBoundingClientRect().bottom <= e.querySelector(".msg").getBoundingClientRect().top + 1); })()`); above != "true" {
		t.Error("the time is not above the message")
	}
	b.shot("phone-log.png")
	// The wide window keeps the filters open and their summary hidden.
	wide, _ := startChromium(t, 1440, 900)
	w := &browser{t: t, ctx: wide, out: artifactsDir(t)}
	w.do("wide list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("form.filters select")))
	if s := w.eval(`String(document.querySelector("details.filters-fold").open) + " " + getComputedStyle(document.querySelector("details.filters-fold > summary")).display`); s != "true none" {
		t.Errorf("at 1440 px the filters fold: %s", s)
	}
}

// TestBrowserPhoneBoots: at 390 px the attempts page's boots in progress
// fit the window: a long unit name wraps, the bar segmented by phase
// spans the card with each phase as wide as its share (graph capture 3 of
// 7 min) and the ETA is in view.
func TestBrowserPhoneBoots(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	const unit = "vllm-qwen3-235b-a22b-instruct-2507-fp8-tp8-graph-capture-sizes.service"
	as := fixturetest.ReadyBoots("gpu1", unit, now, 2*time.Minute, 3*time.Minute, 4*time.Minute, 3*time.Minute)
	s := now.Add(-4 * time.Minute)
	as = append(as, &domain.Attempt{ID: "booting", Host: "gpu1", Unit: unit, Engine: "vllm", StartedAt: s, Phase: domain.PhaseGraphCapture,
		Verdict: domain.VerdictRunning, Shape: domain.Shape{}, LastLineAt: s.Add(3 * time.Minute),
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: s.Add(time.Minute)}, {Phase: domain.PhaseGraphCapture, Time: s.Add(3 * time.Minute)}}})
	srv := serveAttempts(t, as, Options{Location: time.UTC, Now: func() time.Time { return now }})
	const width, height = 390, 844
	ctx, _ := startChromium(t, width, height)
	b := &browser{t: t, ctx: ctx, out: artifactsDir(t)}
	b.do("phone viewport", chromedp.EmulateViewport(width, height))
	b.do("list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("section.boots svg.segbar")))
	b.fits(width, "list with a boot in progress")
	bar := b.evalInt(`Math.round(document.querySelector("section.boots .segbar").getBoundingClientRect().width)`)
	if bar < 300 || bar > width {
		t.Errorf("the bar is %d px wide in a %d px window", bar, width)
	}
	capture := b.evalInt(`Math.round(document.querySelector("section.boots .seg.current rect.all").getBoundingClientRect().width)`)
	if want := bar * 3 / 7; capture < want-3 || capture > want+3 {
		t.Errorf("graph capture is %d px of a %d px bar, want %d (3 of 7 min)", capture, bar, want)
	}
	b.verdictInView("section.boots .eta")
	if fill := b.evalInt(`Math.round(document.querySelector("section.boots .seg.current rect.fill").getBoundingClientRect().width)`); fill < capture/3-3 || fill > capture/3+3 {
		t.Errorf("graph capture is filled %d px of %d, want a third (1 of 3 min)", fill, capture)
	}
	if eta := b.eval(`document.querySelector("section.boots .eta").innerText`); eta != "ready in ~3m0s (p90 4m0s), from 4 boots" {
		t.Errorf("ETA %q", eta)
	}
	b.shot("phone-boots.png")
}
