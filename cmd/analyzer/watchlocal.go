package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/report"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
)

// A local watch reads the journal itself (the local one, a directory of
// journal files, or a file being appended to) into a live pipeline kept
// in memory (memStore): nothing is written anywhere, and --db, when
// given, is only read, for the targets' earlier boots.

// memStore is the local watch's pipeline store: the newest copy of every
// attempt the pipeline saved, without its lines. It is the pipeline's
// History too, with the --db store's attempts before its own.
type memStore struct {
	mu sync.Mutex
	as map[string]*domain.Attempt
	db *store.DB // nil without --db
}

// SaveAttempts keeps copies: the pipeline's worker goes on changing its
// attempts while watch reads these.
func (m *memStore) SaveAttempts(_ context.Context, as []*domain.Attempt, _ *domain.Position) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range as {
		c := *a
		c.Evidence, c.Context, c.Log = nil, nil, nil
		c.Shape = maps.Clone(a.Shape)
		c.Timeline = slices.Clone(a.Timeline)
		c.Findings = make([]domain.Finding, len(a.Findings))
		for i, f := range a.Findings {
			f.Evidence = slices.Clone(f.Evidence)
			c.Findings[i] = f
		}
		m.as[a.ID] = &c
	}
	return nil
}

// GetAttempt is the kept copy of id.
func (m *memStore) GetAttempt(_ context.Context, id string) (*domain.Attempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.as[id]; ok {
		return a, nil
	}
	return nil, domain.ErrNotFound
}

