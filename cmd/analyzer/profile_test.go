package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestMemProfileOfABatchRun runs the built binary, whose package early
// turns the runtime's heap-profile sampling off for a batch command
// unless --memprofile asks: asked, the profile accounts for the run's
// allocations (~48 MiB for this journal; ~0 with sampling off from the
// start, and the number of stacks sampled is too few and too random to
// tell the two apart).
func TestMemProfileOfABatchRun(t *testing.T) {
	mem := filepath.Join(t.TempDir(), "mem.pprof")
	out, err := exec.Command(analyzerBinary(t), "explain", "-o", "json", "--memprofile="+mem,
		"../../examples/dankserver-night-ladder.journal.json").CombinedOutput()
	if err != nil {
		t.Fatalf("explain --memprofile: %v\n%.300s", err, out)
	}
	if space := profileAllocSpace(t, mem); space < 16<<20 {
		t.Errorf("heap profile of explain with --memprofile: %.0f bytes allocated, want the run's (at least 16 MiB)", space)
	}
}

// profileAllocSpace is the total of a heap profile's alloc_space samples,
// in bytes, as `go tool pprof -top` reports it ("... of 44.04MB total").
func profileAllocSpace(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("go", "tool", "pprof", "-sample_index=alloc_space", "-top", "-nodecount=1", path).Output()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v", path, err)
	}
	m := regexp.MustCompile(`of ([0-9.]+)(B|kB|MB|GB) total`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("go tool pprof %s: no total in\n%s", path, out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v * map[string]float64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[string(m[2])]
}
