// Package pipeline is the analyzer's live pipeline: entries arriving while
// it runs (pushed by Alloy or Promtail to /loki/api/v1/push, later the local
// journal) go through one tracker, and the attempts they change are saved
// to the database in one transaction per flush, then their findings are
// offered to the Loki pusher.
//
//	Add ─► bounded queue ─► worker goroutine: tracker.Add ─► flush:
//	      (ErrSaturated         (after a push request, and on a timer)
//	       when full → 429)      tracker.Attempts → changed ones → store.SaveAttempts
//	                             → findings of ended attempts → FindingSink
//
// The tracker is owned by the worker goroutine alone (it is not safe for
// concurrent use); Add, Flush and Close may be called from any goroutine.
package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// ErrSaturated is returned by Add when the input queue is full; the push
// endpoint answers 429 so that the client retries later.
var ErrSaturated = errors.New("pipeline: input queue is full")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("pipeline: closed")

// Store is what the pipeline needs of the database (*store.DB has it).
type Store interface {
	SaveAttempts(ctx context.Context, attempts []*domain.Attempt, pos *domain.Position) error
	GetAttempt(ctx context.Context, id string) (*domain.Attempt, error)
}

// FindingSink takes findings to publish (*loki.Pusher has it). Offer is
// called again for findings offered before; the sink drops repeats.
type FindingSink interface {
	Offer(a *domain.Attempt, f domain.Finding) bool
}

// Metrics counts what the pipeline does (*metrics.Metrics has it). Its
// methods are called from the worker goroutine and from Add's callers.
type Metrics interface {
	// PipelineQueue sets the number of entries waiting for the worker.
	PipelineQueue(n int)
	// JournalEntry records the time of an entry of host (the newest wins).
	JournalEntry(host string, t time.Time)
	// PipelineFlush counts one flush that saved n attempts, or failed.
	PipelineFlush(saved int, err error)
}

// noMetrics counts nothing: it stands for Options.Metrics left nil, so
// that the pipeline never calls a method of a nil interface.
type noMetrics struct{}

func (noMetrics) PipelineQueue(int)              {}
func (noMetrics) JournalEntry(string, time.Time) {}
func (noMetrics) PipelineFlush(int, error)       {}

// Options configures New. Zero values take the defaults.
type Options struct {
	// QueueEntries bounds the entries waiting for the worker (default
	// 200000). A batch is taken while the queue holds fewer, so one batch
	// may take it past the bound.
	QueueEntries int
	// FlushInterval is the timer flush (default 2 s); MinFlushGap spaces
	// the flushes that pushes request (default 200 ms).
	FlushInterval, MinFlushGap time.Duration
	// FindingGrace: the findings of an attempt that has not ended are
	// offered once they have stood unchanged this long (default 1 min; a
	// verdict can still be overtaken by a more specific one while the
	// traceback is being logged). Findings of an ended attempt are offered
	// at the first flush. Negative: only ended attempts.
	FindingGrace time.Duration
	// Findings, when set, receives the findings of saved attempts (use
	// Fanout for several sinks: the Loki pusher, the journal notes writer).
	Findings FindingSink
	// PruneAfter: attempts that ended this long (in journal time) before
	// the newest entry are dropped from the tracker once saved, to bound
	// its memory (default 6 h; negative keeps everything).
	PruneAfter time.Duration
	// Metrics counts the queue, the entries' times and the flushes; nil
	// counts nothing.
	Metrics Metrics
	Tracker tracker.Options
	Logger  *slog.Logger
	// Now is the wall clock (tests); default time.Now.
	Now func() time.Time
	// Context bounds the saves (default: none): once it is done, a save
	// in progress is abandoned (its transaction rolled back), entries
	// still queued are not judged, and Close's last save gets CloseTimeout.
	// serve passes its signal context, so that SIGTERM during the save of
	// 100,000 attempts (minutes) ends the process within a second.
	Context context.Context
	// CloseTimeout bounds the last save of Close (default 1 s); the
	// attempts it could not save are logged as lost.
	CloseTimeout time.Duration
	// History, when set, gives each open boot's earlier boots (the
	// store): at every timer flush the pipeline raises boot_stalled on a
	// boot that stalled (package progress) and withdraws it when the boot
	// moves on; StallQuiet is the no-history quiet limit (default
	// progress.DefaultQuiet), StallFloor the least time past a phase's p90
	// before a boot stalls (default progress.StallMargin).
	History                History
	StallQuiet, StallFloor time.Duration
}

