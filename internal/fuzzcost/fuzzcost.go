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

// Cost is what one call cost, as Measure saw it.
type Cost struct {
	Alloc    uint64        // bytes allocated (TotalAlloc delta)
	PeakHeap uint64        // highest HeapInuse above the start, sampled every 5 ms
	Retained uint64        // HeapInuse above the start after fn and a GC: what fn holds on to
	Time     time.Duration // wall time
}

// Measure runs fn and reports its cost. The peak is sampled, so a spike
// shorter than 5 ms can be missed; Alloc cannot. The peak counts garbage
// not yet collected: with GOGC=100 it may reach twice the live heap. Like Check, it counts the
// whole process: run nothing else concurrently.
func Measure(fn func()) Cost {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > before.HeapInuse && ms.HeapInuse-before.HeapInuse > peak {
			peak = ms.HeapInuse - before.HeapInuse
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	start := time.Now()
	fn()
	took := time.Since(start)
	close(stop)
	<-done
	sample()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	c := Cost{Alloc: after.TotalAlloc - before.TotalAlloc, PeakHeap: peak, Time: took}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapInuse > before.HeapInuse {
		c.Retained = after.HeapInuse - before.HeapInuse
	}
	return c
}
