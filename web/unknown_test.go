package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

const scriptFingerprint = "0badc0ffee00 RuntimeError: <script>alert(1)</script> at <path>"

// newUnknownServer serves a real SQLite database holding storetest's
// attempts plus a second unknown failure with storetest.IDUnknown's
// fingerprint (another host, a day later) and one whose fingerprint holds
// markup.
func newUnknownServer(t *testing.T) *httptest.Server {
	t.Helper()
	as := storetest.Attempts()
	var unknown *domain.Attempt
	for _, a := range as {
		if a.ID == storetest.IDUnknown {
			unknown = a
		}
	}
	again := *unknown
	again.ID, again.Host, again.InvocationID = "rackbox/frank-draft.service/2", "rackbox", "2"
	again.StartedAt, again.EndedAt = unknown.StartedAt.Add(24*time.Hour), unknown.EndedAt.Add(24*time.Hour)
	other := *unknown
	other.ID, other.InvocationID, other.Unit = "dankserver/frank-other.service/3", "3", "frank-other.service"
	other.Fingerprint = scriptFingerprint
	return serveAttempts(t, append(as, &again, &other), Options{Location: time.UTC})
}

func TestUnknownAPI(t *testing.T) {
	srv := newUnknownServer(t)
	code, body, _ := get(t, srv, "/api/v1/unknown")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/unknown: %d %s", code, body)
	}
	var out struct{ Groups []failureGroupJSON }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Groups) != 2 {
		t.Fatalf("%d groups, want 2: %s", len(out.Groups), body)
	}
	a, b := out.Groups[0], out.Groups[1]
	if a.Fingerprint != "error: unexpected token <*> in chat template <*>" || a.Count != 2 || b.Fingerprint != scriptFingerprint || b.Count != 1 {
		t.Errorf("groups: %+v", out.Groups)
	}
	if a.Newest != "rackbox/frank-draft.service/2" || len(a.AttemptIDs) != 2 || strings.Join(a.Hosts, ",") != "dankserver,rackbox" {
		t.Errorf("group A: %+v", a)
	}
	if a.FirstSeen == "" || a.LastSeen <= a.FirstSeen {
		t.Errorf("group A seen %q … %q", a.FirstSeen, a.LastSeen)
	}
	if b.Hash != "0badc0ffee00" || !strings.HasPrefix(b.Text, "RuntimeError: ") {
		t.Errorf("group B fingerprint split as %q / %q", b.Hash, b.Text)
	}
	if code, _, _ := get(t, srv, "/api/v1/unknown?limit=1"); code != 200 {
		t.Errorf("limit=1: %d", code)
	}
	if code, _, _ := get(t, srv, "/api/v1/unknown?limit=x"); code != 400 {
		t.Errorf("limit=x: %d, want 400", code)
	}
	// Filters narrow the attempts counted: rackbox has one of group A's two.
	_, body, _ = get(t, srv, "/api/v1/unknown?host=rackbox")
	out.Groups = nil
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Groups) != 1 || out.Groups[0].Count != 1 ||
		out.Groups[0].Newest != "rackbox/frank-draft.service/2" {
		t.Errorf("host=rackbox: %s", body)
	}
	// Since the day after group A's first attempt (an unencoded '+' offset is read as such).
	_, body, _ = get(t, srv, "/api/v1/unknown?since=2026-10-02T00:00:00-07:00")
	out.Groups = nil
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Groups) != 1 || out.Groups[0].Count != 1 {
		t.Errorf("since=2026-10-02: %s", body)
	}
	if code, body, _ := get(t, srv, "/api/v1/unknown?since=someday"); code != 400 || !strings.Contains(body, `since \"someday\": want RFC 3339`) {
		t.Errorf("since=someday: %d %s, want 400 naming since and the forms", code, body)
	}
	// The CLI's grammar: the attempts are of October 2026.
	if code, body, _ := get(t, srv, "/api/v1/unknown?since=2026-10-02"); code != 200 || !strings.Contains(body, `"count":1`) {
		t.Errorf("since=2026-10-02: %d %s", code, body)
	}
}

func TestUnknownPage(t *testing.T) {
	srv := newUnknownServer(t)
	code, body, hdr := get(t, srv, "/unknown")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /unknown: %d %s", code, hdr.Get("Content-Type"))
	}
	mustContain(t, "/unknown", body,
		"2 groups, 3 attempts",
		`title="list the attempts of this group">2</a></td>`, `title="list the attempts of this group">1</a></td>`,
		// Fingerprints hold masked text and log markup: shown as text.
		"error: unexpected token &lt;*&gt; in chat template &lt;*&gt;",
		"RuntimeError: &lt;script&gt;alert(1)&lt;/script&gt; at &lt;path&gt;",
		"2026-10-01 22:00:00 -07:00", "2026-10-02 22:00:00 -07:00", // first and last seen of the larger group
		`<a href="/unknown?host=dankserver" title="only this host's failures">dankserver</a>, <a href="/unknown?host=rackbox"`,
		`href="/attempts/rackbox%2Ffrank-draft.service%2F2"`, // its newest attempt
		`href="/attempts/dankserver%2Ffrank-other.service%2F3"`,
	)
	mustNotContain(t, "/unknown", body, "<script>", "<*>")
	// A host link narrows the page and says so.
	_, body, _ = get(t, srv, "/unknown?host=rackbox")
	mustContain(t, "/unknown?host=rackbox", body, "1 group, 1 attempt", "Only attempts of host <b>rackbox</b>", `<a href="/unknown">All hosts and units</a>`)
	if code, _, _ := get(t, srv, "/unknown?until=soon"); code != http.StatusBadRequest {
		t.Errorf("/unknown?until=soon: %d, want 400", code)
	}
	// The header links to the page from everywhere.
	_, list, _ := get(t, srv, "/")
	mustContain(t, "/", list, `<a class="nav" href="/unknown">Unknown failures</a>`)
	// The empty state.
	empty := newServerWithout(t)
	_, body, _ = get(t, empty, "/unknown")
	mustContain(t, "/unknown (empty)", body, "No unknown failures")
}

// newServerWithout serves a database with no unknown failure.
func newServerWithout(t *testing.T) *httptest.Server {
	t.Helper()
	var keep []*domain.Attempt
	for _, a := range storetest.Attempts() {
		if a.Verdict != domain.VerdictUnknownFailure {
			keep = append(keep, a)
		}
	}
	return serveAttempts(t, keep, Options{})
}
