package web

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/store/storetest"
)

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// artifactsDir is where the browser test writes its screenshots: $ARTIFACTS_DIR,
// else a temporary directory of the test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// alertProbe runs before any script of a page: it records calls of
// window.alert (and still lets the dialog open, which the dialog listener
// counts).
const alertProbe = `window.alertFired = false;
(function () { var orig = window.alert; window.alert = function (m) { window.alertFired = true; return orig.call(window, m); }; })();`

// TestBrowserAttemptToLadder drives headless Chromium over the UI serving
// the replayed fixtures: attempts list → an attempt → its ladder, the
// ladders list, and an attempt whose evidence holds a <script> tag.
func TestBrowserAttemptToLadder(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	db := replayFixtures(t, t.TempDir())
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	night := nightLadder(t, db)
	out := artifactsDir(t)

	tctx, dialogs := startChromium(t, 1440, 1000)
	b := &browser{t: t, ctx: tctx, out: out}
	shot, eval, evalInt, do := b.shot, b.eval, b.evalInt, b.do

	// 1. The attempts list.
	do("open the attempts list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("table.attempts")))
	if n := evalInt(`document.querySelectorAll("table.attempts tbody tr").length`); n != 21 {
		t.Errorf("attempts list shows %d rows, want 21 (16 + 4 + 1)", n)
	}
	// The list fits a 1440 px window: no sideways scrolling to the ladder column.
	if w := evalInt(`document.documentElement.scrollWidth`); w > 1440 {
		t.Errorf("attempts list is %d px wide in a 1440 px window", w)
	}
	if n := evalInt(`document.querySelectorAll("table.attempts a.ladder").length`); n != 21 {
		t.Errorf("%d rows link to a ladder, want 21", n)
	}
	shot("ladder-1-attempts.png")

	// 2. Rung 2 of the night: click its row's link.
	r2 := night.Rung(2)
	sel := `table.attempts a[href="` + attemptURL(r2.AttemptID) + `"]`
	if _, err := chromedp.RunResponse(tctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	do("attempt page", chromedp.WaitVisible(chromedp.CSS("p.ladder-link")))
	h1 := eval(`document.querySelector("h1").innerText`)
	if !strings.Contains(h1, "frank-primary-probe.service") || !strings.Contains(h1, "oom_graph_capture") {
		t.Errorf("attempt h1 %q", h1)
	}
	link := eval(`document.querySelector("p.ladder-link").innerText`)
	if !strings.HasPrefix(link, "Rung 2 of 16 of ladder frank-primary on dankserver: same OOM at graph capture as rung 1") {
		t.Errorf("ladder link %q", link)
	}
	shot("ladder-2-attempt.png")

	// 3. Its ladder.
	if _, err := chromedp.RunResponse(tctx, chromedp.Click(chromedp.CSS("p.ladder-link a.ladder"))); err != nil {
		t.Fatalf("click the ladder link: %v", err)
	}
	do("ladder page", chromedp.WaitVisible(chromedp.CSS("#ladder-chart")))
	if loc := eval(`location.pathname`); loc != ladderURL(night.ID) {
		t.Errorf("ladder page at %q, want %q", loc, ladderURL(night.ID))
	}
	if h := eval(`document.querySelector("h1").innerText`); !strings.HasPrefix(h, "Ladder frank-primary") {
		t.Errorf("ladder h1 %q", h)
	}
	if n := evalInt(`document.querySelectorAll("tr.rung").length`); n != 16 {
		t.Errorf("%d rung rows, want 16", n)
	}
	if s := eval(`document.querySelector("#rung-2").innerText`); !strings.Contains(s, "max_model_len 262144 → 245760") || !strings.Contains(s, "oom_graph_capture") || !strings.Contains(s, "capacity fail") {
		t.Errorf("rung 2 row %q", s)
	}
	if s := eval(`document.querySelector("#rung-7").innerText`); !strings.Contains(s, "oom_runtime") || !strings.Contains(s, "1350182") || !strings.Contains(s, "5.15") || !strings.Contains(s, "boots, dies") {
		t.Errorf("rung 7 row %q", s)
	}
	if s := eval(`document.querySelector("#next").innerText`); !strings.HasPrefix(s, "Next rung: 5 × 233472 fp8 (contract_tokens 1167360), the midpoint of the surviving boundary") {
		t.Errorf("next %q", s)
	}
	bs := eval(`document.querySelector("table.boundaries").innerText`)
	for _, w := range []string{"max_num_seqs=3, kv_cache_dtype=auto", "241664", "245760", "1310720", "1449984", "1048576", "found", "open", "inconsistent"} {
		if !strings.Contains(bs, w) {
			t.Errorf("boundaries table lacks %q", w)
		}
	}
	// The chart: 16 points in time order, coloured by outcome, each with a
	// hover title; the caption names the dimension.
	if n := evalInt(`document.querySelectorAll("#ladder-chart circle.pt").length`); n != 16 {
		t.Errorf("%d chart points, want 16", n)
	}
	for class, want := range map[string]int{"ok": 6, "fail": 7, "warn": 1, "off": 2} {
		if n := evalInt(`document.querySelectorAll("#ladder-chart circle.pt.` + class + `").length`); n != want {
			t.Errorf("%d %s points, want %d", n, class, want)
		}
	}
	if s := eval(`document.querySelector("#pt-2 title").textContent`); s != "rung 2: max_model_len = 245760; 3 × 245760 bf16 KV 11.05 GB 798280 KV tokens; oom_graph_capture (capacity fail)" {
		t.Errorf("point 2 title %q", s)
	}
	if ok := eval(`String(Array.from(document.querySelectorAll("#ladder-chart circle.pt")).every((c, i, a) => i == 0 || +c.getAttribute("cx") > +a[i-1].getAttribute("cx")))`); ok != "true" {
		t.Error("chart points are not in time order")
	}
	// Higher max_model_len is drawn higher (smaller y): rung 1 (262144) above rung 3 (237568).
	if ok := eval(`String(+document.querySelector("#pt-1").getAttribute("cy") < +document.querySelector("#pt-3").getAttribute("cy"))`); ok != "true" {
		t.Error("rung 1 is not drawn above rung 3")
	}
	if s := eval(`document.querySelector("figcaption").innerText`); !strings.Contains(s, "y = max_model_len of each rung, in time order.") {
		t.Errorf("caption %q", s)
	}
	if w := evalInt(`Math.round(document.querySelector("#ladder-chart").getBoundingClientRect().width)`); w < 600 {
		t.Errorf("chart is %d px wide", w)
	}
	shot("ladder-3-ladder.png")

	// Pick another y dimension with the form.
	do("choose y", chromedp.SetValue(chromedp.CSS(`select[name="y"]`), "max_num_seqs"))
	if _, err := chromedp.RunResponse(tctx, chromedp.Click(chromedp.CSS("form.chart-y button"))); err != nil {
		t.Fatalf("submit y: %v", err)
	}
	do("ladder by max_num_seqs", chromedp.WaitVisible(chromedp.CSS("#ladder-chart")))
	if loc := eval(`location.search`); loc != "?y=max_num_seqs" {
		t.Errorf("query %q", loc)
	}
	if s := eval(`document.querySelector("#pt-5 title").textContent`); !strings.HasPrefix(s, "rung 5: max_num_seqs = 6;") {
		t.Errorf("point 5 title %q", s)
	}
	shot("ladder-4-ladder-max_num_seqs.png")

	// 4. The ladders list.
	do("ladders list", chromedp.Navigate(srv.URL+"/ladders"), chromedp.WaitVisible(chromedp.CSS("table.ladders")))
	if n := evalInt(`document.querySelectorAll("table.ladders tbody tr").length`); n != 4 {
		t.Errorf("%d ladders listed, want 4", n)
	}
	if s := eval(`document.querySelector("table.ladders").innerText`); !strings.Contains(s, "frank-primary") || !strings.Contains(s, "5 × 233472 fp8") {
		t.Errorf("ladders table %q", s)
	}
	shot("ladder-5-ladders.png")

	// 5. Log text with a <script> tag renders as text and runs nothing.
	xss, err := db.ListAttempts(context.Background(), domain.AttemptFilter{Host: "xsshost"})
	if err != nil || len(xss) != 1 {
		t.Fatalf("xss attempt: %v", err)
	}
	do("xss attempt", chromedp.Navigate(srv.URL+attemptURL(xss[0].ID)), chromedp.WaitVisible(chromedp.CSS("#log .entry.hit .msg")))
	if s := eval(`document.querySelector("#log .entry.hit .msg").textContent`); s != xssLine {
		t.Errorf("evidence text %q, want %q", s, xssLine)
	}
	if n := evalInt(`document.querySelectorAll("script:not([src='/static/page.js'])").length`); n != 0 {
		t.Errorf("the page holds %d script elements besides page.js", n)
	}
	if s := eval(`String(window.alertFired)`); s != "false" {
		t.Errorf("window.alertFired = %s", s)
	}
	if !strings.Contains(eval(`document.querySelector("p.note").textContent`), "<script>alert(1)</script>") {
		t.Error("the note does not show the tag as text")
	}
	shot("ladder-6-xss-attempt.png")
	do("xss ladder", chromedp.Click(chromedp.CSS("p.ladder-link a.ladder")), chromedp.WaitVisible(chromedp.CSS("#ladder-chart")))
	if s := eval(`String(window.alertFired)`); s != "false" {
		t.Errorf("ladder page: window.alertFired = %s", s)
	}
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened", n)
	}
}

// startChromium starts headless Chromium with a window of w × h px; the
// returned context is bounded to two minutes and counts opened JavaScript
// dialogs. A page script may not call window.alert unseen: alertProbe runs
// before any script of every page.
func startChromium(t *testing.T, w, h int) (context.Context, *atomic.Int32) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// Start the browser without a deadline (a deadline on the first run
	// would stop the browser), then bound the rest.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var dialogs atomic.Int32
	go func() {
		for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			dialogs.Add(1)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: alertProbe}); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(tcancel)
	return tctx, &dialogs
}

