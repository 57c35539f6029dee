//go:build linux && cgo

package journald_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

const fixture = "../../examples/dankserver-night-ladder.journal.json"

// exportRecords converts the fixture to export-format records.
func exportRecords(t *testing.T) [][]byte { return journaldtest.ExportRecords(t, fixture, "") }

// appendJournal appends records to dir/remote.journal.
func appendJournal(t *testing.T, dir string, recs [][]byte) {
	journaldtest.AppendJournal(t, filepath.Join(dir, "remote.journal"), recs)
}

// summary is what must match between two runs: cursors differ (the journal
// files assign their own), verdicts and shapes must not.
func summary(as []*domain.Attempt) string {
	var lines []string
	for _, a := range as {
		f := a.FindingIDs()
		sort.Strings(f)
		sh, _ := json.Marshal(a.Shape)
		lines = append(lines, strings.Join([]string{a.ID, a.Unit, a.InvocationID, a.Container, string(a.Verdict),
			string(a.Phase), a.EndedBy, strings.Join(f, ","), string(sh)}, " "))
	}
	return strings.Join(lines, "\n")
}

func expected(t *testing.T, set *rules.Set) string {
	tr := tracker.New(set, tracker.Options{})
	if _, err := ingest.ReadFile(context.Background(), fixture, ingest.Options{}, func(e domain.Entry) error {
		tr.Add(e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return summary(tr.Attempts())
}

// follower runs Follow in the background, feeding a tracker, and keeps the
// position a store would save.
type follower struct {
	mu      sync.Mutex
	tr      *tracker.Tracker
	resume  journald.Resume
	records int
	saved   map[string]int // cursors handed over outside catch-up
	dups    int
	done    chan error
	cancel  context.CancelFunc
	stopAt  int
}

// readers are the two journal readers Follow can use; each follow test runs
// with both.
var readers = map[string]bool{"journalctl": false, "sd-journal": true}

func startFollower(set *rules.Set, dir string, inProcess bool, resume journald.Resume, stopAt int) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{tr: tracker.New(set, tracker.Options{}), resume: resume, saved: map[string]int{}, done: make(chan error, 1), cancel: cancel, stopAt: stopAt}
	go func() {
		f.done <- journald.Follow(ctx, journald.FollowOptions{Dir: dir, InProcess: inProcess, Since: time.Unix(1, 0), BatchEntries: 50},
			resume, func(b journald.Batch) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, e := range b.Entries {
					f.tr.Add(e)
					if !b.CatchUp {
						if f.saved[e.Cursor] > 0 {
							f.dups++
						}
						f.saved[e.Cursor]++
					}
				}
				if !b.CatchUp {
					f.records += len(b.Entries)
					f.resume = journald.Resume{Cursor: b.Cursor, ReplayCursor: f.tr.ReplayCursor()}
					// Stop only where an attempt is open, so the restart has
					// one to re-read: batches vary in size with the reader.
					if f.stopAt > 0 && f.records >= f.stopAt && f.resume.ReplayCursor != "" {
						cancel()
					}
				}
				return nil
			})
	}()
	return f
}

func (f *follower) wait(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("timed out waiting for the follower")
}

func (f *follower) stop(t *testing.T) {
	t.Helper()
	start := time.Now()
	f.cancel()
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("follower took %v to stop, want about 1 s at most", d)
	}
}

// TestFollowAppendedJournal appends the night fixture to a journal file in
// four chunks while the follower reads the directory, like production.
func TestFollowAppendedJournal(t *testing.T) {
	for name, inProcess := range readers {
		t.Run(name, func(t *testing.T) { testFollowAppendedJournal(t, inProcess) })
	}
}

func testFollowAppendedJournal(t *testing.T, inProcess bool) {
	recs := exportRecords(t)
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	q := len(recs) / 4
	appendJournal(t, dir, recs[:q])
	f := startFollower(set, dir, inProcess, journald.Resume{}, 0)
	for i := 1; i < 4; i++ {
		end := (i + 1) * q
		if i == 3 {
			end = len(recs)
		}
		time.Sleep(100 * time.Millisecond)
		appendJournal(t, dir, recs[i*q:end])
	}
	f.wait(t, func() bool { return len(f.tr.Attempts()) == 16 && f.tr.Attempts()[15].EndedBy != "" })
	f.stop(t)
	if got, want := summary(f.tr.Attempts()), expected(t, set); got != want {
		t.Errorf("followed journal differs from the JSON capture:\n got:\n%s\nwant:\n%s", got, want)
	}
}

// TestFollowResumesExactlyOnce stops the follower halfway, then starts a
// new one from the saved position: it re-reads the open attempts without
// handing their entries over as new, and ends with the same attempts.
func TestFollowResumesExactlyOnce(t *testing.T) {
	for name, inProcess := range readers {
		t.Run(name, func(t *testing.T) { testFollowResumesExactlyOnce(t, inProcess) })
	}
}

func testFollowResumesExactlyOnce(t *testing.T, inProcess bool) {
	recs := exportRecords(t)
	set, _ := rules.LoadBuiltin()
	dir := t.TempDir()
	appendJournal(t, dir, recs)
	first := startFollower(set, dir, inProcess, journald.Resume{}, 400)
	if err := <-first.done; err != nil {
		t.Fatalf("first follower: %v", err)
	}
	if first.resume.Cursor == "" || first.resume.ReplayCursor == "" {
		t.Fatalf("no position saved: %+v", first.resume)
	}
	second := startFollower(set, dir, inProcess, first.resume, 0)
	second.wait(t, func() bool { return first.records+second.records >= 866 })
	second.stop(t)
	for c := range second.saved {
		if first.saved[c] > 0 {
			t.Fatalf("entry %s handed over by both runs", c)
		}
	}
	if first.records+second.records != 866 || first.dups+second.dups != 0 {
		t.Errorf("entries handed over: %d + %d (dups %d), want 866 exactly once", first.records, second.records, first.dups+second.dups)
	}
	// Attempts still open at the stop come out whole after the restart.
	want := map[string]string{}
	for _, l := range strings.Split(expected(t, set), "\n") {
		want[strings.Fields(l)[0]] = l
	}
	for _, l := range strings.Split(summary(second.tr.Attempts()), "\n") {
		if id := strings.Fields(l)[0]; want[id] != l {
			t.Errorf("after resume:\n got %s\nwant %s", l, want[id])
		}
	}
}

// TestFollowVacuumedCursor resumes from a cursor that no longer exists:
// reading goes on from the oldest entry and the gap is reported.
func TestFollowVacuumedCursor(t *testing.T) {
	for name, inProcess := range readers {
		t.Run(name, func(t *testing.T) { testFollowVacuumedCursor(t, inProcess) })
	}
}

func testFollowVacuumedCursor(t *testing.T, inProcess bool) {
	recs := exportRecords(t)
	dir := t.TempDir()
	appendJournal(t, dir, recs[:100])
	var gap string
	var n int
	ctx, cancel := context.WithCancel(context.Background())
	gone := "s=00000000000000000000000000000000;i=1;b=00000000000000000000000000000000;m=1;t=1;x=1"
	err := journald.Follow(ctx, journald.FollowOptions{Dir: dir, InProcess: inProcess}, journald.Resume{Cursor: gone}, func(b journald.Batch) error {
		if b.Gap != "" {
			gap = b.Gap
		}
		n += len(b.Entries)
		if n >= 99 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(gap, "is gone") || n < 99 {
		t.Errorf("gap %q, %d entries", gap, n)
	}
}
