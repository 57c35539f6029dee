package store

import (
	"context"
	"errors"
	"fmt"
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
		return domain.LogLine{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Cursor: fmt.Sprintf("c%d", seq), Message: fmt.Sprintf("line %d", seq)}
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
	if l := got.Lines[5]; l.Message != "line 7" || l.Cursor != "c7" || !l.Time.Equal(t0.Add(7*time.Second)) || l.Time.Format("-07:00") != t0.Format("-07:00") {
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
