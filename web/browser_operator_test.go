package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmfleet/analyzer/domain"
)

// TestBrowserOperatorHour walks the UI as an operator does after a night of
// boots, at 1440 and 800 px: a time window typed in the hosts' zone finds
// the attempts listed in it; the dynamo attempt shows its decisive words
// marked on the first screen and its repeated phrase folded; the list and
// the ladder page fit 1440 px and keep the verdict in view at 800 px.
func TestBrowserOperatorHour(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	db := replayFixtures(t, t.TempDir())
	// The server's own zone (UTC) differs from the night host's (-07:00):
	// the filter must still be read in the host's.
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	night := nightLadder(t, db)
	dynamo, err := db.ListAttempts(context.Background(), domain.AttemptFilter{Verdict: "dynamo_constraint_violation", Host: "dankserver"})
	if err != nil || len(dynamo) == 0 {
		t.Fatalf("dynamo attempts: %d, %v", len(dynamo), err)
	}
	out := artifactsDir(t)

	for _, width := range []int{1440, 800} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx, _ := startChromium(t, width, 1000)
			b := &browser{t: t, ctx: ctx, out: out}
			name := func(s string) string { return fmt.Sprintf("hour-%d-%s.png", width, s) }

			// 00:00–00:30 on the host's clock: four attempts start then.
			b.do("filtered list", chromedp.Navigate(srv.URL+"/?since=2026-10-02T00:00&until=2026-10-02T00:30"),
				chromedp.WaitVisible(chromedp.CSS("table.attempts")))
			starts := b.eval(`Array.from(document.querySelectorAll("table.attempts tbody tr td:first-child")).map(td => td.innerText.replace(/\s+/g, " ")).join("|")`)
			want := "2026-10-02 00:27:11 -07:00|2026-10-02 00:21:37 -07:00|2026-10-02 00:16:03 -07:00|2026-10-02 00:10:29 -07:00"
			if starts != want {
				t.Errorf("00:00–00:30 lists %q, want %q", starts, want)
			}
			if s := b.eval(`document.querySelector("p.zone").innerText`); !strings.Contains(s, "each host") {
				t.Errorf("zone line %q does not say whose clock", s)
			}
			b.fits(width, "filtered list")
			b.verdictInView("table.attempts tbody tr:first-child .badge")
			b.shot(name("list"))

			// The dynamo attempt: the decisive words on the first screen,
			// the phrase repeated 78 times folded to one with its count.
			b.do("dynamo attempt", chromedp.Navigate(srv.URL+attemptURL(dynamo[0].ID)), chromedp.WaitVisible(chromedp.CSS(".decisive-box mark")))
			if s := b.eval(`document.querySelector(".decisive-box mark").innerText`); !strings.HasPrefix(s, "Constraints violated (L['query_start_loc'].size()[0])!") {
				t.Errorf("marked words %q", s)
			}
			if y := b.evalInt(`Math.round(document.querySelector(".decisive-box mark").getBoundingClientRect().bottom)`); y > 1000 {
				t.Errorf("the decisive words end at y = %d px, below the first screen", y)
			}
			if s := b.eval(`Array.from(document.querySelectorAll("#decisive .count")).map(c => c.innerText).join(" ")`); !strings.Contains(s, "×78") {
				t.Errorf("folded repeats in the decisive line: %q, want ×78", s)
			}
			if n := b.evalInt(`document.querySelectorAll("#log .entry").length`); n != b.evalInt(`new Set(Array.from(document.querySelectorAll("#log .entry")).map(e => e.innerText)).size`) {
				t.Errorf("a log line is shown twice")
			}
			if n := b.evalInt(`document.querySelectorAll("#log .entry.decisive mark").length`); n != 1 {
				t.Errorf("%d marks in the log, want 1", n)
			}
			if s := b.eval(`document.title`); !strings.Contains(s, "dynamo_constraint_violation") {
				t.Errorf("title %q lacks the verdict", s)
			}
			b.fits(width, "attempt page")
			b.shot(name("dynamo"))

			// One click to the attempt's whole log, scrolled to the
			// decisive line; error lines link to the next.
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("a.full-log"))); err != nil {
				t.Fatalf("click the whole log: %v", err)
			}
			b.do("whole log", chromedp.WaitVisible(chromedp.CSS(".log.full #decisive mark")))
			if n := b.evalInt(`document.querySelectorAll(".log.full .entry").length`); n != 43 {
				t.Errorf("whole log shows %d lines, want 43", n)
			}
			if y := b.evalInt(`Math.round(document.querySelector("#decisive mark").getBoundingClientRect().top)`); y < 0 || y > 1000 {
				t.Errorf("the decisive line is at y = %d px, not in view", y)
			}
			if n := b.evalInt(`document.querySelectorAll(".log.full .errnav a").length`); n < 1 {
				t.Error("no next-error links")
			}
			b.fits(width, "whole log")
			b.shot(name("log"))

			// The ladder page.
			b.do("ladder page", chromedp.Navigate(srv.URL+ladderURL(night.ID)), chromedp.WaitVisible(chromedp.CSS("#ladder-chart")))
			b.fits(width, "ladder page")
			b.verdictInView("#rung-2 .badge")
			b.shot(name("ladder"))
		})
	}
}

// fits fails when the page scrolls sideways in a window width px wide.
func (b *browser) fits(width int, what string) {
	b.t.Helper()
	if w := b.evalInt(`document.documentElement.scrollWidth`); w > width {
		b.t.Errorf("%s is %d px wide in a %d px window", what, w, width)
	}
}

// verdictInView fails unless the element sel is shown and lies inside the
// window horizontally.
func (b *browser) verdictInView(sel string) {
	b.t.Helper()
	js := `(() => { const e = document.querySelector(` + "`" + sel + "`" + `); if (!e) return "missing";
		const r = e.getBoundingClientRect(); if (r.width == 0) return "hidden";
		return r.left >= 0 && r.right <= window.innerWidth ? "ok" : "off-screen at " + Math.round(r.left) + ".." + Math.round(r.right); })()`
	if s := b.eval(js); s != "ok" {
		b.t.Errorf("verdict %s: %s", sel, s)
	}
}
