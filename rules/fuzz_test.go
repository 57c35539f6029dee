package rules

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// FuzzJudge feeds arbitrary lines to a judge with the built-in rules (the
// traceback reader, envelope parser, engine votes, phases, shape parsers and
// every rule): it must judge each line in bounded time and memory and
// always name a verdict of the spec.
func FuzzJudge(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/corpus/*/log.txt")
	for i, p := range paths {
		if i%4 != 0 {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:4096]
		}
		f.Add(string(b))
	}
	f.Add("Traceback (most recent call last):\n  File \"x.py\", line 1, in load_model\n    raise ValueError(\nThe above exception was the direct cause of the following exception:\nRuntimeError: x")
	f.Add("terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: out of memory\nGGML_ASSERT(x) failed\npanic: boom")
	set, err := LoadBuiltin()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		j := set.NewJudge("", JudgeOptions{})
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		lines := strings.Split(text, "\n")
		if len(lines) > 2000 {
			lines = lines[:2000]
		}
		for i, l := range lines {
			j.Line(l, domain.Evidence{Time: at.Add(time.Duration(i) * time.Second), Message: l})
		}
		a := j.Judge(&domain.Attempt{}, End{Ended: true, Text: true})
		if !validVerdict(string(a.Verdict)) || !a.Phase.Valid() {
			t.Fatalf("verdict %q phase %q", a.Verdict, a.Phase)
		}
		if len(a.Evidence) > 64 || len(j.roots) > maxRoots || len(j.exc.fatals) > maxFatals || len(j.exc.procs) > maxProcs {
			t.Fatalf("unbounded state: %d evidence, %d roots, %d fatals, %d processes", len(a.Evidence), len(j.roots), len(j.exc.fatals), len(j.exc.procs))
		}
	})
}

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
