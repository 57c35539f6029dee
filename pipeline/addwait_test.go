package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/pipeline"
)

// TestAddWaitBackPressure: AddWait into a full queue waits instead of
// failing (the journal keeps the entries), queues once the worker drains
// the queue, and the position it was given is saved with their effects;
// cancelled while waiting it returns nil and queues nothing; after Close it
// returns ErrClosed.
func TestAddWaitBackPressure(t *testing.T) {
	es := entries(t, fixtures[1])
	db := openDB(t)
	l := pipeline.New(db, ruleSet(t), pipeline.Options{QueueEntries: 10})
	defer l.Close()
	if err := l.Add(es[:20]); err != nil {
		t.Fatal(err)
	}

	// Cancelled while the queue is full.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.AddWait(ctx, es[20:21], "journal", es[20].Cursor, false); err != nil {
		t.Fatalf("AddWait cancelled while saturated = %v, want nil", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("AddWait returned after %v, want when its context ended (150 ms)", d)
	}
	if n := l.Queued(); n != 20 {
		t.Fatalf("%d entries queued, want the 20 of before (the cancelled AddWait queues nothing)", n)
	}

	// Waits until the worker drains the queue, then queues.
	done := make(chan error, 1)
	rest := es[20:]
	last := rest[len(rest)-1].Cursor
	go func() { done <- l.AddWait(context.Background(), rest, "journal", last, false) }()
	select {
	case err := <-done:
		t.Fatalf("AddWait into a full queue returned %v before the worker ran", err)
	case <-time.After(250 * time.Millisecond):
	}
	l.Start()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AddWait still waiting after the worker started")
	}
	flush(t, l)
	pos, ok, err := db.Position(context.Background(), "journal")
	if err != nil || !ok || pos.Cursor != last {
		t.Errorf("saved position %+v (found %v, %v), want cursor %s", pos, ok, err, last)
	}
	if got, want := len(list(t, db)), len(replayed(t, es)); got != want {
		t.Errorf("%d attempts saved, want %d as replay", got, want)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.AddWait(context.Background(), es[:1], "journal", es[0].Cursor, false); !errors.Is(err, pipeline.ErrClosed) {
		t.Errorf("AddWait after Close = %v, want ErrClosed", err)
	}
}
