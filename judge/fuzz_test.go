package judge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
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
	set, err := rules.LoadBuiltin()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		j := New(set, "", Options{})
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		lines := strings.Split(text, "\n")
		if len(lines) > 2000 {
			lines = lines[:2000]
		}
		for i, l := range lines {
			j.Line(l, domain.Evidence{Time: at.Add(time.Duration(i) * time.Second), Message: l})
		}
		a := j.Judge(&domain.Attempt{}, End{Ended: true, Text: true})
		if !slices.Contains(domain.Verdicts, a.Verdict) || !a.Phase.Valid() {
			t.Fatalf("verdict %q phase %q", a.Verdict, a.Phase)
		}
		if len(a.Evidence) > 64 || len(j.roots) > maxRoots || len(j.exc.fatals) > maxFatals || len(j.exc.procs) > maxProcs {
			t.Fatalf("unbounded state: %d evidence, %d roots, %d fatals, %d processes", len(a.Evidence), len(j.roots), len(j.exc.fatals), len(j.exc.procs))
		}
	})
}
