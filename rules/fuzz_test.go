package rules

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoadRules loads arbitrary rule files (an operator's --rules
// directory is read on every reload): loading must end with a set or
// errors, never panic. (Running a loaded set's tests is
// rules/ruletest's FuzzRunTests.)
func FuzzLoadRules(f *testing.F) {
	names, _ := filepath.Glob("*.yaml")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		var first []string
		for i := 0; i < 30 && sc.Scan(); i++ {
			first = append(first, sc.Text())
		}
		f.Add(strings.Join(first, "\n"))
	}
	f.Fuzz(func(t *testing.T, file string) {
		set, err := Load(fstest.MapFS{"site.yaml": &fstest.MapFile{Data: []byte(file)}})
		if err == nil {
			set.Lint()
		}
	})
}

// FuzzRuleFind is differential: for every built-in rule, the prefiltered
// search (Aho-Corasick literals, case-folded spellings, the literal sets of
// concatenations, alternatives searched one by one, the start literal)
// must find exactly what the rule's whole regex finds on the line.
func FuzzRuleFind(f *testing.F) {
	set, err := LoadBuiltin()
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range set.all {
		for _, tc := range r.Tests {
			for _, l := range tc.Lines {
				f.Add(l.Msg)
			}
		}
	}
	f.Add("ENGINE Died; Worker process terminated. PERMISSION Denied")
	l := &Line{}
	f.Fuzz(func(t *testing.T, line string) {
		set.Prepare(l, line)
		for _, r := range set.all {
			if r.End || r.match == nil {
				continue
			}
			want := r.match.FindStringSubmatchIndex(line)
			if !l.may(r.matchID) {
				if want != nil {
					t.Fatalf("%s: the prefilter dropped a line the regex matches: %q", r.ID, line)
				}
				continue
			}
			if got := r.find(l, line); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %q: found %v, the whole regex %v", r.ID, line, got, want)
			}
		}
		// The scan's error words agree with looksLikeError and mayMatter,
		// also after a prefix is stripped.
		for _, k := range []int{0, len(line) / 3, len(line) / 2} {
			set.Prepare(l, line)
			l.narrow(k)
			if got, want := l.LooksLikeError(), looksLikeError(line[k:]); got != want {
				t.Fatalf("LooksLikeError(%q) after %d bytes = %v, looksLikeError %v", line, k, got, want)
			}
			if got, want := l.MayMatter(), mayMatter(line[k:]); got != want {
				t.Fatalf("MayMatter(%q) after %d bytes = %v, mayMatter %v", line, k, got, want)
			}
		}
	})
}