// History lists stored attempts (*store.DB has it).
type History interface {
	ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error)
}

// Live is the live pipeline. Create it with New, then Start it.
type Live struct {
	db   Store
	opts Options

	mu      sync.Mutex
	queue   []item
	queued  int
	closed  bool
	started bool

	wake     chan struct{}
	flushReq chan chan error
	stop     chan struct{}
	done     chan struct{}
	flushNow chan struct{} // a push asked for a flush

	// Owned by the worker goroutine.
	tr        *tracker.Tracker
	dirty     bool
	saved     map[string]uint64    // attempt id → its Version when saved
	foreign   map[string]bool      // attempts the database had before this process saw their start
	firstSeen map[string]time.Time // finding key → when it was first seen on a running attempt
	attempts  []*domain.Attempt    // the last judged attempts
	newest    time.Time            // newest entry time seen
	lastFlush time.Time
	lastErr   error // of the final flush
	// pos is the source position of the newest entries drained (journal
	// follower); posDirty says it has not been saved yet.
	pos      *domain.Position
	posDirty bool
	// catchingUp: the entries drained last are a restarted follower's
	// re-read of what is stored already; nothing is saved or offered.
	catchingUp bool
	// history: the earlier boots of each target with a boot in progress,
	// for the stall checks (earlierBoots).
	history histories
}

// item is one batch of entries in the queue, with the position a journal
// follower reached after it.
type item struct {
	entries []domain.Entry
	pos     *domain.Position
	catchUp bool
	// set, when not nil, is a new rule set for the tracker (SetRules);
	// such an item carries no entries.
	set *rules.Set
}

// New returns a pipeline that judges entries with set and saves attempts to db.
func New(db Store, set *rules.Set, opts Options) *Live {
	if opts.QueueEntries <= 0 {
		opts.QueueEntries = 200000
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 2 * time.Second
	}
	if opts.MinFlushGap <= 0 {
		opts.MinFlushGap = 200 * time.Millisecond
	}
	if opts.FindingGrace == 0 {
		opts.FindingGrace = time.Minute
	}
	if opts.PruneAfter == 0 {
		opts.PruneAfter = 6 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = time.Second
	}
	// Live stores what it tracks, so the log viewer gets each attempt's
	// own lines.
	opts.Tracker.KeepLog = true
	return &Live{db: db, opts: opts, tr: tracker.New(set, opts.Tracker),
		wake: make(chan struct{}, 1), flushReq: make(chan chan error), stop: make(chan struct{}),
		done: make(chan struct{}), flushNow: make(chan struct{}, 1),
		saved: map[string]uint64{}, foreign: map[string]bool{}, firstSeen: map[string]time.Time{}, history: histories{}}
}

// Start runs the worker goroutine.
func (l *Live) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closed {
		return
	}
	l.started = true
	go l.run()
}

// Add queues entries (in order) for the tracker. It does not block: when the
// queue is full it returns ErrSaturated and queues nothing.
func (l *Live) Add(entries []domain.Entry) error { return l.AddAt(entries, nil, false) }

