package ingest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// TestMappedFilesAsRead reads files of every format through their map
// (ReadFile) and through read(2) (Read of the open file): the same entries
// and stats. The map is dropped behind the reader at every page, which
// holds the offsets the drops are computed from (a dropped page reads
// the same when it comes back from the page cache).
func TestMappedFilesAsRead(t *testing.T) {
	defer ingest.MapEveryFile()()
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*", "log.txt"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*.journal.json"))
	paths = append(paths, more...)
	if len(paths) < 100 {
		t.Fatalf("%d inputs found", len(paths))
	}
	dir := t.TempDir()
	src := filepath.Join("..", "examples", "dankserver-night-ladder.journal.json")
	recs := journaldtest.ExportRecords(t, src, "")
	export := filepath.Join(dir, "night.export")
	if err := os.WriteFile(export, bytes.Join(recs, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "night.journal")
	journaldtest.AppendJournal(t, journal, recs)
	paths = append(paths, export, journal)
	whole, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 300, len(whole) / 3, len(whole) / 2, len(whole) - 1000} {
		// Cut inside the header, the first object, and later ones.
		cut := filepath.Join(dir, fmt.Sprintf("cut%d.journal", n))
		if err := os.WriteFile(cut, whole[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, cut)
	}
	formats := map[ingest.Format]int{}
	for _, p := range paths {
		f, err := ingest.MappedAgainstRead(p, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		formats[f]++
	}
	for _, f := range []ingest.Format{ingest.FormatJSON, ingest.FormatText, ingest.FormatExport, ingest.FormatJournal} {
		if formats[f] == 0 {
			t.Errorf("no %v input among %d: %v", f, len(paths), formats)
		}
	}
}
