package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// analyzerBinary builds the analyzer once per test process, into a
// temporary directory, and returns its path: the tests that need a real
// process (signals, SIGKILL) share one build.
func analyzerBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "analyzer-test-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "analyzer")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = &buildError{err, out}
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

// TestEveryCommandEndsOnSIGTERM: a command busy with endless input (a pipe
// whose writer never closes it) or serving ends within a second of SIGTERM,
// and of SIGINT.
func TestEveryCommandEndsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds the binary")
	}
	bin := analyzerBinary(t)
	night, err := os.ReadFile(fixtures[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmds := map[string][]string{
		"explain": {"explain", "-"},
		"replay":  {"replay", "--db", filepath.Join(dir, "r.db"), "-"},
		"ladder":  {"ladder", "-"},
		"fit":     {"fit", "--target", "frank-primary", "--max-num-seqs", "4", "--max-model-len", "262144", "-"},
		"serve":   {"serve", "--db", filepath.Join(dir, "s.db"), "--no-journal", "--listen", "127.0.0.1:0"},
	}
	for name, args := range cmds {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			cmd := exec.Command(bin, args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = stdin.Write(night) }() // and never closed
			time.Sleep(500 * time.Millisecond)
			start := time.Now()
			_ = cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				_ = err // the exit status a signal gives; only the time matters
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s: ended %v after %v", name, d, sig)
				}
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				if err := <-done; err == nil {
					t.Errorf("%s: exited 0 after being killed", name)
				}
				t.Errorf("%s: still running 5 s after %v", name, sig)
			}
			_ = stdin.Close()
		}
	}
}
