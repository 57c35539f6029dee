// Package fuzzcost lets a fuzz target fail on what an input costs, not
// only on a panic: the bytes allocated and the time taken by one call.
// Inputs are untrusted, and a parser that is merely correct can still be
// made to allocate gigabytes or loop for minutes.
package fuzzcost

import (
	"runtime"
	"testing"
	"time"
)

// Budget is what one input may cost.
type Budget struct {
	Bytes uint64        // bytes allocated by the call (runtime.MemStats.TotalAlloc)
	Time  time.Duration // wall time of the call
}

// Check runs fn once and fails t when it allocated more than b.Bytes or
// took longer than b.Time. Allocation is counted for the whole process, so
// fn must not start goroutines that outlive it; time is wall time, so keep
// the budget well above what a loaded machine needs.
func Check(t testing.TB, b Budget, fn func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	fn()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if b.Bytes > 0 {
		if grew := after.TotalAlloc - before.TotalAlloc; grew > b.Bytes {
			t.Fatalf("one input allocated %d MiB, over the budget of %d MiB", grew>>20, b.Bytes>>20)
		}
	}
	if b.Time > 0 && took > b.Time {
		t.Fatalf("one input took %v, over the budget of %v", took, b.Time)
	}
}