// AddAt queues entries read from a positioned source (the live journal).
// pos is saved in the same transaction as the attempt changes those entries
// cause, with ReplayCursor filled from the tracker, so a restart resumes
// exactly after them. catchUp marks entries a restarted follower re-reads
// to rebuild open attempts: they go through the tracker, but nothing is
// saved or offered until entries without catchUp arrive.
func (l *Live) AddAt(entries []domain.Entry, pos *domain.Position, catchUp bool) error {
	if len(entries) == 0 && pos == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.queued >= l.opts.QueueEntries {
		l.mu.Unlock()
		return ErrSaturated
	}
	l.queue = append(l.queue, item{entries: entries, pos: pos, catchUp: catchUp})
	l.queued += len(entries)
	n := l.queued
	l.mu.Unlock()
	l.opts.Metrics.PipelineQueue(n)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// AddWait queues entries read from a cursor-positioned source (the live
// journal) up to the record at cursor, like AddAt with the position
// {source, cursor}, and asks for a flush soon unless catchUp (so that
// attempts are saved and notes written within MinFlushGap, not at the next
// FlushInterval). This is back-pressure: while the queue is full it waits
// and tries again every 100 ms, because a journal keeps the entries; it
// returns nil when ctx is done first. Other errors are AddAt's (ErrClosed).
func (l *Live) AddWait(ctx context.Context, entries []domain.Entry, source, cursor string, catchUp bool) error {
	for {
		err := l.AddAt(entries, &domain.Position{Source: source, Cursor: cursor}, catchUp)
		if err == nil && !catchUp {
			l.RequestFlush()
		}
		if !errors.Is(err, ErrSaturated) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(addRetry):
		}
	}
}

// addRetry is how long AddWait waits before offering entries again to a
// full queue.
var addRetry = 100 * time.Millisecond

// SetRules hands a new rule set to the tracker. The worker goroutine
// applies it in queue order: entries queued before the call are judged with
// the old set, entries queued after it with the new one. Attempts in
// progress keep the findings they have. It never blocks and ignores the
// queue bound; it returns ErrClosed after Close.
func (l *Live) SetRules(set *rules.Set) error {
	if set == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.queue = append(l.queue, item{set: set})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// Saturated reports whether Add would refuse entries now.
func (l *Live) Saturated() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed || l.queued >= l.opts.QueueEntries
}

// Queued is the number of entries waiting for the worker.
func (l *Live) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued
}

// RequestFlush asks for a flush soon (after the queued entries), without
// waiting for it. Requests coalesce and are spaced by MinFlushGap.
func (l *Live) RequestFlush() {
	select {
	case l.flushNow <- struct{}{}:
	default:
	}
}

// Flush waits until every entry queued before the call went through the
// tracker and the attempts are saved (and their findings offered).
func (l *Live) Flush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case l.flushReq <- reply:
	case <-l.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking entries, processes and saves what is queued, and stops
// the worker. It returns the error of that last flush.
func (l *Live) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	started := l.started
	l.mu.Unlock()
	if !started {
		close(l.done)
		return nil
	}
	close(l.stop)
	<-l.done
	return l.lastErr
}

func (l *Live) run() {
	defer close(l.done)
	ctx := l.opts.Context
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	var gap <-chan time.Time // pending spaced flush
	for {
		select {
		case <-l.stop:
			l.drain()
			// The last save is bounded even when ctx has ended: a save of
			// what is left, or nothing, rather than a stop that hangs.
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.CloseTimeout)
			l.lastErr = l.flush(last, true)
			cancel()
			return
		case <-l.wake:
			l.drain()
		case <-l.flushNow:
			l.drain()
			if wait := l.opts.MinFlushGap - l.opts.Now().Sub(l.lastFlush); wait > 0 {
				if gap == nil {
					gap = time.After(wait)
				}
				continue
			}
			l.reportFlush(l.flush(ctx, false))
		case <-gap:
			gap = nil
			l.drain()
			l.reportFlush(l.flush(ctx, false))
		case reply := <-l.flushReq:
			l.drain()
			l.checkStalls(ctx)
			reply <- l.flush(ctx, true)
		case <-tick.C:
			l.drain()
			l.checkStalls(ctx)
			l.reportFlush(l.flush(ctx, false))
		}
	}
}

func (l *Live) reportFlush(err error) {
	if err != nil {
		l.opts.Logger.Error("pipeline: saving attempts failed (will retry)", "err", err)
	}
}

