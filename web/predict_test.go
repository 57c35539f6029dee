package web

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/tracker"
)

func TestLadderPredictAPI(t *testing.T) {
	srv, db := newLadderServer(t)
	night := nightLadder(t, db)
	base := "/api/v1/ladders/" + night.ID + "/predict"

	code, body, _ := get(t, srv, base+"?max_num_seqs=6&max_model_len=241664&kv_cache_dtype=fp8")
	if code != http.StatusOK {
		t.Fatalf("predict = %d %s", code, body)
	}
	var out predictJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	p := out.Prediction
	if out.Target != "frank-primary" || p.Boot.Outcome != ladder.OutcomeFails || p.Boot.Rule != ladder.RuleKVAllocFree || p.Boot.Rung != 5 ||
		!strings.Contains(p.Boot.Reason, "10.40 GiB") || !strings.Contains(p.Boot.Reason, "9.18 GiB") || p.TokensNeeded != 1449984 {
		t.Errorf("6 × 241664 fp8: %+v", p)
	}
	if out.Largest.Survive == nil || out.Largest.Survive.ContractTokens != 1048576 || out.Largest.Boot == nil || out.Largest.Boot.ContractTokens != 1310720 {
		t.Errorf("largest %+v", out.Largest)
	}
	// The night's ready rungs all took 5m24.4s; the three nearest to 6 ×
	// 241664 fp8 answer (as analyzer fit does).
	if rt := out.ReadyTime; rt.P50 == nil || rt.P90 == nil || math.Abs(*rt.P50-324.4) > 0.01 || math.Abs(*rt.P90-324.4) > 0.01 || rt.Basis != 3 || rt.SameShape ||
		rt.Text != "ready in ~5m24s (p90 5m24s), from 3 boots of the nearest shapes" {
		t.Errorf("time to ready: %+v", rt)
	}
	// The page's what-if form says the same.
	if _, page, _ := get(t, srv, ladderURL(night.ID)+"?max_num_seqs=6&max_model_len=241664&kv_cache_dtype=fp8"); !strings.Contains(page,
		`<p id="predict-time">Time to ready: ready in ~5m24s (p90 5m24s), from 3 boots of the nearest shapes</p>`) {
		t.Errorf("the what-if form says no time to ready")
	}
	// frank-small (the day fixture) never reached ready: no history.
	small := 0
	for _, l := range allLadders(t, db) {
		if l.Target != "frank-small" {
			continue
		}
		small++
		_, body, _ := get(t, srv, "/api/v1/ladders/"+l.ID+"/predict?max_num_seqs=3&max_model_len=262144")
		var small predictJSON
		if err := json.Unmarshal([]byte(body), &small); err != nil || !small.ReadyTime.NoHistory || small.ReadyTime.P50 != nil || small.ReadyTime.Text != "no history" {
			t.Errorf("frank-small: %v %+v", err, small.ReadyTime)
		}
		if _, page, _ := get(t, srv, ladderURL(l.ID)+"?max_num_seqs=3&max_model_len=262144"); !strings.Contains(page, `Time to ready: no history <span class="dim">`) {
			t.Errorf("frank-small's what-if form does not say no history")
		}
	}
	if small != 1 {
		t.Errorf("%d frank-small ladders, want 1", small)
	}
	// A pinned pool, given as a size.
	_, body, _ = get(t, srv, base+"?max_num_seqs=4&max_model_len=262144&kv_cache_dtype=fp8&kv_cache_memory_bytes=8311013376")
	out = predictJSON{}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if out.Prediction.Survive.Outcome != ladder.OutcomeBoots || out.Prediction.Survive.Rung != 8 || out.Prediction.Memory != "kv_cache_memory_bytes=8311013376" {
		t.Errorf("4 × 262144 fp8 at rung 8's pool: %+v", out.Prediction)
	}

	// Bad parameters: 400 naming the parameter (and the allowed ones).
	for _, c := range []struct{ query, param, want string }{
		{"?max_num_seqs=6&max_model_len=241664&dtype=fp8", "dtype", "allowed parameters: max_num_seqs, max_model_len, kv_cache_dtype, kv_cache_memory_bytes, gpu_memory_utilization"},
		{"?max_num_seqs=6", "max_model_len", "positive integer"},
		{"?max_num_seqs=-1&max_model_len=8192", "max_num_seqs", "positive integer"},
		{"?max_num_seqs=2&max_model_len=8192&kv_cache_dtype=fp9", "kv_cache_dtype", "not one this ladder ran: auto, fp8"},
		{"?max_num_seqs=2&max_model_len=8192&gpu_memory_utilization=1.5", "gpu_memory_utilization", "(0, 1]"},
		{"?max_num_seqs=2&max_model_len=8192&gpu_memory_utilization=0.9&kv_cache_memory_bytes=1000", "gpu_memory_utilization", "not both"},
		{"?max_num_seqs=2&max_num_seqs=3&max_model_len=8192", "max_num_seqs", "once"},
		// NaN compares false with every bound; Inf and overflow are past them.
		{"?max_num_seqs=2&max_model_len=8192&gpu_memory_utilization=NaN", "gpu_memory_utilization", "(0, 1]"},
		{"?max_num_seqs=2&max_model_len=8192&gpu_memory_utilization=Inf", "gpu_memory_utilization", "(0, 1]"},
		{"?max_num_seqs=2000000000&max_model_len=8192", "max_num_seqs", "beyond any device"},
		{"?max_num_seqs=2&max_model_len=99999999999999999999", "max_model_len", "positive integer"},
		{"?max_num_seqs=2&max_model_len=8192&kv_cache_memory_bytes=1e300", "kv_cache_memory_bytes", "kv_cache_memory_bytes"},
	} {
		t.Run(c.query, func(t *testing.T) {
			code, body, _ := get(t, srv, base+c.query)
			var pe paramError
			_ = json.Unmarshal([]byte(body), &pe)
			if code != http.StatusBadRequest || pe.Param != c.param || !strings.Contains(pe.Msg, c.want) {
				t.Errorf("%s: %d %s, want 400 on %s saying %q", c.query, code, body, c.param, c.want)
			}
		})
	}
	if code, _, _ := get(t, srv, "/api/v1/ladders/nope/predict?max_num_seqs=1&max_model_len=1"); code != http.StatusNotFound {
		t.Errorf("unknown ladder: %d", code)
	}

	// The day fixture's SGLang and halogen ladders answer from their own
	// engines' lines.
	for _, c := range []struct{ target, query, outcome, flags string }{
		{"frank-small", "?max_num_seqs=3&max_model_len=262144", ladder.OutcomeFails, "--max-running-requests 3 --context-length 262144 --kv-cache-dtype fp8_e4m3"},
		{"frank-large", "?max_num_seqs=2&max_model_len=200192", ladder.OutcomeBoots, "HALOGEN_KV_SLOTS=2 HALOGEN_CTX=200192"},
	} {
		t.Run(c.target, func(t *testing.T) {
			id := ladderID(t, srv, c.target)
			code, body, _ := get(t, srv, "/api/v1/ladders/"+id+"/predict"+c.query)
			out = predictJSON{}
			_ = json.Unmarshal([]byte(body), &out)
			if code != http.StatusOK || out.Prediction.Boot.Outcome != c.outcome || out.Prediction.Flags != c.flags {
				t.Errorf("%s%s: %d %+v", c.target, c.query, code, out.Prediction)
			}
		})
	}
}

