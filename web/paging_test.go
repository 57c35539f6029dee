package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// manyOrder is the ids of storetest.Many(n) in list order: newest start
// first, unknown starts last, ties by id descending.
func manyOrder(as []*domain.Attempt) []string {
	s := slices.Clone(as)
	slices.SortFunc(s, func(a, b *domain.Attempt) int {
		if a.StartedAt.IsZero() != b.StartedAt.IsZero() {
			if a.StartedAt.IsZero() {
				return 1
			}
			return -1
		}
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	out := make([]string, len(s))
	for i, a := range s {
		out[i] = a.ID
	}
	return out
}

type listResponse struct {
	Attempts []domain.AttemptJSON `json:"attempts"`
	Total    int                  `json:"total"`
	Next     string               `json:"next"`
	Prev     string               `json:"prev"`
}

// TestAPIPagingWalk walks GET /api/v1/attempts over a SQLite file of 3,000
// attempts with the next cursor: every attempt once, in order, the total
// on every page, and prev leads back.
func TestAPIPagingWalk(t *testing.T) {
	as := storetest.Many(3000)
	srv := serveAttempts(t, as, Options{Location: time.UTC})
	want := manyOrder(as)
	var got []string
	seen := map[string]bool{}
	path := "/api/v1/attempts?limit=700"
	var pages []listResponse
	for len(pages) < 10 {
		code, body, _ := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		var p listResponse
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		if p.Total != 3000 {
			t.Fatalf("page %d: total %d, want 3000", len(pages), p.Total)
		}
		if (p.Prev == "") != (len(pages) == 0) {
			t.Errorf("page %d: prev %q", len(pages), p.Prev)
		}
		for _, a := range p.Attempts {
			if seen[a.ID] {
				t.Fatalf("attempt %s on two pages", a.ID)
			}
			seen[a.ID] = true
			got = append(got, a.ID)
		}
		pages = append(pages, p)
		if p.Next == "" {
			break
		}
		path = "/api/v1/attempts?limit=700&cursor=" + url.QueryEscape(p.Next)
	}
	if len(pages) != 5 || len(got) != 3000 || !slices.Equal(got, want) {
		t.Fatalf("%d pages, %d attempts; in order: %v", len(pages), len(got), slices.Equal(got, want))
	}
	if last := pages[4].Attempts; len(last) != 200 || last[199].ID != want[2999] || last[199].StartedAt != "" {
		t.Errorf("last page: %d attempts", len(last))
	}
	// prev of the third page is the second page.
	_, body, _ := get(t, srv, "/api/v1/attempts?limit=700&cursor="+url.QueryEscape(pages[2].Prev))
	var back listResponse
	if err := json.Unmarshal([]byte(body), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Attempts) != 700 || back.Attempts[0].ID != want[700] || back.Attempts[699].ID != want[1399] || back.Next == "" {
		t.Errorf("prev of page 3: %d attempts from %s", len(back.Attempts), back.Attempts[0].ID)
	}
	// The filters hold across pages: 3000 attempts, every 5th ready.
	_, body, _ = get(t, srv, "/api/v1/attempts?verdict=ready&limit=100")
	var ready listResponse
	_ = json.Unmarshal([]byte(body), &ready)
	if ready.Total != 600 || len(ready.Attempts) != 100 || ready.Next == "" {
		t.Errorf("verdict=ready: total %d, %d attempts", ready.Total, len(ready.Attempts))
	}
}

var nextLink = regexp.MustCompile(`<a class="next" rel="next" href="([^"]+)">`)

// TestListPagePaging follows the attempts page's Next links over 3,000
// attempts to the last one.
func TestListPagePaging(t *testing.T) {
	as := storetest.Many(3000)
	srv := serveAttempts(t, as, Options{Location: time.UTC})
	want := manyOrder(as)
	path := "/"
	for page := 1; ; page++ {
		if page > 15 {
			t.Fatal("more than 15 pages of 200")
		}
		code, body, _ := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		from, to := (page-1)*200+1, page*200
		mustContain(t, path, body, strings.Join([]string{strconv.Itoa(from), "–", strconv.Itoa(to), " of 3000 attempts, newest first"}, ""),
			`href="`+attemptURL(want[from-1])+`"`, `href="`+attemptURL(want[to-1])+`"`)
		if page > 1 {
			mustContain(t, path, body, `<a class="prev" rel="prev" href="/?cursor=`, `<a class="first" href="/">`)
		}
		m := nextLink.FindStringSubmatch(body)
		if page == 15 {
			if m != nil {
				t.Errorf("the last page links to a next page %s", m[1])
			}
			mustContain(t, "last page", body, "2801–3000 of 3000", attemptURL(want[2999]))
			break
		}
		if m == nil {
			t.Fatalf("page %d has no next link", page)
		}
		path = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	// Paging keeps the filters.
	_, body, _ := get(t, srv, "/?verdict=ready&verdict=stopped&limit=100")
	mustContain(t, "two verdicts", body, "1–100 of 1200 attempts")
	m := nextLink.FindStringSubmatch(body)
	if m == nil || !strings.Contains(m[1], "verdict=ready&amp;verdict=stopped") || !strings.Contains(m[1], "limit=100") {
		t.Errorf("next link %v", m)
	}
}

// TestBadParameters: unknown parameters and values are a 400 that names
// the allowed ones, as JSON for the API and on the page for the UI.
func TestBadParameters(t *testing.T) {
	srv := newServer(t)
	for _, c := range []struct {
		query, param string
		names        []string // in the message and the allowed list
	}{
		{"verdict=nonsense", "verdict", []string{"oom_graph_capture", "unknown_failure", "ready"}},
		{"engine=VLLM", "engine", []string{"vllm", "sglang", "llamacpp", "halogen"}},
		{"offset=5", "offset", []string{"cursor", "limit", "verdict", "finding", "failed", "q"}},
		{"finding=crashloop", "finding", []string{"crash_loop", "clean_exit_worker_death", "boot_not_survivable"}},
		{"verdict=ready&verdict=bogus", "verdict", []string{"oom_graph_capture"}},
		{"failed=maybe", "failed", []string{"1", "0"}},
	} {
		t.Run(c.query, func(t *testing.T) {
			code, body, _ := get(t, srv, "/api/v1/attempts?"+c.query)
			var e paramError
			if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusBadRequest {
				t.Errorf("API ?%s: %d %s", c.query, code, body)
				return
			}
			if e.Param != c.param {
				t.Errorf("API ?%s: parameter %q, want %q", c.query, e.Param, c.param)
			}
			for _, n := range c.names {
				if !slices.Contains(e.Allowed, n) || !strings.Contains(e.Msg, n) {
					t.Errorf("API ?%s: %q not named: %s", c.query, n, body)
				}
			}
			code, body, _ = get(t, srv, "/?"+c.query)
			if code != http.StatusBadRequest {
				t.Errorf("page ?%s: %d, want 400", c.query, code)
			}
			mustContain(t, "page ?"+c.query, body, `<p class="error">Invalid filter: `)
			mustContain(t, "page ?"+c.query, body, c.names...)
		})
	}
	for _, q := range []string{"cursor=garbage", "limit=1&limit=2", "group=xyz", "since=2026-10-0", "limit=20000"} {
		t.Run(q, func(t *testing.T) {
			if code, body, _ := get(t, srv, "/api/v1/attempts?"+q); code != http.StatusBadRequest || !strings.Contains(body, `"parameter"`) {
				t.Errorf("API ?%s: %d %s", q, code, body)
			}
		})
	}
	// The failures API takes failure verdicts only.
	code, body, _ := get(t, srv, "/api/v1/failures?verdict=ready")
	if code != http.StatusBadRequest || !strings.Contains(body, "oom_graph_capture") || strings.Contains(body, `"ready"`) {
		t.Errorf("failures verdict=ready: %d %s", code, body)
	}
	if code, _, _ := get(t, srv, "/unknown?verdict=oom_weights"); code != http.StatusBadRequest {
		t.Errorf("/unknown?verdict=: %d, want 400", code)
	}
	// Empty values (a form's "all") do not filter.
	if code, body, _ := get(t, srv, "/api/v1/attempts?host=&verdict=&engine=&finding=&failed=&q="); code != 200 || !strings.Contains(body, `"total":3`) {
		t.Errorf("empty values: %d %s", code, body)
	}
}

func total(t *testing.T, body string) int {
	t.Helper()
	var p listResponse
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(p.Attempts) != p.Total {
		t.Fatalf("%d attempts, total %d", len(p.Attempts), p.Total)
	}
	return p.Total
}

// TestAPIFilters: repeated parameters mean any of; finding= and failed=1.
func TestAPIFilters(t *testing.T) {
	srv := serveAttempts(t, storetest.Many(300), Options{})
	for _, c := range []struct {
		query string
		n     int
	}{
		{"verdict=ready", 60}, {"verdict=ready&verdict=stopped", 120}, {"verdict=ready&verdict=stopped&verdict=oom_kv_alloc", 180},
		{"host=dankserver&host=rackbox", 200}, {"unit=engine-0.service&unit=engine-1.service", 120},
		{"engine=vllm&engine=sglang", 200}, {"engine=vllm&verdict=ready", 20},
		{"finding=crash_loop", 43}, {"finding=crash_loop&finding=oom_kv_alloc", 43 + 60 - 9},
		{"failed=1", 180}, {"failed=true&host=rackbox", 60}, {"failed=0", 300},
		{"finding=clean_exit_worker_death", 0},
	} {
		t.Run(c.query, func(t *testing.T) {
			code, body, _ := get(t, srv, "/api/v1/attempts?limit=1000&"+c.query)
			if code != 200 {
				t.Errorf("?%s: %d %s", c.query, code, body)
				return
			}
			if n := total(t, body); n != c.n {
				t.Errorf("?%s: %d attempts, want %d", c.query, n, c.n)
			}
		})
	}
	// The fixture-like attempts: the clean-exit worker death is the OOM attempt.
	srv = newServer(t)
	_, body, _ := get(t, srv, "/api/v1/attempts?finding=clean_exit_worker_death")
	var p listResponse
	_ = json.Unmarshal([]byte(body), &p)
	if p.Total != 1 || p.Attempts[0].ID != storetest.IDOOM {
		t.Errorf("finding=clean_exit_worker_death: %s", body)
	}
	_, body, _ = get(t, srv, "/?finding=clean_exit_worker_death&failed=1")
	mustContain(t, "page finding", body, "1 attempt, newest first", attemptURL(storetest.IDOOM), `<option selected>clean_exit_worker_death</option>`,
		`name="failed" value="1" checked`)
	mustNotContain(t, "page finding", body, attemptURL(storetest.IDReady))
}

// TestSearchByID: an invocation id, its 8-character prefix (what
// `analyzer explain` users copy) or a container id finds the attempt.
func TestSearchByID(t *testing.T) {
	srv := newServer(t)
	oom := storetest.Attempts()[0]
	for _, q := range []string{oom.InvocationID, oom.InvocationID[:8], oom.ContainerID, oom.ContainerID[:12], oom.Container} {
		t.Run(q, func(t *testing.T) {
			_, body, _ := get(t, srv, "/api/v1/attempts?q="+url.QueryEscape(q))
			var p listResponse
			if err := json.Unmarshal([]byte(body), &p); err != nil || p.Total != 1 || p.Attempts[0].ID != storetest.IDOOM {
				t.Errorf("q=%s: %s", q, body)
			}
		})
	}
	// The page opens the one attempt a search finds.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/?q=" + oom.InvocationID[:8], "/attempts/" + oom.InvocationID, "/attempts/" + oom.ContainerID[:12]} {
		t.Run(path, func(t *testing.T) {
			resp, err := noRedirect.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != attemptURL(storetest.IDOOM) {
				t.Errorf("%s: %d → %q", path, resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
	code, body, _ := get(t, srv, "/api/v1/attempts/"+oom.InvocationID)
	if code != 200 || decode(t, body)["id"] != storetest.IDOOM {
		t.Errorf("API by invocation id: %d %s", code, body)
	}
	_, body, _ = get(t, srv, "/?q=nothing-like-this")
	mustContain(t, "no match", body, "No attempts match", `value="nothing-like-this"`)
	if code, _, _ := get(t, srv, "/attempts/0123456789abcdef"); code != http.StatusNotFound {
		t.Errorf("unknown id: %d", code)
	}
}

// regressionServer serves storetest's attempts plus two more OOMs of the
// IDOOM group, 10 and 11 days after it on another host.
func regressionServer(t *testing.T) *httptest.Server {
	t.Helper()
	as := storetest.Attempts()
	oom := as[0]
	for i, d := range []int{10, 11} {
		again := *oom
		again.ID = "rackbox/frank-primary.service/" + strconv.Itoa(i)
		again.Host, again.InvocationID, again.ContainerID = "rackbox", "ab"+strconv.Itoa(i), ""
		again.StartedAt = oom.StartedAt.Add(time.Duration(d) * 24 * time.Hour)
		again.EndedAt = oom.EndedAt.Add(time.Duration(d) * 24 * time.Hour)
		as = append(as, &again)
	}
	return serveAttempts(t, as, Options{Location: time.UTC})
}

func TestFailuresAPIAndPage(t *testing.T) {
	srv := regressionServer(t)
	code, body, _ := get(t, srv, "/api/v1/failures")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var out failuresJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Groups) != 2 || out.TotalAttempts != 4 || out.RegressionGapDays != 7 {
		t.Fatalf("groups: %s", body)
	}
	g := out.Groups[0]
	gid := domain.GroupID(domain.VerdictOOMGraphCapture, "vllm.oom_graph_capture", "")
	if g.ID != gid || g.Verdict != "oom_graph_capture" || g.Rule != "vllm.oom_graph_capture" || g.Count != 3 ||
		g.FirstSeen != "2026-10-01T21:40:00.000000-07:00" || g.LastSeen != "2026-10-12T21:40:00.000000-07:00" ||
		g.Regressions != 1 || g.CameBackAfter != 10 || g.CameBackAt != "2026-10-11T21:40:00.000000-07:00" ||
		strings.Join(g.Hosts, ",") != "dankserver,rackbox" || g.Newest != "rackbox/frank-primary.service/1" ||
		g.Attempts != "/api/v1/attempts?group="+gid {
		t.Errorf("OOM group: %+v", g)
	}
	if u := out.Groups[1]; u.Verdict != "unknown_failure" || u.Count != 1 || u.Regressions != 0 || u.CameBackAfter != 0 {
		t.Errorf("unknown group: %+v", u)
	}
	// Filtered by verdict; the group's attempts through its id.
	_, body, _ = get(t, srv, "/api/v1/failures?verdict=unknown_failure")
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Groups) != 1 || out.Groups[0].Verdict != "unknown_failure" {
		t.Errorf("verdict=unknown_failure: %s", body)
	}
	_, body, _ = get(t, srv, g.Attempts)
	if n := total(t, body); n != 3 {
		t.Errorf("group attempts: %d", n)
	}

	code, body, _ = get(t, srv, "/failures")
	if code != 200 {
		t.Fatalf("/failures: %d", code)
	}
	mustContain(t, "/failures", body, "2 groups, 4 attempts", `<tr id="group-`+gid+`" class="group">`,
		`<a class="count" href="/?group=`+gid+`" title="list the attempts of this group">3</a>`,
		`<span class="badge fail">oom_graph_capture</span><div class="came-back"`, "came back after 10 days",
		"vllm.oom_graph_capture", "2026-10-01 21:40:00 -07:00", "2026-10-12 21:40:00 -07:00",
		`<a href="/failures?host=rackbox"`)
	_, body, _ = get(t, srv, "/failures?verdict=unknown_failure")
	mustContain(t, "/failures?verdict=unknown_failure", body, "1 group, 1 attempt", `<option selected>unknown_failure</option>`)
	mustNotContain(t, "/failures?verdict=unknown_failure", body, "vllm.oom_graph_capture")

	// The attempt page links to its group; the API carries it.
	_, body, _ = get(t, srv, attemptURL(storetest.IDOOM))
	mustContain(t, "attempt page", body, `<p class="group-link">Failure group <span class="mono">`+gid+`</span>: seen <a href="/failures?group=`+gid+`">3 times</a> since 2026-10-01 21:40:00 -07:00, last 2026-10-12 21:40:00 -07:00; came back after 10 days on 2 hosts · <a href="/?group=`+gid+`">its attempts</a></p>`)
	_, body, _ = get(t, srv, attemptURL(storetest.IDReady))
	mustNotContain(t, "ready attempt page", body, "group-link")
	m := decode(t, body2(t, srv, apiURL(storetest.IDOOM)))
	if grp, _ := m["group"].(map[string]any); grp == nil || grp["id"] != gid || grp["count"] != json.Number("3") {
		t.Errorf("API group: %v", m["group"])
	}
	// The attempts list of the group says which group it is.
	_, body, _ = get(t, srv, "/?group="+gid)
	mustContain(t, "group list", body, "3 attempts, newest first · failure group", `<input type="hidden" name="group" value="`+gid+`">`)
}

func body2(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	_, b, _ := get(t, srv, path)
	return b
}
