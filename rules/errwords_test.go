package rules

import (
	"strings"
	"testing"
)

// TestLooksLikeError: the one-pass scan equals a strings.Contains per word.
func TestLooksLikeError(t *testing.T) {
	lines := []string{"", "E", "Erro", "xxError", "ERRORS", "an error", "out of memor", "CUDA out of memory", "kill",
		"Killed", "worker killed", "Abor", "Aborted", "abort()", "panic:", "Traceback (most recent call last):",
		"INFO 10-02 ok", "FATAL", "Fatal", "fatal:", "FAILED", "Failed", "failed", "RuntimeException", "ÉError"}
	for _, s := range lines {
		want := false
		for _, w := range errorWords {
			want = want || strings.Contains(s, w)
		}
		if got := looksLikeError(s); got != want {
			t.Errorf("looksLikeError(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestIsErrorText: the log viewer's "next error" stops where the judge sees
// an error: error words, unless the line is logged below error level.
func TestIsErrorText(t *testing.T) {
	for line, want := range map[string]bool{
		"WARNING 01-01 10:00:00 [plugins.py:12] failed to load plugin foo":     false,
		"ERROR 01-01 10:00:00 [core.py:12] EngineCore failed to start.":        true,
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB.": true,
		"2025-03-01 10:00:10,123 - vllm.worker - WARNING - retry failed once":  false,
		"2025-03-01 10:00:10,123 - vllm.worker - ERROR - Worker failed":        true,
		"INFO 01-01 10:00:00 [core.py:12] all good":                            false,
	} {
		if got := IsErrorText(line); got != want {
			t.Errorf("IsErrorText(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestMayMatterShapes(t *testing.T) {
	for s, want := range map[string]bool{
		"[2024-12-11 21:39:23.552] [error] [WASI-NN] llama.cpp: llama_model_load: error loading model": true,
		"[ CRITICAL ] disk full": true,
		"[crıtıcal] disk full":   true, // strings.ToUpper maps the dotless ı to I
		"[E] x":                  true,
		"triton.runtime.errors.OutOfResources: out of resource: shared memory":             true,
		"torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:":              true,
		"(APIServer pid=1) INFO 10-01 21:40:04 [api_server.py:1885] Loaded in 3.2 seconds": false,
		"[info] ready": false,
		"[errors] 0":   false,
		"x.y: z":       false,
		"":             false,
	} {
		if got := mayMatterShapes(s); got != want {
			t.Errorf("mayMatterShapes(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzErrorLevelWord: errorLevelWord is levelWord naming an error or
// critical level, without its upper-case copy.
func FuzzErrorLevelWord(f *testing.F) {
	for _, s := range []string{"E", " error ", "Err", "critical", "FATAL", "panic", "f", "warn", "ERRORS", "ſ", "\u212a", "crıtıcal", "panıc", " fatal\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lv := levelWord(s)
		if got, want := errorLevelWord(s), lv == "error" || lv == "critical"; got != want {
			t.Fatalf("errorLevelWord(%q) = %v, levelWord %q", s, got, lv)
		}
	})
}
