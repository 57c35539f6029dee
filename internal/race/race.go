// Package race lets tests that time CPU-bound work allow for the race
// detector, which `make test` turns on: it makes such code 2-20x slower
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
