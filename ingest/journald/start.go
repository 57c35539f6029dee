//go:build linux && cgo

package journald

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Follow reads the journal from resume (or per opt on a first run) and
// hands batches of normalized entries to handle until ctx is done; it
// returns nil within about a second of that. The reader (opt.Open, else
// sd-journal with opt.InProcess, else journalctl) is opened, read and
// closed by one goroutine locked to its OS thread: sd-journal objects are
// not thread-safe. An error opening it, or one FollowReader returns, is
// returned; after a handler error the caller restarts from the last
// position it saved.
func Follow(ctx context.Context, opt FollowOptions, resume Resume, handle func(Batch) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- followOpen(ctx, opt, resume, handle)
	}()
	return <-errc
}

// followOpen opens the reader, follows and closes the reader before it
// returns: a journalctl child is gone once Follow has returned.
func followOpen(ctx context.Context, opt FollowOptions, resume Resume, handle func(Batch) error) error {
	r, err := open(opt)
	if err != nil {
		return err
	}
	defer r.Close()
	return FollowReader(ctx, r, opt, resume, handle)
}

// open opens the reader opt asks for.
func open(opt FollowOptions) (Journal, error) {
	switch {
	case opt.Open != nil:
		return opt.Open()
	case opt.InProcess:
		r, err := Open(opt.Dir)
		if err != nil {
			return nil, err
		}
		return r, nil
	default:
		r, err := OpenProc(opt.Dir)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}

// Sink takes what a Follower reads: the live pipeline in serve
// (*pipeline.Live).
type Sink interface {
	// AddWait queues entries read from source up to the record at cursor,
	// to be saved with that position; catchUp marks entries re-read to
	// rebuild open attempts, which save nothing. While the sink is full it
	// waits (the journal keeps the entries meanwhile); it returns nil when
	// ctx is done first. Any other error stops the follower.
	AddWait(ctx context.Context, entries []domain.Entry, source, cursor string, catchUp bool) error
}

// Follower is a Follow running in the background, started by Start.
type Follower struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// stopped says why Follow returned; nil while it runs.
	stopped atomic.Pointer[string]
	// handing is when the batch the sink holds was handed over (unix ns),
	// 0 while the sink holds none.
	handing    atomic.Int64
	stallAfter time.Duration
}

// Start runs Follow in the background until ctx is done or Stop is
// called, handing every batch to sink with its position (source
// SourceName(opt.Dir), the batch's cursor) and a gap entry (Batch.WithGap)
// first when part of the journal was lost. Gaps and a stop on an error are
// reported through opt.Logf.
func Start(ctx context.Context, opt FollowOptions, resume Resume, sink Sink) *Follower {
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{cancel: cancel, done: make(chan struct{}), stallAfter: opt.StallAfter}
	if f.stallAfter <= 0 {
		f.stallAfter = DefaultStallAfter
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	source := sourceName(opt.Dir)
	go func() {
		defer close(f.done)
		err := Follow(ctx, opt, resume, func(b Batch) error {
			if b.Gap != "" {
				logf("journal gap: %s", b.Gap)
			}
			f.handing.Store(time.Now().UnixNano())
			defer f.handing.Store(0)
			return sink.AddWait(ctx, b.WithGap(time.Now()), source, b.Cursor, b.CatchUp)
		})
		why := "done"
		if err != nil {
			logf("journal follower stopped: %v", err)
			why = err.Error()
		}
		f.err = err
		f.stopped.Store(&why)
	}()
	return f
}

// Health reports whether the follower still reads the journal and its
// sink takes what it reads; when not, why: it stopped ("stopped: " and the
// error, or "stopped: done"), or its sink has held one batch for longer than
// FollowOptions.StallAfter ("stalled: ..."; a quiet journal is healthy).
func (f *Follower) Health() (ok bool, why string) {
	if why := f.stopped.Load(); why != nil {
		return false, "stopped: " + *why
	}
	if at := f.handing.Load(); at != 0 {
		if held := time.Since(time.Unix(0, at)); held > f.stallAfter {
			return false, fmt.Sprintf("stalled: the pipeline has not taken a batch for %v", held.Round(time.Second))
		}
	}
	return true, ""
}

// Stop cancels the follower and waits for it (about a second at most with
// sd-journal, at once with journalctl). It returns the error that stopped
// Follow, nil when it stopped because of the cancel.
func (f *Follower) Stop() error {
	f.cancel()
	<-f.done
	return f.err
}
