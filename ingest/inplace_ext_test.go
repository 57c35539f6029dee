package ingest_test

import (
	"path/filepath"
	"testing"

	"github.com/llmfleet/analyzer/ingest"
)

// TestInPlaceFilesAsLines reads the corpus' logs and the example journals
// as ReadFile does and with every JSON line read as a line first: the
// same entries and stats.
func TestInPlaceFilesAsLines(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*", "log.txt"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*.journal.json"))
	paths = append(paths, more...)
	if len(paths) < 100 {
		t.Fatalf("%d inputs found", len(paths))
	}
	formats := map[ingest.Format]int{}
	for _, p := range paths {
		f, err := ingest.InPlaceAgainstLines(p, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		formats[f]++
	}
	for _, f := range []ingest.Format{ingest.FormatJSON, ingest.FormatText} {
		if formats[f] == 0 {
			t.Errorf("no %v input among %d: %v", f, len(paths), formats)
		}
	}
}