// browser drives one Chromium tab for a test; every failure is fatal.
type browser struct {
	t   *testing.T
	ctx context.Context
	out string // where screenshots go
}

func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.out, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

func (b *browser) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (b *browser) evalInt(js string) int {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// TestBrowserPagingAndFailures drives headless Chromium through the
// attempts list of 3,000 attempts by its Next links to the last attempt,
// and through the failure groups of the replayed fixtures to the night
// fixture's OOM-at-graph-capture group and one of its attempts.
func TestBrowserPagingAndFailures(t *testing.T) {
	ctx, _ := startChromium(t, 1440, 1000)
	b := &browser{t: t, ctx: ctx, out: artifactsDir(t)}
	shot, eval, do := b.shot, b.eval, b.do
	click := func(sel string) {
		t.Helper()
		if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}

	// 1. Paging: 3,000 attempts, 200 a page, Next to the end.
	many := storetest.Many(3000)
	pages := httptest.NewServer(New(manyReader(t, many), Options{Location: time.UTC}))
	t.Cleanup(pages.Close)
	do("open the attempts list", chromedp.Navigate(pages.URL+"/"), chromedp.WaitVisible(chromedp.CSS("nav.pager")))
	if s := eval(`document.querySelector("p.count").innerText`); s != "1–200 of 3000 attempts, newest first" {
		t.Errorf("first page count %q", s)
	}
	shot("paging-1-first.png")
	n := 1
	for ; n < 20 && eval(`String(!!document.querySelector("nav.pager a.next"))`) == "true"; n++ {
		click("nav.pager a.next")
		do("next page", chromedp.WaitVisible(chromedp.CSS("table.attempts")))
	}
	if n != 15 {
		t.Errorf("reached the end after %d pages, want 15", n)
	}
	if s := eval(`document.querySelector("p.count").innerText`); s != "2801–3000 of 3000 attempts, newest first" {
		t.Errorf("last page count %q", s)
	}
	// The last row is the oldest attempt of unknown start: Many's last.
	last := manyOrder(many)[2999]
	if href := eval(`Array.from(document.querySelectorAll("table.attempts tbody tr")).pop().querySelector("a").getAttribute("href")`); href != attemptURL(last) {
		t.Errorf("last row links to %q, want %q", href, attemptURL(last))
	}
	shot("paging-2-last.png")
	click("nav.pager a.prev")
	do("previous page", chromedp.WaitVisible(chromedp.CSS("nav.pager")))
	if s := eval(`document.querySelector("p.count").innerText`); s != "2601–2800 of 3000 attempts, newest first" {
		t.Errorf("previous page count %q", s)
	}

	// 2. Failure groups of the replayed fixtures.
	db := replayFixtures(t, t.TempDir())
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	gid := domain.GroupID(domain.VerdictOOMGraphCapture, "common.oom_graph_capture", "")
	row := "#group-" + gid
	do("failures page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`a.nav[href="/failures"]`)))
	click(`a.nav[href="/failures"]`)
	do("failures page", chromedp.WaitVisible(chromedp.CSS(row)))
	// Both fixtures: 6 on the night's dankserver, 1 on dankclaw.
	if s := eval(`document.querySelector("` + row + `").innerText`); !strings.Contains(s, "oom_graph_capture") ||
		!strings.Contains(s, "common.oom_graph_capture") || !strings.Contains(s, "dankclaw, dankserver") {
		t.Errorf("OOM group row %q", s)
	}
	if s := eval(`document.querySelector("` + row + ` a.count").innerText`); s != "7" {
		t.Errorf("OOM group count %q, want 7", s)
	}
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 1440 {
		t.Errorf("failures page is %d px wide in a 1440 px window (%v)", w, err)
	}
	shot("failures-1-all.png")
	// The night fixture's host alone: its 6 OOMs at graph capture.
	click(row + ` a[href="/failures?host=dankserver"]`)
	do("dankserver failures", chromedp.WaitVisible(chromedp.CSS(row)))
	if s := eval(`document.querySelector("` + row + ` a.count").innerText`); s != "6" {
		t.Errorf("night OOM group count %q, want 6", s)
	}
	if s := eval(`document.querySelector("` + row + `").innerText`); strings.Contains(s, "dankclaw") || !strings.Contains(s, "frank-primary") {
		t.Errorf("night OOM group row %q", s)
	}
	shot("failures-2-night.png")
	// Its attempts, one of them, and back to the group from the attempt.
	click(row + " a.count")
	do("group attempts", chromedp.WaitVisible(chromedp.CSS("table.attempts")))
	if s := eval(`document.querySelector("p.count").innerText`); !strings.HasPrefix(s, "6 attempts, newest first · failure group "+gid) {
		t.Errorf("group list count %q", s)
	}
	click("table.attempts tbody tr a")
	do("attempt", chromedp.WaitVisible(chromedp.CSS("p.group-link")))
	if s := eval(`document.querySelector("p.group-link").innerText`); !strings.HasPrefix(s, "Failure group "+gid+": seen 7 times since ") {
		t.Errorf("group link %q", s)
	}
	shot("failures-3-attempt.png")
	// /unknown is the unknown_failure view of the same page.
	do("unknown page", chromedp.Navigate(srv.URL+"/unknown"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if s := eval(`document.querySelector("h1").innerText`); s != "Unknown failures" {
		t.Errorf("/unknown h1 %q", s)
	}
}

// manyReader is a SQLite file holding as.
func manyReader(t *testing.T, as []*domain.Attempt) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "many.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.SaveAttempts(context.Background(), as, nil); err != nil {
		t.Fatal(err)
	}
	return db
}
