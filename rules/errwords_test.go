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
