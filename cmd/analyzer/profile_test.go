package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileFlags: --cpuprofile and --memprofile write pprof files (gzip
// compressed protocol buffers) of the command's run, and the flags stay out
// of the help.
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	out := runCmd(t, "explain", "-o", "json", "--cpuprofile", cpu, "--memprofile", mem,
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
	if help := runCmd(t, "explain", "--help"); strings.Contains(help, "profile") {
		t.Errorf("explain --help lists the hidden profile flags:\n%s", help)
	}
}
