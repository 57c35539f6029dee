package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
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
		t.Errorf("heap profile of explain with --memprofile: %d bytes allocated, want the run's (at least 16 MiB)", space)
	}
}

// profileAllocSpace sums the alloc_space values (the second of each
// sample's values, bytes) of a Go heap profile: a gzip-compressed Profile
// message (github.com/google/pprof/proto/profile.proto) whose field 2 is a
// sample, and a sample's field 2 its packed values.
func profileAllocSpace(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// fields calls fn with each field of a message and its bytes (a
	// length-delimited field's content, else the value's encoding).
	fields := func(msg []byte, fn func(num protowire.Number, typ protowire.Type, v []byte)) {
		for len(msg) > 0 {
			num, typ, k := protowire.ConsumeTag(msg)
			if k < 0 {
				t.Fatalf("%s: not a profile: %v", path, protowire.ParseError(k))
			}
			m := protowire.ConsumeFieldValue(num, typ, msg[k:])
			if m < 0 {
				t.Fatalf("%s: not a profile: %v", path, protowire.ParseError(m))
			}
			v := msg[k : k+m]
			if typ == protowire.BytesType {
				v, _ = protowire.ConsumeBytes(v)
			}
			fn(num, typ, v)
			msg = msg[k+m:]
		}
	}
	var space int64
	fields(b, func(num protowire.Number, typ protowire.Type, sample []byte) {
		if num != 2 || typ != protowire.BytesType {
			return
		}
		fields(sample, func(num protowire.Number, typ protowire.Type, values []byte) {
			if num != 2 || typ != protowire.BytesType {
				return
			}
			for i := 0; len(values) > 0; i++ {
				v, n := protowire.ConsumeVarint(values)
				if n < 0 {
					t.Fatalf("%s: bad sample values", path)
				}
				if i == 1 {
					space += int64(v)
				}
				values = values[n:]
			}
		})
	})
	return space
}
