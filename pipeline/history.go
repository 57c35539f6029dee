package pipeline

import (
	"context"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/progress"
)

// HistoryTTL is how long the earlier boots of a target read from History
// serve the stall checks before they are read again (another process may
// have stored some). Attempts this pipeline sees end are added at once.
const HistoryTTL = 5 * time.Minute

// targetHistory is the earlier boots of one target as the stall checks
// need them: compact copies (times, shape, phase timeline without its
// lines), at most progress.MaxBoots+1 read from History plus those ended
// here since.
type targetHistory struct {
	boots map[string]*domain.Attempt
	read  time.Time // wall clock (Options.Now) of the read
}

// histories holds the targetHistory of every target with a boot in
// progress at the last check; the others are dropped, so memory is
// bounded by the boots in progress.
type histories map[progress.Target]*targetHistory

// compactBoot is what progress needs of an earlier boot: an attempt
// loaded with its findings, evidence and context is kilobytes, this is a
// few hundred bytes.
func compactBoot(a *domain.Attempt) *domain.Attempt {
	c := &domain.Attempt{ID: a.ID, Host: a.Host, Unit: a.Unit, StartedAt: a.StartedAt, EndedAt: a.EndedAt, ReadyAt: a.ReadyAt,
		Phase: a.Phase, Verdict: a.Verdict, Shape: a.Shape}
	c.Timeline = make([]domain.PhaseMark, len(a.Timeline))
	for i, m := range a.Timeline {
		c.Timeline[i] = domain.PhaseMark{Phase: m.Phase, Time: m.Time}
	}
	return c
}

// earlierBoots are the earlier boots of target t for the stall check at
// now: History is read once per HistoryTTL per target (not on every tick
// for every boot in progress: the live path must stay as fast as it was),
// and the attempts of t this pipeline's tracker ended (ended, possibly not
// saved yet) are added to them. The slice is in no order (progress
// orders the boots itself).
func (l *Live) earlierBoots(ctx context.Context, t progress.Target, ended []*domain.Attempt, now time.Time) ([]*domain.Attempt, error) {
	h := l.history[t]
	if h == nil || now.Sub(h.read) >= HistoryTTL || now.Before(h.read) {
		as, err := l.opts.History.ListAttempts(ctx, domain.AttemptFilter{Host: t.Host, Unit: t.Unit, Limit: progress.MaxBoots + 1})
		if err != nil {
			return nil, err
		}
		h = &targetHistory{boots: make(map[string]*domain.Attempt, len(as)), read: now}
		for _, a := range as {
			if !a.EndedAt.IsZero() {
				h.boots[a.ID] = compactBoot(a)
			}
		}
		l.history[t] = h
	}
	for _, a := range ended {
		if old := h.boots[a.ID]; old == nil || !old.EndedAt.Equal(a.EndedAt) || len(old.Timeline) != len(a.Timeline) {
			h.boots[a.ID] = compactBoot(a)
		}
	}
	if extra := len(h.boots) - 2*(progress.MaxBoots+1); extra > 0 {
		// Many boots ended while one boot was in progress (another unit
		// of the same name restarting in a loop): keep the newest.
		dropOldest(h.boots, extra)
	}
	out := make([]*domain.Attempt, 0, len(h.boots))
	for _, a := range h.boots {
		out = append(out, a)
	}
	return out, nil
}

// dropOldest removes the n boots with the earliest start from m.
func dropOldest(m map[string]*domain.Attempt, n int) {
	for range n {
		var oldest *domain.Attempt
		for _, a := range m {
			if oldest == nil || a.StartedAt.Before(oldest.StartedAt) || (a.StartedAt.Equal(oldest.StartedAt) && a.ID < oldest.ID) {
				oldest = a
			}
		}
		delete(m, oldest.ID)
	}
}
