package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// TestCompressedExports: a journal export compressed with gzip, zstd or xz
// gives the attempts of the plain file.
func TestCompressedExports(t *testing.T) {
	plain, err := os.ReadFile(fixtures[1])
	if err != nil {
		t.Fatal(err)
	}
	want := runCmd(t, "explain", "--format", "json", fixtures[1])
	dir := t.TempDir()
	for ext, compress := range map[string]func(io.Writer) (io.WriteCloser, error){
		"gz":  func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil },
		"zst": func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) },
		"xz":  func(w io.Writer) (io.WriteCloser, error) { return xz.NewWriter(w) },
	} {
		t.Run(ext, func(t *testing.T) {
			var b bytes.Buffer
			w, err := compress(&b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(plain); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "day.json."+ext)
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := runCmd(t, "explain", "--format", "json", path); got != want {
				t.Errorf(".json.%s: the attempts differ from the plain file's", ext)
			}
		})
	}
}

// TestRefusesNonLogs: input that is no log gives an error that says what
// was expected and a non-zero exit, never a made-up attempt.
func TestRefusesNonLogs(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919 + i*i*31) // deterministic, not text
	}
	for name, c := range map[string]struct {
		data []byte
		say  string
	}{
		"random bytes": {random, "binary data"},
		"empty file":   {nil, "empty"},
		"hello":        {[]byte("hello\n"), "no line"},
		"a word list":  {[]byte("alpha\nbeta\ngamma\n"), "no line"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			old := stdout
			stdout = &out
			defer func() { stdout = old }()
			err := run(context.Background(), []string{"explain", path})
			if err == nil || !strings.Contains(err.Error(), c.say) || !strings.Contains(err.Error(), "expected journalctl") {
				t.Fatalf("err = %v, want one saying %q and what was expected", err, c.say)
			}
			if strings.Contains(out.String(), "running") {
				t.Errorf("printed an attempt: %s", out.String())
			}
		})
	}
}
