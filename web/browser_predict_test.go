package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLadderWhatIf submits the ladder page's what-if form in
// headless Chromium and sees the prediction beside the chart and the
// proposed shape drawn on it.
func TestBrowserLadderWhatIf(t *testing.T) {
	ctx, dialogs := startChromium(t, 1440, 1000)
	db := replayFixtures(t, t.TempDir())
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	night := nightLadder(t, db)
	b := &browser{t: t, ctx: ctx, out: artifactsDir(t)}
	shot, eval, evalInt, do := b.shot, b.eval, b.evalInt, b.do

	do("ladder page", chromedp.Navigate(srv.URL+ladderURL(night.ID)+"?y=contract_tokens"), chromedp.WaitVisible(chromedp.CSS("#whatif form")))
	if n := evalInt(`document.querySelectorAll("#predicted-point").length`); n != 0 {
		t.Errorf("a predicted point before the form was submitted")
	}
	// The runbook's "six never fit": 6 × 241664 fp8, pool sized to hold it.
	do("fill the form",
		chromedp.SendKeys(chromedp.CSS(`#whatif input[name="max_num_seqs"]`), "6"),
		chromedp.SendKeys(chromedp.CSS(`#whatif input[name="max_model_len"]`), "241664"),
		chromedp.SetValue(chromedp.CSS(`#whatif select[name="kv_cache_dtype"]`), "fp8"))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#whatif button[type="submit"]`))); err != nil {
		t.Fatalf("submit the what-if form: %v", err)
	}
	do("prediction", chromedp.WaitVisible(chromedp.CSS("#prediction")))
	if q := eval(`location.search`); !strings.Contains(q, "max_num_seqs=6") || !strings.Contains(q, "max_model_len=241664") || !strings.Contains(q, "kv_cache_dtype=fp8") || !strings.Contains(q, "y=contract_tokens") {
		t.Errorf("query %q", q)
	}
	boot := eval(`document.querySelector("#predict-boot").innerText`)
	for _, w := range []string{"boot: fails", "10.40 GiB", "9.18 GiB", "rung 5 (6 × 241664 fp8) asked 10.70 GiB"} {
		if !strings.Contains(boot, w) {
			t.Errorf("boot prediction %q lacks %q", boot, w)
		}
	}
	if s := eval(`document.querySelector("#predict-survive").innerText`); !strings.HasPrefix(s, "survive: fails") {
		t.Errorf("survive prediction %q", s)
	}
	if s := eval(`document.querySelector("#predict-flags").innerText`); s != "--max-num-seqs 6 --max-model-len 241664 --kv-cache-dtype fp8" {
		t.Errorf("flags %q", s)
	}
	if s := eval(`document.querySelector("#largest-survive").innerText`); s != "1048576 = 4 × 262144" {
		t.Errorf("largest surviving %q", s)
	}
	// The form keeps what was entered.
	if s := eval(`document.querySelector('#whatif input[name="max_model_len"]').value + " " + document.querySelector('#whatif select[name="kv_cache_dtype"]').value`); s != "241664 fp8" {
		t.Errorf("form values %q", s)
	}
	// The point: after the last rung, a failing one, at contract 1449984 —
	// level with rung 5 (the same contract), inside the plot.
	if n := evalInt(`document.querySelectorAll("#ladder-chart #predicted-point circle.whatif-pt.fail").length`); n != 1 {
		t.Fatalf("%d predicted fail points on the chart", n)
	}
	if s := eval(`document.querySelector("#predicted-point title").textContent`); !strings.HasPrefix(s, "what if: contract_tokens = 1449984; 6 × 241664 fp8: boot fails") {
		t.Errorf("point title %q", s)
	}
	if ok := eval(`(() => { const p = document.querySelector("#predicted-point circle"), last = document.querySelector("#pt-16"), r5 = document.querySelector("#pt-5");
		return String(+p.getAttribute("cx") > +last.getAttribute("cx") && p.getAttribute("cy") === r5.getAttribute("cy")); })()`); ok != "true" {
		t.Error("the predicted point is not after rung 16 at rung 5's height")
	}
	if n := evalInt(`document.querySelectorAll("#ladder-chart circle.pt").length`); n != 16 {
		t.Errorf("%d rung points, want 16", n)
	}
	// Beside the chart, in a 1440 px window, without sideways scrolling.
	if ok := eval(`(() => { const c = document.querySelector("#ladder-chart").getBoundingClientRect(), w = document.querySelector("#whatif").getBoundingClientRect();
		return String(w.left >= c.right && w.top < c.bottom); })()`); ok != "true" {
		t.Error("the prediction is not beside the chart")
	}
	if w := evalInt(`document.documentElement.scrollWidth`); w > 1440 {
		t.Errorf("ladder page is %d px wide in a 1440 px window", w)
	}
	shot("whatif-1-six-fp8.png")

	// A shape that boots: the point turns green.
	do("boots", chromedp.Navigate(srv.URL+ladderURL(night.ID)+"?max_num_seqs=4&max_model_len=262144&kv_cache_dtype=fp8"), chromedp.WaitVisible(chromedp.CSS("#prediction")))
	if s := eval(`document.querySelector("#predict-survive").innerText`); !strings.HasPrefix(s, "survive: boots") || !strings.Contains(s, "rung 8") {
		t.Errorf("4 × 262144 fp8 survive %q", s)
	}
	if n := evalInt(`document.querySelectorAll("#predicted-point circle.whatif-pt.ok").length`); n != 1 {
		t.Errorf("%d green predicted points", n)
	}
	shot("whatif-2-four-fp8.png")
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened", n)
	}
}
