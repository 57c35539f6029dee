package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/pipeline"
)

// TestRotatedJournalFilesInOrder splits the night ladder into three
// journal files as systemd-journal-remote writes them and gives them as a
// shell lists a rotated journal (the active file, the newest, first; a
// plain capture between them keeps its place): the attempts are those of
// the JSON capture, read in one piece.
func TestRotatedJournalFilesInOrder(t *testing.T) {
	set := ruleSet(t)
	src := filepath.Join("..", "examples", "dankserver-night-ladder.journal.json")
	want, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs([]string{src}), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := journaldtest.ExportRecords(t, src, "")
	dir := t.TempDir()
	third := len(recs) / 3
	parts := map[string][][]byte{"system.journal": recs[2*third:], "system@2.journal": recs[third : 2*third], "system@1.journal": recs[:third]}
	for name, part := range parts {
		journaldtest.AppendJournal(t, filepath.Join(dir, name), part)
	}
	// A path that is no journal file keeps its place (it is not opened
	// here: only the inputs' order is looked at).
	other := filepath.Join(dir, "other.json")
	paths := []string{filepath.Join(dir, "system.journal"), filepath.Join(dir, "system@2.journal"), other, filepath.Join(dir, "system@1.journal")}
	order := []string{"system@1.journal", "system@2.journal", "other.json", "system.journal"}
	for i, x := range pipeline.FileInputs(paths) {
		if filepath.Base(x.Name) != order[i] {
			t.Fatalf("input %d is %s, want %s", i, filepath.Base(x.Name), order[i])
		}
	}
	shell := []string{paths[0], paths[3], paths[1]} // system.journal system@1.journal system@2.journal
	got, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs(shell), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) < 10 {
		t.Fatalf("%d attempts from the journal files, %d from the capture", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Verdict != w.Verdict || g.Phase != w.Phase || g.Engine != w.Engine || len(g.Evidence) != len(w.Evidence) {
			t.Errorf("attempt %d: %s %s/%s %s, want %s %s/%s %s", i, g.ID, g.Verdict, g.Phase, g.Engine, w.ID, w.Verdict, w.Phase, w.Engine)
		}
	}
}

// TestFileInputsLeavePipesUnread: ordering journal files looks at the
// head of regular files only; a pipe given as a path (a shell's
// <(journalctl -o json)) keeps every byte for its reader.
func TestFileInputsLeavePipesUnread(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	line := `{"MESSAGE":"hello","__REALTIME_TIMESTAMP":"1","__CURSOR":"c"}` + "\n"
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.WriteString(strings.Repeat(line, 10))
			f.Close()
		}
	}()
	var got []string
	done := make(chan error, 1)
	go func() {
		in := pipeline.FileInputs([]string{fifo})
		_, err := in[0].Read(context.Background(), ingest.Options{}, func(e domain.Entry) error {
			got = append(got, e.Message)
			return nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || len(got) != 10 || got[0] != "hello" {
			t.Fatalf("err %v, %d entries from the pipe: %q", err, len(got), got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pipe's reader still waits after 10 s: its first bytes were taken")
	}
}
