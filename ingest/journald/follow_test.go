package journald_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/ingest/journald/journaldfake"
)

// line is a journal record of vllm.service saying msg.
func line(msg string) ingest.Record {
	return ingest.Record{"MESSAGE": []byte(msg), "_SYSTEMD_UNIT": []byte("vllm.service"), "_HOSTNAME": []byte("gpu-01")}
}

// appendLines appends records saying m1 … mn.
func appendLines(j *journaldfake.Journal, from, to int) {
	// At once: a follower reading between two appends would hand them
	// over as two batches, which the tests' expected batches do not allow.
	var recs []ingest.Record
	for i := from; i <= to; i++ {
		recs = append(recs, line(fmt.Sprintf("m%d", i)))
	}
	j.Append(recs...)
}

// recorder keeps the batches a follower hands over, with their stats.
type recorder struct {
	mu      sync.Mutex
	batches []journald.Batch
	stats   []journald.FollowStats
}

func (r *recorder) handle(b journald.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
	return nil
}

func (r *recorder) stat(s journald.FollowStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats = append(r.stats, s)
}

// shown describes the batches: one line each, "[catch-up] [gap=…] messages
// @cursor".
func (r *recorder) shown() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		var parts []string
		if b.CatchUp {
			parts = append(parts, "catch-up")
		}
		if b.Gap != "" {
			parts = append(parts, "gap="+b.Gap)
		}
		for _, e := range b.Entries {
			parts = append(parts, e.Message)
		}
		parts = append(parts, "@"+b.Cursor)
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// messages is every message handed over outside catch-up, in order.
func (r *recorder) messages(catchUp bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		if b.CatchUp != catchUp {
			continue
		}
		for _, e := range b.Entries {
			out = append(out, e.Message)
		}
	}
	return out
}

// following is a FollowReader running in the background on a fake.
type following struct {
	rec    *recorder
	cancel context.CancelFunc
	done   chan error
}

func startFollowing(t *testing.T, j *journaldfake.Journal, opt journald.FollowOptions, resume journald.Resume) *following {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &following{rec: &recorder{}, cancel: cancel, done: make(chan error, 1)}
	opt.Stats = f.rec.stat
	if opt.BatchDelay == 0 {
		opt.BatchDelay = time.Hour // batches end when the journal has no more
	}
	go func() { f.done <- journald.FollowReader(ctx, j, opt, resume, f.rec.handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-f.done; err != nil {
			t.Logf("FollowReader returned %v", err) // asserted by the tests that expect it
		}
	})
	return f
}

