package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// An attempt's log is stored as it grows: a re-save of the running attempt
// adds only its new head lines, the ended attempt adds its tail, nothing is
// stored twice, and the gap between head and tail stays visible in Seq.
func TestAttemptLogGrowsAndEnds(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0]
	t0 := a.StartedAt
	line := func(seq int) domain.LogLine {
		return domain.LogLine{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Message: fmt.Sprintf("line %d", seq)}
	}
	var head []domain.LogLine
	for i := range 3 {
		head = append(head, line(i))
	}
	a.Log = &domain.AttemptLog{Lines: head, Total: 3}
	save := func() {
		t.Helper()
		if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	save()
	save() // the same again: nothing new
	head = append(head, line(3), line(4))
	a.Log = &domain.AttemptLog{Lines: head, Total: 9}
	save()
	// Ended: lines 5..6 were not kept, 7..8 are the tail.
	a.Log = &domain.AttemptLog{Lines: append(head, line(7), line(8)), Total: 9}
	save()

	got, err := db.AttemptLog(ctx, a.ID, a.StartedAt.Location())
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, l := range got.Lines {
		seqs = append(seqs, l.Seq)
	}
	if fmt.Sprint(seqs) != "[0 1 2 3 4 7 8]" || got.Total != 9 {
		t.Errorf("stored seqs %v of %d, want [0 1 2 3 4 7 8] of 9", seqs, got.Total)
	}
	if l := got.Lines[5]; l.Message != "line 7" || !l.Time.Equal(t0.Add(7*time.Second)) || l.Time.Format("-07:00") != t0.Format("-07:00") {
		t.Errorf("line 7 = %+v", l)
	}
	// An attempt saved without a log (explain's tracker keeps none) has
	// none, and an unknown id is ErrNotFound.
	b := storetest.Attempts()[1]
	if err := db.SaveAttempts(ctx, []*domain.Attempt{b}, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := db.AttemptLog(ctx, b.ID, nil); err != nil || l.Total != 0 || len(l.Lines) != 0 {
		t.Errorf("attempt without a log: %+v, %v", l, err)
	}
	if _, err := db.AttemptLog(ctx, "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

// TestLinesReferTheLog: an evidence or context line whose text is in the
// log lines a save stores is kept there only (its row refers to the log
// line), and every reader gets it back whole. A re-save refers to the
// lines earlier saves stored as the first save did, and a line the log lost makes the read fail instead of returning
// it without its text.
func TestLinesReferTheLog(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	a := storetest.Attempts()[0]
	var log []domain.LogLine
	add := func(msg string) {
		log = append(log, domain.LogLine{Seq: len(log), Time: a.StartedAt.Add(time.Duration(len(log)) * time.Second), Message: msg})
	}
	add("INFO a line no rule cites")
	for _, e := range a.Context {
		add(e.Message)
	}
	for _, e := range a.Evidence[:len(a.Evidence)-1] { // the last one only in full
		add(e.Message)
	}
	a.Log = &domain.AttemptLog{Lines: log, Total: len(log)}
	want := full(a)
	save := func() {
		t.Helper()
		if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, refs int) {
		t.Helper()
		if n := countLines(t, db, a.ID, func(l lineRec) bool { return l.logSeq.Valid }); n != refs {
			t.Errorf("%s: %d rows refer to the log, want %d", when, n, refs)
		}
		got, err := db.GetAttempt(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g := full(got); g != want {
			t.Errorf("%s: GetAttempt differs:\ngot  %s\nwant %s", when, g, want)
		}
		list, err := db.ListAttempts(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range list {
			if g.ID == a.ID && full(g) != want {
				t.Errorf("%s: ListAttempts differs:\ngot  %s\nwant %s", when, full(g), want)
			}
		}
	}
	save()
	// Rows: the context lines (two of them evidence too) and the last
	// evidence line; all but that one are in the log.
	rows := len(storedLines(t, db, a.ID))
	check("first save", rows-1)
	if err := db.SaveAttempts(ctx, storetest.Attempts()[1:], nil); err != nil {
		t.Fatal(err) // other attempts in the list, without logs
	}
	save()
	check("re-save, log already stored", rows-1)

	// A resumed attempt's log in memory holds only lines after the stored
	// ones (the tracker numbers them on): the stored lines are read back
	// and stay what rows refer to, and the new line is written.
	last := a.Evidence[len(a.Evidence)-1].Message
	a.Log = &domain.AttemptLog{Lines: []domain.LogLine{
		{Seq: len(log), Time: a.EndedAt, Message: last},
	}, Total: len(log) + 1}
	save()
	check("resumed", rows)
	if n := countLines(t, db, a.ID, func(l lineRec) bool { return l.logSeq.Valid && l.logSeq.Int64 == int64(len(log)) }); n != 1 {
		t.Errorf("the resumed attempt's new line is referred to by %d rows, want 1", n)
	}

	if _, err := db.db.Exec(`DELETE FROM attempt_log WHERE attempt_id = ?`, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetAttempt(ctx, a.ID); err == nil {
		t.Error("GetAttempt of an attempt whose log lost a line its evidence refers to: no error")
	}
}

// TestInsertSavesAsUpdate: an attempt saved into a database that does not
// hold it (the insert, which writes log_lines and log_last itself and
// deletes nothing) leaves the same rows as one saved over an earlier
// version of it (the update, which replaces its findings and lines and
// then sets the log's columns), also when both versions are in one
// transaction.
func TestInsertSavesAsUpdate(t *testing.T) {
	ctx := context.Background()
	full := storetest.Attempts()
	for _, a := range full {
		var lines []domain.LogLine
		for i := range 5 {
			lines = append(lines, domain.LogLine{Seq: i, Time: a.StartedAt.Add(time.Duration(i) * time.Second), Message: fmt.Sprintf("%s line %d", a.ID, i)})
		}
		a.Log = &domain.AttemptLog{Lines: lines, Total: 12}
	}
	// An earlier view of each: no log yet, another finding and note, no
	// evidence or timeline.
	earlier := storetest.Attempts()
	for _, a := range earlier {
		a.Findings = []domain.Finding{{ID: "earlier", Rule: "test.earlier", Severity: domain.SeverityWarning, Note: "earlier view"}}
		a.Evidence, a.Context, a.Timeline, a.Note = nil, nil, nil, "earlier view"
	}
	inserted, _ := openTemp(t)
	if err := inserted.SaveAttempts(ctx, full, nil); err != nil {
		t.Fatal(err)
	}
	updated, _ := openTemp(t)
	if err := updated.SaveAttempts(ctx, earlier, nil); err != nil {
		t.Fatal(err)
	}
	if err := updated.SaveAttempts(ctx, full, nil); err != nil {
		t.Fatal(err)
	}
	oneTx, _ := openTemp(t)
	if err := oneTx.SaveAttempts(ctx, append(storetest.Attempts(), full...), nil); err != nil {
		t.Fatal(err)
	}
	want := dump(t, inserted)
	if !strings.Contains(want, `log_lines=int64:"12"`) || !strings.Contains(want, `log_last=int64:"4"`) || !strings.Contains(want, "finding_id=") || !strings.Contains(want, "first_seq=") {
		t.Fatalf("the inserted rows lack the log's columns or the findings:\n%s", want)
	}
	if got := dump(t, updated); got != want {
		t.Errorf("saved over an earlier version:\n%s\nsaved into an empty database:\n%s", got, want)
	}
	if got := dump(t, oneTx); got != want {
		t.Errorf("both versions in one transaction:\n%s\nsaved into an empty database:\n%s", got, want)
	}
}
