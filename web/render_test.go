package web

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
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
	if len(pages) != 7 {
		t.Errorf("%d pages, want 7", len(pages))
	}
}
