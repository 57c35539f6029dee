package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTimeCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu")
	// A shell that counts to 200,000 uses CPU time the rusage must show,
	// and its exit status must come back.
	code, err := timeCommand(out, []string{"/bin/sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3`})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("line %q: want wall and CPU seconds", b)
	}
	wall, err1 := strconv.ParseFloat(f[0], 64)
	cpu, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("line %q: %v %v", b, err1, err2)
	}
	if cpu < 0.01 || wall < 0.01 {
		t.Errorf("wall %.6f s, CPU %.6f s: a count to 200,000 in sh takes more than 10 ms of each", wall, cpu)
	}
	if _, err := timeCommand(out, []string{filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a command that does not exist: no error")
	}
	if _, err := timeCommand(out, nil); err == nil {
		t.Error("no command: no error")
	}
}