// until waits (up to 5 s) for cond on the batches handed over.
func (f *following) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; batches:\n%s", what, strings.Join(f.rec.shown(), "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop cancels the follower and returns what FollowReader returned.
func (f *following) stop(t *testing.T) error {
	t.Helper()
	f.cancel()
	select {
	case err := <-f.done:
		f.done <- err // for the cleanup
		return err
	case <-time.After(2 * time.Second):
		t.Fatal("FollowReader did not return within 2 s of the cancel")
		return nil
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestFollowReaderStarts: a first run starts at Since (here before every
// record) or, without it, at the tail.
func TestFollowReaderStarts(t *testing.T) {
	t.Run("since", func(t *testing.T) {
		j := journaldfake.New()
		appendLines(j, 1, 3)
		f := startFollowing(t, j, journald.FollowOptions{Since: time.Unix(1, 0)}, journald.Resume{})
		f.until(t, "m1-m3", func() bool { return len(f.rec.messages(false)) == 3 })
		equal(t, "batches", f.rec.shown(), []string{"m1 m2 m3 @" + journaldfake.Cursor(3)})
	})
	t.Run("tail", func(t *testing.T) {
		j := journaldfake.New()
		appendLines(j, 1, 3)
		f := startFollowing(t, j, journald.FollowOptions{}, journald.Resume{})
		<-j.Waiting() // at the tail, nothing to read
		appendLines(j, 4, 5)
		f.until(t, "m4 m5", func() bool { return len(f.rec.messages(false)) == 2 })
		equal(t, "messages", f.rec.messages(false), []string{"m4", "m5"})
	})
}

// TestFollowReaderResumesAfterSavedCursor: with a saved cursor and no open
// attempt, reading goes on at the record after it, nothing is re-read and
// no gap is reported.
func TestFollowReaderResumesAfterSavedCursor(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 5)
	f := startFollowing(t, j, journald.FollowOptions{}, journald.Resume{Cursor: journaldfake.Cursor(2)})
	f.until(t, "m3-m5", func() bool { return len(f.rec.messages(false)) == 3 })
	appendLines(j, 6, 6)
	f.until(t, "m6", func() bool { return len(f.rec.messages(false)) == 4 })
	if err := f.stop(t); err != nil {
		t.Fatal(err)
	}
	equal(t, "batches", f.rec.shown(), []string{
		"m3 m4 m5 @" + journaldfake.Cursor(5),
		"m6 @" + journaldfake.Cursor(6),
	})
}

// TestFollowReaderCatchUp: with a replay cursor the records from it up to
// the saved cursor are handed over again as one catch-up batch (to rebuild
// the open attempts, saving nothing), then reading goes on normally.
func TestFollowReaderCatchUp(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 6)
	f := startFollowing(t, j, journald.FollowOptions{BatchEntries: 2},
		journald.Resume{Cursor: journaldfake.Cursor(4), ReplayCursor: journaldfake.Cursor(2)})
	f.until(t, "m5 m6", func() bool { return len(f.rec.messages(false)) == 2 })
	equal(t, "batches", f.rec.shown(), []string{
		// BatchEntries splits the catch-up too; CatchUp switches off
		// only after the saved cursor.
		"catch-up m2 m3 @" + journaldfake.Cursor(3),
		"catch-up m4 @" + journaldfake.Cursor(4),
		"m5 m6 @" + journaldfake.Cursor(6),
	})
}

// TestFollowReaderVacuumedCursor: a saved cursor that no longer exists
// (vacuumed, rotated away) is reported as a gap on the first batch, and
// reading goes on from the oldest record; WithGap puts the gap entry the
// tracker turns into log_loss findings in front of that batch.
func TestFollowReaderVacuumedCursor(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 5)
	j.Vacuum(3)
	f := startFollowing(t, j, journald.FollowOptions{}, journald.Resume{Cursor: journaldfake.Cursor(2)})
	f.until(t, "m4 m5", func() bool { return len(f.rec.messages(false)) == 2 })
	gap := "saved journal cursor " + journaldfake.Cursor(2) + " is gone (vacuumed or rotated away); reading from the oldest entry"
	equal(t, "batches", f.rec.shown(), []string{"gap=" + gap + " m4 m5 @" + journaldfake.Cursor(5)})

	f.rec.mu.Lock()
	b := f.rec.batches[0]
	f.rec.mu.Unlock()
	now := time.Unix(1790000000, 0)
	es := b.WithGap(now)
	if len(es) != 3 || es[0].Fields[journald.FieldGap] != gap || es[0].Cursor != journaldfake.Cursor(5) ||
		!es[0].Time.Equal(now) || es[1].Message != "m4" || es[2].Message != "m5" {
		t.Errorf("WithGap = %+v, want the gap entry at %s, then m4 m5", es, journaldfake.Cursor(5))
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if s := f.rec.stats[0]; s.Gaps != 1 || s.Records != 2 || s.Entries != 2 {
		t.Errorf("stats %+v, want 1 gap, 2 records, 2 entries", s)
	}
}

// TestFollowReaderVacuumedReplayCursor: when only the replay start is gone,
// the open attempts cannot be rebuilt: the gap says so and reading goes on
// after the saved cursor, without catch-up; when both are gone, the saved
// cursor's gap is the one reported.
func TestFollowReaderVacuumedReplayCursor(t *testing.T) {
	t.Run("replay cursor gone", func(t *testing.T) {
		j := journaldfake.New()
		appendLines(j, 1, 5)
		j.Vacuum(2)
		f := startFollowing(t, j, journald.FollowOptions{},
			journald.Resume{Cursor: journaldfake.Cursor(3), ReplayCursor: journaldfake.Cursor(1)})
		f.until(t, "m4 m5", func() bool { return len(f.rec.messages(false)) == 2 })
		equal(t, "batches", f.rec.shown(), []string{"gap=journal entries from " + journaldfake.Cursor(1) +
			" were vacuumed before the analyzer re-read them m4 m5 @" + journaldfake.Cursor(5)})
	})
	t.Run("both gone", func(t *testing.T) {
		j := journaldfake.New()
		appendLines(j, 1, 5)
		j.Vacuum(4)
		f := startFollowing(t, j, journald.FollowOptions{},
			journald.Resume{Cursor: journaldfake.Cursor(3), ReplayCursor: journaldfake.Cursor(1)})
		f.until(t, "m5", func() bool { return len(f.rec.messages(false)) == 1 })
		equal(t, "batches", f.rec.shown(), []string{"gap=saved journal cursor " + journaldfake.Cursor(3) +
			" is gone (vacuumed or rotated away); reading from the oldest entry m5 @" + journaldfake.Cursor(5)})
	})
}

// TestFollowReaderReaderGap: a loss the reader reports while following
// (journalctl's TakeGap) is handed over as a batch of its own, between what
// was read before it and what comes after.
func TestFollowReaderReaderGap(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 2)
	f := startFollowing(t, j, journald.FollowOptions{Since: time.Unix(1, 0)}, journald.Resume{})
	f.until(t, "m1 m2", func() bool { return len(f.rec.messages(false)) == 2 })
	j.Gap("journal file late.journal appeared with older entries")
	appendLines(j, 3, 4)
	f.until(t, "m3 m4", func() bool { return len(f.rec.messages(false)) == 4 })
	equal(t, "batches", f.rec.shown(), []string{
		"m1 m2 @" + journaldfake.Cursor(2),
		"gap=journal file late.journal appeared with older entries @",
		"m3 m4 @" + journaldfake.Cursor(4),
	})
}

