package ingest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// TestJournalFileAsJournalctlJSON reads the journal files
// systemd-journal-remote writes from the bundled captures (compact, keyed
// hash, zstd-compressed values past 512 bytes: systemd 252's defaults) and
// checks each entry against the one the real journalctl -o json prints
// for that file: the same messages, cursors, times and fields, in order.
// A second upload into the same file must read as the first's entries
// followed by the second's.
func TestJournalFileAsJournalctlJSON(t *testing.T) {
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Skip("needs journalctl")
	}
	for _, name := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "examples", name+".journal.json")
			dir := t.TempDir()
			file := filepath.Join(dir, name+".journal")
			recs := journaldtest.ExportRecords(t, src, "")
			half := len(recs) / 2
			journaldtest.AppendJournal(t, file, recs[:half])
			journaldtest.AppendJournal(t, file, recs[half:])
			out, err := exec.Command("journalctl", "--file", file, "-o", "json", "--all", "--no-pager").Output()
			if err != nil {
				t.Fatalf("journalctl: %v", err)
			}
			js := filepath.Join(dir, "journalctl.json")
			if err := os.WriteFile(js, out, 0o644); err != nil {
				t.Fatal(err)
			}
			got, gst := readEntries(t, file)
			want, wst := readEntries(t, js)
			if gst.Format != ingest.FormatJournal || gst.Malformed != 0 || wst.Malformed != 0 {
				t.Fatalf("journal file: %v, %d malformed %v; journalctl's JSON: %d malformed", gst.Format, gst.Malformed, gst.Errors, wst.Malformed)
			}
			orig, _ := readEntries(t, src)
			if len(got) != len(want) || len(want) != len(orig) {
				t.Fatalf("%d entries from the journal file, %d from journalctl's JSON, %d from the capture uploaded", len(got), len(want), len(orig))
			}
			long := 0
			for i := range want {
				g, w := got[i], want[i]
				g.Source, w.Source = "", ""
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("entry %d:\n got %+v\nwant %+v", i, g, w)
				}
				if len(w.Message) > 512 {
					long++
				}
			}
			if name == "dankserver-night-ladder" && long == 0 {
				t.Error("no message past 512 bytes: the compressed values went untested")
			}
		})
	}
}

func readEntries(t *testing.T, path string) ([]domain.Entry, ingest.Stats) {
	t.Helper()
	var es []domain.Entry
	st, err := ingest.ReadFile(context.Background(), path, ingest.Options{}, func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return es, st
}