// ladderID finds a ladder's id by target through the API.
func ladderID(t *testing.T, srv *httptest.Server, target string) string {
	t.Helper()
	_, body, _ := get(t, srv, "/api/v1/ladders?target="+target)
	var list struct {
		Ladders []ladderSummaryJSON `json:"ladders"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Ladders) != 1 {
		t.Fatalf("ladder %s: %v %s", target, err, body)
	}
	return list.Ladders[0].ID
}

func TestLadderPageWhatIf(t *testing.T) {
	srv, db := newLadderServer(t)
	night := nightLadder(t, db)
	code, body, _ := get(t, srv, ladderURL(night.ID)+"?y=contract_tokens&max_num_seqs=6&max_model_len=241664&kv_cache_dtype=fp8")
	if code != http.StatusOK {
		t.Fatalf("page = %d", code)
	}
	for _, w := range []string{`id="predict-boot"`, "boot: fails", "10.40 GiB", `id="predicted-point"`, `class="whatif-pt fail"`,
		"what if: contract_tokens = 1449984", `id="largest-survive">1048576 = 4 × 262144`, `<option selected>fp8</option>`} {
		if !strings.Contains(body, w) {
			t.Errorf("what-if page lacks %q", w)
		}
	}
	// The rungs' points stay 16; the predicted one is apart.
	if n := strings.Count(body, `<circle class="pt `); n != 16 {
		t.Errorf("%d rung points", n)
	}
	// A bad value is shown on the page (a 400), the field marked invalid,
	// not a crash.
	code, body, _ = get(t, srv, ladderURL(night.ID)+"?max_num_seqs=x&max_model_len=8192")
	if code != http.StatusBadRequest || !strings.Contains(body, `id="whatif-error"`) || !strings.Contains(body, "max_num_seqs must be a positive integer") || strings.Contains(body, `id="predicted-point"`) ||
		!strings.Contains(body, `name="max_num_seqs" aria-invalid="true"`) {
		t.Errorf("bad what-if value: %d", code)
	}
	code, body, _ = get(t, srv, ladderURL(night.ID)+"?max_num_seqs=2&max_model_len=8192&gpu_memory_utilization=NaN")
	if code != http.StatusBadRequest || !strings.Contains(body, `name="gpu_memory_utilization" aria-invalid="true"`) {
		t.Errorf("NaN in the form: %d", code)
	}
	// Without the form, no prediction and no point.
	_, body, _ = get(t, srv, ladderURL(night.ID))
	if strings.Contains(body, `id="prediction"`) || strings.Contains(body, `id="predicted-point"`) || !strings.Contains(body, `id="whatif"`) {
		t.Error("plain ladder page shows a prediction, or no form")
	}
}

