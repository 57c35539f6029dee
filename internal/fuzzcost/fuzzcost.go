// Package fuzzcost lets a fuzz target fail on what an input costs, not
// only on a panic: the bytes allocated and the time taken by one call.
// Inputs are untrusted, and a parser that is merely correct can still be
// made to allocate gigabytes or loop for minutes.
package fuzzcost

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far.
// A budget in CPU time holds on a loaded machine, where wall time of the
// same work stretches with whatever else runs (fuzz workers, parallel
// builds on two shared cores stretched 60 ms to 1.8 s).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hangFactor bounds wall time too, as a multiple of the budget: work that
// blocks uses no CPU, and must not pass for cheap.
const hangFactor = 30

// Budget is what one input may cost.
type Budget struct {
	Bytes uint64        // bytes allocated by the call (runtime.MemStats.TotalAlloc)
	Time  time.Duration // CPU time of the process during the call (wall time at most hangFactor times it)
}

// Check runs fn once and fails t when it allocated more than b.Bytes or
// used more than b.Time of CPU (or hangFactor times it of wall time).
// Allocation and CPU are counted for the whole process, so fn must not
// start goroutines that outlive it, and nothing else may run meanwhile.
func Check(t testing.TB, b Budget, fn func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start, cpu0 := time.Now(), cpuTime()
	fn()
	took, wall := cpuTime()-cpu0, time.Since(start)
	runtime.ReadMemStats(&after)
	if b.Bytes > 0 {
		if grew := after.TotalAlloc - before.TotalAlloc; grew > b.Bytes {
			t.Fatalf("one input allocated %d MiB, over the budget of %d MiB", grew>>20, b.Bytes>>20)
		}
	}
	if b.Time > 0 && took > b.Time {
		t.Fatalf("one input took %v of CPU, over the budget of %v", took, b.Time)
	}
	if b.Time > 0 && wall > hangFactor*b.Time {
		t.Fatalf("one input took %v of wall time, over %d times the budget of %v", wall, hangFactor, b.Time)
	}
}

// Cost is what one call cost, as Measure saw it.
type Cost struct {
	Alloc    uint64        // bytes allocated (TotalAlloc delta)
	PeakHeap uint64        // highest HeapInuse above the start, sampled every 5 ms
	Retained uint64        // HeapInuse above the start after fn and a GC: what fn holds on to
	Time     time.Duration // CPU time of the process (see cpuTime)
	Wall     time.Duration // wall time
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
	start, cpu0 := time.Now(), cpuTime()
	fn()
	took, wall := cpuTime()-cpu0, time.Since(start)
	close(stop)
	<-done
	sample()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	c := Cost{Alloc: after.TotalAlloc - before.TotalAlloc, PeakHeap: peak, Time: took, Wall: wall}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapInuse > before.HeapInuse {
		c.Retained = after.HeapInuse - before.HeapInuse
	}
	return c
}
