//go:build linux && cgo

package journald_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/ingest/journald/journaldfake"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// sink is a journald.Sink that keeps what it is given and feeds a tracker.
type sink struct {
	mu      sync.Mutex
	tr      *tracker.Tracker
	adds    []string // "source cursor catchUp n"
	entries []domain.Entry
}

func (s *sink) AddWait(ctx context.Context, es []domain.Entry, source, cursor string, catchUp bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.adds = append(s.adds, fmt.Sprintf("%s %s %v %d", source, cursor, catchUp, len(es)))
	s.entries = append(s.entries, es...)
	if s.tr != nil {
		for _, e := range es {
			s.tr.Add(e)
		}
	}
	return nil
}

// logs collects Logf lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fixtureRecords are the first n records of the night fixture.
func fixtureRecords(t *testing.T, n int) []ingest.Record {
	t.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ingest.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() && len(out) < n {
		rec, err := ingest.ParseJSONRecord(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		delete(rec, "__CURSOR") // the fake journal assigns its own
		out = append(out, rec)
	}
	return out
}

// TestStartVacuumedCursorLogLoss: Start resumes from a saved cursor that
// was vacuumed; the sink gets the gap entry first, at the batch's position,
// the gap is logged and counted, and the tracker turns it into a log_loss
// finding on the next attempt to start. Stop ends the follower with nil,
// closes the journal and Health then says it stopped.
func TestStartVacuumedCursorLogLoss(t *testing.T) {
	if journald.FieldGap != tracker.GapField {
		t.Fatalf("journald.FieldGap %q, tracker.GapField %q: the tracker would not see the gap", journald.FieldGap, tracker.GapField)
	}
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	recs := fixtureRecords(t, 300)
	j := journaldfake.New()
	j.Append(recs[:20]...)
	gone := journaldfake.Cursor(10)
	j.Vacuum(20)
	last := j.Append(recs[20:]...)
	s := &sink{tr: tracker.New(set, tracker.Options{})}
	var l logs
	var stats []journald.FollowStats
	var statsMu sync.Mutex
	f := journald.Start(context.Background(), journald.FollowOptions{
		Dir:  "/var/log/remote",
		Open: func() (journald.Journal, error) { return j, nil },
		Logf: l.logf,
		Stats: func(st journald.FollowStats) {
			statsMu.Lock()
			defer statsMu.Unlock()
			stats = append(stats, st)
		},
	}, journald.Resume{Cursor: gone}, s)
	waitUntil(t, "every record", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.adds) > 0 && strings.Contains(s.adds[len(s.adds)-1], last)
	})
	if ok, why := f.Health(); !ok {
		t.Errorf("Health while following = false, %q", why)
	}
	if err := f.Stop(); err != nil {
		t.Fatalf("Stop = %v, want nil", err)
	}
	if ok, why := f.Health(); ok || why != "stopped: done" {
		t.Errorf("Health after Stop = %v, %q; want false, \"stopped: done\"", ok, why)
	}
	if !j.Closed() {
		t.Error("the journal was not closed")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	gap := "saved journal cursor " + gone + " is gone (vacuumed or rotated away); reading from the oldest entry"
	first := s.entries[0]
	if first.Fields[journald.FieldGap] != gap || !strings.HasPrefix(s.adds[0], "journal:/var/log/remote "+first.Cursor+" false ") {
		t.Errorf("first entry %+v at %q, want the gap entry %q at the first batch's cursor", first, s.adds[0], gap)
	}
	for _, e := range s.entries[1:] {
		if e.Fields[journald.FieldGap] != "" {
			t.Errorf("a second gap entry: %+v", e)
		}
	}
	if got := l.all(); got != "journal gap: "+gap {
		t.Errorf("logged %q, want the gap", got)
	}
	statsMu.Lock()
	if st := stats[len(stats)-1]; st.Gaps != 1 || st.Records != 280 {
		t.Errorf("stats %+v, want 1 gap and 280 records", st)
	}
	statsMu.Unlock()
	lost := 0
	for _, a := range s.tr.Attempts() {
		for _, fd := range a.Findings {
			if fd.ID == domain.FindingLogLoss {
				lost++
			}
		}
	}
	if lost == 0 {
		t.Errorf("no attempt has a %s finding after the gap", domain.FindingLogLoss)
	}
}

