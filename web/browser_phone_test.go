package web

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmfleet/analyzer/domain"
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
