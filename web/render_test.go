package web

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// TestParsePages: every template file is parsed, by parsePages alone, and
// every page defines "base" and "content".
func TestParsePages(t *testing.T) {
	pages := parsePages()
	used := []string{"base.html", "partials.html"}
	for name, extra := range pageFiles {
		used = append(used, name+".html")
		used = append(used, extra...)
		p := pages[name]
		if p == nil || p.Lookup("base") == nil || p.Lookup("content") == nil {
			t.Errorf("page %s: missing or without base/content", name)
		}
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.Contains(used, strings.TrimPrefix(f, "templates/")) {
			t.Errorf("%s is parsed by no page", f)
		}
	}
	if len(pages) != 9 {
		t.Errorf("%d pages, want 9", len(pages))
	}
}

// TestPastedTextWords: an attempt of a pasted log (no host, no unit, no
// end in the log) is shown with words for what the log did not say, and
// a failed one is never "still running".
func TestPastedTextWords(t *testing.T) {
	var pasted domain.Attempt
	for _, a := range storetest.Attempts() {
		if a.ID == storetest.IDUnknown {
			pasted = *a
		}
	}
	pasted.ID, pasted.Host, pasted.Unit, pasted.Container, pasted.InvocationID = "0123456789abcdef", "", "", "", ""
	pasted.EndedAt, pasted.EndedBy, pasted.ExitStatus = time.Time{}, "", nil
	srv := serveAttempts(t, []*domain.Attempt{&pasted}, Options{Location: time.UTC})
	code, body, _ := get(t, srv, attemptURL(pasted.ID))
	if code != 200 {
		t.Fatalf("attempt page: %d", code)
	}
	mustContain(t, "attempt page", body, `<a href="/">All attempts</a> › pasted text › pasted text</p>`,
		"<dt>Host</dt><dd>pasted text</dd>", "not in the log (it ends first)")
	mustNotContain(t, "attempt page", body, "still running", "› ›")
	_, body, _ = get(t, srv, "/")
	mustContain(t, "list", body, "<td>pasted text</td>")
	_, body, _ = get(t, srv, "/ladders")
	mustContain(t, "ladders", body, "<td>pasted text</td>")
}