// TestStartStopsOnNextError: an error from the journal stops the follower
// for good (serve's health check then fails); it is logged, Health reports
// it, Stop returns it.
func TestStartStopsOnNextError(t *testing.T) {
	j := journaldfake.New()
	boom := errors.New("journal file unreadable")
	j.FailNext(boom)
	var l logs
	f := journald.Start(context.Background(), journald.FollowOptions{
		Open: func() (journald.Journal, error) { return j, nil }, Logf: l.logf,
	}, journald.Resume{}, &sink{})
	waitUntil(t, "the follower to stop", func() bool { ok, _ := f.Health(); return !ok })
	if _, why := f.Health(); why != "stopped: "+boom.Error() {
		t.Errorf("Health says %q", why)
	}
	if err := f.Stop(); !errors.Is(err, boom) {
		t.Errorf("Stop = %v, want %v", err, boom)
	}
	if got := l.all(); got != "journal follower stopped: "+boom.Error() {
		t.Errorf("logged %q", got)
	}
}

// TestStartOpenError: a journal that cannot be opened stops the follower
// with that error.
func TestStartOpenError(t *testing.T) {
	denied := errors.New("permission denied")
	f := journald.Start(context.Background(), journald.FollowOptions{
		Open: func() (journald.Journal, error) { return nil, denied },
	}, journald.Resume{}, &sink{})
	if err := f.Stop(); !errors.Is(err, denied) {
		t.Errorf("Stop = %v, want %v", err, denied)
	}
}

// TestStartStopsWithContext: cancelling Start's context ends the follower
// promptly while it waits for records, as Stop does.
func TestStartStopsWithContext(t *testing.T) {
	j := journaldfake.New()
	j.SetMaxWait(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	f := journald.Start(ctx, journald.FollowOptions{Open: func() (journald.Journal, error) { return j, nil }},
		journald.Resume{}, &sink{})
	<-j.Waiting()
	start := time.Now()
	cancel()
	waitUntil(t, "the follower to stop", func() bool { ok, _ := f.Health(); return !ok })
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("follower took %v to stop after its context was cancelled", d)
	}
	if err := f.Stop(); err != nil {
		t.Errorf("Stop = %v, want nil", err)
	}
}

// wedgedSink takes no batch until released, as a pipeline whose store
// hangs.
type wedgedSink struct{ release chan struct{} }

func (s wedgedSink) AddWait(ctx context.Context, _ []domain.Entry, _, _ string, _ bool) error {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// TestStartReportsStalledSink: a follower that is alive but whose sink has
// held a batch past StallAfter is unhealthy (serve's /-/ready fails), and
// healthy again once the sink takes it.
func TestStartReportsStalledSink(t *testing.T) {
	j := journaldfake.New()
	s := wedgedSink{release: make(chan struct{})}
	f := journald.Start(context.Background(), journald.FollowOptions{
		Open: func() (journald.Journal, error) { return j, nil }, StallAfter: 100 * time.Millisecond,
	}, journald.Resume{}, s)
	defer func() { _ = f.Stop() }()
	<-j.Waiting()
	if ok, why := f.Health(); !ok {
		t.Errorf("Health of an idle follower = false, %q", why)
	}
	j.Append(fixtureRecords(t, 5)...)
	waitUntil(t, "the follower to report the stall", func() bool { ok, _ := f.Health(); return !ok })
	if _, why := f.Health(); !strings.HasPrefix(why, "stalled: the pipeline has not taken a batch for ") {
		t.Errorf("Health says %q", why)
	}
	close(s.release)
	waitUntil(t, "the follower to be healthy again", func() bool { ok, _ := f.Health(); return ok })
}