// drain feeds every queued entry to the tracker.
func (l *Live) drain() {
	l.mu.Lock()
	batches := l.queue
	l.queue = nil
	l.mu.Unlock()
	if len(batches) == 0 {
		return
	}
	// The entries taken still count as queued until they are judged: Add
	// refuses more (429) while the tracker is behind.
	done := func(b item) {
		l.mu.Lock()
		l.queued -= len(b.entries)
		n := l.queued
		l.mu.Unlock()
		l.opts.Metrics.PipelineQueue(n)
	}
	for i, b := range batches {
		if l.opts.Context.Err() != nil {
			// Stopping: judging what is left would outlast the stop.
			n := 0
			for _, r := range batches[i:] {
				done(r)
				n += len(r.entries)
			}
			if n > 0 {
				l.opts.Logger.Warn("pipeline: stopping; queued entries not judged", "entries", n)
			}
			break
		}
		if b.set != nil {
			// The tracker is not safe for concurrent use: only this
			// goroutine swaps its rules.
			l.tr.SetRules(b.set)
			continue
		}
		for _, e := range b.entries {
			l.tr.Add(e)
			l.opts.Metrics.JournalEntry(e.Host, e.Time)
			if e.Time.After(l.newest) {
				l.newest = e.Time
			}
		}
		done(b)
		l.catchingUp = b.catchUp
		if b.pos != nil && !b.catchUp {
			p := *b.pos
			l.pos, l.posDirty = &p, true
		}
	}
	l.dirty = true
}

// flush saves the attempts that changed since the last flush and offers
// findings. Without force it does nothing when no entry came in and no
// finding is waiting out its grace period.
func (l *Live) flush(ctx context.Context, force bool) error {
	if (!l.dirty && !force && len(l.firstSeen) == 0) || l.catchingUp {
		return nil
	}
	l.lastFlush = l.opts.Now()
	if l.dirty || l.attempts == nil {
		l.attempts = l.tr.Attempts()
	}
	var changed []*domain.Attempt
	for _, a := range l.attempts {
		if l.foreign[a.ID] {
			continue
		}
		// The tracker's change version says whether anything stored of
		// the attempt changed since it was saved.
		if old, ok := l.saved[a.ID]; ok && old == a.Version {
			continue
		}
		if _, ok := l.saved[a.ID]; !ok && l.olderInStore(ctx, a) {
			l.foreign[a.ID] = true
			l.opts.Logger.Warn("pipeline: the database holds an earlier part of this attempt; not overwriting it",
				"attempt", a.ID, "unit", a.Unit, "host", a.Host)
			continue
		}
		changed = append(changed, a)
	}
	// Findings go out before the position that passes them is saved: a
	// crash in between re-reads the attempt and offers them again (sinks
	// drop repeats), while the other order could lose them for good.
	l.offerFindings()
	var pos *domain.Position
	if l.posDirty {
		// Saved with the changes, even when there are none: the cursor
		// advances over entries no attempt cared about too.
		p := *l.pos
		p.ReplayCursor = l.tr.ReplayCursor()
		pos = &p
	}
	if len(changed) > 0 || pos != nil {
		err := l.db.SaveAttempts(ctx, changed, pos)
		l.opts.Metrics.PipelineFlush(len(changed), err)
		if err != nil {
			return err
		}
		for _, a := range changed {
			l.saved[a.ID] = a.Version
		}
		l.posDirty = false
	} else if l.dirty {
		l.opts.Metrics.PipelineFlush(0, nil)
	}
	l.dirty = false
	l.prune()
	return nil
}

// prune drops long-ended attempts from the tracker (they are saved and
// their findings offered). An attempt that comes back later (a late line)
// is checked against the database again before it is saved.
func (l *Live) prune() {
	if l.opts.PruneAfter < 0 || l.newest.IsZero() {
		return
	}
	if l.tr.Prune(l.newest.Add(-l.opts.PruneAfter)) == 0 {
		return
	}
	l.attempts = l.tr.Attempts()
	kept := make(map[string]bool, len(l.attempts))
	for _, a := range l.attempts {
		kept[a.ID] = true
	}
	for id := range l.saved {
		if !kept[id] {
			delete(l.saved, id)
		}
	}
	for id := range l.foreign {
		if !kept[id] {
			delete(l.foreign, id)
		}
	}
}

