package journald_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmfleet/analyzer/ingest/journald"
)

// TestFilesReadable counts the journal files of machine directories, not
// other files, and skips a directory that does not exist.
func TestFilesReadable(t *testing.T) {
	dir := t.TempDir()
	machine := filepath.Join(dir, "0123456789abcdef0123456789abcdef")
	if err := os.Mkdir(machine, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"system.journal", "user-1000.journal", "system.journal~"} {
		if err := os.WriteFile(filepath.Join(machine, n), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "stray.journal"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	files, readable := journald.FilesReadable([]string{dir, filepath.Join(dir, "missing")})
	if files != 2 || readable != 2 {
		t.Errorf("FilesReadable = %d files, %d readable; want 2, 2", files, readable)
	}
}
