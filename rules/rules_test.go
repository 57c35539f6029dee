package rules

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

func TestEveryHeadlineVerdictHasARule(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range set.Rules() {
		have[r.FindingID()] = true
	}
	for _, id := range []string{"oom_graph_capture", "dynamo_constraint_violation", "clean_exit_worker_death",
		"oom_kv_alloc", "oom_runtime", "boot_not_survivable", "crash_loop", "engine_died"} {
		if !have[id] {
			t.Errorf("no rule sets %s", id)
		}
	}
}

func TestRequiredLiterals(t *testing.T) {
	got := requiredLiterals(`EngineCore failed to start|Engine core proc (?P<p>\S+) died`)
	// The parser factors the common "Engine" out; each branch keeps a literal.
	if len(got) != 2 || got[0] != "Core failed to start" || got[1] != " core proc " {
		t.Fatalf("literals = %q", got)
	}
	// A case-folded literal gives every spelling of its longest run of
	// runes with at most 16 spellings; any spelling of the whole holds one.
	if got := requiredLiterals(`(?i)oom`); len(got) != 8 || got[0] != "OOM" {
		t.Fatalf("(?i)oom: literals %q, want its 8 spellings", got)
	}
	got = requiredLiterals(`(?i:permission denied)`)
	if len(got) == 0 || len(got) > 16 || len(got[0]) < 4 {
		t.Fatalf("(?i:permission denied): literals %q", got)
	}
	for _, line := range []string{"Permission denied", "PERMISSION DENIED", "permission Denied", "pErMiSsIoN dEnIeD"} {
		t.Run(line, func(t *testing.T) {
			if !hasAny(line, got) {
				t.Errorf("%q holds none of %q", line, got)
			}
		})
	}
	// k also folds to the Kelvin sign, as (?i) matches it.
	if got := requiredLiterals(`(?i)kk`); got != nil {
		t.Fatalf("(?i)kk: %q, want none (too short)", got)
	}
	if got := requiredLiterals(`(?i)kkk`); len(got) != 0 || !regexp.MustCompile(`(?i)kkk`).MatchString("\u212akk") {
		t.Fatalf("(?i)kkk: %q, want none (27 spellings)", got)
	}
	if got := requiredLiterals(`(?i)kkab`); !hasAny("\u212aKAB", got) {
		t.Fatalf("(?i)kkab: %q misses the Kelvin sign", got)
	}
	// A run of parts that each spell a few strings is their spellings,
	// though no part alone has three bytes: a file name's extension and
	// colon.
	if got := requiredLiterals(`\w+\.(?:cu|h):\d+`); !reflect.DeepEqual(got, []string{".cu:", ".h:"}) {
		t.Fatalf("extension run: %q", got)
	}
	if got := requiredLiterals(`x(?:ab|cd)?y`); !reflect.DeepEqual(got, []string{"xaby", "xcdy", "xy"}) && len(got) != 0 {
		t.Fatalf("optional part: %q", got)
	}
	// U+FFFD also matches an invalid byte, which holds no literal of it.
	if got := requiredLiterals(`\x{FFFD}{3}`); got != nil {
		t.Fatalf("U+FFFD: %q, want none", got)
	}
	// Each concatenated part's literals are a set the line must hold, and
	// so are the spellings of the parts together.
	if got := literalSets(`(?:worker|engine) (?:died|exited)`); !reflect.DeepEqual(got, [][]string{{"worker", "engine"}, {"died", "exited"},
		{"worker died", "worker exited", "engine died", "engine exited"}}) {
		t.Fatalf("literal sets %q", got)
	}
}

// TestSGLangGraphCaptureMarkers: both wordings SGLang has used for CUDA
// graph capture move the phase (engine-lines.md §SGLang: the old "Capture
// cuda graph begin." and the newest "Capture target decode CUDA graph
// begin."), and the markers have a literal to prefilter on.
func TestSGLangGraphCaptureMarkers(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	e := set.Engine("sglang")
	for line, want := range map[string]domain.Phase{
		"[2024-12-13 01:44:59 TP0] Capture cuda graph begin. This can take up to several minutes.":                           domain.PhaseGraphCapture,
		"[2025-11-09 00:47:25 TP3] Capture cuda graph end. Time elapsed: 31.21 s. mem usage=1.46 GB. avail mem=22.78 GB.":    domain.PhaseWarmup,
		"[2026-02-01 10:00:00 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4]": domain.PhaseGraphCapture,
		"[2026-02-01 10:00:31 TP0] Capture draft verify CUDA graph end. Time elapsed: 30.02 s. mem usage=1.10 GB.":           domain.PhaseWarmup,
	} {
		t.Run(line, func(t *testing.T) {
			if got, _, ok := e.Phase(line, false); !ok || got != want {
				t.Errorf("%q: phase %q (%v), want %q", line, got, ok, want)
			}
		})
	}
	// The failure names the phase too, but only as a hint that never
	// moves the phase back.
	if p, fwd, ok := e.Phase("Exception: Capture cuda graph failed: CUDA out of memory.", false); !ok || p != domain.PhaseGraphCapture || !fwd {
		t.Errorf("capture failure: phase %s forward-only %v (%v), want a forward-only graph_capture hint", p, fwd, ok)
	}
}
