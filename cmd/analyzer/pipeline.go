package main

import (
	"context"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/cmd/analyzer/internal/early"
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/pageout"
	"github.com/llmfleet/analyzer/internal/thp"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
)

// batchMemoryLimit is the Go runtime's soft memory limit for a batch run.
// The process's resident size is this plus the binary's pages (~27 MiB of
// text and tables at the start, all resident where the kernel maps files
// in large folios; ~14 MiB once releaseStartupAbove gave them back): 38
// kept replay of 1M lines under 64 MiB (62.5-63.2 in the make bench of
// its day) when the start's pages stayed for 500 ms, with part of the
// heap in huge pages, which count a partly used 2 MiB page whole; 40 did
// so without them.
// make bench measured the price of 40 against 48 MiB: ~4 % more CPU on a
// serving journal, ~12 % on a night ladder (live heap ~14 MiB, so more
// collections). Once the start's pages went early, a 1M-line night
// ladder's replay was slightly slower with 42 or 46 (13.9 and 14.2
// against 13.6 s, one core, 2 rounds) and peaked 4 and 8 MiB higher: 38
// stays.
const batchMemoryLimit = 38 << 20

// batchGCPercent is a batch run's GC percentage (see batchGC).
const batchGCPercent = 400

// batchGC bounds a file replay's heap with a soft limit instead of a GC
// percentage, unless GOGC or GOMEMLIMIT is set: the heap may grow to 5x
// the live data (GOGC=400; a replay keeps little alive but allocates per
// line, and collecting less often is faster) but never past
// batchMemoryLimit, so memory does not follow the size of the input.
//
// First it asks for huge pages (thp.AdviseHeap) for all of the heap the
// limit allows (early.AdvisedHeap, which says what that saves; package
// early has asked already for a command line it recognizes, and this call
// then does nothing). Advising only the 16 MiB filled before the first
// collection made explain of a 43.5k-line serving journal ~20 % faster
// where a fault costs ~12 µs; advising the whole limit was 3 % slower on
// it then and took night 1M replay past 64 MiB, before the start's pages
// were given back early (releaseStartupAbove): now it is faster at 43.5k
// lines and the same at 1M, at the same peak. It is advice; where the
// kernel declines, the run goes on as before. So is the giving back of
// the executable's pages it starts (releaseStartupAfter,
// releaseStartupAbove).
func batchGC() {
	_ = thp.AdviseHeap(early.AdvisedHeap)
	releaseOnce.Do(func() { pageout.ExecutableWhen(releaseStartupAfter, releaseStartupAbove, residentEvery) })
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(batchGCPercent)
		debug.SetMemoryLimit(batchMemoryLimit)
	}
}

// releaseStartupAfter is how long a batch run goes on, at most, before
// it gives back the executable's pages (pageout.Executable), most of them
// touched only by the start: package initializers, flags, the rule
// compiler. The code the run keeps using faults back in from the page
// cache, at most ~1,400 minor faults on the build machine (a few ms); a
// run this long spends far more than that (a 1M-line replay 7-15 s), and
// a shorter one ends before the timer and pays nothing, unless it passes
// releaseStartupAbove.
const releaseStartupAfter = 500 * time.Millisecond

// releaseStartupAbove is the resident set, in bytes, at which a batch run
// gives back the executable's pages before releaseStartupAfter: the peak
// of a long run came in its first 0.2-0.5 s, the start's pages (~27 MiB)
// still mapped beside the heap growing to batchMemoryLimit. Giving them
// back at 48 MiB took the peak of a 1M-line night ladder's replay from
// 60.5 to 54 MiB (one core and two), of a 43.5k-line one's from 60 to
// 51 MiB and of its explain from 56 to 49 MiB, at the same speed
// (interleaved runs of the two builds, 2026-12-07). A serving journal's
// 43.5k-line replay (45-50 MiB) reaches it, if at all, near its end: no
// slower than with 54 MiB, which it never reached (174 against 173 ms,
// 21 rounds).
const releaseStartupAbove = 48 << 20

// residentEvery is how often the resident set is read (/proc/self/statm)
// until the executable's pages go: releaseStartupAfter / residentEvery
// reads at most, a few µs each. The growth it watches for takes ~100 ms
// (44 to 60 MiB for the night ladder); reading every 5 ms gave back the
// pages at the same peak.
const residentEvery = 20 * time.Millisecond

var releaseOnce sync.Once

// loadRules tunes the process for a batch run (batchGC), starts compiling
// the rule files of source (rules.LoadSource) on a goroutine of its own,
// and returns what waits for the set: the run reads its first input
// meanwhile (pipeline.BatchOptions.Rules). The compile's garbage (~5 MB)
// waits for the first collection: giving it back to the OS at once
// (debug.FreeOSMemory) cost a one-entry explain 16 % of its CPU, the
// collection, the madvise and the page faults of taking it back, and
// peak RSS on the 1M-line night journal stayed within 2 MB either way.
func loadRules(source string) func() (*rules.Set, error) {
	type loaded struct {
		set *rules.Set
		err error
	}
	batchGC()
	done := make(chan loaded, 1)
	go func() {
		set, err := rules.LoadSource(source)
		done <- loaded{set, err}
	}()
	return sync.OnceValues(func() (*rules.Set, error) {
		l := <-done
		return l.set, l.err
	})
}

// analyzeFiles runs files through pipeline.Analyze (emit: see there) in a
// process tuned for it, for the command verb (its progress bars say it),
// with the rule set load returns (loadRules).
func analyzeFiles(ctx context.Context, verb string, load func() (*rules.Set, error), files []string, emit func(a *domain.Attempt, seq int) error) ([]*domain.Attempt, error) {
	// The same bar replay draws, for a large file on a terminal.
	as, _, err := pipeline.Analyze(ctx, nil, pipeline.FileInputs(files), pipeline.BatchOptions{Warn: warn, Progress: progressFor(verb), Rules: load}, emit)
	return as, err
}