// ListAttempts answers the pipeline's history reads (host and unit,
// newest first, Limit): the attempts seen here and those of --db.
func (m *memStore) ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error) {
	var out []*domain.Attempt
	seen := map[string]bool{}
	m.mu.Lock()
	for _, a := range m.as {
		if (f.Host == "" || a.Host == f.Host) && (f.Unit == "" || a.Unit == f.Unit) {
			out = append(out, a)
			seen[a.ID] = true
		}
	}
	m.mu.Unlock()
	if m.db != nil {
		stored, err := m.db.ListAttempts(ctx, domain.AttemptFilter{Host: f.Host, Unit: f.Unit, Limit: f.Limit, Brief: true})
		if err != nil {
			return nil, err
		}
		for _, a := range stored {
			if !seen[a.ID] {
				out = append(out, a)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// OpenAttempts are the attempts seen here that have not ended, newest
// first (progress.Lister).
func (m *memStore) OpenAttempts(context.Context) ([]*domain.Attempt, error) {
	m.mu.Lock()
	var open []*domain.Attempt
	for _, a := range m.as {
		if a.EndedBy == "" {
			open = append(open, a)
		}
	}
	m.mu.Unlock()
	sort.Slice(open, func(i, j int) bool { return open[i].StartedAt.After(open[j].StartedAt) })
	return open, nil
}

// boots are the boots in progress at now with their estimates, newest
// first, as watch shows them.
func (m *memStore) boots(ctx context.Context, now time.Time, lim progress.Limits) ([]report.BootView, []string, error) {
	bs, err := progress.Boots(ctx, m, now, lim)
	if err != nil {
		return nil, nil, err
	}
	views := make([]report.BootView, len(bs))
	ids := make([]string, len(bs))
	for i, b := range bs {
		views[i], ids[i] = bootViewOf(b.Attempt, b.Estimate), b.Attempt.ID
	}
	return views, ids, nil
}

// bootViewOf is a boot and its estimate as report draws it.
func bootViewOf(a *domain.Attempt, e progress.Estimate) report.BootView {
	d := func(x time.Duration) *time.Duration { return &x }
	v := report.BootView{Host: a.Host, Unit: a.Unit, Phase: string(e.Phase), Elapsed: e.Elapsed, InPhase: e.InPhase, Basis: e.Basis,
		StallLimit: e.StallLimit, Stalled: e.Stalled}
	if !e.NoHistory() {
		v.ETA50, v.ETA90 = d(e.ETA50), d(e.ETA90)
	}
	if e.PhaseBasis >= progress.MinBasis {
		v.PhaseP50, v.PhaseP90 = d(e.PhaseP50), d(e.PhaseP90)
	}
	return v
}

// localWatch is a running local watch: the reader and the pipeline it
// feeds.
type localWatch struct {
	mem  *memStore
	p    *pipeline.Live
	stop func() error
	// caughtUp is closed once the reader has read what its source held
	// (a file: its end; a journal: no new batch for a second).
	caughtUp chan struct{}
}

// settle waits until the reader caught up and the pipeline saved what it
// read (watch --once).
func (w *localWatch) settle(ctx context.Context) error {
	select {
	case <-w.caughtUp:
	case <-ctx.Done():
		return nil
	}
	return w.p.Flush(ctx)
}

// startLocalWatch starts reading o's source into an in-memory pipeline.
func startLocalWatch(ctx context.Context, o watchOpts) (*localWatch, error) {
	set, err := rules.LoadSource(o.rules)
	if err != nil {
		return nil, err
	}
	mem := &memStore{as: map[string]*domain.Attempt{}}
	var db *store.DB
	if o.db != "" {
		if _, err := os.Stat(o.db); err != nil {
			return nil, fmt.Errorf("--db %s: %w", o.db, err)
		}
		if db, err = store.Open(o.db); err != nil {
			return nil, err
		}
		mem.db = db
	}
	// The flush interval is how soon a line shows: watch redraws every
	// --interval.
	p := pipeline.New(mem, set, pipeline.Options{Context: ctx, History: mem, StallQuiet: o.stallQuiet, StallFloor: o.stallFloor,
		FlushInterval: min(o.interval, 2*time.Second), FindingGrace: -1})
	p.Start()
	w := &localWatch{mem: mem, p: p, caughtUp: make(chan struct{})}
	var once sync.Once
	caughtUp := func() { once.Do(func() { close(w.caughtUp) }) }
	closeAll := func(err error) error {
		err = errors.Join(err, p.Close())
		if db != nil {
			err = errors.Join(err, db.Close())
		}
		return err
	}
	if o.file != "" {
		f, err := os.Open(o.file)
		if err != nil {
			return nil, closeAll(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- tailInto(rctx, f, o.file, p, caughtUp) }()
		w.stop = func() error {
			cancel()
			err := <-done
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			return closeAll(errors.Join(err, f.Close()))
		}
		return w, nil
	}
	opt := journald.FollowOptions{Dir: o.dir, Logf: func(format string, args ...any) { slog.Warn(fmt.Sprintf(format, args...)) }}
	if o.units != "" {
		opt.Units = strings.Split(o.units, ",")
	}
	// A boot in progress began before now: read back as far as one may
	// have (progress.MaxBootAge) unless --since says otherwise.
	opt.Since = time.Now().Add(-progress.MaxBootAge)
	if o.since != "" {
		t, err := when.Parser{Loc: time.Local, Now: time.Now}.Parse(o.since)
		if err != nil {
			return nil, closeAll(usageError{msg: "--since " + err.Error()})
		}
		opt.Since = t
	}
	opt.Open = openJournal
	batches := make(chan struct{}, 1)
	opt.Stats = func(journald.FollowStats) {
		select {
		case batches <- struct{}{}:
		default:
		}
	}
	go func() {
		for {
			select {
			case <-batches:
			case <-time.After(time.Second):
				caughtUp()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	fol := journald.Start(ctx, opt, journald.Resume{}, p)
	w.stop = func() error { return closeAll(fol.Stop()) }
	return w, nil
}

// tailInto reads f from its start and then as it grows (a file being
// appended to, as tail -f), in any format replay reads, into p, until ctx
// ends. Entries are handed over whenever the file has nothing more for the
// moment, so a line shows within one poll; caughtUp is called then too.
func tailInto(ctx context.Context, f *os.File, name string, p *pipeline.Live, caughtUp func()) error {
	var batch []domain.Entry
	hand := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := p.AddWait(ctx, batch, name, "", false)
		batch = nil
		return err
	}
	r := &tailReader{ctx: ctx, f: f, idle: func() error {
		err := hand()
		caughtUp()
		return err
	}}
	_, err := ingest.Read(ctx, r, name, ingest.Options{}, func(e domain.Entry) error {
		batch = append(batch, e)
		if len(batch) >= 1000 {
			return hand()
		}
		return nil
	})
	return errors.Join(err, hand())
}

// tailPoll is how often a followed file is checked for growth.
const tailPoll = 100 * time.Millisecond

// tailReader reads a file that is being appended to: at its end it calls
// idle (in the reading goroutine), then waits for more instead of
// returning io.EOF; it returns ctx's error once ctx ends.
type tailReader struct {
	ctx  context.Context
	f    *os.File
	idle func() error
}

func (t *tailReader) Read(p []byte) (int, error) {
	for {
		n, err := t.f.Read(p)
		if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			return n, err
		}
		if err := t.idle(); err != nil {
			return 0, err
		}
		select {
		case <-t.ctx.Done():
			return 0, t.ctx.Err()
		case <-time.After(tailPoll):
		}
	}
}