// Fanout offers every finding to each sink; it reports whether any took it.
func Fanout(sinks ...FindingSink) FindingSink {
	var out fanout
	for _, s := range sinks {
		if s != nil && !isNilSink(s) {
			out = append(out, s)
		}
	}
	return out
}

type fanout []FindingSink

func (f fanout) Offer(a *domain.Attempt, fd domain.Finding) bool {
	took := false
	for _, s := range f {
		if s.Offer(a, fd) {
			took = true
		}
	}
	return took
}

// isNilSink catches a typed nil pointer passed as a sink.
func isNilSink(s FindingSink) bool {
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// olderInStore reports whether the database already has attempt a from an
// earlier start than this process saw (the analyzer restarted in the middle
// of the attempt, and its tracker only knows the rest): saving would replace
// the stored attempt with a poorer one.
func (l *Live) olderInStore(ctx context.Context, a *domain.Attempt) bool {
	old, err := l.db.GetAttempt(ctx, a.ID)
	if err != nil || old == nil {
		return false
	}
	return !old.StartedAt.IsZero() && old.StartedAt.Before(a.StartedAt)
}

// offerFindings hands the findings of ended attempts, and those of running
// attempts that have stood for FindingGrace, to the sink.
func (l *Live) offerFindings() {
	sink := l.opts.Findings
	if sink == nil {
		return
	}
	now := l.opts.Now()
	live := map[string]bool{}
	for _, a := range l.attempts {
		if l.foreign[a.ID] {
			continue
		}
		for _, f := range a.Findings {
			if a.EndedBy != "" {
				sink.Offer(a, f)
				continue
			}
			if l.opts.FindingGrace < 0 {
				continue
			}
			key := a.ID + "\x00" + f.ID + "\x00" + f.Rule
			live[key] = true
			first, ok := l.firstSeen[key]
			if !ok {
				l.firstSeen[key] = now
				first = now
			}
			// boot_stalled has waited out its own limit already: its note
			// goes at once, not a FindingGrace later.
			if now.Sub(first) >= l.opts.FindingGrace || f.ID == domain.FindingBootStalled {
				sink.Offer(a, f)
			}
		}
	}
	for k := range l.firstSeen {
		if !live[k] {
			delete(l.firstSeen, k) // superseded, or the attempt ended
		}
	}
}

// checkStalls raises boot_stalled on the open boots that stalled and
// withdraws it from those that moved on (tracker.Stall), each boot judged
// against its target's earlier boots (progress.ForAttempt): those in
// History, read once per HistoryTTL per target (earlierBoots), and those
// the tracker ended since.
func (l *Live) checkStalls(ctx context.Context) {
	if l.opts.History == nil || l.catchingUp {
		return
	}
	now := l.opts.Now()
	if l.dirty || l.attempts == nil {
		l.attempts = l.tr.Attempts()
	}
	booting := map[progress.Target]bool{}
	for _, a := range l.attempts {
		if progress.InProgress(a) && now.Sub(a.StartedAt) <= progress.MaxBootAge {
			booting[progress.TargetOf(a)] = true
		}
	}
	for t := range l.history {
		if !booting[t] {
			delete(l.history, t)
		}
	}
	ended := map[progress.Target][]*domain.Attempt{}
	for _, a := range l.attempts {
		if t := progress.TargetOf(a); booting[t] && !a.EndedAt.IsZero() {
			ended[t] = append(ended[t], a)
		}
	}
	for _, a := range l.attempts {
		if !progress.InProgress(a) || now.Sub(a.StartedAt) > progress.MaxBootAge {
			continue
		}
		earlier, err := l.earlierBoots(ctx, progress.TargetOf(a), ended[progress.TargetOf(a)], now)
		if err != nil {
			l.opts.Logger.Error("pipeline: earlier boots not read; stalls not checked", "err", err)
			return
		}
		last := progress.LastLine(a)
		e := progress.ForAttempt(earlier, a, now, last, progress.Limits{Quiet: l.opts.StallQuiet, Floor: l.opts.StallFloor})
		if l.tr.Stall(a.ID, e.Stalled, domain.Evidence{Time: now, Message: e.Describe(now.Sub(last))}) {
			l.dirty = true
		}
	}
}
