package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileFlags: --cpuprofile and --memprofile write pprof files (gzip
// compressed protocol buffers) of the command's run, --trace an execution
// trace, and the flags stay out of the help.
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, mem, trace := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof"), filepath.Join(dir, "run.trace")
	out := runCmd(t, "explain", "-o", "json", "--cpuprofile", cpu, "--memprofile", mem, "--trace", trace,
		"../../examples/dankserver-night-ladder.journal.json")
	if !strings.Contains(out, `"verdict"`) {
		t.Fatalf("explain printed no attempts:\n%.300s", out)
	}
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 100 || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes, want a gzip-compressed profile", filepath.Base(p), len(b))
		}
	}
	// An execution trace starts with its header, "go 1.N trace" and NULs
	// (internal/trace/version).
	if b, err := os.ReadFile(trace); err != nil {
		t.Fatal(err)
	} else if head, _, _ := bytes.Cut(b, []byte{0}); len(b) < 1000 || !bytes.HasPrefix(head, []byte("go 1.")) || !bytes.HasSuffix(head, []byte(" trace")) {
		t.Errorf("run.trace: %d bytes starting %q, want an execution trace", len(b), b[:min(len(b), 16)])
	}
	if help := runCmd(t, "explain", "--help"); strings.Contains(help, "profile") || strings.Contains(help, "--trace") {
		t.Errorf("explain --help lists the hidden profile flags:\n%s", help)
	}
}
