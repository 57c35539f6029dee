package tracker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/race"
)

// TestWrappersChangeNothing: the same engine output read through the
// prefixes of the tools that carry it — `kubectl logs --prefix`, Docker
// Desktop's time column, docker compose's service column, and for vLLM
// Ray's worker tags with its deduplication counts — gives the same
// engine, verdict and phase as the output alone, for every plain-text case
// of our corpus (each case through one wrapper, in turn; under -race
// every third case, the race detector makes it five times slower).
func TestWrappersChangeNothing(t *testing.T) {
	cases, _ := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*", "case.yaml"))
	if len(cases) < 100 {
		t.Fatalf("corpus: %d cases", len(cases))
	}
	kubectl := func(line string, _ int) string { return "[pod/engine-7d9f4-x2k/engine] " + line }
	ray := func(line string, i int) string {
		if i%3 == 1 && strings.TrimSpace(line) != "" {
			line += " [repeated 3x across cluster]"
		}
		return "(pid=4512, ip=10.0.0.2) " + line
	}
	desktop := func(line string, i int) string {
		return fmt.Sprintf("2025-07-10 08:59:%02d.%03d | %s", i/1000%60, i%1000, line)
	}
	compose := func(line string, _ int) string { return "engine-1  | " + line }
	n := 0
	for k, c := range cases {
		if race.Enabled && k%3 != 0 {
			continue
		}
		meta, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(meta), "\nformat: plain\n") {
			continue
		}
		engine := field(string(meta), "engine")
		log, err := os.ReadFile(filepath.Join(filepath.Dir(c), "log.txt"))
		if err != nil {
			t.Fatal(err)
		}
		plain := filepath.Join(t.TempDir(), "plain.txt")
		if err := os.WriteFile(plain, log, 0o644); err != nil {
			t.Fatal(err)
		}
		want := brief(analyzeFile(t, plain))
		name, wrap := "kubectl --prefix", kubectl
		switch {
		case n%4 == 1:
			name, wrap = "Docker Desktop", desktop
		case n%4 == 2:
			name, wrap = "docker compose", compose
		case n%4 == 3 && engine == "vllm":
			name, wrap = "ray", ray // Ray's tags are stripped by the vLLM profile
		}
		lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
		for i, l := range lines {
			lines[i] = wrap(l, i)
		}
		p := filepath.Join(t.TempDir(), "wrapped.txt")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := brief(analyzeFile(t, p)); got != want {
			t.Errorf("%s through %s: %s, alone %s", filepath.Base(filepath.Dir(c)), name, got, want)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d plain cases", n)
	}
}

// brief is an attempt list as engine, verdict and phase.
func brief(as []*domain.Attempt) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(a.Engine + " " + string(a.Verdict) + " " + string(a.Phase) + "; ")
	}
	return b.String()
}

// field reads a top-level "key: value" of a case.yaml.
func field(yaml, key string) string {
	for _, l := range strings.Split(yaml, "\n") {
		if v, ok := strings.CutPrefix(l, key+": "); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
