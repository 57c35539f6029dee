// Package race lets tests that time CPU-bound work or bound memory allow
// for the race detector, which `make test` turns on: it makes such code
// 2-20x slower and its process larger
// (https://go.dev/doc/articles/race_detector#runtime-overheads), so a
// budget that catches a runaway without -race fails a healthy run with it.
package race

import "time"

// Slowdown is the factor Budget applies under the race detector; the
// hostile-input tests ran 3-5x slower with it on a busy 2-core machine.
const Slowdown = 5

// Budget returns d, or d × Slowdown when the race detector is on.
func Budget(d time.Duration) time.Duration {
	if Enabled {
		return d * Slowdown
	}
	return d
}

// MemoryFactor is the factor Memory applies under the race detector, whose
// shadow memory makes a process larger (5-10x, says the page above); the
// concurrent-push test's RSS grew by 120-130 MiB without it and by up to
// 446 MiB with it, over a bound of 400 MiB.
const MemoryFactor = 2

// Memory returns the byte bound n, or n × MemoryFactor when the race
// detector is on.
func Memory(n int64) int64 {
	if Enabled {
		return n * MemoryFactor
	}
	return n
}