// TestChartOfHugeValues: rungs whose logs state values near 2^63 (any
// local user writes to journald) draw a chart with a bounded axis; the
// tick loop once never ended there.
func TestChartOfHugeValues(t *testing.T) {
	l := &ladder.Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	for i, v := range []int64{9223372036854775000, 9223372036854775000, 9223372036854775000} {
		l.Rungs = append(l.Rungs, ladder.Rung{N: i + 1, Shape: domain.Shape{domain.ShapeKVCacheMemoryBytes: v, domain.ShapeMaxModelLen: v}})
	}
	done := make(chan *chartView, 1)
	go func() { done <- buildChartWith(l, domain.ShapeKVCacheMemoryBytes, nil) }()
	select {
	case ch := <-done:
		if len(ch.Ticks) == 0 || len(ch.Ticks) > 12 || len(ch.Points) != 3 {
			t.Fatalf("%d ticks, %d points", len(ch.Ticks), len(ch.Points))
		}
	case <-time.After(race.Budget(5 * time.Second)):
		t.Fatal("the chart of a rung near 2^63 does not finish")
	}
}

// TestPredictStopsWhenTheClientLeaves: the request's context reaches the
// largest-shape search, so a client that went away gets no computed
// answer (and costs no more work); the same request with a live client
// gets the prediction.
func TestPredictStopsWhenTheClientLeaves(t *testing.T) {
	srv, db := newLadderServer(t)
	night := nightLadder(t, db)
	url := "/api/v1/ladders/" + night.ID + "/predict?max_num_seqs=6&max_model_len=241664&kv_cache_dtype=fp8"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	srv.Config.Handler.ServeHTTP(rec, httptest.NewRequest("GET", url, nil).WithContext(ctx))
	if strings.Contains(rec.Body.String(), `"largest"`) {
		t.Errorf("a gone client got the answer: %d %.200s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	srv.Config.Handler.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"largest"`) {
		t.Errorf("a live client: %d %.200s", rec.Code, rec.Body.String())
	}
}

// serveNightStating records the night fixture with its last
// "'max_num_seqs': 5" (rung 6's, a probe that booted) replaced by seqs, as any local user can
// write to journald, and serves it.
func serveNightStating(t *testing.T, seqs string) (*httptest.Server, *ladder.Ladder) {
	t.Helper()
	dir := t.TempDir()
	path := fixturetest.NightStating(t, filepath.Join(sharedFixtures, "dankserver-night-ladder.journal.json"), dir, seqs)
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "night.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tr := tracker.New(set, tracker.Options{KeepLog: true})
	if _, err := ingest.ReadFile(t.Context(), path, ingest.Options{}, func(e domain.Entry) error {
		tr.Add(e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tr.Finish()
	if err := db.SaveAttempts(t.Context(), tr.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	return srv, nightLadder(t, db)
}

// TestPredictOfALogStatingTwoBillionSequences: a journal line stating
// max_num_seqs=2000000000 once made /predict and the what-if form walk two
// billion sequence counts. The rung is left out and named, and the answer
// is the one the other rungs give, well within the client's deadline.
func TestPredictOfALogStatingTwoBillionSequences(t *testing.T) {
	srv, night := serveNightStating(t, "2000000000")
	if n, _ := night.Rungs[5].Shape.Int(domain.ShapeMaxNumSeqs); night.Rungs[5].N != 6 || n != 2000000000 {
		t.Fatalf("rung %d states %d sequences", night.Rungs[5].N, n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), race.Budget(5*time.Second)) // a hang fails; the work is far less
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/ladders/"+night.ID+"/predict?max_num_seqs=4&max_model_len=262144&kv_cache_dtype=fp8", nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out predictJSON
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", res.StatusCode, err)
	}
	const left = "rung 6: max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)"
	lg := out.Largest
	if !slices.Equal(lg.OutOfRange, []string{left}) || !strings.HasSuffix(lg.Reason, left) {
		t.Errorf("the rung left out is not named: %q %q", lg.OutOfRange, lg.Reason)
	}
	// Without rung 6, rung 7's 5 × 262144 is still the largest that
	// booted, rung 8's 4 × 262144 the largest that stayed up.
	if lg.Boot == nil || lg.Boot.ContractTokens != 1310720 || lg.Boot.MaxNumSeqs != 5 || lg.Survive == nil || lg.Survive.ContractTokens != 1048576 ||
		out.Prediction.Boot.Outcome != ladder.OutcomeBoots || out.Prediction.Boot.Rung != 8 {
		t.Errorf("largest boot %+v survive %+v; prediction %+v", lg.Boot, lg.Survive, out.Prediction.Boot)
	}

	// The what-if form answers too, and says which rung it left out.
	code, body, _ := get(t, srv, ladderURL(night.ID)+"?max_num_seqs=4&max_model_len=262144&kv_cache_dtype=fp8")
	if code != http.StatusOK || !strings.Contains(body, `id="largest-survive">1048576 = 4 × 262144`) || !strings.Contains(body, html.EscapeString(left)) {
		t.Errorf("what-if page %d", code)
	}
}

// TestPredictSearchStopsWhenTheClientLeaves: the request's context
// reaches the search itself (the test above may stop at the ladder's
// lookup), so a request whose client went away costs no search, from the
// API or the form.
func TestPredictSearchStopsWhenTheClientLeaves(t *testing.T) {
	_, db := newLadderServer(t)
	night := nightLadder(t, db)
	w, err := parseWhatIf(url.Values{"max_num_seqs": {"4"}, "max_model_len": {"262144"}}, night, true)
	if err != nil {
		t.Fatal(err)
	}
	if doc, err := predictDoc(t.Context(), night, w); err != nil || doc.Largest.Survive == nil || doc.Largest.Survive.ContractTokens != 1048576 {
		t.Fatalf("live request: %v %+v", err, doc.Largest)
	}
	gone, leave := context.WithCancel(t.Context())
	leave()
	start := time.Now()
	if _, err := predictDoc(gone, night, w); !errors.Is(err, context.Canceled) {
		t.Errorf("API after the client left: %v", err)
	}
	v := whatIfPage(gone, url.Values{"max_num_seqs": {"4"}, "max_model_len": {"262144"}}, night)
	if v.L != nil || v.Error != context.Canceled.Error() {
		t.Errorf("form after the client left: %q %+v", v.Error, v.L)
	}
	if took := time.Since(start); took > race.Budget(200*time.Millisecond) {
		t.Errorf("the cancelled searches took %v", took)
	}
}

// allLadders are the ladders of db, as the server builds them.
func allLadders(t *testing.T, db *store.DB) []ladder.Ladder {
	t.Helper()
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return ladder.Build(as, ladder.Options{})
}
