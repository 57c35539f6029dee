package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/llmfleet/analyzer/domain"
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
		got, gst, gerr := read(func(fn func(domain.Entry) error) (ingest.Stats, error) {
			return ingest.ReadFile(context.Background(), p, ingest.Options{}, fn)
		})
		want, wst, werr := read(func(fn func(domain.Entry) error) (ingest.Stats, error) {
			f, err := os.Open(p)
			if err != nil {
				return ingest.Stats{}, err
			}
			defer f.Close()
			return ingest.Read(context.Background(), f, p, ingest.Options{}, fn)
		})
		if gst.Format == ingest.FormatJournal {
			// Read counts what its buffer read past the last object; in
			// place, the reader stops at the last object's end.
			if gst.Bytes > wst.Bytes || gst.Bytes < wst.Bytes-256<<10 {
				t.Errorf("%s: %d bytes consumed in place, %d read", p, gst.Bytes, wst.Bytes)
			}
			gst.Bytes = wst.Bytes
		}
		if !reflect.DeepEqual(gst, wst) || (gerr == nil) != (werr == nil) {
			t.Fatalf("%s: mapped: %+v, %v\nread: %+v, %v", p, gst, gerr, wst, werr)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries mapped, %d read", p, len(got), len(want))
		}
		if d := firstDifference(got, want); d != "" {
			t.Fatalf("%s: %s", p, d)
		}
		formats[gst.Format]++
	}
	for _, f := range []ingest.Format{ingest.FormatJSON, ingest.FormatText, ingest.FormatExport, ingest.FormatJournal} {
		if formats[f] == 0 {
			t.Errorf("no %v input among %d: %v", f, len(paths), formats)
		}
	}
}

func read(r func(fn func(domain.Entry) error) (ingest.Stats, error)) ([]domain.Entry, ingest.Stats, error) {
	var es []domain.Entry
	st, err := r(func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	return es, st, err
}
