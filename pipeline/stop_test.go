package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/pipeline"
)

// slowStore stands for a database saving 100,000 attempts (issue 28: some
// 150 s): SaveAttempts returns only when its context ends.
type slowStore struct{ entered chan struct{} }

func (s *slowStore) SaveAttempts(ctx context.Context, _ []*domain.Attempt, _ *domain.Position) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *slowStore) GetAttempt(context.Context, string) (*domain.Attempt, error) {
	return nil, domain.ErrNotFound
}

// TestStopEndsASaveInProgress: once Options.Context ends (serve's SIGTERM),
// a save in progress is abandoned, and Close returns within its
// CloseTimeout instead of waiting for the save (issue 28: SIGTERM was not
// honoured in 120 s).
func TestStopEndsASaveInProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &slowStore{entered: make(chan struct{}, 1)}
	l := pipeline.New(st, ruleSet(t), pipeline.Options{Context: ctx, CloseTimeout: 200 * time.Millisecond})
	l.Start()
	if err := l.Add(entries(t, fixtures[1])); err != nil {
		t.Fatal(err)
	}
	l.RequestFlush()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no save started")
	}
	cancel() // SIGTERM
	start := time.Now()
	err := l.Close()
	took := time.Since(start)
	t.Logf("Close: %v after %v", err, took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the last save's deadline", err)
	}
	if took > race.Budget(time.Second) {
		t.Errorf("Close took %v after the stop, want within a second", took)
	}
}