// TestFollowReaderStopsOnCancel: a cancel while the reader waits for new
// records ends FollowReader at once with nil, even when the wait would last
// a minute; a slow wait does too.
func TestFollowReaderStopsOnCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*journaldfake.Journal)
	}{
		{"idle wait", func(j *journaldfake.Journal) { j.SetMaxWait(time.Minute) }},
		{"slow wait", func(j *journaldfake.Journal) { j.SetSlowWait(time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := journaldfake.New()
			tc.set(j)
			appendLines(j, 1, 2)
			f := startFollowing(t, j, journald.FollowOptions{Since: time.Unix(1, 0)}, journald.Resume{})
			<-j.Waiting()
			start := time.Now()
			if err := f.stop(t); err != nil {
				t.Fatalf("FollowReader returned %v after a cancel, want nil", err)
			}
			if d := time.Since(start); d > 200*time.Millisecond {
				t.Errorf("FollowReader took %v to return after the cancel during Wait", d)
			}
			equal(t, "batches", f.rec.shown(), []string{"m1 m2 @" + journaldfake.Cursor(2)})
		})
	}
}

// TestFollowReaderErrors: unreadable entries are counted (FollowStats.
// BadEntries) and reading goes on; an error from Next stops FollowReader,
// which returns it, and the records read since the last batch are not
// handed over (their cursor is not saved, so a restart reads them again).
func TestFollowReaderErrors(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 2)
	j.AddBad(3)
	f := startFollowing(t, j, journald.FollowOptions{Since: time.Unix(1, 0)}, journald.Resume{})
	f.until(t, "m1 m2", func() bool { return len(f.rec.messages(false)) == 2 })
	f.rec.mu.Lock()
	bad := f.rec.stats[0].BadEntries
	f.rec.mu.Unlock()
	if bad != 3 {
		t.Errorf("BadEntries = %d, want 3", bad)
	}
	boom := errors.New("journal file unreadable")
	j.FailNext(boom)
	appendLines(j, 3, 3)
	select {
	case err := <-f.done:
		f.done <- err
		if !errors.Is(err, boom) {
			t.Fatalf("FollowReader returned %v, want %v", err, boom)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("FollowReader went on after an error from Next")
	}
	equal(t, "batches", f.rec.shown(), []string{"m1 m2 @" + journaldfake.Cursor(2)})

	// A restart from the saved cursor reads on where the error struck.
	g := startFollowing(t, j, journald.FollowOptions{}, journald.Resume{Cursor: journaldfake.Cursor(2)})
	g.until(t, "m3", func() bool { return len(g.rec.messages(false)) == 1 })
	equal(t, "after a restart", g.rec.messages(false), []string{"m3"})
}

// TestFollowReaderHandlerError: an error from the handler stops
// FollowReader and is returned.
func TestFollowReaderHandlerError(t *testing.T) {
	j := journaldfake.New()
	appendLines(j, 1, 2)
	full := errors.New("disk full")
	calls := 0
	err := journald.FollowReader(context.Background(), j, journald.FollowOptions{Since: time.Unix(1, 0)}, journald.Resume{},
		func(journald.Batch) error { calls++; return full })
	if !errors.Is(err, full) || calls != 1 {
		t.Errorf("FollowReader = %v after %d handler calls, want %v after 1", err, calls, full)
	}
}

// TestFollowReaderUnitFilter: records of other units are skipped and
// counted; container output passes whatever its unit.
func TestFollowReaderUnitFilter(t *testing.T) {
	j := journaldfake.New()
	j.Append(line("kept"))
	j.Append(ingest.Record{"MESSAGE": []byte("cron"), "_SYSTEMD_UNIT": []byte("cron.service")})
	j.Append(ingest.Record{"MESSAGE": []byte("container"), "_SYSTEMD_UNIT": []byte("libpod-conmon-1.scope"), "CONTAINER_NAME": []byte("vllm")})
	f := startFollowing(t, j, journald.FollowOptions{Since: time.Unix(1, 0), Units: []string{"vllm*.service"}}, journald.Resume{})
	f.until(t, "two kept", func() bool { return len(f.rec.messages(false)) == 2 })
	equal(t, "messages", f.rec.messages(false), []string{"kept", "container"})
	f.rec.mu.Lock()
	s := f.rec.stats[len(f.rec.stats)-1]
	f.rec.mu.Unlock()
	if s.Records != 3 || s.Skipped != 1 || s.Entries != 2 {
		t.Errorf("stats %+v, want 3 records, 1 skipped, 2 entries", s)
	}
}
