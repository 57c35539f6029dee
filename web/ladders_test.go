package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/tracker"
)

const sharedFixtures = "../examples" // the shared fixtures' journals, as the repository holds them

// xssLine is an engine error line that carries markup; it must reach the
// browser as text.
const xssLine = "vllm serve: error: argument --chat-template: cannot load <script>alert(1)</script>"

// writeXSSJournal writes a journalctl -o json capture of one vLLM unit that
// rejects its arguments with xssLine.
func writeXSSJournal(t *testing.T, dir string) string {
	t.Helper()
	const inv = "0123456789abcdef0123456789abcdef"
	t0 := time.Date(2026, 10, 2, 9, 0, 0, 0, time.UTC)
	pid1 := map[string]string{"SYSLOG_IDENTIFIER": "systemd", "_PID": "1", "_TRANSPORT": "journal", "_SYSTEMD_UNIT": "init.scope",
		"UNIT": "xss-demo.service", "INVOCATION_ID": inv}
	engine := map[string]string{"SYSLOG_IDENTIFIER": "vllm", "_PID": "4242", "_TRANSPORT": "stdout",
		"_SYSTEMD_UNIT": "xss-demo.service", "_SYSTEMD_INVOCATION_ID": inv}
	recs := []struct {
		base  map[string]string
		msg   string
		extra map[string]string
	}{
		{pid1, "Starting xss-demo.service - vLLM...", map[string]string{"MESSAGE_ID": "7d4958e842da4a758f6c1cdc7b36dcc5", "JOB_TYPE": "start"}},
		{pid1, "Started xss-demo.service - vLLM.", map[string]string{"MESSAGE_ID": "39f53479d3a045ac8e11786248231fbf", "JOB_TYPE": "start"}},
		{engine, "(APIServer pid=1) INFO 10-02 09:00:04 [api_server.py:1885] vLLM API server version 0.19.2", nil},
		{engine, "(APIServer pid=1) INFO 10-02 09:00:04 [utils.py:233] non-default args: {'model': '/models', 'served_model_name': ['xss-demo'], 'max_model_len': 8192}", nil},
		{engine, xssLine, nil},
		{pid1, "xss-demo.service: Main process exited, code=exited, status=2/INVALIDARGUMENT",
			map[string]string{"MESSAGE_ID": "98e322203f7a4ed290d09fe03c09fe15", "EXIT_CODE": "exited", "EXIT_STATUS": "2"}},
		{pid1, "xss-demo.service: Failed with result 'exit-code'.", map[string]string{"MESSAGE_ID": "d9b373ed55a64feb8242e02dbe79a49c", "UNIT_RESULT": "exit-code"}},
	}
	var b strings.Builder
	for i, r := range recs {
		m := map[string]string{"MESSAGE": r.msg, "_HOSTNAME": "xsshost", "__CURSOR": fmt.Sprintf("s=xss;i=%d", i+1),
			"__REALTIME_TIMESTAMP": fmt.Sprint(t0.Add(time.Duration(i) * time.Second).UnixMicro())}
		for k, v := range r.base {
			m[k] = v
		}
		for k, v := range r.extra {
			m[k] = v
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, "xss.journal.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replayFixtures runs the shared fixtures and the XSS journal through the
// real pipeline (ingest, tracker, built-in rules) into a SQLite file in dir.
func replayFixtures(t *testing.T, dir string) *store.DB {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(sharedFixtures, "*.journal.json"))
	if len(paths) != 2 {
		t.Fatalf("want the 2 shared fixtures, found %d", len(paths))
	}
	paths = append(paths, writeXSSJournal(t, dir))
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "ladders.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for _, p := range paths {
		tr := tracker.New(set, tracker.Options{KeepLog: true})
		if _, err := ingest.ReadFile(ctx, p, ingest.Options{}, func(e domain.Entry) error {
			tr.Add(e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		tr.Finish()
		if err := db.SaveAttempts(ctx, tr.Attempts(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// newLadderServer serves the replayed fixtures.
func newLadderServer(t *testing.T) (*httptest.Server, *store.DB) {
	t.Helper()
	db := replayFixtures(t, t.TempDir())
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)
	return srv, db
}

// nightLadder is the frank-primary ladder, built as the server builds it.
func nightLadder(t *testing.T, db *store.DB) *ladder.Ladder {
	t.Helper()
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ladder.Build(as, ladder.Options{}) {
		if l.Target == "frank-primary" {
			return &l
		}
	}
	t.Fatal("no frank-primary ladder")
	return nil
}

func TestLaddersAPI(t *testing.T) {
	srv, db := newLadderServer(t)
	night := nightLadder(t, db)

	code, body, _ := get(t, srv, "/api/v1/ladders")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/ladders = %d", code)
	}
	var list struct {
		Ladders []ladderSummaryJSON `json:"ladders"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range list.Ladders {
		got = append(got, fmt.Sprintf("%s/%s:%d", l.Host, l.Target, l.RungCount))
	}
	// Newest first.
	if want := "xsshost/xss-demo:1 dankserver/frank-primary:16 dankclaw/frank-large:2 dankclaw/frank-small:2"; strings.Join(got, " ") != want {
		t.Errorf("ladders %q, want %q", strings.Join(got, " "), want)
	}
	for _, q := range []struct{ query, want string }{
		{"?host=dankclaw", "dankclaw/frank-large:2 dankclaw/frank-small:2"},
		{"?target=frank-primary", "dankserver/frank-primary:16"},
		// a rung started in [since, until)
		{"?since=2026-10-02T07:49:00Z", "xsshost/xss-demo:1 dankserver/frank-primary:16"},
		{"?since=2026-10-02T07:50:00Z&until=2026-10-02T09:00:00Z", ""},
		{"?until=2026-10-01T16:15:00Z", "dankclaw/frank-small:2"},
		{"?since=2026-10-01T16:00:00%2B00:00&until=2026-10-01T17:00:00Z&host=dankclaw&target=frank-large", "dankclaw/frank-large:2"},
	} {
		t.Run(q.query, func(t *testing.T) {
			_, body, _ := get(t, srv, "/api/v1/ladders"+q.query)
			list.Ladders = nil
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range list.Ladders {
				got = append(got, fmt.Sprintf("%s/%s:%d", l.Host, l.Target, l.RungCount))
			}
			if strings.Join(got, " ") != q.want {
				t.Errorf("%s: %q, want %q", q.query, strings.Join(got, " "), q.want)
			}
		})
	}
	if code, body, _ := get(t, srv, "/api/v1/ladders?since=tuesday"); code != http.StatusBadRequest || !strings.Contains(body, "RFC 3339") {
		t.Errorf("bad since: %d %s", code, body)
	}

	// One ladder, with rungs and boundaries.
	code, body, _ = get(t, srv, "/api/v1/ladders/"+night.ID)
	if code != http.StatusOK {
		t.Fatalf("GET ladder = %d", code)
	}
	var l ladder.Ladder
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Rungs) != 16 || l.Rungs[1].Diff[0].String() != "max_model_len 262144 → 245760" ||
		!strings.HasPrefix(l.Rungs[1].Note, "rung 2 of ladder frank-primary: same OOM at graph capture as rung 1") {
		t.Errorf("ladder JSON: %d rungs, rung 2 %+v", len(l.Rungs), l.Rungs[1])
	}
	b := l.Boundary("max_model_len", ladder.KindBoot, map[string]string{"max_num_seqs": "3", "kv_cache_dtype": "auto"})
	if b == nil || *b.Pass != 241664 || *b.Fail != 245760 {
		t.Errorf("boundary %+v", b)
	}
	if l.Next == nil || l.Next.Shape != "5 × 233472 fp8" {
		t.Errorf("next %+v", l.Next)
	}
	if code, body, _ := get(t, srv, "/api/v1/ladders/nope"); code != http.StatusNotFound || !strings.Contains(body, `ladder \"nope\" not found`) {
		t.Errorf("unknown ladder: %d %s", code, body)
	}
}

func TestLadderPages(t *testing.T) {
	srv, db := newLadderServer(t)
	night := nightLadder(t, db)
	lurl := ladderURL(night.ID)

	// The ladders page.
	code, body, _ := get(t, srv, "/ladders")
	if code != http.StatusOK {
		t.Fatalf("GET /ladders = %d", code)
	}
	mustContain(t, "ladders", body, "4 ladders, newest first", `href="`+lurl+`">frank-primary</a>`,
		"frank-primary-probe.service, frank-primary.service", "5 × 233472 fp8", `<span class="chip ok">6 pass</span>`,
		`<span class="chip fail">8 capacity</span>`, `<span class="chip off">2 other</span>`, "<option>dankclaw</option>")
	_, body, _ = get(t, srv, "/ladders?host=dankclaw")
	mustContain(t, "ladders?host", body, "2 ladders", "frank-large", "frank-small", `<option selected>dankclaw</option>`)
	mustNotContain(t, "ladders?host", body, ">frank-primary</a>")
	if code, body, _ := get(t, srv, "/ladders?since=never"); code != http.StatusBadRequest || !strings.Contains(body, "Invalid time filter") {
		t.Errorf("bad since: %d", code)
	}

	// The ladder page.
	code, body, _ = get(t, srv, lurl)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d", lurl, code)
	}
	mustContain(t, "ladder", body, `vllm flags:</span> <code class="mono">--max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype fp8</code>`,
		"<h1>Ladder frank-primary", "<strong>Next rung:</strong> 5 × 233472 fp8 (contract_tokens 1167360)",
		"rungs 14–15 (2 × 262144 bf16) failed with dynamo_constraint_violation, which is not a capacity failure",
		// the rung table: diff, verdict, KV tokens, concurrency, derived figures
		`<tr id="rung-2" class="rung">`, "<div>max_model_len 262144 → 245760</div>", "<div>unit frank-primary-probe.service → frank-primary.service</div>",
		`<span class="badge fail">dynamo_constraint_violation</span>`, "732359", "3.03", "96.00 MiB", "asked 162.00 MiB",
		"rung 2 of ladder frank-primary: same OOM at graph capture as rung 1",
		`<span class="chip warn">boots, dies</span>`, "fp8 7698",
		// boundaries
		"max_num_seqs=3, kv_cache_dtype=auto", `<a class="dim" href="#rung-4">rung 4</a>`, "241664", "245760",
		"1310720", "1449984", "1048576",
		// the chart: one point per rung with a hover title, boundary guides, caption
		`<svg id="ladder-chart"`, `<circle class="pt fail" id="pt-2"`, "<title>rung 2: max_model_len = 245760; 3 × 245760 bf16 KV 11.05 GB 798280 KV tokens; oom_graph_capture (capacity fail)</title>",
		`<line class="guide ok"`, `<line class="guide fail"`, `<option selected>max_model_len</option>`,
		`y = <span class="mono">max_model_len</span> of each rung`)
	if n := strings.Count(body, `<circle class="pt `); n != 16 {
		t.Errorf("chart has %d points, want 16", n)
	}
	if n := strings.Count(body, `<tr id="rung-`); n != 16 {
		t.Errorf("rung table has %d rows, want 16", n)
	}
	mustNotContain(t, "ladder", body, "<script>", "http://", "https://")
	// Points are in time order: x grows with the rung number.
	xs := regexp.MustCompile(`<circle class="pt \w+" id="pt-(\d+)" cx="([\d.]+)"`).FindAllStringSubmatch(body, -1)
	last := -1.0
	for i, m := range xs {
		var x float64
		if _, err := fmt.Sscan(m[2], &x); err != nil {
			t.Fatalf("x of point %d: %v", i+1, err)
		}
		if m[1] != fmt.Sprint(i+1) || x <= last {
			t.Errorf("point %d: %v", i, m)
		}
		last = x
	}

	// Another y dimension; kv_cache_tokens is unknown for rung 5.
	_, body, _ = get(t, srv, lurl+"?y=kv_cache_tokens")
	mustContain(t, "y=kv_cache_tokens", body, "<h2>Rungs by kv_cache_tokens</h2>", "No value for rung 5.",
		"<title>rung 4: kv_cache_tokens = 732359;")
	if n := strings.Count(body, `<circle class="pt `); n != 15 {
		t.Errorf("kv_cache_tokens chart has %d points, want 15", n)
	}
	_, body, _ = get(t, srv, lurl+"?y=contract_tokens")
	mustContain(t, "y=contract_tokens", body, "<title>rung 6: contract_tokens = 1310720;")
	_, body, _ = get(t, srv, lurl+"?y=%3Cb%3E")
	mustContain(t, "bad y", body, "<h2>Rungs by max_model_len</h2>")

	if code, body, _ := get(t, srv, "/ladders/nope"); code != http.StatusNotFound || !strings.Contains(body, "No boot ladder has the id") {
		t.Errorf("unknown ladder page: %d", code)
	}

	// Attempts link to their ladder: the list and the attempt page.
	_, body, _ = get(t, srv, "/")
	mustContain(t, "list", body, `<th class="c-ladder">Ladder</th>`, `<a class="ladder" href="`+lurl+`"`, ">rung 2/16<", ">rung 16/16<", `href="/ladders">Boot ladders</a>`)
	r2 := night.Rung(2)
	_, body, _ = get(t, srv, attemptURL(r2.AttemptID))
	mustContain(t, "attempt", body, `Rung 2 of 16 of ladder <a class="ladder" href="`+lurl+`">frank-primary</a> on dankserver`,
		"same OOM at graph capture as rung 1, at a smaller max_model_len (245760 vs 262144)")
}

// TestLadderPageEscapes: log text reaches the ladder pages only escaped.
func TestLadderPageEscapes(t *testing.T) {
	srv, db := newLadderServer(t)
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{Host: "xsshost"})
	if err != nil || len(as) != 1 {
		t.Fatalf("xss attempt: %v %d", err, len(as))
	}
	if as[0].Verdict != domain.VerdictConfigError || len(as[0].Evidence) == 0 || as[0].Evidence[0].Message != xssLine {
		t.Fatalf("the pipeline did not keep the XSS line as evidence: %s %+v", as[0].Verdict, as[0].Evidence)
	}
	for _, path := range []string{"/", "/ladders", attemptURL(as[0].ID), attemptURL(as[0].ID) + "/log"} {
		_, body, _ := get(t, srv, path)
		mustNotContain(t, path, body, "<script>")
	}
	_, body, _ := get(t, srv, attemptURL(as[0].ID))
	mustContain(t, "xss attempt", body, "&lt;script&gt;alert(1)&lt;/script&gt;", "Rung 1 of 1 of ladder")
}

// TestLaddersFollowTheDatabase: the server keeps the ladders it built, and
// a save to the database (here a new rung on the night ladder) shows on
// the next request.
func TestLaddersFollowTheDatabase(t *testing.T) {
	srv, db := newLadderServer(t)
	rungs := func() int {
		t.Helper()
		code, body, _ := get(t, srv, "/api/v1/ladders?target=frank-primary")
		var out struct {
			Ladders []struct {
				RungCount int `json:"rung_count"`
			} `json:"ladders"`
		}
		if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out.Ladders) != 1 {
			t.Fatalf("GET /api/v1/ladders: %d %v %s", code, err, body)
		}
		return out.Ladders[0].RungCount
	}
	before := rungs()
	if again := rungs(); again != before || before != 16 {
		t.Fatalf("rungs %d then %d, want 16 twice", before, again)
	}
	l := nightLadder(t, db)
	last, err := db.GetAttempt(context.Background(), l.Rungs[len(l.Rungs)-1].AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	next := *last
	next.ID, next.InvocationID = next.ID+"-next", "next"
	next.StartedAt, next.EndedAt = last.EndedAt.Add(time.Minute), last.EndedAt.Add(10*time.Minute)
	if err := db.SaveAttempts(context.Background(), []*domain.Attempt{&next}, nil); err != nil {
		t.Fatal(err)
	}
	if after := rungs(); after != before+1 {
		t.Errorf("after saving a rung: %d rungs, want %d", after, before+1)
	}
}

// TestLaddersUpdatedStepByStep saves the fixtures' attempts a few at a
// time, some saved again with another verdict, into a database one server
// keeps serving: after every save its ladders (brought up to date from the
// attempts that changed) must be those of a server started fresh on the
// same database.
func TestLaddersUpdatedStepByStep(t *testing.T) {
	full := replayFixtures(t, t.TempDir())
	all, err := full.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	live := httptest.NewServer(New(db, Options{Location: time.UTC}))
	defer live.Close()
	ctx := context.Background()
	step := 0
	for i := 0; i < len(all); i += 3 {
		batch := all[i:min(i+3, len(all))]
		if step%2 == 1 {
			// An attempt saved before is saved again, judged otherwise.
			again := *all[i/2]
			again.Verdict = domain.VerdictUnknownFailure
			batch = append(batch, &again)
		}
		if err := db.SaveAttempts(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
		step++
		fresh := httptest.NewServer(New(db, Options{Location: time.UTC}))
		for _, path := range []string{"/api/v1/ladders"} {
			_, got, _ := get(t, live, path)
			_, want, _ := get(t, fresh, path)
			if got != want {
				t.Fatalf("after save %d: %s of the live server differs from a fresh one:\n%s\nwant\n%s", step, path, got, want)
			}
		}
		fresh.Close()
	}
	if step < 5 {
		t.Fatalf("only %d saves", step)
	}
}

func TestPageOf(t *testing.T) {
	list := make([]int, 250)
	for i := range list {
		list[i] = i
	}
	q := url.Values{"host": {"h1"}, "page": {"2"}}
	for _, tc := range []struct {
		page                  int
		first, last           int
		from, to              int
		prev, next, firstLink string
	}{
		{1, 0, 99, 1, 100, "", "?host=h1&page=2", ""},
		{2, 100, 199, 101, 200, "?host=h1", "?host=h1&page=3", "?host=h1"},
		{3, 200, 249, 201, 250, "?host=h1&page=2", "", "?host=h1"},
	} {
		t.Run(fmt.Sprint(tc.page), func(t *testing.T) {
			got, nav := pageOf(list, tc.page, 100, q)
			if got[0] != tc.first || got[len(got)-1] != tc.last || nav.From != tc.from || nav.To != tc.to || nav.Total != 250 {
				t.Errorf("rows %d..%d, nav %+v", got[0], got[len(got)-1], nav)
			}
			if nav.Prev != tc.prev || nav.Next != tc.next || nav.First != tc.firstLink {
				t.Errorf("links prev %q next %q first %q", nav.Prev, nav.Next, nav.First)
			}
		})
	}
	// Past the end: no rows, a way back.
	got, nav := pageOf(list, 9, 100, q)
	if len(got) != 0 || nav.Prev != "?host=h1&page=3" || nav.Next != "" {
		t.Errorf("page 9: %d rows, %+v", len(got), nav)
	}
	srv, _ := newLadderServer(t)
	if code, _, _ := get(t, srv, "/ladders?page=0"); code != http.StatusBadRequest {
		t.Errorf("page=0: %d, want 400", code)
	}
	_, body, _ := get(t, srv, "/ladders?page=1")
	mustContain(t, "page 1", body, "4 ladders, newest first")
}
